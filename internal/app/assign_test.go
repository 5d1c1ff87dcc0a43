package app_test

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/stitchd/stitchd/engine"
	"github.com/stitchd/stitchd/internal/app"
	"github.com/stitchd/stitchd/store"
)

// Assignment and decisions at UX nodes (engine/assign.go), through the
// engine with an actor, as the API calls it for a signed-in person.

var (
	ada   = &engine.Actor{Email: "ada@example.com"}
	bob   = &engine.Actor{Email: "bob@example.com", Groups: []string{"ops"}}
	carol = &engine.Actor{Email: "carol@example.com", Groups: []string{"finance"}}
	dan   = &engine.Actor{Email: "dan@example.com"}
	boss  = &engine.Actor{Email: "boss@example.com", Override: true}
)

// askFlow is a flow of one UX node "ask" with data, then a Worker "next"
// on approve.
func (h *harness) askFlow(data map[string]any) (flowID, versionID string) {
	h.t.Helper()
	data["prompt"] = "OK?"
	flowID = h.createFlow([]map[string]any{node("ask", "UX", data), wnode(h, "next")},
		[]map[string]any{redge("ask", "next", map[string]any{"outcome": "approve"})})
	f, err := h.app.Store.GetFlow(context.Background(), flowID)
	require.NoError(h.t, err)
	return flowID, f.VersionID
}

// startBy starts a run of the flow as a person (startedBy; "" for none).
func (h *harness) startBy(flowID, versionID, startedBy string, input any) string {
	h.t.Helper()
	in, err := json.Marshal(input)
	require.NoError(h.t, err)
	r, _, err := h.app.Engine.StartRun(context.Background(), engine.StartRunParams{FlowID: flowID, VersionID: versionID,
		Input: in, StartedBy: startedBy})
	require.NoError(h.t, err)
	require.Equal(h.t, "waiting_for_user", h.run(r.ID).Nodes["ask"].Status)
	return r.ID
}

// decide answers node ask of run as actor.
func (h *harness) decide(runID string, a *engine.Actor, outcome, comment string) error {
	return h.app.Engine.CompleteUX(context.Background(), engine.CompleteUXParams{RunID: runID, Key: "ask", Outcome: outcome,
		Comment: comment, Actor: a, Output: json.RawMessage(fmt.Sprintf(`{"who": %q}`, a.Email))})
}

// decisionRows counts the rows of ux_decisions of the run.
func (h *harness) decisionRows(runID string) int {
	h.t.Helper()
	var n int
	require.NoError(h.t, h.app.Store.Gorm().Raw(`SELECT count(*) FROM ux_decisions WHERE run_id = ?`, runID).Row().Scan(&n))
	return n
}

func (h *harness) eventCount(runID, typ string) int {
	h.t.Helper()
	var n int
	require.NoError(h.t, h.app.Store.Gorm().Raw(`SELECT count(*) FROM run_events WHERE run_id = ? AND type = ?`, runID, typ).
		Row().Scan(&n))
	return n
}

// askOutput is the output of a decided UX node.
type askOutput struct {
	Decision struct {
		Outcome string          `json:"outcome"`
		By      string          `json:"by"`
		Comment string          `json:"comment"`
		Answer  json.RawMessage `json:"answer"`
	} `json:"decision"`
	Decisions []struct {
		By      string          `json:"by"`
		Outcome string          `json:"outcome"`
		Comment string          `json:"comment"`
		Answer  json.RawMessage `json:"answer"`
	} `json:"decisions"`
}

func (h *harness) askOutput(runID string) askOutput {
	h.t.Helper()
	var out askOutput
	n := h.run(runID).Nodes["ask"]
	require.Equal(h.t, "completed", n.Status)
	require.NoError(h.t, json.Unmarshal(n.Output, &out))
	return out
}

// refusedAs requires err to be engine.ErrForbidden and the node to be
// waiting still, with nothing recorded.
func (h *harness) refusedAs(runID string, err error, msg string, rows int) {
	h.t.Helper()
	require.ErrorIs(h.t, err, engine.ErrForbidden)
	require.ErrorContains(h.t, err, msg)
	require.Equal(h.t, "waiting_for_user", h.run(runID).Nodes["ask"].Status)
	require.Equal(h.t, rows, h.decisionRows(runID), "a refused decision is not recorded")
}

func TestAssignees(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	ctx := context.Background()

	t.Run("static users", func(t *testing.T) {
		flow, v := h.askFlow(map[string]any{"assignees": map[string]any{"users": []string{"Ada@Example.com"}}})
		run := h.startBy(flow, v, "", map[string]any{})
		a, err := assignmentOf(h, run)
		require.NoError(t, err)
		require.Equal(t, &engine.Assignees{Users: []string{"ada@example.com"}, Groups: []string{}}, a)
		h.refusedAs(run, h.decide(run, bob, "approve", ""), "not assigned to bob@example.com", 0)
		require.Zero(t, h.eventCount(run, "approval.vote"))
		require.NoError(t, h.decide(run, ada, "approve", "fine"))
		out := h.askOutput(run)
		require.Equal(t, "ada@example.com", out.Decision.By)
		require.Equal(t, "fine", out.Decision.Comment)
		require.Nil(t, out.Decisions, "one approval: no list of votes")
		require.Equal(t, 1, h.decisionRows(run), "every decision is recorded")
		h.waitDispatch(run, "next", 1)
	})

	t.Run("groups", func(t *testing.T) {
		flow, v := h.askFlow(map[string]any{"assignees": map[string]any{"groups": []string{"finance"}}})
		run := h.startBy(flow, v, "", map[string]any{})
		h.refusedAs(run, h.decide(run, bob, "approve", ""), "not assigned", 0)
		require.NoError(t, h.decide(run, carol, "reject", "no budget"))
		n := h.run(run).Nodes["ask"]
		require.Equal(t, "failed", n.Status)
		require.Equal(t, "rejected: no budget", *n.Error)
	})

	t.Run("an override decides any", func(t *testing.T) {
		flow, v := h.askFlow(map[string]any{"assignees": map[string]any{"users": []string{"ada@example.com"}}})
		run := h.startBy(flow, v, "", map[string]any{})
		require.NoError(t, h.decide(run, boss, "approve", ""))
		require.Equal(t, "boss@example.com", h.askOutput(run).Decision.By)
	})

	t.Run("unassigned: anyone", func(t *testing.T) {
		flow, v := h.askFlow(map[string]any{})
		run := h.startBy(flow, v, "", map[string]any{})
		a, err := assignmentOf(h, run)
		require.NoError(t, err)
		require.Nil(t, a)
		require.NoError(t, h.decide(run, dan, "approve", ""))
		require.Equal(t, "dan@example.com", h.askOutput(run).Decision.By)
	})

	t.Run("an expression", func(t *testing.T) {
		flow, v := h.askFlow(map[string]any{"assignees": "input.owner_email"})
		run := h.startBy(flow, v, "", map[string]any{"owner_email": "bob@example.com"})
		a, err := assignmentOf(h, run)
		require.NoError(t, err)
		require.Equal(t, []string{"bob@example.com"}, a.Users)
		h.refusedAs(run, h.decide(run, ada, "approve", ""), "not assigned", 0)
		require.NoError(t, h.decide(run, bob, "approve", ""))

		flow, v = h.askFlow(map[string]any{"assignees": `{"users": input.reviewers, "groups": [input.team]}`})
		run = h.startBy(flow, v, "", map[string]any{"reviewers": []string{"ada@example.com", "dan@example.com"}, "team": "ops"})
		a, err = assignmentOf(h, run)
		require.NoError(t, err)
		require.Equal(t, &engine.Assignees{Users: []string{"ada@example.com", "dan@example.com"}, Groups: []string{"ops"}}, a)
		require.NoError(t, h.decide(run, bob, "approve", ""), "bob is in ops")
	})

	t.Run("an expression that gives no one fails the node", func(t *testing.T) {
		flow, v := h.askFlow(map[string]any{"assignees": "input.owner_email"})
		for _, tc := range []struct {
			input any
			msg   string
		}{
			{map[string]any{}, "the assignees expression of node ask gave null, not an email"},
			{map[string]any{"owner_email": 42}, "gave a number"},
			{map[string]any{"owner_email": "not-an-email"}, `"not-an-email" is not an email address`},
			{map[string]any{"owner_email": []string{}}, "names no one"},
		} {
			in, _ := json.Marshal(tc.input)
			r, _, err := h.app.Engine.StartRun(ctx, engine.StartRunParams{FlowID: flow, VersionID: v, Input: in})
			require.NoError(t, err)
			done := h.waitRun(r.ID, "failed")
			require.Equal(t, "failed", done.Nodes["ask"].Status)
			require.Contains(t, *done.Nodes["ask"].Error, tc.msg)
		}
		flow, v = h.askFlow(map[string]any{"assignees": "input.a / input.b"})
		r, _, err := h.app.Engine.StartRun(ctx, engine.StartRunParams{FlowID: flow, VersionID: v, Input: json.RawMessage(`{"a": "x", "b": 2}`)})
		require.NoError(t, err)
		require.Contains(t, *h.waitRun(r.ID, "failed").Nodes["ask"].Error, "the assignees expression of node ask could not be evaluated")
	})

	t.Run("the notification names the assignees", func(t *testing.T) {
		rcv := newReceiver(t, 0)
		hn := newHarness(t, func(c *app.Config) { c.NotifyURL = rcv.srv.URL })
		flow, v := hn.askFlow(map[string]any{"assignees": map[string]any{"users": []string{"ada@example.com"}, "groups": []string{"ops"}}})
		run := hn.startBy(flow, v, "", map[string]any{})
		req := hn.notified(rcv, run, "approval.requested", 1)[0]
		var body struct {
			Assignees *engine.Assignees `json:"assignees"`
		}
		require.NoError(t, json.Unmarshal(req.Body, &body))
		require.Equal(t, &engine.Assignees{Users: []string{"ada@example.com"}, Groups: []string{"ops"}}, body.Assignees)
	})
}

// assignmentOf reads node ask's assignees from its row.
func assignmentOf(h *harness, runID string) (*engine.Assignees, error) {
	var a *engine.Assignees
	err := h.app.Store.InTx(context.Background(), func(ctx context.Context, tx engine.Tx) error {
		var err error
		a, err = tx.Assignment(ctx, runID, "ask")
		return err
	})
	return a, err
}

func TestRequiredApprovals(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	three := map[string]any{"users": []string{"ada@example.com", "bob@example.com", "dan@example.com"}}

	t.Run("two of three", func(t *testing.T) {
		flow, v := h.askFlow(map[string]any{"assignees": three, "requiredApprovals": 2})
		run := h.startBy(flow, v, "", map[string]any{"amount": 10})
		require.NoError(t, h.decide(run, ada, "approve", "ok by me"))
		r := h.run(run)
		require.Equal(t, "waiting_for_user", r.Nodes["ask"].Status, "one approval of two: still waiting")
		require.Equal(t, "running", r.Status)
		require.Equal(t, 1, h.eventCount(run, "approval.vote"), "the vote is in the run's history")

		err := h.decide(run, ada, "approve", "again")
		require.ErrorIs(t, err, engine.ErrConflict)
		require.ErrorContains(t, err, "ada@example.com already decided step ask")
		require.Equal(t, 1, h.decisionRows(run))

		page, _, err := h.app.Store.ApprovalsPageFor(context.Background(), store.PageParams{}, store.ApprovalFilter{})
		require.NoError(t, err)
		var found bool
		for _, a := range page {
			if a.RunID == run {
				found = true
				require.Len(t, a.Votes, 1)
				require.Equal(t, "ada@example.com", a.Votes[0].By)
				require.Equal(t, "ok by me", a.Votes[0].Comment)
				require.JSONEq(t, `{"who": "ada@example.com"}`, string(a.Votes[0].Answer))
			}
		}
		require.True(t, found)

		require.NoError(t, h.decide(run, dan, "approve", ""))
		out := h.askOutput(run)
		require.Equal(t, "approve", out.Decision.Outcome)
		require.Equal(t, "dan@example.com", out.Decision.By, "decision.by is the last voter")
		require.Len(t, out.Decisions, 2)
		require.Equal(t, []string{"ada@example.com", "dan@example.com"}, []string{out.Decisions[0].By, out.Decisions[1].By})
		require.Equal(t, "ok by me", out.Decisions[0].Comment)
		require.Equal(t, 2, h.eventCount(run, "approval.vote"))
		h.waitDispatch(run, "next", 1)

		require.ErrorIs(t, h.decide(run, bob, "approve", ""), engine.ErrInvalidTransition, "decided: no more votes")
		require.Equal(t, 2, h.decisionRows(run))
	})

	t.Run("one reject rejects under any", func(t *testing.T) {
		flow, v := h.askFlow(map[string]any{"assignees": three, "requiredApprovals": 2})
		run := h.startBy(flow, v, "", map[string]any{})
		require.NoError(t, h.decide(run, ada, "approve", ""))
		require.NoError(t, h.decide(run, bob, "reject", "too much"))
		n := h.run(run).Nodes["ask"]
		require.Equal(t, "failed", n.Status)
		require.Equal(t, "rejected: too much", *n.Error)
	})

	t.Run("majority needs N rejects", func(t *testing.T) {
		flow, v := h.askFlow(map[string]any{"assignees": three, "requiredApprovals": 2, "rejectPolicy": "majority"})
		run := h.startBy(flow, v, "", map[string]any{})
		require.NoError(t, h.decide(run, ada, "reject", ""))
		require.Equal(t, "waiting_for_user", h.run(run).Nodes["ask"].Status, "one reject of two")
		require.NoError(t, h.decide(run, bob, "approve", ""))
		require.Equal(t, "waiting_for_user", h.run(run).Nodes["ask"].Status, "one of each")
		require.NoError(t, h.decide(run, dan, "reject", "no"))
		require.Equal(t, "failed", h.run(run).Nodes["ask"].Status)
		require.Equal(t, 3, h.decisionRows(run))
	})

	t.Run("a retry starts with no votes", func(t *testing.T) {
		flow, v := h.askFlow(map[string]any{"assignees": three, "requiredApprovals": 2})
		run := h.startBy(flow, v, "", map[string]any{})
		require.NoError(t, h.decide(run, ada, "approve", ""))
		require.NoError(t, h.decide(run, bob, "reject", ""))
		require.NoError(t, h.app.Engine.RetryNode(context.Background(), run, "ask"))
		n := h.run(run).Nodes["ask"]
		require.Equal(t, "waiting_for_user", n.Status)
		require.Equal(t, 2, n.Attempt)
		require.NoError(t, h.decide(run, ada, "approve", ""), "a new attempt: ada votes again")
		require.Equal(t, "waiting_for_user", h.run(run).Nodes["ask"].Status, "attempt 1's approval does not count")
		require.NoError(t, h.decide(run, bob, "approve", ""))
		out := h.askOutput(run)
		require.Len(t, out.Decisions, 2)
		require.Equal(t, 4, h.decisionRows(run), "both attempts' votes are kept")
	})

	t.Run("an internal decision decides at once", func(t *testing.T) {
		flow, v := h.askFlow(map[string]any{"assignees": three, "requiredApprovals": 3})
		run := h.startBy(flow, v, "", map[string]any{})
		require.NoError(t, h.decide(run, ada, "approve", ""))
		require.NoError(t, h.app.Engine.CompleteUX(context.Background(), engine.CompleteUXParams{RunID: run, Key: "ask",
			Outcome: "approve", By: "admin"}))
		out := h.askOutput(run)
		require.Equal(t, "admin", out.Decision.By)
		require.Len(t, out.Decisions, 2)
	})
}

func TestSeparationOfDuties(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	flow, v := h.askFlow(map[string]any{"separationOfDuties": true})
	run := h.startBy(flow, v, "Ada@Example.com", map[string]any{})
	var started struct {
		StartedBy string `json:"started_by"`
	}
	require.Equal(t, 200, h.do("GET", "/api/v1/runs/"+run, nil, &started))
	require.Equal(t, "Ada@Example.com", started.StartedBy)
	h.refusedAs(run, h.decide(run, ada, "approve", ""), "separation of duties: ada@example.com started run", 0)
	h.refusedAs(run, h.decide(run, &engine.Actor{Email: "ada@example.com", Override: true}, "reject", ""), "separation of duties", 0)
	require.NoError(t, h.decide(run, bob, "approve", ""))
	require.Equal(t, "bob@example.com", h.askOutput(run).Decision.By)

	// Without separationOfDuties the starter may decide; a run started by
	// no one (a trigger, the admin token) has no started_by.
	flow, v = h.askFlow(map[string]any{})
	run = h.startBy(flow, v, "ada@example.com", map[string]any{})
	require.NoError(t, h.decide(run, ada, "approve", ""))
	run = h.startBy(flow, v, "", map[string]any{})
	var raw map[string]any
	require.Equal(t, 200, h.do("GET", "/api/v1/runs/"+run, nil, &raw))
	require.NotContains(t, raw, "started_by")
}

func TestApprovalsAssignedFilter(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	ctx := context.Background()
	toAda, va := h.askFlow(map[string]any{"assignees": map[string]any{"users": []string{"ada@example.com"}}})
	toOps, vo := h.askFlow(map[string]any{"assignees": map[string]any{"groups": []string{"ops"}}})
	toAny, vn := h.askFlow(map[string]any{})
	toDan, vd := h.askFlow(map[string]any{"assignees": map[string]any{"users": []string{"dan@example.com"}, "groups": []string{"finance"}}})
	runs := map[string]string{
		"ada": h.startBy(toAda, va, "", map[string]any{}),
		"ops": h.startBy(toOps, vo, "", map[string]any{}),
		"any": h.startBy(toAny, vn, "", map[string]any{}),
		"dan": h.startBy(toDan, vd, "", map[string]any{}),
	}
	list := func(f store.ApprovalFilter) []string {
		t.Helper()
		var out []string
		p := store.PageParams{Limit: 1} // one at a time: the filter holds across pages
		for {
			page, next, err := h.app.Store.ApprovalsPageFor(ctx, p, f)
			require.NoError(t, err)
			for _, a := range page {
				for name, id := range runs {
					if a.RunID == id {
						out = append(out, name)
						if name == "ops" {
							require.Equal(t, &engine.Assignees{Users: []string{}, Groups: []string{"ops"}}, a.Assignees)
						}
						if name == "any" {
							require.Nil(t, a.Assignees)
						}
					}
				}
			}
			if next == "" {
				return out
			}
			p.Cursor = next
		}
	}
	require.ElementsMatch(t, []string{"ada", "any"}, list(store.ApprovalFilter{Assigned: store.AssignedMe, Email: "ADA@example.com"}))
	require.ElementsMatch(t, []string{"any"}, list(store.ApprovalFilter{Assigned: store.AssignedMe, Email: "bob@example.com", Groups: []string{"ops"}}))
	require.ElementsMatch(t, []string{"ops"}, list(store.ApprovalFilter{Assigned: store.AssignedGroups, Email: "bob@example.com", Groups: []string{"ops"}}))
	require.ElementsMatch(t, []string{"dan", "ops"}, list(store.ApprovalFilter{Assigned: store.AssignedGroups, Groups: []string{"ops", "finance"}}))
	require.Empty(t, list(store.ApprovalFilter{Assigned: store.AssignedGroups, Email: "ada@example.com"}))
	require.ElementsMatch(t, []string{"ada", "ops", "any", "dan"}, list(store.ApprovalFilter{Assigned: store.AssignedAll}))
	require.ElementsMatch(t, []string{"ops", "any"}, list(store.ApprovalFilter{Assigned: store.AssignedAll, Email: "bob@example.com",
		Groups: []string{"ops"}, Decidable: true}), "an approver sees only what they may decide")
	require.ElementsMatch(t, []string{"ada", "any"}, list(store.ApprovalFilter{Email: "ada@example.com", Decidable: true}))
	_, _, err := h.app.Store.ApprovalsPageFor(ctx, store.PageParams{}, store.ApprovalFilter{Assigned: "mine"})
	require.ErrorIs(t, err, engine.ErrInvalidRequest)
}

// TestConcurrentVotes: three people decide a 2-of-3 node at once; exactly
// one completion, every vote counted once (the run's lock orders them).
func TestConcurrentVotes(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	three := map[string]any{"users": []string{"ada@example.com", "bob@example.com", "dan@example.com"}}
	flow, v := h.askFlow(map[string]any{"assignees": three, "requiredApprovals": 2})
	const runs = 8
	for range runs {
		run := h.startBy(flow, v, "", map[string]any{})
		var wg sync.WaitGroup
		errs := make([]error, 3)
		for i, a := range []*engine.Actor{ada, bob, dan} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				errs[i] = h.decide(run, a, "approve", "")
			}()
		}
		wg.Wait()
		ok, late := 0, 0
		for _, err := range errs {
			switch {
			case err == nil:
				ok++
			case errors.Is(err, engine.ErrInvalidTransition):
				late++ // the node was decided before this vote
			default:
				t.Fatalf("unexpected error: %v", err)
			}
		}
		require.Equal(t, 2, ok, "%v", errs)
		require.Equal(t, 1, late, "%v", errs)
		out := h.askOutput(run)
		require.Len(t, out.Decisions, 2)
		require.NotEqual(t, out.Decisions[0].By, out.Decisions[1].By)
		require.Equal(t, 2, h.decisionRows(run))
		var completions int
		require.NoError(t, h.app.Store.Gorm().Raw(`SELECT count(*) FROM run_events WHERE run_id = ? AND key = 'ask'
			AND type = 'node.status' AND payload->>'status' = 'completed'`, run).Row().Scan(&completions))
		require.Equal(t, 1, completions)
		require.Equal(t, 1, h.dispatchCountWait(run, "next"))
	}
}

// dispatchCountWait waits for a dispatch of key and returns how many came.
func (h *harness) dispatchCountWait(runID, key string) int {
	h.t.Helper()
	h.waitDispatch(runID, key, 1)
	return h.dispatchCount(runID, key)
}

func TestDecisionJourneyActor(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	board := h.createBoard("new", "approved", "nurture")
	flowID := h.createBoardFlow(board, []map[string]any{node("ask", "UX", map[string]any{"prompt": "OK?",
		"entityMovement": movement("approved", "nurture", nil)})}, nil)
	f, err := h.app.Store.GetFlow(context.Background(), flowID)
	require.NoError(t, err)
	var e entityJSON
	require.Equal(t, 201, h.do("POST", "/api/v1/entities", map[string]any{"board_id": board, "type": "lead", "name": "Ada"}, &e))
	r, _, err := h.app.Engine.StartRun(context.Background(), engine.StartRunParams{FlowID: flowID, VersionID: f.VersionID,
		EntityID: &e.ID, Input: json.RawMessage(`{}`)})
	require.NoError(t, err)
	require.NoError(t, h.decide(r.ID, carol, "approve", ""))
	journey, err := h.app.Store.Journey(context.Background(), e.ID)
	require.NoError(t, err)
	last := journey[len(journey)-1]
	require.Equal(t, "approved", *last.ToSectionID)
	require.NotNil(t, last.Actor)
	require.Equal(t, "carol@example.com", *last.Actor)
	require.Nil(t, journey[0].Actor, "created by no one in particular")
}

// tokenFor creates a user (role, groups) and a personal API token acting
// as them, and returns the token.
func (h *harness) tokenFor(email, role string, groups ...string) string {
	h.t.Helper()
	ctx := context.Background()
	u, err := h.app.Store.CreateUser(ctx, store.CreateUserParams{ID: uuid.NewString(), Email: email, Name: email, Role: role,
		Groups: groups, Now: time.Now()})
	require.NoError(h.t, err)
	tok := "stp_" + strings.ReplaceAll(uuid.NewString(), "-", "")
	sum := sha256.Sum256([]byte(tok))
	require.NoError(h.t, h.app.Store.CreateToken(ctx, store.APIToken{ID: uuid.NewString(), UserID: u.ID, Name: "test",
		CreatedAt: time.Now()}, sum[:]))
	return tok
}

// TestDecisionsOverTheAPI: the API decides as the caller — a person not
// assigned is 403 forbidden with nothing changed, a second vote 409, the
// starter of a run refused by separation of duties; the approvals list
// narrows by ?assigned and an approver sees only what they may decide.
func TestDecisionsOverTheAPI(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	ops := h.tokenFor("olga@example.com", "operator")
	annTok := h.tokenFor("ann@example.com", "approver", "finance")
	benTok := h.tokenFor("ben@example.com", "approver", "ops")
	cyTok := h.tokenFor("cy@example.com", "approver")
	admin := h.tokenFor("root@example.com", "admin")
	flowID := h.createFlow([]map[string]any{node("ask", "UX", map[string]any{"prompt": "Pay?",
		"assignees":         map[string]any{"users": []string{"ben@example.com", "olga@example.com"}, "groups": []string{"finance"}},
		"requiredApprovals": 2, "separationOfDuties": true})}, nil)
	other := h.createFlow([]map[string]any{node("ask", "UX", map[string]any{"prompt": "Anyone?"})}, nil)

	var r runJSON
	var started map[string]any
	require.Equal(t, 201, h.doAs(ops, "POST", "/api/v1/flows/"+flowID+"/runs", map[string]any{"input": map[string]any{}}, &started))
	require.Equal(t, "olga@example.com", started["started_by"], "the API records who started the run")
	r.ID = as[string](t, started["id"])
	anyRun := h.startRun(other, map[string]any{})
	var raw map[string]any
	require.Equal(t, 200, h.do("GET", "/api/v1/runs/"+anyRun.ID, nil, &raw))
	require.NotContains(t, raw, "started_by", "the admin token starts runs as no one")

	complete := func(tok, outcome string) (int, string) {
		var e struct {
			Error struct {
				Code    string `json:"code"`
				Message string `json:"message"`
			} `json:"error"`
		}
		code := h.doAs(tok, "POST", "/api/v1/runs/"+r.ID+"/nodes/ask/complete", map[string]any{"outcome": outcome}, &e)
		return code, e.Error.Code + ": " + e.Error.Message
	}
	// Cy is not part of the run: to him it is not there (a 403 told him
	// the run and its step exist).
	code, msg := complete(cyTok, "approve")
	require.Equal(t, 404, code, msg)
	require.Equal(t, "not_found: run "+r.ID+" not found", msg)
	require.Equal(t, 0, h.decisionRows(r.ID), "nothing changed")
	require.Equal(t, "waiting_for_user", h.run(r.ID).Nodes["ask"].Status)

	// The approvals lists.
	type item struct {
		RunID             string            `json:"run_id"`
		Assignees         *engine.Assignees `json:"assignees"`
		RequiredApprovals int               `json:"required_approvals"`
		RejectPolicy      string            `json:"reject_policy"`
		Votes             []engine.Vote     `json:"votes"`
	}
	list := func(tok, assigned string) map[string]item {
		t.Helper()
		var out struct {
			Approvals []item `json:"approvals"`
		}
		path := "/api/v1/approvals"
		if assigned != "" {
			path += "?assigned=" + assigned
		}
		require.Equal(t, 200, h.doAs(tok, "GET", path, nil, &out))
		m := map[string]item{}
		for _, a := range out.Approvals {
			m[a.RunID] = a
		}
		return m
	}
	keys := func(m map[string]item) []string {
		var ks []string
		for k := range m {
			ks = append(ks, k)
		}
		return ks
	}
	require.ElementsMatch(t, []string{r.ID, anyRun.ID}, keys(list(benTok, "me")))
	require.ElementsMatch(t, []string{anyRun.ID}, keys(list(annTok, "me")))
	require.ElementsMatch(t, []string{r.ID}, keys(list(annTok, "groups")))
	require.Empty(t, keys(list(benTok, "groups")), "ops is not assigned")
	require.ElementsMatch(t, []string{anyRun.ID}, keys(list(cyTok, "all")), "an approver sees only what they may decide")
	require.ElementsMatch(t, []string{anyRun.ID}, keys(list(cyTok, "")))
	require.ElementsMatch(t, []string{r.ID, anyRun.ID}, keys(list(admin, "all")))
	it := list(admin, "")[r.ID]
	require.Equal(t, &engine.Assignees{Users: []string{"ben@example.com", "olga@example.com"}, Groups: []string{"finance"}}, it.Assignees)
	require.Equal(t, 2, it.RequiredApprovals)
	require.Equal(t, "any", it.RejectPolicy)
	require.Empty(t, it.Votes)
	require.Nil(t, list(admin, "")[anyRun.ID].Assignees)
	var bad struct {
		Error struct{ Code string } `json:"error"`
	}
	require.Equal(t, 400, h.doAs(admin, "GET", "/api/v1/approvals?assigned=mine", nil, &bad))

	// Olga is assigned, but an operator may not decide (the route's
	// rule), and she started the run.
	code, msg = complete(ops, "approve")
	require.Equal(t, 403, code, msg)

	code, msg = complete(annTok, "approve")
	require.Equal(t, 200, code, msg)
	require.Equal(t, "waiting_for_user", h.run(r.ID).Nodes["ask"].Status, "one of two")
	require.Len(t, list(admin, "")[r.ID].Votes, 1)
	code, msg = complete(annTok, "approve")
	require.Equal(t, 409, code, msg)
	require.Contains(t, msg, "ann@example.com already decided step ask")
	code, msg = complete(benTok, "approve")
	require.Equal(t, 200, code, msg)
	out := h.askOutput(r.ID)
	require.Equal(t, "ben@example.com", out.Decision.By)
	require.Len(t, out.Decisions, 2)
	require.Equal(t, "ann@example.com", out.Decisions[0].By)
}

// TestSeparationOfDutiesOverTheAPI: an admin who started a run may not
// decide its step with separationOfDuties, though an admin may decide any
// other.
func TestSeparationOfDutiesOverTheAPI(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	root := h.tokenFor("root@example.com", "admin")
	flowID := h.createFlow([]map[string]any{node("ask", "UX", map[string]any{"prompt": "Pay?",
		"assignees": map[string]any{"users": []string{"ann@example.com"}}, "separationOfDuties": true})}, nil)
	var started map[string]any
	require.Equal(t, 201, h.doAs(root, "POST", "/api/v1/flows/"+flowID+"/runs", map[string]any{}, &started))
	id := as[string](t, started["id"])
	var e struct {
		Error struct {
			Code    string `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	require.Equal(t, 403, h.doAs(root, "POST", "/api/v1/runs/"+id+"/nodes/ask/complete", map[string]any{"outcome": "approve"}, &e))
	require.Equal(t, "forbidden", e.Error.Code)
	require.Contains(t, e.Error.Message, "separation of duties: root@example.com started run")
	require.Equal(t, 0, h.decisionRows(id))
	// Another admin decides it (an admin may decide any approval).
	other := h.tokenFor("second@example.com", "admin")
	require.Equal(t, 200, h.doAs(other, "POST", "/api/v1/runs/"+id+"/nodes/ask/complete", map[string]any{"outcome": "approve"}, nil))
	require.Equal(t, "second@example.com", h.askOutput(id).Decision.By)
}
