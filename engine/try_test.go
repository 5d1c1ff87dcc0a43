package engine_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/stitchd/stitchd/engine"
)

// TestTryDecidesEdgesAsARun: a step tried alone decides its edges with a
// run's own decision. Over an input its edge condition cannot be evaluated
// on, a run fails the Condition (handing the failure on along its failure
// edge); tried alone over the same input it fails with the run's message,
// no output, and only the failure edge taken — the default is not. Over
// an input the condition holds on, both take the conditional edge.
func TestTryDecidesEdgesAsARun(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	graph := `{"nodes":[{"id":"c","type":"Condition","data":{}},
		{"id":"big","type":"Worker","data":{"webhookUrl":"http://worker.invalid/big"}},
		{"id":"small","type":"Worker","data":{"webhookUrl":"http://worker.invalid/small"}},
		{"id":"oops","type":"Worker","data":{"webhookUrl":"http://worker.invalid/oops"}}],
		"edges":[{"id":"e2","source":"c","target":"big","data":{"condition":"output.n > 10"}},
		{"id":"e3","source":"c","target":"small","data":{"default":true}},
		{"id":"e4","source":"c","target":"oops","data":{"on":"failure"}}]}`
	ctx := context.Background()
	taken := func(res *engine.TryNodeResult) map[string]bool {
		m := map[string]bool{}
		for _, e := range res.Edges {
			m[e.ID] = e.Taken
		}
		return m
	}

	run := r.start(graph, `{}`)
	_, ns := r.wantStatuses(run.ID, engine.RunRunning, map[string]engine.Status{"c": engine.StatusFailed,
		"big": engine.StatusSkipped, "small": engine.StatusSkipped, "oops": engine.StatusRunning})
	require.NotNil(t, ns["c"].Error)
	require.Contains(t, *ns["c"].Error, "the condition of edge e2 could not be evaluated: invalid operation: <nil> > int")

	g, err := r.eng.Graph(ctx, run.FlowVersionID)
	require.NoError(t, err)
	res, err := r.eng.TryNode(ctx, engine.TryNodeParams{Graph: g, NodeID: "c", Input: json.RawMessage(`{}`)})
	require.NoError(t, err)
	require.NotNil(t, res.Error, "the run fails the step: so does its try")
	require.Equal(t, *ns["c"].Error, *res.Error, "the run's message")
	require.JSONEq(t, `{}`, string(res.Output), "the value the step made, which a run does not keep")
	require.Equal(t, map[string]bool{"e2": false, "e3": false, "e4": true}, taken(res), "only the failure edge, as the run took")
	for _, e := range res.Edges {
		if e.ID == "e2" {
			require.Contains(t, e.Error, "invalid operation: <nil> > int", "the edge says what went wrong with it")
		} else {
			require.Empty(t, e.Error, e.ID)
		}
	}

	run = r.start(graph, `{"n": 20}`)
	r.wantStatuses(run.ID, engine.RunRunning, map[string]engine.Status{"c": engine.StatusCompleted,
		"big": engine.StatusRunning, "small": engine.StatusSkipped, "oops": engine.StatusSkipped})
	res, err = r.eng.TryNode(ctx, engine.TryNodeParams{Graph: g, NodeID: "c", Input: json.RawMessage(`{"n": 20}`)})
	require.NoError(t, err)
	require.Nil(t, res.Error)
	require.JSONEq(t, `{"n": 20}`, string(res.Output))
	require.Equal(t, map[string]bool{"e2": true, "e3": false, "e4": false}, taken(res))

	res, err = r.eng.TryNode(ctx, engine.TryNodeParams{Graph: g, NodeID: "c", Input: json.RawMessage(`{"n": 2}`)})
	require.NoError(t, err)
	require.Nil(t, res.Error)
	require.Equal(t, map[string]bool{"e2": false, "e3": true, "e4": false}, taken(res), "no condition holds: the default")
}

// TestTryDecidesALoopAsItsFirstIteration: a loop's back edge is among a
// tried step's edges, decided as in the loop's first iteration: taken
// while maxIterations allows another, else the step fails with the run's
// message.
func TestTryDecidesALoopAsItsFirstIteration(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	ctx := context.Background()
	graph := func(maxIter int) string {
		return fmt.Sprintf(`{"nodes":[{"id":"a","type":"Transform","data":{"expression":"input"}},
			{"id":"b","type":"Condition","data":{}},
			{"id":"done","type":"Worker","data":{"webhookUrl":"http://worker.invalid/done"}}],
			"edges":[{"id":"e1","source":"a","target":"b"},
			{"id":"back","source":"b","target":"a","data":{"condition":"output.again","loop":{"maxIterations":%d}}},
			{"id":"out","source":"b","target":"done","data":{"default":true}}]}`, maxIter)
	}

	run := r.start(graph(1), `{"again": true}`)
	_, ns := r.wantStatuses(run.ID, engine.RunFailed, map[string]engine.Status{"b": engine.StatusFailed})
	require.NotNil(t, ns["b"].Error)
	g, err := r.eng.Graph(ctx, run.FlowVersionID)
	require.NoError(t, err)
	res, err := r.eng.TryNode(ctx, engine.TryNodeParams{Graph: g, NodeID: "b", Input: json.RawMessage(`{"again": true}`)})
	require.NoError(t, err)
	require.NotNil(t, res.Error)
	require.Equal(t, *ns["b"].Error, *res.Error, "the run's message")

	run = r.start(graph(2), `{"again": true}`)
	g, err = r.eng.Graph(ctx, run.FlowVersionID)
	require.NoError(t, err)
	res, err = r.eng.TryNode(ctx, engine.TryNodeParams{Graph: g, NodeID: "b", Input: json.RawMessage(`{"again": true}`)})
	require.NoError(t, err)
	require.Nil(t, res.Error)
	got := map[string]bool{}
	for _, e := range res.Edges {
		got[e.ID] = e.Taken
	}
	require.Equal(t, map[string]bool{"back": true, "out": false}, got)
	// The run went round once, as the try said, and failed at the limit in
	// its second iteration.
	_, ns = r.wantStatuses(run.ID, engine.RunFailed, map[string]engine.Status{"b": engine.StatusFailed})
	require.Equal(t, 1, ns["b"].Iteration)
}
