package app_test

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/stitchd/stitchd/internal/app"
	"github.com/stretchr/testify/require"
)

// reviseFlow: draft (a worker) → review (a person): approve → publish;
// reject → back to draft, at most limit iterations; review's failure (past
// limit) goes to escalate when withEscalation.
func reviseFlow(h *harness, limit int, withEscalation bool) string {
	nodes := []map[string]any{wnode(h, "draft"), node("review", "UX", map[string]any{"prompt": "Good enough?"}), node("publish", "Condition", nil)}
	edges := []map[string]any{edge("draft", "review", nil),
		redge("review", "publish", map[string]any{"outcome": "approve"}),
		redge("review", "draft", map[string]any{"outcome": "reject", "loop": map[string]any{"maxIterations": limit}})}
	if withEscalation {
		nodes = append(nodes, node("escalate", "Condition", nil))
		edges = append(edges, redge("review", "escalate", map[string]any{"on": "failure"}))
	}
	return h.createFlow(nodes, edges)
}

func TestLoopReviseUntilApproved(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	flow := reviseFlow(h, 5, false)
	r := h.startRun(flow, map[string]any{"topic": "loops"})
	for i := 0; i < 3; i++ {
		d := h.waitDispatch(r.ID, "draft", i+1)
		require.Equal(t, i+1, d.Payload.Attempt, "attempts go on counting across iterations")
		if i == 0 {
			require.JSONEq(t, `{"topic": "loops"}`, string(d.Payload.Input))
		} else {
			// The head of the next iteration gets the review's output: the
			// last draft and the person's decision.
			var in struct {
				Text     string `json:"text"`
				Decision struct {
					Outcome string `json:"outcome"`
					Comment string `json:"comment"`
				} `json:"decision"`
			}
			require.NoError(t, json.Unmarshal(d.Payload.Input, &in))
			require.Equal(t, fmt.Sprintf("v%d", i), in.Text)
			require.Equal(t, "reject", in.Decision.Outcome)
			require.Equal(t, fmt.Sprintf("shorter %d", i-1), in.Decision.Comment)
		}
		h.complete(d, fmt.Sprintf(`{"text": "v%d"}`, i+1))
		h.waitNode(r.ID, "review", "waiting_for_user")
		outcome := map[string]any{"outcome": "reject", "comment": fmt.Sprintf("shorter %d", i)}
		if i == 2 {
			outcome = map[string]any{"outcome": "approve"}
		}
		require.Equal(t, i, h.iteration(r.ID, "review"), "review in iteration %d", i)
		require.Equal(t, 200, h.do("POST", "/api/v1/runs/"+r.ID+"/nodes/review/complete", outcome, nil))
	}
	fin := h.waitRun(r.ID, "completed")
	require.Equal(t, "completed", fin.Nodes["publish"].Status)
	var out struct {
		Text string `json:"text"`
	}
	require.NoError(t, json.Unmarshal(fin.Output, &out))
	require.Equal(t, "v3", out.Text, "the flow goes on with the last iteration's output")
	// The whole history: the earlier iterations under <key>@<n>.
	for i := 0; i < 2; i++ {
		for _, k := range []string{"draft", "review"} {
			old := fin.Nodes[fmt.Sprintf("%s@%d", k, i)]
			require.Equal(t, "completed", old.Status, "%s@%d", k, i)
		}
		var rev struct {
			Text     string `json:"text"`
			Decision struct {
				Outcome string `json:"outcome"`
			} `json:"decision"`
		}
		require.NoError(t, json.Unmarshal(fin.Nodes[fmt.Sprintf("review@%d", i)].Output, &rev))
		require.Equal(t, fmt.Sprintf("v%d", i+1), rev.Text)
		require.Equal(t, "reject", rev.Decision.Outcome)
	}
	require.Equal(t, 3, h.dispatchCount(r.ID, "draft"))
	require.Len(t, fin.Nodes, 7, "draft, review, publish and the two earlier iterations of draft and review")
}

// iteration reads the iteration of a node's row.
func (h *harness) iteration(runID, key string) int {
	h.t.Helper()
	var r struct {
		Nodes map[string]struct {
			Iteration int `json:"iteration"`
		} `json:"nodes"`
	}
	require.Equal(h.t, 200, h.do("GET", "/api/v1/runs/"+runID, nil, &r))
	return r.Nodes[key].Iteration
}

func TestLoopMaxIterations(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	for _, escalate := range []bool{false, true} {
		flow := reviseFlow(h, 2, escalate)
		r := h.startRun(flow, map[string]any{})
		for i := 0; i < 2; i++ {
			h.complete(h.waitDispatch(r.ID, "draft", i+1), `{"text": "x"}`)
			h.waitNode(r.ID, "review", "waiting_for_user")
			require.Equal(t, 200, h.do("POST", "/api/v1/runs/"+r.ID+"/nodes/review/complete", map[string]any{"outcome": "reject"}, nil))
		}
		want := "failed"
		if escalate {
			want = "completed"
		}
		fin := h.waitRun(r.ID, want)
		require.Equal(t, "failed", fin.Nodes["review"].Status)
		require.Contains(t, *fin.Nodes["review"].Error, "the loop back to draft (edge review-draft) ran its 2 iterations")
		require.Equal(t, 2, h.dispatchCount(r.ID, "draft"), "no third iteration")
		if escalate {
			require.Equal(t, "completed", fin.Nodes["escalate"].Status, "the failure is routable")
			require.Equal(t, "skipped", fin.Nodes["publish"].Status)
		}
	}
}

func TestLoopPerItemInAFanOut(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	// Each item goes round x → check three times (n = 1, 2, 3).
	flow := h.createFlow(
		[]map[string]any{node("split", "Splitter", map[string]any{"arrayPath": "items"}),
			node("x", "Transform", map[string]any{"expression": `{"i": input.i, "n": (input.n ?? 0) + 1}`}),
			node("check", "Condition", nil), node("gather", "Collector", nil)},
		[]map[string]any{edge("split", "x", nil), edge("x", "check", nil), edge("check", "gather", nil),
			redge("check", "x", map[string]any{"condition": "output.n < 3", "loop": map[string]any{"maxIterations": 5}})})
	const n = 100
	items := make([]map[string]any, n)
	for i := range items {
		items[i] = map[string]any{"i": i}
	}
	r := h.startRun(flow, map[string]any{"items": items})
	fin := h.waitRun(r.ID, "completed")
	var raw struct {
		Nodes map[string]struct {
			Iteration int `json:"iteration"`
		} `json:"nodes"`
	}
	require.Equal(t, 200, h.do("GET", "/api/v1/runs/"+r.ID, nil, &raw))
	iterations := map[string]int{}
	for k, v := range raw.Nodes {
		iterations[k] = v.Iteration
	}
	var got []struct {
		I int `json:"i"`
		N int `json:"n"`
	}
	require.NoError(t, json.Unmarshal(fin.Output, &got))
	require.Len(t, got, n)
	for i, v := range got {
		require.Equal(t, i, v.I, "in order")
		require.Equal(t, 3, v.N, "item %d went round three times", i)
		require.Contains(t, fin.Nodes, fmt.Sprintf("x_%d@1", i))
		require.Equal(t, 2, iterations[fmt.Sprintf("x_%d", i)])
	}
}

func TestLoopCompileErrors(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	bad := func(nodes, edges []map[string]any) map[string]string {
		_, details := h.refused(422, "POST", "/api/v1/flows", map[string]any{"name": "bad loop", "graph": map[string]any{"nodes": nodes, "edges": edges}})
		return byPath(details)
	}
	c := func(id string) map[string]any { return node(id, "Condition", nil) }
	// No condition; forward "loop"; maxIterations 0.
	got := bad([]map[string]any{c("a"), c("b"), c("d")}, []map[string]any{edge("a", "b", nil),
		redge("b", "a", map[string]any{"loop": map[string]any{"maxIterations": 3}}),
		redge("a", "d", map[string]any{"condition": "true", "loop": map[string]any{"maxIterations": 3}}),
		redge("d", "a", map[string]any{"condition": "true", "loop": map[string]any{"maxIterations": 0}})})
	require.Contains(t, got["edges[1].data.loop"], "needs a condition or an outcome")
	require.Contains(t, got["edges[2]"], "must lead back to a node before its source")
	require.Contains(t, got["edges[3].data.loop.maxIterations"], "whole number from 1 to")
	// An edge leaving the loop from a node other than its source.
	got = bad([]map[string]any{c("a"), c("b"), c("out")}, []map[string]any{edge("a", "b", nil), edge("a", "out", nil),
		redge("b", "a", map[string]any{"condition": "true", "loop": map[string]any{"maxIterations": 3}})})
	require.Contains(t, got["edges[1]"], "only the loop's last node")
	// An unmarked cycle is still refused.
	got = bad([]map[string]any{c("a"), c("b")}, []map[string]any{edge("a", "b", nil), redge("b", "a", map[string]any{"condition": "true"})})
	require.Len(t, got, 1)
	for _, m := range got {
		require.Contains(t, m, "cycle")
	}
}

// TestLoopOfSynchronousNodesRunsInShortTransactions: a loop of two
// Transforms going round 150 times is 300 firings; with at most 20 a
// transaction, the start answers after the first 20 (the run still
// running) and the rest follow in later transactions, through the
// sweeper, to the same end. Without the bound the start answered with the
// run completed, all 300 fired inside its one transaction.
func TestLoopOfSynchronousNodesRunsInShortTransactions(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(c *app.Config) { c.MaxFirings = 20 })
	flow := h.createFlow(
		[]map[string]any{node("a", "Transform", map[string]any{"expression": `{"n": (input.n ?? 0) + 1}`}),
			node("b", "Transform", map[string]any{"expression": `input`}), node("done", "Condition", nil)},
		[]map[string]any{edge("a", "b", nil),
			redge("b", "a", map[string]any{"condition": "output.n < 150", "loop": map[string]any{"maxIterations": 1000}}),
			redge("b", "done", map[string]any{"default": true})})
	r := h.startRun(flow, map[string]any{})
	// The start answers with the run as its transaction left it: still
	// running, its loop far from done (the rest goes on meanwhile).
	require.Equal(t, "running", r.Status, "the start's transaction stopped at its bound")
	fin := h.waitRun(r.ID, "completed")
	require.JSONEq(t, `{"n": 150}`, string(fin.Output))
	require.Equal(t, 149, h.iteration(r.ID, "a"))
}

// TestDeferredFiresKeepTheRunGoing: a fire left for a later transaction
// is work under way. A run whose other branch failed does not fail
// while its loop's fires wait, but once they have run; a paused run's
// waiting fires wait for the resume, then go on.
func TestDeferredFiresKeepTheRunGoing(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(c *app.Config) { c.MaxFirings = 10 })
	loop := []map[string]any{node("a", "Transform", map[string]any{"expression": `{"n": (input.n ?? 0) + 1}`}),
		node("b", "Transform", map[string]any{"expression": `input`}), node("done", "Condition", nil)}
	loopEdges := []map[string]any{edge("a", "b", nil),
		redge("b", "a", map[string]any{"condition": "output.n < 60", "loop": map[string]any{"maxIterations": 1000}}),
		redge("b", "done", map[string]any{"default": true})}

	// Beside the loop, a branch that fails at once.
	flow := h.createFlow(append(loop, node("bad", "Transform", map[string]any{"expression": `input.x.y`})), loopEdges)
	r := h.startRun(flow, map[string]any{})
	require.Equal(t, "running", r.Status, "bad failed, but the loop's fires wait")
	fin := h.waitRun(r.ID, "failed")
	require.Equal(t, "completed", fin.Nodes["done"].Status, "the loop ran to its end before the run failed")
	require.Equal(t, 59, h.iteration(r.ID, "a"))

	// Paused while its fires wait: nothing moves, across sweeps; resumed,
	// it completes.
	flow = h.createFlow(loop, loopEdges)
	r = h.startRun(flow, map[string]any{})
	require.Equal(t, 200, h.do("POST", "/api/v1/runs/"+r.ID+"/pause", nil, nil))
	at := h.iteration(r.ID, "a")
	h.sweeps(3)
	require.Equal(t, at, h.iteration(r.ID, "a"), "a paused run's waiting fires wait")
	require.Equal(t, "paused", h.run(r.ID).Status)
	// A rerun or a migration would reset or drop the waiting fires' rows
	// (and leave the run counting them): refused until the resume.
	for path, body := range map[string]any{"/nodes/a/rerun": map[string]any{}, "/migrate": map[string]any{"version": 1}} {
		var e apiErrorJSON
		require.Equal(t, 409, h.do("POST", "/api/v1/runs/"+r.ID+path, body, &e), path)
		require.Contains(t, e.Error.Message, "has steps waiting to fire; resume it first", path)
	}
	require.Equal(t, 200, h.do("POST", "/api/v1/runs/"+r.ID+"/resume", nil, nil))
	fin = h.waitRun(r.ID, "completed")
	require.JSONEq(t, `{"n": 60}`, string(fin.Output))
}
