package app_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stitchd/stitchd/engine"
	"github.com/stitchd/stitchd/store"
)

// A task with its context (issue 45): what the approver decides by — the
// summary, the run's input, the entity and its section, a title — the
// form's comment as the decision's comment, the live inbox's mark moving
// on claims and reassignments, journey entries for reassignments,
// delegations and escalations, audit entries in business language, and
// the task page.

// taskContext is an approval with its context, as GET /api/v1/approvals
// lists it.
type taskContext struct {
	RunID    string `json:"run_id"`
	Title    string `json:"title"`
	FlowName string `json:"flow_name"`
	Summary  []struct {
		Label string          `json:"label"`
		Path  string          `json:"path"`
		Value json.RawMessage `json:"value"`
	} `json:"summary"`
	RunInput map[string]any `json:"run_input"`
	Entity   *struct {
		ID        string `json:"id"`
		Name      string `json:"name"`
		Type      string `json:"type"`
		Section   string `json:"section"`
		SectionID string `json:"section_id"`
	} `json:"entity"`
	FormComment  bool      `json:"form_comment"`
	WaitingSince time.Time `json:"waiting_since"`
	Escalation   *struct {
		Steps                 int               `json:"steps"`
		Step                  int               `json:"step"`
		EscalatedTo           *engine.Assignees `json:"escalated_to"`
		EscalatedAfterSeconds *int              `json:"escalated_after_seconds"`
		NextAt                *time.Time        `json:"next_at"`
		NextTo                *engine.Assignees `json:"next_to"`
	} `json:"escalation"`
	ClaimedBy *string `json:"claimed_by"`
}

func (h *harness) taskContexts(tok string) map[string]taskContext {
	h.t.Helper()
	var out struct {
		Approvals []taskContext `json:"approvals"`
	}
	require.Equal(h.t, 200, h.doAs(tok, "GET", "/api/v1/approvals", nil, &out))
	m := map[string]taskContext{}
	for _, a := range out.Approvals {
		m[a.RunID] = a
	}
	return m
}

// auditSummaries lists the audit sentences of run runID, oldest first.
func (h *harness) auditSummaries(runID string) []string {
	h.t.Helper()
	var out []string
	require.NoError(h.t, h.app.Store.Gorm().Raw(`SELECT coalesce(summary, '') FROM audit_log WHERE target = ? ORDER BY id`,
		"run:"+runID).Scan(&out).Error)
	return out
}

// journeyKinds lists the kinds of an entity's journey entries of run
// runID, with their actor and details.
func (h *harness) runJourney(entityID, runID string) []engine.JourneyEvent {
	h.t.Helper()
	all, err := h.app.Store.Journey(context.Background(), entityID)
	require.NoError(h.t, err)
	var out []engine.JourneyEvent
	for _, j := range all {
		if j.RunID != nil && *j.RunID == runID {
			out = append(out, j)
		}
	}
	return out
}

func shortRunID(id string) string { return id[:4] + "…" + id[len(id)-6:] }

func TestTaskContext(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	ann := h.tokenFor("ann@example.com", "approver", "finance")
	ben := h.tokenFor("ben@example.com", "approver", "finance")
	cy := h.tokenFor("cy@example.com", "approver")
	lee := h.tokenFor("lee@example.com", "approver", "finance-leads")
	root := h.tokenFor("root@example.com", "admin")

	board := h.createBoard("submitted", "approved")
	form := map[string]any{"type": "object", "required": []string{"comment"}, "properties": map[string]any{
		"comment":     map[string]any{"type": "string", "minLength": 1, "title": "Comment"},
		"cost_center": map[string]any{"type": "string", "title": "Cost center"}}}
	flowID := h.createBoardFlow(board, []map[string]any{
		node("ask", "UX", map[string]any{"label": "Finance approval", "prompt": "Buy it?",
			"assignees": map[string]any{"groups": []string{"finance"}},
			"summary": []any{map[string]any{"label": "Requester", "path": "requester"}, "amount",
				map[string]any{"label": "Item", "path": "run.input.item"}},
			"form": form,
			"escalation": []map[string]any{
				{"afterSeconds": 3600, "assignees": map[string]any{"groups": []string{"finance-leads"}}}},
			"entityMovement": map[string]any{"onOutcome": map[string]any{"approve": map[string]any{"targetSectionId": "approved"}}}}),
		wnode(h, "next")},
		[]map[string]any{redge("ask", "next", map[string]any{"outcome": "approve"})})
	newEntity := func(name string) string {
		var e entityJSON
		require.Equal(t, 201, h.do("POST", "/api/v1/entities", map[string]any{"board_id": board, "type": "purchase", "name": name}, &e))
		return e.ID
	}
	start := func(entityID string, input map[string]any) string {
		var r runJSON
		require.Equal(t, 201, h.do("POST", "/api/v1/flows/"+flowID+"/runs", map[string]any{"entity_id": entityID, "input": input}, &r))
		h.waitNode(r.ID, "ask", "waiting_for_user")
		return r.ID
	}
	laptop := newEntity("Laptop for Ada")
	run := start(laptop, map[string]any{"requester": "ada@example.com", "item": "Laptop", "amount": 1200})

	// The context: summary, run input, entity and its section, a title.
	it, ok := h.taskContexts(ann)[run]
	require.True(t, ok)
	require.Equal(t, "Laptop for Ada · Finance approval", it.Title)
	require.Equal(t, "board flow", it.FlowName)
	require.Len(t, it.Summary, 3)
	require.Equal(t, "Item", it.Summary[2].Label)
	require.JSONEq(t, `"Laptop"`, string(it.Summary[2].Value), "read from the run's input")
	require.Equal(t, "Requester", it.Summary[0].Label)
	require.JSONEq(t, `"ada@example.com"`, string(it.Summary[0].Value))
	require.Equal(t, "amount", it.Summary[1].Label, "a path without a label is its own label")
	require.JSONEq(t, `1200`, string(it.Summary[1].Value))
	require.Equal(t, map[string]any{"requester": "ada@example.com", "item": "Laptop", "amount": float64(1200)}, it.RunInput)
	require.NotNil(t, it.Entity)
	require.Equal(t, laptop, it.Entity.ID)
	require.Equal(t, "Laptop for Ada", it.Entity.Name)
	require.Equal(t, "purchase", it.Entity.Type)
	require.Equal(t, "submitted", it.Entity.Section)
	require.Equal(t, "submitted", it.Entity.SectionID)
	require.True(t, it.FormComment, "the form's comment is the decision's comment")
	require.NotNil(t, it.Escalation)
	require.Equal(t, 1, it.Escalation.Steps)
	require.Zero(t, it.Escalation.Step)
	require.Nil(t, it.Escalation.EscalatedTo)
	require.Equal(t, []string{"finance-leads"}, it.Escalation.NextTo.Groups)
	require.NotNil(t, it.Escalation.NextAt)
	require.WithinDuration(t, it.WaitingSince.Add(time.Hour), *it.Escalation.NextAt, 2*time.Second)

	// The live inbox's mark moves on a claim, an unclaim and a
	// reassignment, none of which changes the count.
	ctx := context.Background()
	mark := func() string {
		_, m, err := h.app.Store.ApprovalsMark(ctx, store.ApprovalFilter{Assigned: store.AssignedAll})
		require.NoError(t, err)
		return m
	}
	m0 := mark()
	code, msg := h.taskCall(ann, run, "claim", nil)
	require.Equal(t, 200, code, msg)
	m1 := mark()
	require.NotEqual(t, m0, m1, "a claim moves the mark")
	code, msg = h.taskCall(ann, run, "unclaim", nil)
	require.Equal(t, 200, code, msg)
	m2 := mark()
	require.NotEqual(t, m1, m2, "an unclaim moves the mark")
	code, msg = h.taskCall(ann, run, "claim", nil)
	require.Equal(t, 200, code, msg)

	// Reassigned by its claimer to Ben, who claims it and delegates it
	// to Cy: each a journey entry of the entity, which stays where it is.
	m3 := mark()
	code, msg = h.taskCall(ann, run, "reassign", map[string]any{"users": []string{"ben@example.com"}, "comment": "Ben knows this supplier"})
	require.Equal(t, 200, code, msg)
	require.NotEqual(t, m3, mark(), "a reassignment moves the mark")
	code, msg = h.taskCall(ben, run, "claim", nil)
	require.Equal(t, 200, code, msg)
	code, msg = h.taskCall(ben, run, "delegate", map[string]any{"user": "cy@example.com"})
	require.Equal(t, 200, code, msg)
	require.Contains(t, h.approvalsOf(cy, "me"), run, "a delegate finds the task under assigned to me")
	js := h.runJourney(laptop, run)
	var kinds []string
	for _, j := range js {
		kinds = append(kinds, j.Kind)
	}
	require.Equal(t, []string{"run_started", "reassigned", "delegated"}, kinds)
	re, de := js[1], js[2]
	require.Equal(t, "ann@example.com", *re.Actor)
	require.Equal(t, "Ben knows this supplier", *re.Comment)
	require.JSONEq(t, `{"assignees": {"users": ["ben@example.com"], "groups": []}}`, string(re.Details))
	require.Equal(t, "submitted", *re.ToSectionID, "the entity stays in its section")
	require.Equal(t, "ask", *re.NodeKey)
	require.Equal(t, "ben@example.com", *de.Actor)
	require.JSONEq(t, `{"to": "cy@example.com"}`, string(de.Details))
	require.Equal(t, "submitted", *h.entity(laptop).SectionID)

	// One comment: the form's comment field is decision.comment.
	code, msg = h.taskCall(cy, run, "complete", map[string]any{"outcome": "approve",
		"output": map[string]any{"comment": "Within budget", "cost_center": "CC-7"}})
	require.Equal(t, 200, code, msg)
	out := h.askOutput(run)
	require.Equal(t, "Within budget", out.Decision.Comment)
	require.JSONEq(t, `{"comment": "Within budget", "cost_center": "CC-7"}`, string(out.Decision.Answer))
	require.Equal(t, "approved", *h.entity(laptop).SectionID)

	// The audit trail in business language.
	short := shortRunID(run)
	said := h.auditSummaries(run)
	require.Equal(t, "admin started a run — run "+short, said[0], "the harness's admin token started it")
	require.Equal(t, []string{
		"ann@example.com claimed Finance approval — run " + short,
		"ann@example.com unclaimed Finance approval — run " + short,
		"ann@example.com claimed Finance approval — run " + short,
		"ann@example.com reassigned Finance approval to ben@example.com — run " + short,
		"ben@example.com claimed Finance approval — run " + short,
		"ben@example.com delegated Finance approval to cy@example.com — run " + short,
		"cy@example.com approved Finance approval — run " + short,
	}, said[1:])

	// The task page: for those who may read the run — Ben, assigned to it;
	// not Lee, who is not part of it.
	var task struct {
		Label    string          `json:"label"`
		Status   string          `json:"status"`
		FlowName string          `json:"flow_name"`
		Approval json.RawMessage `json:"approval"`
		RunInput map[string]any  `json:"run_input"`
		Entity   map[string]any  `json:"entity"`
		Graph    struct {
			Nodes []struct {
				ID   string         `json:"id"`
				Data map[string]any `json:"data"`
			} `json:"nodes"`
			Edges []map[string]any `json:"edges"`
		} `json:"graph"`
		History []struct {
			Type    string         `json:"type"`
			Payload map[string]any `json:"payload"`
		} `json:"history"`
		Decisions []struct {
			By      string `json:"by"`
			For     string `json:"for"`
			Outcome string `json:"outcome"`
			Comment string `json:"comment"`
			Attempt int    `json:"attempt"`
		} `json:"decisions"`
		Journey []engine.JourneyEvent `json:"journey"`
	}
	require.Equal(t, 404, h.doAs(lee, "GET", "/api/v1/runs/"+run+"/nodes/ask/task", nil, nil))
	require.Equal(t, 200, h.doAs(ben, "GET", "/api/v1/runs/"+run+"/nodes/ask/task", nil, &task))
	require.Equal(t, "Finance approval", task.Label)
	require.Equal(t, "completed", task.Status)
	require.JSONEq(t, `null`, string(task.Approval), "decided: no longer an approval")
	require.Equal(t, "Laptop", task.RunInput["item"])
	require.Equal(t, "Laptop for Ada", task.Entity["name"])
	require.Len(t, task.Graph.Nodes, 2)
	require.Equal(t, map[string]any{"label": "Finance approval", "prompt": "Buy it?"}, task.Graph.Nodes[0].Data,
		"labels, not settings")
	require.Len(t, task.Graph.Edges, 1)
	var types []string
	for _, e := range task.History {
		if e.Type != engine.EventNodeStatus {
			types = append(types, e.Type)
		}
	}
	require.Equal(t, []string{"node.claimed", "node.unclaimed", "node.claimed", "node.reassigned", "node.claimed",
		"node.delegated", "approval.decided_for"}, types)
	require.Len(t, task.Decisions, 1)
	require.Equal(t, "cy@example.com", task.Decisions[0].By)
	require.Equal(t, "ben@example.com", task.Decisions[0].For)
	require.Equal(t, "Within budget", task.Decisions[0].Comment)
	require.Len(t, task.Journey, 4, "run started, reassigned, delegated, moved")

	// Escalation on a moved clock: a journey entry, and the card says to
	// whom and after how long.
	chair := newEntity("Chair for Bob")
	run2 := start(chair, map[string]any{"requester": "bob@example.com", "item": "Chair", "amount": 90})
	h.advance(3601 * time.Second)
	h.eventually(func() bool { _, ok := h.taskContexts(lee)[run2]; return ok }, "escalated to finance-leads")
	it = h.taskContexts(root)[run2]
	require.Equal(t, 1, it.Escalation.Step)
	require.Equal(t, []string{"finance-leads"}, it.Escalation.EscalatedTo.Groups)
	require.Equal(t, 3600, *it.Escalation.EscalatedAfterSeconds)
	require.Nil(t, it.Escalation.NextAt, "no step left")
	js = h.runJourney(chair, run2)
	require.Equal(t, engine.JourneyEscalated, js[len(js)-1].Kind)
	require.JSONEq(t, `{"assignees": {"users": [], "groups": ["finance-leads"]}, "after_seconds": 3600}`, string(js[len(js)-1].Details))

	// Rejecting needs no form, and the comment beside it is the
	// decision's.
	require.Equal(t, 200, h.doAs(lee, "POST", "/api/v1/runs/"+run2+"/nodes/ask/complete",
		map[string]any{"outcome": "reject", "comment": "Not this quarter"}, nil))
	require.Equal(t, "lee@example.com rejected Finance approval — run "+shortRunID(run2), h.auditSummaries(run2)[len(h.auditSummaries(run2))-1])
}
