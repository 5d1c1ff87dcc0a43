package engine_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/stitchd/stitchd/engine"
	"github.com/stitchd/stitchd/internal/testkit"
	"github.com/stitchd/stitchd/store"
)

// TestRuleRespond: docs/state_machine.md, Answering the caller — a Respond
// node records its answer (status, content type, rendered body) on the
// run's row with a run.responded event, only when the run has none yet (the
// first to fire counts), and completes with its input like a Transform.
func TestRuleRespond(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	run := r.start(`{"nodes":[
		{"id":"ack","type":"Respond","data":{"status":202,"body":{"got":"{{ input.x }}"}}},
		{"id":"again","type":"Respond","data":{"status":500,"body":"too late"}},
		{"id":"w","type":"Worker","data":{"webhookUrl":"http://worker.invalid/w"}}],
		"edges":[{"id":"e1","source":"ack","target":"again"},{"id":"e2","source":"again","target":"w"}]}`, `{"x":"one"}`)
	_, ns := r.wantStatuses(run.ID, engine.RunRunning, map[string]engine.Status{
		"ack": engine.StatusCompleted, "again": engine.StatusCompleted, "w": engine.StatusRunning})
	require.JSONEq(t, `{"x":"one"}`, string(ns["ack"].Output), "it completes with its input")
	require.JSONEq(t, `{"x":"one"}`, string(ns["w"].Input), "which walks on")

	a, err := r.st.RunAnswer(context.Background(), run.ID)
	require.NoError(t, err)
	require.NotNil(t, a.Response, "the answer is on the run's row before the run ends")
	require.Equal(t, 202, a.Response.Status, "the first Respond to fire counts")
	require.Equal(t, "application/json", a.Response.ContentType)
	require.JSONEq(t, `{"got":"one"}`, a.Response.Body)
	require.Len(t, r.eventsOf(run.ID, engine.EventRunResponded), 1, "one run.responded event")

	// The run's end leaves the answer as it was.
	require.NoError(t, r.callback(run.ID, "w", 1, engine.StatusCompleted, `{"done":true}`))
	a, err = r.st.RunAnswer(context.Background(), run.ID)
	require.NoError(t, err)
	require.Equal(t, engine.RunCompleted, a.Status)
	require.Equal(t, 202, a.Response.Status)
}

// TestRuleMigration: docs/state_machine.md, Migration — a run moves to
// another version of its flow when every node it started is in the target
// as it was: rows of nodes the target lacks are deleted while pending, the
// target's new nodes are inserted pending, and work in flight walks the
// target's edges. A target without a started node is refused and changes
// nothing.
func TestRuleMigration(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	ctx := context.Background()
	flowID, v1 := r.flow("", chain) // a → b
	run := r.startIn(flowID, v1, `{}`)

	// Version 2: a → c (b removed).
	f, _, err := r.st.UpdateFlow(ctx, flowID, store.UpdateFlowParams{Version: ptr(testkit.Version(t, `{"nodes":[
		{"id":"a","type":"Worker","data":{"webhookUrl":"http://worker.invalid/a"}},
		{"id":"c","type":"Worker","data":{"webhookUrl":"http://worker.invalid/c"}}],
		"edges":[{"id":"e1","source":"a","target":"c"}]}`))})
	require.NoError(t, err)
	// Version 3: a is gone — refused while a runs.
	f3, _, err := r.st.UpdateFlow(ctx, flowID, store.UpdateFlowParams{Version: ptr(testkit.Version(t, `{"nodes":[
		{"id":"z","type":"Worker","data":{"webhookUrl":"http://worker.invalid/z"}}],"edges":[]}`))})
	require.NoError(t, err)
	err = r.eng.MigrateRun(ctx, engine.MigrateParams{RunID: run.ID, FlowID: flowID, VersionID: f3.VersionID,
		Version: f3.VersionNumber, By: "rules@example.com"})
	var missing *engine.MissingNodesError
	require.ErrorAs(t, err, &missing)
	require.ErrorIs(t, err, engine.ErrConflict)
	require.Equal(t, []string{"a"}, missing.Nodes)
	got, _ := r.nodes(run.ID)
	require.Equal(t, v1, got.FlowVersionID, "a refused migration changes nothing")

	require.NoError(t, r.eng.MigrateRun(ctx, engine.MigrateParams{RunID: run.ID, FlowID: flowID, VersionID: f.VersionID,
		Version: f.VersionNumber, By: "rules@example.com"}))
	got, _ = r.nodes(run.ID)
	require.Equal(t, f.VersionID, got.FlowVersionID)
	require.Equal(t, []string{"a", "c"}, r.keysOf(run.ID), "b's pending row deleted, c's inserted")
	r.wantStatuses(run.ID, engine.RunRunning, map[string]engine.Status{"a": engine.StatusRunning, "c": engine.StatusPending})

	// The work in flight walks the target's edges.
	require.NoError(t, r.callback(run.ID, "a", 1, engine.StatusCompleted, `{"n":1}`))
	_, ns := r.wantStatuses(run.ID, engine.RunRunning, map[string]engine.Status{"a": engine.StatusCompleted, "c": engine.StatusRunning})
	require.JSONEq(t, `{"n":1}`, string(ns["c"].Input))
	require.NoError(t, r.callback(run.ID, "c", 1, engine.StatusCompleted, `{}`))
	r.wantStatuses(run.ID, engine.RunCompleted, map[string]engine.Status{"a": engine.StatusCompleted, "c": engine.StatusCompleted})
}

func ptr[T any](v T) *T { return &v }

// TestRuleMigrationForgetsUntakenEdges: docs/state_machine.md, Branches —
// a region's rows keep their counts when the run moves to another
// version, but the edges the old version decided not taken may not be
// the new one's: the count of those starts again from none, and the join
// reads which of its new edges were taken.
func TestRuleMigrationForgetsUntakenEdges(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	ctx := context.Background()
	const nodes = `{"id":"split","type":"Splitter","data":{"arrayPath":"items"}},
		{"id":"q","type":"Worker","data":{"webhookUrl":"http://worker.invalid/x"}},
		{"id":"x","type":"Worker","data":{"webhookUrl":"http://worker.invalid/x"}},
		{"id":"y","type":"Worker","data":{"webhookUrl":"http://worker.invalid/x"}},
		{"id":"m","type":"Worker","data":{"webhookUrl":"http://worker.invalid/x"}},
		{"id":"merge","type":"Collector","data":{}}`
	// Version 1: m joins x (when it says go) and y.
	flowID, v1 := r.flow("", `{"nodes":[`+nodes+`],"edges":[
		{"id":"e0","source":"split","target":"q"},{"id":"e1","source":"q","target":"x"},{"id":"e2","source":"q","target":"y"},
		{"id":"e3","source":"x","target":"m","data":{"condition":"output.go == true"}},
		{"id":"e4","source":"y","target":"m","data":{"condition":"output.y == 1"}},
		{"id":"e5","source":"m","target":"merge"},{"id":"e6","source":"x","target":"merge"}]}`)
	run := r.startIn(flowID, v1, `{"items":[0]}`)
	key := func(id string) string { return id + "_0" } // the instance of item 0
	require.NoError(t, r.callback(run.ID, key("q"), 1, engine.StatusCompleted, `{"fromQ":1}`))
	// x decides against m: one of m's two edges decided, not taken.
	require.NoError(t, r.callback(run.ID, key("x"), 1, engine.StatusCompleted, `{"go":false}`))

	// Version 2: m joins q and y; x's edge to it is gone.
	f, _, err := r.st.UpdateFlow(ctx, flowID, store.UpdateFlowParams{Version: ptr(testkit.Version(t, `{"nodes":[`+nodes+`],"edges":[
		{"id":"e0","source":"split","target":"q"},{"id":"e1","source":"q","target":"x"},{"id":"e2","source":"q","target":"y"},
		{"id":"e7","source":"q","target":"m"},
		{"id":"e4","source":"y","target":"m","data":{"condition":"output.y == 1"}},
		{"id":"e5","source":"m","target":"merge"},{"id":"e6","source":"x","target":"merge"}]}`))})
	require.NoError(t, err)
	require.NoError(t, r.eng.MigrateRun(ctx, engine.MigrateParams{RunID: run.ID, FlowID: flowID, VersionID: f.VersionID,
		Version: f.VersionNumber, By: "rules@example.com"}))

	// y takes its edge: m's edges are decided, q's and y's taken.
	require.NoError(t, r.callback(run.ID, key("y"), 1, engine.StatusCompleted, `{"y":1}`))
	_, ns := r.nodes(run.ID)
	require.Equal(t, engine.StatusRunning, ns[key("m")].Status)
	require.JSONEq(t, `{"fromQ":1,"y":1}`, string(ns[key("m")].Input))
}
