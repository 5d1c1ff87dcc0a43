package app_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
)

// refundForm is the form of TestUXForm: an amount from 0 to 500, a reason
// of three, nothing else.
const refundForm = `{"type": "object", "required": ["amount", "reason"], "additionalProperties": false,
	"properties": {"amount": {"type": "number", "minimum": 0, "maximum": 500}, "reason": {"enum": ["damaged", "late", "other"]},
	"note": {"type": "string"}}}`

// TestUXForm: a UX node's form is listed with its approval; an answer
// that does not fit is a 400 listing every problem, and changes nothing;
// one that fits completes the node with the answer in decision.answer.
// A failing outcome (reject without a reject edge) and a deadline's
// onTimeout outcome are not held to the form.
func TestUXForm(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	var form map[string]any
	require.NoError(t, json.Unmarshal([]byte(refundForm), &form))

	// A form that is not a JSON Schema is refused with the flow.
	bad := map[string]any{"type": "object", "properties": map[string]any{"amount": map[string]any{"minimum": "zero"}}, "required": "amount"}
	code, details := h.refused(422, "POST", "/api/v1/flows", map[string]any{"name": "bad form", "graph": map[string]any{
		"nodes": []map[string]any{node("refund", "UX", map[string]any{"form": bad})}, "edges": []map[string]any{}}})
	require.Equal(t, "invalid_graph", code)
	require.Len(t, details, 2, "%+v", details)
	for _, p := range details {
		require.Equal(t, "invalid_form", p.Code)
		require.Equal(t, "refund", p.NodeID)
	}
	require.Contains(t, byPath(details), "nodes[0].data.form.properties.amount.minimum")
	require.Contains(t, byPath(details), "nodes[0].data.form.required")

	flow := h.createFlow(
		[]map[string]any{node("refund", "UX", map[string]any{"prompt": "Refund?", "form": form}), node("pay", "Condition", nil)},
		[]map[string]any{edge("refund", "pay", nil)})
	// A deadline's outcome completes the node with no answer (null).
	timed := h.createFlow(
		[]map[string]any{node("refund", "UX", map[string]any{"form": form, "timeoutSeconds": 1, "onTimeout": "approve"}), node("pay", "Condition", nil)},
		[]map[string]any{edge("refund", "pay", nil)})
	tr := h.startRun(timed, map[string]any{"order": 8})

	r := h.startRun(flow, map[string]any{"order": 7})
	require.Equal(t, "waiting_for_user", r.Nodes["refund"].Status)

	// The inbox carries the form; an approval without one has none.
	var inbox struct {
		Approvals []map[string]json.RawMessage `json:"approvals"`
	}
	require.Equal(t, 200, h.do("GET", "/api/v1/approvals", nil, &inbox))
	forms := map[string]json.RawMessage{}
	for _, a := range inbox.Approvals {
		var id string
		require.NoError(t, json.Unmarshal(a["run_id"], &id))
		forms[id] = a["form"]
	}
	// As saved, with the order of its properties recorded (x-order).
	var saved map[string]any
	require.NoError(t, json.Unmarshal(forms[r.ID], &saved))
	require.Equal(t, []any{"amount", "note", "reason"}, saved["x-order"])
	delete(saved, "x-order")
	stripped, err := json.Marshal(saved)
	require.NoError(t, err)
	require.JSONEq(t, refundForm, string(stripped))
	plain := h.createFlow([]map[string]any{node("ask", "UX", map[string]any{"prompt": "OK?"})}, nil)
	pr := h.startRun(plain, map[string]any{})
	// A fresh list: decoding into the old one would keep its maps' keys.
	inbox.Approvals = nil
	require.Equal(t, 200, h.do("GET", "/api/v1/approvals", nil, &inbox))
	for _, a := range inbox.Approvals {
		if string(a["run_id"]) == `"`+pr.ID+`"` {
			require.NotContains(t, a, "form", "no form: no field")
		}
	}

	// An answer that does not fit: 400, every problem, nothing changes.
	var before json.RawMessage
	require.Equal(t, 200, h.do("GET", "/api/v1/runs/"+r.ID, nil, &before))
	events, err := h.app.Store.RunEvents(context.Background(), r.ID, 0, 1000)
	require.NoError(t, err)
	complete := "/api/v1/runs/" + r.ID + "/nodes/refund/complete"
	code, details = h.refused(400, "POST", complete, map[string]any{"outcome": "approve",
		"output": map[string]any{"amount": -5, "reason": "bored", "tip": 1}})
	require.Equal(t, "invalid_request", code)
	require.Len(t, details, 3, "%+v", details)
	for _, p := range details {
		require.Equal(t, "form_invalid", p.Code)
		require.Equal(t, "refund", p.NodeID)
	}
	got := byPath(details)
	require.Contains(t, got["$.output"], "additional properties 'tip' not allowed")
	require.Contains(t, got["$.output.amount"], "minimum: got -5, want 0")
	require.Contains(t, got["$.output.reason"], "value must be one of")
	// No answer is null, which the form refuses too (the old body as well).
	_, details = h.refused(400, "POST", complete, map[string]any{"outcome": "approve"})
	require.Equal(t, map[string]string{"$.output": "got null, want object"}, byPath(details))
	_, details = h.refused(400, "POST", complete, map[string]any{"status": "completed", "output": map[string]any{"amount": "20"}})
	require.Len(t, details, 2, "%+v", details)
	var after json.RawMessage
	require.Equal(t, 200, h.do("GET", "/api/v1/runs/"+r.ID, nil, &after))
	require.JSONEq(t, string(before), string(after), "a refused answer changes nothing")
	eventsAfter, err := h.app.Store.RunEvents(context.Background(), r.ID, 0, 1000)
	require.NoError(t, err)
	require.Equal(t, events, eventsAfter, "and records nothing")
	require.Equal(t, "waiting_for_user", h.run(r.ID).Nodes["refund"].Status)

	// An answer that fits completes the node, the answer in its output.
	require.Equal(t, 200, h.do("POST", complete, map[string]any{"outcome": "approve", "comment": "sorry",
		"output": map[string]any{"amount": 20, "reason": "late"}}, nil))
	fin := h.waitRun(r.ID, "completed")
	var out struct {
		Order    int `json:"order"`
		Decision struct {
			Outcome string          `json:"outcome"`
			Answer  json.RawMessage `json:"answer"`
			Comment string          `json:"comment"`
		} `json:"decision"`
	}
	require.NoError(t, json.Unmarshal(fin.Nodes["refund"].Output, &out))
	require.Equal(t, 7, out.Order)
	require.Equal(t, "approve", out.Decision.Outcome)
	require.Equal(t, "sorry", out.Decision.Comment)
	require.JSONEq(t, `{"amount": 20, "reason": "late"}`, string(out.Decision.Answer))
	require.Equal(t, "completed", fin.Nodes["pay"].Status)

	// Reject (no reject edge: it fails the node) keeps no answer, so none
	// is asked for.
	r = h.startRun(flow, map[string]any{"order": 9})
	require.Equal(t, 200, h.do("POST", "/api/v1/runs/"+r.ID+"/nodes/refund/complete", map[string]any{"outcome": "reject", "comment": "no"}, nil))
	fin = h.waitRun(r.ID, "failed")
	require.Equal(t, "rejected: no", *fin.Nodes["refund"].Error)

	// Nobody answered in time: onTimeout approves with a null answer.
	fin = h.waitRun(tr.ID, "completed")
	require.NoError(t, json.Unmarshal(fin.Nodes["refund"].Output, &out))
	require.Equal(t, "approve", out.Decision.Outcome)
	require.JSONEq(t, `null`, string(out.Decision.Answer))
}
