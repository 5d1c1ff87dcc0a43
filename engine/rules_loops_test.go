package engine_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/stitchd/stitchd/engine"
)

// TestRuleLoops: docs/state_machine.md, "Loops: iterations" — a back edge
// taken starts the next iteration in the same transaction (the body's rows
// kept as <key>@<iteration>, the head fired with the source's output); not
// taken, the source's other edges are walked (the exit); taking it from
// iteration maxIterations − 1 fails the source, which a failure edge may
// take.
func TestRuleLoops(t *testing.T) {
	t.Parallel()
	const (
		C = engine.StatusCompleted
		S = engine.StatusSkipped
		F = engine.StatusFailed
	)
	// x counts n up; check loops back to x while n < until; done is the exit.
	loop := func(maxIter int, failureEdge bool) string {
		over := ""
		if failureEdge {
			over = `,{"id":"over","type":"Transform","data":{"expression":"{\"gave_up\": input.error}"}}`
		}
		g := fmt.Sprintf(`{"nodes":[
			{"id":"x","type":"Transform","data":{"expression":"{\"n\": (input.n ?? 0) + 1, \"until\": input.until}"}},
			{"id":"check","type":"Condition","data":{}},
			{"id":"done","type":"Transform","data":{"expression":"{\"final\": input.n}"}}%s],
			"edges":[{"id":"e1","source":"x","target":"check"},
				{"id":"back","source":"check","target":"x","data":{"condition":"output.n < output.until","loop":{"maxIterations":%d}}},
				{"id":"exit","source":"check","target":"done","data":{"default":true}}`, over, maxIter)
		if failureEdge {
			g += `,{"id":"fail","source":"check","target":"over","data":{"on":"failure"}}`
		}
		return g + `]}`
	}
	cases := []struct {
		name  string
		graph string
		until int
		run   engine.RunStatus
		nodes map[string]engine.Status
		check func(t *testing.T, r *rig, run *engine.Run, ns map[string]engine.NodeState)
	}{
		{"exits at once when the back edge is not taken", loop(5, false), 1, engine.RunCompleted,
			map[string]engine.Status{"x": C, "check": C, "done": C},
			func(t *testing.T, r *rig, run *engine.Run, ns map[string]engine.NodeState) {
				require.Equal(t, []string{"check", "done", "x"}, r.keysOf(run.ID), "no iteration rows")
				require.Equal(t, []string{"done"}, ns["check"].Taken)
				require.Empty(t, r.eventsOf(run.ID, engine.EventLoopIteration))
			}},
		{"iterates until the condition no longer holds", loop(5, false), 3, engine.RunCompleted,
			map[string]engine.Status{"x": C, "check": C, "x@0": C, "check@0": C, "x@1": C, "check@1": C, "done": C},
			func(t *testing.T, r *rig, run *engine.Run, ns map[string]engine.NodeState) {
				require.Equal(t, 2, ns["x"].Iteration, "the plain key is the latest iteration")
				require.Equal(t, 0, ns["x@0"].Iteration)
				require.JSONEq(t, `{"n":1,"until":3}`, string(ns["x@0"].Output), "the history is kept")
				require.JSONEq(t, `{"n":2,"until":3}`, string(ns["x@1"].Output))
				require.JSONEq(t, `{"n":2,"until":3}`, string(ns["x"].Input), "the head fires with the source's output")
				require.Equal(t, []string{"x"}, ns["check@0"].Taken, "the back edge taken")
				require.Equal(t, []string{"done"}, ns["check"].Taken)
				require.JSONEq(t, `{"final":3}`, string(ns["done"].Output))
				require.Equal(t, 3, ns["x"].Attempt, "attempts go on from the old rows'")
				require.Len(t, r.eventsOf(run.ID, engine.EventLoopIteration), 2)
				got, _ := r.nodes(run.ID)
				require.JSONEq(t, `{"final":3}`, string(got.Output), "one terminal: its output")
			}},
		{"the last iteration's back edge fails the source", loop(3, false), 10, engine.RunFailed,
			map[string]engine.Status{"x": C, "check": F, "x@1": C, "check@1": C, "done": engine.StatusPending},
			func(t *testing.T, _ *rig, _ *engine.Run, ns map[string]engine.NodeState) {
				require.Equal(t, 2, ns["check"].Iteration, "three iterations: 0, 1, 2")
				require.Contains(t, *ns["check"].Error, "the loop back to x (edge back) ran its 3 iterations")
				require.NotContains(t, ns, "x@2")
			}},
		{"a failure edge takes the loop's end", loop(3, true), 10, engine.RunCompleted,
			map[string]engine.Status{"check": F, "done": S, "over": C},
			func(t *testing.T, _ *rig, _ *engine.Run, ns map[string]engine.NodeState) {
				require.Equal(t, []string{"over"}, ns["check"].Taken)
				require.Contains(t, string(ns["over"].Output), "ran its 3 iterations")
			}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := newRig(t)
			run := r.start(tc.graph, fmt.Sprintf(`{"until":%d}`, tc.until))
			_, ns := r.wantStatuses(run.ID, tc.run, tc.nodes)
			tc.check(t, r, run, ns)
		})
	}
}

// TestRuleLoopOfWorkers: a loop whose head is a worker: each iteration
// dispatches the head again as the next attempt; a late callback for the
// old iteration's attempt is stale (a conflict) and changes nothing.
func TestRuleLoopOfWorkers(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	run := r.start(`{"nodes":[
		{"id":"w","type":"Worker","data":{"webhookUrl":"http://worker.invalid/x"}},
		{"id":"check","type":"Condition","data":{}},
		{"id":"done","type":"Condition","data":{}}],
		"edges":[{"id":"e1","source":"w","target":"check"},
			{"id":"back","source":"check","target":"w","data":{"condition":"output.again","loop":{"maxIterations":4}}},
			{"id":"exit","source":"check","target":"done","data":{"default":true}}]}`, `{}`)
	require.NoError(t, r.callback(run.ID, "w", 1, engine.StatusCompleted, `{"again":true}`))
	_, ns := r.wantStatuses(run.ID, engine.RunRunning,
		map[string]engine.Status{"w": engine.StatusRunning, "w@0": engine.StatusCompleted, "check@0": engine.StatusCompleted,
			"check": engine.StatusPending, "done": engine.StatusPending})
	require.Equal(t, 2, ns["w"].Attempt)
	require.Equal(t, 1, ns["w"].Iteration)
	require.Equal(t, []string{"w#1", "w#2"}, r.outbox(run.ID))

	err := r.callback(run.ID, "w", 1, engine.StatusCompleted, `{"again":true}`)
	require.Error(t, err, "a late callback for the old iteration")
	require.True(t, errors.Is(err, engine.ErrConflict) || errors.Is(err, engine.ErrInvalidTransition), "a 409: %v", err)
	require.Equal(t, []string{"w#1", "w#2"}, r.outbox(run.ID))

	require.NoError(t, r.callback(run.ID, "w", 2, engine.StatusCompleted, `{"again":false}`))
	_, ns = r.wantStatuses(run.ID, engine.RunCompleted,
		map[string]engine.Status{"w": engine.StatusCompleted, "check": engine.StatusCompleted, "done": engine.StatusCompleted})
	require.Equal(t, []string{"done"}, ns["check"].Taken)
}

// TestRuleLoopPerItem: docs/state_machine.md, Loops — a loop inside a
// parallel region runs per item: each item's rows go round on their own,
// and the Collector reads only the current rows.
func TestRuleLoopPerItem(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	run := r.start(`{"nodes":[{"id":"split","type":"Splitter","data":{"arrayPath":"items"}},
		{"id":"x","type":"Transform","data":{"expression":"{\"n\": (input.n ?? 0) + 1, \"until\": input.until}"}},
		{"id":"check","type":"Condition","data":{}},{"id":"gather","type":"Collector","data":{}}],
		"edges":[{"id":"e1","source":"split","target":"x"},{"id":"e2","source":"x","target":"check"},
			{"id":"e3","source":"check","target":"gather"},
			{"id":"back","source":"check","target":"x","data":{"condition":"output.n < output.until","loop":{"maxIterations":5}}}]}`,
		`{"items":[{"until":1},{"until":3}]}`)
	got, ns := r.wantStatuses(run.ID, engine.RunCompleted, map[string]engine.Status{
		"x_0": engine.StatusCompleted, "x_1": engine.StatusCompleted, "x_1@0": engine.StatusCompleted, "x_1@1": engine.StatusCompleted,
		"x_0@0": "(no row)", "gather": engine.StatusCompleted})
	require.Equal(t, 0, ns["x_0"].Iteration)
	require.Equal(t, 2, ns["x_1"].Iteration)
	require.JSONEq(t, `[{"n":1,"until":1},{"n":3,"until":3}]`, string(ns["gather"].Output))
	require.JSONEq(t, `[{"n":1,"until":1},{"n":3,"until":3}]`, string(got.Output))
}
