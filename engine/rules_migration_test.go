package engine_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/stitchd/stitchd/engine"
	"github.com/stitchd/stitchd/internal/testkit"
	"github.com/stitchd/stitchd/store"
)

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
