package app_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stitchd/stitchd/engine"
)

// Human tasks over the API (docs/approvals.md): claim, unclaim, reassign
// and delegate a waiting UX node; the form's field order; rejecting
// without the form.

// taskItem is an approval as GET /api/v1/approvals lists it.
type taskItem struct {
	RunID        string            `json:"run_id"`
	Assignees    *engine.Assignees `json:"assignees"`
	ClaimedBy    *string           `json:"claimed_by"`
	ClaimedAt    *time.Time        `json:"claimed_at"`
	Delegate     string            `json:"delegate"`
	Form         json.RawMessage   `json:"form"`
	FormOutcomes []string          `json:"form_outcomes"`
}

// apiErr is the API's error body.
type apiErr struct {
	Error struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// taskCall posts body to …/nodes/ask/<what> of run as tok and returns the
// status and the error code (with its message).
func (h *harness) taskCall(tok, runID, what string, body any) (int, string) {
	h.t.Helper()
	if body == nil {
		body = map[string]any{}
	}
	var e apiErr
	code := h.doAs(tok, "POST", "/api/v1/runs/"+runID+"/nodes/ask/"+what, body, &e)
	return code, e.Error.Code + ": " + e.Error.Message
}

// approvalsOf lists the approvals tok sees (?assigned=assigned), by run.
func (h *harness) approvalsOf(tok, assigned string) map[string]taskItem {
	h.t.Helper()
	var out struct {
		Approvals []taskItem `json:"approvals"`
	}
	path := "/api/v1/approvals"
	if assigned != "" {
		path += "?assigned=" + assigned
	}
	require.Equal(h.t, 200, h.doAs(tok, "GET", path, nil, &out))
	m := map[string]taskItem{}
	for _, a := range out.Approvals {
		m[a.RunID] = a
	}
	return m
}

// auditCount counts the audit entries of action on run runID.
func (h *harness) auditCount(runID, action string) int {
	h.t.Helper()
	var n int
	require.NoError(h.t, h.app.Store.Gorm().Raw(`SELECT count(*) FROM audit_log WHERE target = ? AND action = ?`,
		"run:"+runID, action).Row().Scan(&n))
	return n
}

// TestClaimOverTheAPI: a claim keeps everyone but the claimer (and admins)
// from deciding (409 claimed) and from claiming; unclaiming (the claimer,
// an operator) lets others decide; claims are listed, are events and audit
// entries, and end with the node's attempt.
func TestClaimOverTheAPI(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	ann := h.tokenFor("ann@example.com", "approver", "finance")
	ben := h.tokenFor("ben@example.com", "approver", "finance")
	cy := h.tokenFor("cy@example.com", "approver")
	olga := h.tokenFor("olga@example.com", "operator")
	root := h.tokenFor("root@example.com", "admin")
	flowID, _ := h.askFlow(map[string]any{"assignees": map[string]any{"groups": []string{"finance"}},
		"timeoutSeconds": 60, "onTimeout": "fail"})
	run := h.startRun(flowID, map[string]any{"amount": 5}).ID

	code, msg := h.taskCall(cy, run, "claim", nil)
	require.Equal(t, 404, code, "only those who may decide it claim it; to an approver not part of the run it is not there: %s", msg)
	code, msg = h.taskCall(olga, run, "claim", nil)
	require.Equal(t, 403, code, "an operator decides nothing, so claims nothing: %s", msg)

	var cl struct {
		ClaimedBy string    `json:"claimed_by"`
		ClaimedAt time.Time `json:"claimed_at"`
	}
	require.Equal(t, 200, h.doAs(ann, "POST", "/api/v1/runs/"+run+"/nodes/ask/claim", map[string]any{}, &cl))
	require.Equal(t, "ann@example.com", cl.ClaimedBy)
	require.False(t, cl.ClaimedAt.IsZero())
	code, _ = h.taskCall(ann, run, "claim", nil)
	require.Equal(t, 200, code, "claiming one's own claim again is fine")

	it := h.approvalsOf(root, "")[run]
	require.NotNil(t, it.ClaimedBy)
	require.Equal(t, "ann@example.com", *it.ClaimedBy)
	require.NotNil(t, it.ClaimedAt)
	require.Equal(t, "ann@example.com", *h.approvalsOf(ben, "groups")[run].ClaimedBy, "others see it claimed")

	code, msg = h.taskCall(ben, run, "complete", map[string]any{"outcome": "approve"})
	require.Equal(t, 409, code)
	require.Equal(t, "claimed: claimed: step ask of run "+run+" is claimed by ann@example.com", msg)
	require.Equal(t, 0, h.decisionRows(run), "nothing changed")
	code, msg = h.taskCall(ben, run, "claim", nil)
	require.Equal(t, 409, code)
	require.True(t, strings.HasPrefix(msg, "claimed: "), msg)
	code, msg = h.taskCall(ben, run, "unclaim", nil)
	require.Equal(t, 403, code, "only the claimer, an operator or an admin unclaims: %s", msg)

	require.Equal(t, 200, func() int { c, _ := h.taskCall(ann, run, "unclaim", nil); return c }())
	require.Nil(t, h.approvalsOf(root, "")[run].ClaimedBy)
	code, msg = h.taskCall(ben, run, "complete", map[string]any{"outcome": "approve"})
	require.Equal(t, 200, code, msg)
	require.Equal(t, "ben@example.com", h.askOutput(run).Decision.By)
	require.Equal(t, 1, h.eventCount(run, engine.EventNodeClaimed))
	require.Equal(t, 1, h.eventCount(run, engine.EventNodeUnclaimed))
	require.Equal(t, 2, h.auditCount(run, "POST /api/v1/runs/:id/nodes/:key/claim"), "each successful claim is audited")
	require.Equal(t, 1, h.auditCount(run, "POST /api/v1/runs/:id/nodes/:key/unclaim"))
	code, _ = h.taskCall(ann, run, "claim", nil)
	require.Equal(t, 409, code, "a decided node is no task")

	// An operator unclaims; an admin decides over a claim.
	run2 := h.startRun(flowID, map[string]any{}).ID
	code, _ = h.taskCall(ann, run2, "claim", nil)
	require.Equal(t, 200, code)
	code, msg = h.taskCall(olga, run2, "unclaim", nil)
	require.Equal(t, 200, code, msg)
	code, _ = h.taskCall(ben, run2, "claim", nil)
	require.Equal(t, 200, code)
	code, msg = h.taskCall(root, run2, "complete", map[string]any{"outcome": "approve"})
	require.Equal(t, 200, code, "an admin decides a claimed task: %s", msg)

	// A claim ends with its attempt: timed out and retried, the task is
	// free again.
	run3 := h.startRun(flowID, map[string]any{}).ID
	code, _ = h.taskCall(ann, run3, "claim", nil)
	require.Equal(t, 200, code)
	h.advance(61 * time.Second)
	h.waitRun(run3, "failed")
	require.Equal(t, 200, h.do("POST", "/api/v1/runs/"+run3+"/nodes/ask/retry", nil, nil))
	h.waitNode(run3, "ask", "waiting_for_user")
	require.Nil(t, h.approvalsOf(root, "")[run3].ClaimedBy, "the new attempt is not claimed")
	code, msg = h.taskCall(ben, run3, "complete", map[string]any{"outcome": "approve"})
	require.Equal(t, 200, code, msg)

	// A cancelled run's task is nobody's to claim.
	run4 := h.startRun(flowID, map[string]any{}).ID
	code, _ = h.taskCall(ann, run4, "claim", nil)
	require.Equal(t, 200, code)
	require.Equal(t, 200, h.do("POST", "/api/v1/runs/"+run4+"/cancel", nil, nil))
	code, _ = h.taskCall(ann, run4, "claim", nil)
	require.Equal(t, 409, code)
}

// TestClaimNofM: at a node needing two approvals, the claimer's vote ends
// the claim, so that the next person can vote.
func TestClaimNofM(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	ann := h.tokenFor("ann@example.com", "approver", "finance")
	ben := h.tokenFor("ben@example.com", "approver", "finance")
	flowID, _ := h.askFlow(map[string]any{"assignees": map[string]any{"groups": []string{"finance"}}, "requiredApprovals": 2})
	run := h.startRun(flowID, map[string]any{}).ID
	code, _ := h.taskCall(ann, run, "claim", nil)
	require.Equal(t, 200, code)
	code, _ = h.taskCall(ben, run, "complete", map[string]any{"outcome": "approve"})
	require.Equal(t, 409, code)
	code, msg := h.taskCall(ann, run, "complete", map[string]any{"outcome": "approve"})
	require.Equal(t, 200, code, msg)
	require.Nil(t, h.approvalsOf(ann, "")[run].ClaimedBy, "the claimer voted: the claim has served")
	code, msg = h.taskCall(ben, run, "complete", map[string]any{"outcome": "approve"})
	require.Equal(t, 200, code, msg)
	require.Len(t, h.askOutput(run).Decisions, 2)
}

// TestReassignOverTheAPI: an operator (or the claimer) reassigns a waiting
// task: it leaves the old group's inbox for the new assignee's, its claim
// ends, and it is an event and an audit entry.
func TestReassignOverTheAPI(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	ann := h.tokenFor("ann@example.com", "approver", "finance")
	ben := h.tokenFor("ben@example.com", "approver", "finance")
	cy := h.tokenFor("cy@example.com", "approver")
	olga := h.tokenFor("olga@example.com", "operator")
	flowID, _ := h.askFlow(map[string]any{"assignees": map[string]any{"groups": []string{"finance"}}})
	run := h.startRun(flowID, map[string]any{}).ID
	require.Contains(t, h.approvalsOf(ann, "groups"), run)
	require.NotContains(t, h.approvalsOf(cy, "me"), run)

	code, msg := h.taskCall(ben, run, "reassign", map[string]any{"users": []string{"cy@example.com"}})
	require.Equal(t, 403, code, "an approver who did not claim it does not reassign it: %s", msg)
	code, msg = h.taskCall(olga, run, "reassign", map[string]any{})
	require.Equal(t, 400, code, "naming no one: %s", msg)
	code, msg = h.taskCall(olga, run, "reassign", map[string]any{"users": []string{"not an email"}})
	require.Equal(t, 400, code, msg)

	code, _ = h.taskCall(ann, run, "claim", nil)
	require.Equal(t, 200, code)
	var out struct {
		Assignees engine.Assignees `json:"assignees"`
	}
	require.Equal(t, 200, h.doAs(olga, "POST", "/api/v1/runs/"+run+"/nodes/ask/reassign",
		map[string]any{"users": []string{"Cy@Example.com"}, "comment": "ann is away"}, &out))
	require.Equal(t, engine.Assignees{Users: []string{"cy@example.com"}, Groups: []string{}}, out.Assignees)

	require.Contains(t, h.approvalsOf(cy, "me"), run, "the new assignee has it")
	it := h.approvalsOf(cy, "me")[run]
	require.Nil(t, it.ClaimedBy, "reassigning ends the claim")
	require.Equal(t, &engine.Assignees{Users: []string{"cy@example.com"}, Groups: []string{}}, it.Assignees)
	require.NotContains(t, h.approvalsOf(ann, "groups"), run, "the old group no longer has it")
	require.NotContains(t, h.approvalsOf(ben, ""), run)
	code, _ = h.taskCall(ann, run, "complete", map[string]any{"outcome": "approve"})
	require.Equal(t, 404, code, "reassigned away, ann is no longer part of the run")
	require.Equal(t, 404, h.doAs(ann, "GET", "/api/v1/runs/"+run, nil, nil), "nor reads it")
	require.Equal(t, 1, h.eventCount(run, engine.EventNodeReassigned))
	require.Equal(t, 1, h.auditCount(run, "POST /api/v1/runs/:id/nodes/:key/reassign"))

	// The claimer reassigns, to a group.
	code, _ = h.taskCall(cy, run, "claim", nil)
	require.Equal(t, 200, code)
	code, msg = h.taskCall(cy, run, "reassign", map[string]any{"groups": []string{"finance"}, "comment": "back to you"})
	require.Equal(t, 200, code, msg)
	code, msg = h.taskCall(ben, run, "complete", map[string]any{"outcome": "approve"})
	require.Equal(t, 200, code, msg)
}

// TestDelegateOverTheAPI: the claimer lets another person decide on their
// behalf; the decision records by the delegate, for the claimer.
func TestDelegateOverTheAPI(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	ann := h.tokenFor("ann@example.com", "approver", "finance")
	ben := h.tokenFor("ben@example.com", "approver", "finance")
	dee := h.tokenFor("dee@example.com", "approver")
	h.tokenFor("vic@example.com", "viewer")
	flowID, _ := h.askFlow(map[string]any{"assignees": map[string]any{"groups": []string{"finance"}}})
	run := h.startRun(flowID, map[string]any{}).ID

	code, msg := h.taskCall(ann, run, "delegate", map[string]any{"user": "dee@example.com"})
	require.Equal(t, 403, code, "only a claimer delegates: %s", msg)
	code, _ = h.taskCall(ann, run, "claim", nil)
	require.Equal(t, 200, code)
	code, msg = h.taskCall(ben, run, "delegate", map[string]any{"user": "dee@example.com"})
	require.Equal(t, 403, code, msg)
	code, msg = h.taskCall(ann, run, "delegate", map[string]any{"user": "nobody@example.com"})
	require.Equal(t, 400, code, msg)
	code, msg = h.taskCall(ann, run, "delegate", map[string]any{"user": "vic@example.com"})
	require.Equal(t, 400, code, "a viewer decides nothing: %s", msg)
	code, _ = h.taskCall(dee, run, "complete", map[string]any{"outcome": "approve"})
	require.Equal(t, 404, code, "not delegated yet: not part of the run")

	var cl struct {
		ClaimedBy string `json:"claimed_by"`
		Delegate  string `json:"delegate"`
	}
	require.Equal(t, 200, h.doAs(ann, "POST", "/api/v1/runs/"+run+"/nodes/ask/delegate", map[string]any{"user": "Dee@example.com"}, &cl))
	require.Equal(t, "ann@example.com", cl.ClaimedBy)
	require.Equal(t, "dee@example.com", cl.Delegate)
	require.Equal(t, "dee@example.com", h.approvalsOf(ann, "")[run].Delegate)

	code, _ = h.taskCall(ben, run, "complete", map[string]any{"outcome": "approve"})
	require.Equal(t, 409, code, "still claimed by ann")
	code, msg = h.taskCall(dee, run, "complete", map[string]any{"outcome": "approve", "comment": "for ann"})
	require.Equal(t, 200, code, "the delegate decides though not assigned: %s", msg)
	var out struct {
		Decision struct {
			By  string `json:"by"`
			For string `json:"for"`
		} `json:"decision"`
	}
	require.NoError(t, json.Unmarshal(h.run(run).Nodes["ask"].Output, &out))
	require.Equal(t, "dee@example.com", out.Decision.By)
	require.Equal(t, "ann@example.com", out.Decision.For)
	require.Equal(t, 1, h.eventCount(run, engine.EventNodeDelegated))
	require.Equal(t, 1, h.eventCount(run, engine.EventDecidedFor))
	var payload string
	require.NoError(t, h.app.Store.Gorm().Raw(`SELECT payload::text FROM run_events WHERE run_id = ? AND type = ?`,
		run, engine.EventDecidedFor).Row().Scan(&payload))
	require.Contains(t, payload, `"for": "ann@example.com"`)
	require.Equal(t, 1, h.auditCount(run, "POST /api/v1/runs/:id/nodes/:key/delegate"))
}

// TestFormOrderRoundTrip: a form's properties come back from the flows API
// and the inbox in the order saved, also after saving what was read.
func TestFormOrderRoundTrip(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	// Written by hand: a Go map would sort the keys.
	graph := `{"nodes": [{"id": "ask", "type": "UX", "position": {"x": 0, "y": 0}, "data": {"prompt": "Pay?",
		"form": {"type": "object", "properties": {"zeta": {"type": "string"}, "amount": {"type": "number"},
		"b": {"type": "object", "properties": {"second": {"type": "string"}, "first": {"type": "string"}}}}}}}], "edges": []}`
	var created flowResp
	require.Equal(t, 201, h.do("POST", "/api/v1/flows", map[string]any{"name": "order", "graph": json.RawMessage(graph)}, &created))
	inOrder := func(what string, raw []byte) {
		t.Helper()
		s := string(raw)
		z, a, b := strings.Index(s, `"zeta"`), strings.Index(s, `"amount"`), strings.Index(s, `"b":`)
		require.True(t, z >= 0 && z < a && a < b, "%s: properties out of order: %s", what, s)
		require.Less(t, strings.Index(s, `"second":`), strings.Index(s, `"first":`), "%s: nested properties out of order: %s", what, s)
	}
	var flow struct {
		Graph json.RawMessage `json:"graph"`
	}
	require.Equal(t, 200, h.do("GET", "/api/v1/flows/"+created.ID, nil, &flow))
	inOrder("GET /flows/{id}", flow.Graph)
	require.Contains(t, string(flow.Graph), `"x-order":["zeta","amount","b"]`)

	// Saved again as read (the editor's round trip): the same order.
	require.Equal(t, 200, h.do("PUT", "/api/v1/flows/"+created.ID, map[string]any{"graph": flow.Graph}, nil))
	require.Equal(t, 200, h.do("GET", "/api/v1/flows/"+created.ID, nil, &flow))
	inOrder("after a second save", flow.Graph)
	var v struct {
		Graph json.RawMessage `json:"graph"`
	}
	require.Equal(t, 200, h.do("GET", "/api/v1/flows/"+created.ID+"/versions/1", nil, &v))
	inOrder("GET /flows/{id}/versions/1", v.Graph)

	// Reordered by the editor: the new order is kept.
	moved := strings.Replace(string(flow.Graph), `"zeta":{"type":"string"},`, "", 1)
	moved = strings.Replace(moved, `"b":{`, `"zeta":{"type":"string"},"b":{`, 1)
	require.Equal(t, 200, h.do("PUT", "/api/v1/flows/"+created.ID, map[string]any{"graph": json.RawMessage(moved)}, nil))
	require.Equal(t, 200, h.do("GET", "/api/v1/flows/"+created.ID, nil, &flow))
	s := string(flow.Graph)
	require.Less(t, strings.Index(s, `"amount"`), strings.Index(s, `"zeta"`), "%s", s)
	require.Contains(t, s, `"x-order":["amount","zeta","b"]`)

	// The inbox.
	run := h.startRun(created.ID, map[string]any{}).ID
	h.waitNode(run, "ask", "waiting_for_user")
	form := h.approvalsOf(token, "")[run].Form
	require.Less(t, strings.Index(string(form), `"amount"`), strings.Index(string(form), `"zeta"`), "%s", form)
	require.Less(t, strings.Index(string(form), `"second":`), strings.Index(string(form), `"first":`), "%s", form)
}

// TestRejectWithoutForm: the form's required fields apply to the outcomes
// it names (data.formOutcomes; default all but reject): rejecting needs no
// form filled in.
func TestRejectWithoutForm(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	form := map[string]any{"type": "object", "required": []string{"amount"},
		"properties": map[string]any{"amount": map[string]any{"type": "number"}}}
	mk := func(data map[string]any) string {
		data["prompt"], data["form"] = "Pay?", form
		return h.createFlow([]map[string]any{node("ask", "UX", data), wnode(h, "pay"), wnode(h, "tell")},
			[]map[string]any{redge("ask", "pay", map[string]any{"outcome": "approve"}),
				redge("ask", "tell", map[string]any{"outcome": "reject"})})
	}
	flow := mk(map[string]any{})
	run := h.startRun(flow, map[string]any{}).ID
	code, msg := h.taskCall(token, run, "complete", map[string]any{"outcome": "approve", "output": map[string]any{}})
	require.Equal(t, 400, code, "approving needs the form: %s", msg)
	require.Equal(t, []string{"approve"}, h.approvalsOf(token, "")[run].FormOutcomes)
	code, msg = h.taskCall(token, run, "complete", map[string]any{"outcome": "reject", "comment": "no budget",
		"output": map[string]any{}})
	require.Equal(t, 200, code, "rejecting needs no form: %s", msg)
	require.Equal(t, "completed", h.run(run).Nodes["ask"].Status)
	h.waitDispatch(run, "tell", 1)

	// formOutcomes naming reject: it needs the form too.
	flow = mk(map[string]any{"formOutcomes": []string{"approve", "reject"}})
	run = h.startRun(flow, map[string]any{}).ID
	code, msg = h.taskCall(token, run, "complete", map[string]any{"outcome": "reject"})
	require.Equal(t, 400, code, msg)
	code, msg = h.taskCall(token, run, "complete", map[string]any{"outcome": "reject", "output": map[string]any{"amount": 1}})
	require.Equal(t, 200, code, msg)

	// formOutcomes must name the node's outcomes.
	_, details := h.refused(422, "POST", "/api/v1/flows", map[string]any{"name": "bad", "graph": map[string]any{
		"nodes": []map[string]any{node("ask", "UX", map[string]any{"form": form, "formOutcomes": []string{"maybe"}})},
		"edges": []map[string]any{}}})
	require.Contains(t, byPath(details), `nodes[0].data.formOutcomes["0"]`)
}

// TestEscalation: data.escalation reassigns a waiting node as each
// deadline passes (on a moved clock), ending its claim; reminders and the
// timeout keep working.
func TestEscalation(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	ann := h.tokenFor("ann@example.com", "approver", "finance")
	lee := h.tokenFor("lee@example.com", "approver", "finance-leads")
	boss := h.tokenFor("boss@example.com", "approver")
	flowID, _ := h.askFlow(map[string]any{"assignees": map[string]any{"groups": []string{"finance"}},
		"remindAfterSeconds": 30, "timeoutSeconds": 7200, "onTimeout": "approve",
		"escalation": []map[string]any{
			{"afterSeconds": 60, "assignees": map[string]any{"groups": []string{"finance-leads"}}},
			{"afterSeconds": 3600, "assignees": map[string]any{"users": []string{"boss@example.com"}}}}})
	run := h.startRun(flowID, map[string]any{}).ID
	require.Contains(t, h.approvalsOf(ann, "groups"), run)
	code, _ := h.taskCall(ann, run, "claim", nil)
	require.Equal(t, 200, code)
	h.advance(30 * time.Second)
	h.sweeps(2)
	require.Contains(t, h.approvalsOf(ann, "groups"), run, "not yet")

	h.advance(31 * time.Second)
	h.eventually(func() bool { _, ok := h.approvalsOf(lee, "groups")[run]; return ok }, "escalated to finance-leads")
	require.NotContains(t, h.approvalsOf(ann, "groups"), run, "finance no longer has it")
	it := h.approvalsOf(lee, "groups")[run]
	require.Nil(t, it.ClaimedBy, "escalating ends the claim")
	require.Equal(t, &engine.Assignees{Users: []string{}, Groups: []string{"finance-leads"}}, it.Assignees)
	require.Equal(t, 1, h.eventCount(run, engine.EventNodeEscalated))
	require.Positive(t, h.eventCount(run, "node.reminder"), "reminders keep working")

	h.advance(3540 * time.Second)
	h.eventually(func() bool { _, ok := h.approvalsOf(boss, "me")[run]; return ok }, "escalated to boss")
	require.NotContains(t, h.approvalsOf(lee, "groups"), run)
	require.Equal(t, "waiting_for_user", h.run(run).Nodes["ask"].Status)
	require.Equal(t, 2, h.eventCount(run, engine.EventNodeEscalated))
	h.advance(2 * time.Hour)
	h.sweeps(2)
	require.Equal(t, 2, h.eventCount(run, engine.EventNodeEscalated), "no escalation left")
	require.Equal(t, "timeout", h.askOutput(run).Decision.By, "the timeout still answers")

	// Checked at save.
	_, details := h.refused(422, "POST", "/api/v1/flows", map[string]any{"name": "bad", "graph": map[string]any{
		"nodes": []map[string]any{node("ask", "UX", map[string]any{"escalation": []map[string]any{
			{"afterSeconds": 60, "assignees": map[string]any{"groups": []string{"a"}}},
			{"afterSeconds": 30, "assignees": "input.x"}}})},
		"edges": []map[string]any{}}})
	got := byPath(details)
	require.Contains(t, got, `nodes[0].data.escalation["1"].afterSeconds`, "%v", got)
	require.Contains(t, got, `nodes[0].data.escalation["1"].assignees`, "%v", got)
}
