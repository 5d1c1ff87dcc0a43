package app_test

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// saveGraph saves a new version of flow.
func (h *harness) saveGraph(flow string, nodes, edges []map[string]any) {
	h.t.Helper()
	if edges == nil {
		edges = []map[string]any{}
	}
	var out map[string]any
	require.Equal(h.t, 200, h.do("PUT", "/api/v1/flows/"+flow, map[string]any{"graph": map[string]any{"nodes": nodes, "edges": edges}}, &out),
		"save: %v", out)
}

func (h *harness) migrate(runID string, version int) (int, map[string]any) {
	h.t.Helper()
	var out map[string]any
	code := h.do("POST", "/api/v1/runs/"+runID+"/migrate", map[string]any{"version": version}, &out)
	return code, out
}

func TestMigrateARunToANewVersion(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	flow := h.createFlow([]map[string]any{wnode(h, "a"), node("ask", "UX", nil)}, []map[string]any{edge("a", "ask", nil)})
	r := h.startRun(flow, map[string]any{"x": 1})
	h.complete(h.waitDispatch(r.ID, "a", 1), `{"x": 2}`)
	h.waitNode(r.ID, "ask", "waiting_for_user")

	// v2 adds a step after a (ready at once) and one after ask.
	h.saveGraph(flow, []map[string]any{wnode(h, "a"), node("ask", "UX", nil),
		node("note", "Transform", map[string]any{"expression": `{"noted": input.x}`}),
		node("end", "Transform", map[string]any{"expression": `{"done": true}`})},
		[]map[string]any{edge("a", "ask", nil), edge("a", "note", nil), edge("ask", "end", nil)})
	code, out := h.migrate(r.ID, 2)
	require.Equal(t, 200, code, "%v", out)
	got := h.run(r.ID)
	require.Equal(t, "completed", got.Nodes["note"].Status, "a node whose upstream is done fires at once")
	require.JSONEq(t, `{"noted": 2}`, string(got.Nodes["note"].Output))
	require.Equal(t, "pending", got.Nodes["end"].Status)

	require.Equal(t, 200, h.do("POST", "/api/v1/runs/"+r.ID+"/nodes/ask/complete", map[string]any{"outcome": "approve"}, nil))
	done := h.waitRun(r.ID, "completed")
	require.JSONEq(t, `{"note": {"noted": 2}, "end": {"done": true}}`, string(done.Output), "the run ends as version 2 does")
}

func TestMigrateRefused(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	flow := h.createFlow([]map[string]any{wnode(h, "a"), wnode(h, "b")}, []map[string]any{edge("a", "b", nil)})
	r := h.startRun(flow, map[string]any{})
	h.waitDispatch(r.ID, "a", 1)
	h.saveGraph(flow, []map[string]any{wnode(h, "z"), wnode(h, "b")}, []map[string]any{edge("z", "b", nil)})

	code, out := h.migrate(r.ID, 2)
	require.Equal(t, 409, code)
	e := as[map[string]any](t, out["error"])
	require.Equal(t, []any{"a"}, as[map[string]any](t, e["details"])["missing_nodes"], "the started node the target lacks")
	require.Equal(t, 1, len(h.run(r.ID).Nodes)-1, "nothing changed")

	code, _ = h.migrate(r.ID, 9)
	require.Equal(t, 404, code)
	code, _ = h.migrate(r.ID, 1)
	require.Equal(t, 409, code, "already on version 1")
	require.Equal(t, 200, h.do("POST", "/api/v1/runs/"+r.ID+"/cancel", nil, nil))
	code, _ = h.migrate(r.ID, 2)
	require.Equal(t, 409, code, "a cancelled run")
}

// TestMigrateConflictNamesTheNode: a migrate that would put a step before
// a node that has started (v1 a→b with b running, v2 a→t→b) is a 409
// naming the node, with no SQL in it (it quoted the queued statement,
// "WITH moved AS (UPDATE node_states SET …"), and changes nothing.
func TestMigrateConflictNamesTheNode(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	flow := h.createFlow([]map[string]any{wnode(h, "a"), wnode(h, "b")}, []map[string]any{edge("a", "b", nil)})
	r := h.startRun(flow, map[string]any{})
	h.complete(h.waitDispatch(r.ID, "a", 1), `{}`)
	h.waitDispatch(r.ID, "b", 1)
	h.saveGraph(flow, []map[string]any{wnode(h, "a"), node("t", "Transform", map[string]any{"expression": "input"}), wnode(h, "b")},
		[]map[string]any{edge("a", "t", nil), edge("t", "b", nil)})

	code, out := h.migrate(r.ID, 2)
	require.Equal(t, 409, code, "%v", out)
	e := as[map[string]any](t, out["error"])
	msg := as[string](t, e["message"])
	require.Contains(t, msg, "node b")
	for _, sql := range []string{"WITH", "UPDATE", "node_states", "queued statement", "SELECT"} {
		require.NotContains(t, msg, sql)
	}
	got := h.run(r.ID)
	require.Equal(t, "running", got.Nodes["b"].Status, "nothing changed")
	require.NotContains(t, got.Nodes, "t")
}
