package app_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
)

// switchFlow: s routes on output.v % 4 — three conditions and a default —
// to b0…b3, which join at j; each edge into j maps the branch's v to a key
// of its own, so j's input shows which inputs were merged.
func switchFlow(h *harness, source map[string]any) string {
	nodes := []map[string]any{source, node("j", "Condition", nil)}
	edges := []map[string]any{}
	for k := 0; k < 4; k++ {
		b := fmt.Sprintf("b%d", k)
		nodes = append(nodes, node(b, "Condition", nil))
		rule := map[string]any{"condition": fmt.Sprintf("output.v %% 4 == %d", k)}
		if k == 3 {
			rule = map[string]any{"default": true}
		}
		edges = append(edges, redge("s", b, rule), edge(b, "j", map[string]string{b: "v"}))
	}
	return h.createFlow(nodes, edges)
}

func TestSwitchOn1000ConcurrentRuns(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	flow := switchFlow(h, node("s", "Condition", nil))
	const runs, workers = 1000, 16
	ids := make([]string, runs)
	var wg sync.WaitGroup
	next := make(chan int)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				var r runJSON
				if code := h.do("POST", "/api/v1/flows/"+flow+"/runs", map[string]any{"input": map[string]any{"v": i}}, &r); code != 201 {
					t.Errorf("run %d: start answered %d", i, code)
					continue
				}
				ids[i] = r.ID
			}
		}()
	}
	for i := 0; i < runs; i++ {
		next <- i
	}
	close(next)
	wg.Wait()
	require.False(t, t.Failed())

	for i, id := range ids {
		r := h.waitRun(id, "completed")
		taken := fmt.Sprintf("b%d", i%4)
		for k := 0; k < 4; k++ {
			b := fmt.Sprintf("b%d", k)
			want := "skipped"
			if b == taken {
				want = "completed"
			}
			require.Equal(t, want, r.Nodes[b].Status, "run %d node %s", i, b)
		}
		require.Equal(t, []string{taken}, r.Nodes["s"].Taken, "run %d", i)
		require.Equal(t, "completed", r.Nodes["j"].Status)
		require.JSONEq(t, fmt.Sprintf(`{%q: %d}`, taken, i), string(r.Nodes["j"].Input), "run %d: the join merges only the branch taken", i)
		require.JSONEq(t, fmt.Sprintf(`{%q: %d}`, taken, i), string(r.Output))
	}
	// The join fired once per run: one running transition each.
	conn, err := pgx.Connect(context.Background(), h.dbURL)
	require.NoError(t, err)
	defer conn.Close(context.Background())
	var fires, skips int
	require.NoError(t, conn.QueryRow(context.Background(), `SELECT
		count(*) FILTER (WHERE key = 'j' AND payload->>'status' = 'running'),
		count(*) FILTER (WHERE payload->>'status' = 'skipped')
		FROM run_events WHERE type = 'node.status'`).Scan(&fires, &skips))
	require.Equal(t, runs, fires)
	require.Equal(t, 3*runs, skips)
}

func TestSwitchAfterWorkerCallback(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	flow := switchFlow(h, wnode(h, "s"))
	for i := 0; i < 8; i++ {
		r := h.startRun(flow, map[string]any{})
		h.complete(h.waitDispatch(r.ID, "s", 1), fmt.Sprintf(`{"v": %d}`, i))
		fin := h.waitRun(r.ID, "completed")
		b := fmt.Sprintf("b%d", i%4)
		require.Equal(t, []string{b}, fin.Nodes["s"].Taken)
		require.JSONEq(t, fmt.Sprintf(`{%q: %d}`, b, i), string(fin.Output))
	}
}

func TestConditionRuntimeErrorFailsTheSource(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	flow := h.createFlow(
		[]map[string]any{wnode(h, "s"), node("a", "Condition", nil), node("b", "Condition", nil)},
		[]map[string]any{redge("s", "a", map[string]any{"condition": "output.score > 5"}), redge("s", "b", map[string]any{"default": true})})
	r := h.startRun(flow, map[string]any{})
	h.complete(h.waitDispatch(r.ID, "s", 1), `{"score": "high"}`)
	fin := h.waitRun(r.ID, "failed")
	require.Equal(t, "failed", fin.Nodes["s"].Status)
	require.Contains(t, *fin.Nodes["s"].Error, "the condition of edge s-a could not be evaluated")
	require.Contains(t, *fin.Error, "could not be evaluated")
	require.Equal(t, "pending", fin.Nodes["a"].Status, "nothing else changed")
	require.Equal(t, "pending", fin.Nodes["b"].Status)
}

func TestDiamondWithOneBranchSkipped(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	// a → b (taken), a → c (not taken), b and c → d.
	flow := h.createFlow(
		[]map[string]any{node("a", "Condition", nil), wnode(h, "b"), wnode(h, "c"), wnode(h, "d")},
		[]map[string]any{redge("a", "b", map[string]any{"condition": "input.go == 'b'"}),
			redge("a", "c", map[string]any{"condition": "input.go == 'c'"}), edge("b", "d", nil), edge("c", "d", nil)})
	r := h.startRun(flow, map[string]any{"go": "b"})
	require.Equal(t, "skipped", r.Nodes["c"].Status)
	h.complete(h.waitDispatch(r.ID, "b", 1), `{"from_b": true}`)
	dd := h.waitDispatch(r.ID, "d", 1)
	require.JSONEq(t, `{"from_b": true}`, string(dd.Payload.Input), "only the taken edge's output")
	h.complete(dd, `{"done": 1}`)
	fin := h.waitRun(r.ID, "completed")
	require.JSONEq(t, `{"done": 1}`, string(fin.Output))
	require.Equal(t, 1, h.dispatchCount(r.ID, "d"))
	require.Equal(t, 0, h.dispatchCount(r.ID, "c"))

	// Neither branch taken: the join is skipped too, and the run completes.
	r = h.startRun(flow, map[string]any{"go": "nowhere"})
	fin = h.waitRun(r.ID, "completed")
	for _, k := range []string{"b", "c", "d"} {
		require.Equal(t, "skipped", fin.Nodes[k].Status, k)
	}
	require.Equal(t, []string{}, fin.Nodes["a"].Taken)
	require.JSONEq(t, `null`, string(fin.Output))
}

func TestFailureEdge(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	// enrich fails for good (one attempt): its failure edge hands the
	// failure to fallback; next, its plain edge, is skipped.
	flow := h.createFlow(
		[]map[string]any{wnode(h, "enrich"), node("fallback", "Condition", nil), wnode(h, "next")},
		[]map[string]any{redge("enrich", "fallback", map[string]any{"on": "failure"}), edge("enrich", "next", nil)})
	r := h.startRun(flow, map[string]any{"lead": "ada"})
	d := h.waitDispatch(r.ID, "enrich", 1)
	code, body := h.post(d.Payload.CallbackURL, `{"status":"failed","error":"no such company"}`)
	require.Equal(t, 200, code, body)
	fin := h.waitRun(r.ID, "completed")
	require.Equal(t, "failed", fin.Nodes["enrich"].Status)
	require.Equal(t, []string{"fallback"}, fin.Nodes["enrich"].Taken)
	require.Equal(t, "skipped", fin.Nodes["next"].Status)
	require.JSONEq(t, `{"error": "no such company", "node": "enrich", "input": {"lead": "ada"}}`, string(fin.Nodes["fallback"].Input))
	require.JSONEq(t, `{"fallback": {"error": "no such company", "node": "enrich", "input": {"lead": "ada"}}}`, string(fin.Output),
		"the run's output is its completed terminal nodes'")
	// A handled failure is final: no retry, and cancelling leaves it.
	require.Equal(t, 409, h.do("POST", "/api/v1/runs/"+r.ID+"/nodes/enrich/retry", nil, nil))

	// The worker succeeds: the failure edge is not taken.
	r = h.startRun(flow, map[string]any{"lead": "bob"})
	h.complete(h.waitDispatch(r.ID, "enrich", 1), `{"size": 10}`)
	h.complete(h.waitDispatch(r.ID, "next", 1), `{"ok": true}`)
	fin = h.waitRun(r.ID, "completed")
	require.Equal(t, "skipped", fin.Nodes["fallback"].Status)
	require.JSONEq(t, `{"next": {"ok": true}}`, string(fin.Output))

	// Without a failure edge the run fails, as before.
	plain := h.createFlow([]map[string]any{wnode(h, "enrich"), wnode(h, "next")}, []map[string]any{edge("enrich", "next", nil)})
	r = h.startRun(plain, map[string]any{})
	d = h.waitDispatch(r.ID, "enrich", 1)
	code, body = h.post(d.Payload.CallbackURL, `{"status":"failed","error":"boom"}`)
	require.Equal(t, 200, code, body)
	require.Contains(t, *h.waitRun(r.ID, "failed").Error, "boom")
}

func TestUXOutcomes(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	flow := h.createFlow(
		[]map[string]any{wnode(h, "score"), node("review", "UX", map[string]any{"prompt": "Qualified?"}),
			node("sales", "Condition", nil), node("nurture", "Condition", nil)},
		[]map[string]any{edge("score", "review", nil),
			redge("review", "sales", map[string]any{"outcome": "approve"}), redge("review", "nurture", map[string]any{"outcome": "reject"})})

	var ap struct {
		Approvals []struct {
			RunID    string   `json:"run_id"`
			Outcomes []string `json:"outcomes"`
		} `json:"approvals"`
	}
	decide := func(body map[string]any) runJSON {
		r := h.startRun(flow, map[string]any{})
		h.complete(h.waitDispatch(r.ID, "score", 1), `{"lead": "ada", "score": 80}`)
		h.waitNode(r.ID, "review", "waiting_for_user")
		require.Equal(t, 200, h.do("GET", "/api/v1/approvals", nil, &ap))
		require.Equal(t, []string{"approve", "reject"}, ap.Approvals[len(ap.Approvals)-1].Outcomes)
		require.Equal(t, 200, h.do("POST", "/api/v1/runs/"+r.ID+"/nodes/review/complete", body, nil))
		return h.waitRun(r.ID, "completed")
	}
	decision := func(raw json.RawMessage) map[string]any {
		var out struct {
			Lead     string         `json:"lead"`
			Score    int            `json:"score"`
			Decision map[string]any `json:"decision"`
		}
		require.NoError(t, json.Unmarshal(raw, &out))
		require.Equal(t, "ada", out.Lead, "the input stays in the output")
		require.Equal(t, 80, out.Score)
		return out.Decision
	}

	fin := decide(map[string]any{"outcome": "reject", "comment": "too small"})
	require.Equal(t, "skipped", fin.Nodes["sales"].Status)
	require.Equal(t, "completed", fin.Nodes["nurture"].Status)
	d := decision(fin.Nodes["nurture"].Input)
	require.Equal(t, "reject", d["outcome"])
	require.Equal(t, "too small", d["comment"])
	require.Equal(t, "admin", d["by"])
	require.Nil(t, d["answer"])
	require.NotEmpty(t, d["at"])

	fin = decide(map[string]any{"outcome": "approve", "output": map[string]any{"owner": "kim"}})
	require.Equal(t, "completed", fin.Nodes["sales"].Status)
	require.Equal(t, "skipped", fin.Nodes["nurture"].Status)
	d = decision(fin.Nodes["sales"].Input)
	require.Equal(t, map[string]any{"owner": "kim"}, d["answer"])

	// The old body: failed is reject, here routed by the reject edge.
	fin = decide(map[string]any{"status": "failed"})
	require.Equal(t, "completed", fin.Nodes["nurture"].Status)

	// An outcome the node does not have: 400, nothing changes.
	r := h.startRun(flow, map[string]any{})
	h.complete(h.waitDispatch(r.ID, "score", 1), `{}`)
	h.waitNode(r.ID, "review", "waiting_for_user")
	var e map[string]any
	require.Equal(t, 400, h.do("POST", "/api/v1/runs/"+r.ID+"/nodes/review/complete", map[string]any{"outcome": "maybe"}, &e))
	require.Contains(t, fmt.Sprint(e), "not one of")
	require.Equal(t, "waiting_for_user", h.run(r.ID).Nodes["review"].Status)
}

func TestRejectWithoutRejectEdgeFails(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	flow := h.createFlow(
		[]map[string]any{node("review", "UX", map[string]any{"outcomes": []string{"approve", "reject", "escalate"}}), node("next", "Condition", nil)},
		[]map[string]any{edge("review", "next", nil)})
	r := h.startRun(flow, map[string]any{})
	require.Equal(t, 200, h.do("POST", "/api/v1/runs/"+r.ID+"/nodes/review/complete", map[string]any{"outcome": "escalate"}, nil))
	fin := h.waitRun(r.ID, "failed")
	require.Contains(t, *fin.Nodes["review"].Error, `outcome "escalate" chosen, and it has no edge`)
	r = h.startRun(flow, map[string]any{})
	require.Equal(t, 200, h.do("POST", "/api/v1/runs/"+r.ID+"/nodes/review/complete", map[string]any{"outcome": "reject"}, nil))
	require.Equal(t, "rejected", *h.waitRun(r.ID, "failed").Nodes["review"].Error)
}

func TestConditionsInA1000ItemFanOut(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	// Every third item's path is skipped: null at its index.
	flow := h.createFlow(
		[]map[string]any{node("split", "Splitter", map[string]any{"arrayPath": "items"}), node("x", "Condition", nil),
			node("y", "Condition", nil), node("gather", "Collector", nil)},
		[]map[string]any{edge("split", "x", nil), redge("x", "y", map[string]any{"condition": "output.i % 3 != 0"}), edge("y", "gather", nil)})
	const n = 1000
	items := make([]map[string]any, n)
	for i := range items {
		items[i] = map[string]any{"i": i}
	}
	r := h.startRun(flow, map[string]any{"items": items})
	fin := h.waitRun(r.ID, "completed")
	var got []json.RawMessage
	require.NoError(t, json.Unmarshal(fin.Output, &got))
	require.Len(t, got, n)
	for i, v := range got {
		if i%3 == 0 {
			require.JSONEq(t, `null`, string(v), "item %d", i)
			require.Equal(t, "skipped", fin.Nodes[fmt.Sprintf("y_%d", i)].Status)
		} else {
			require.JSONEq(t, fmt.Sprintf(`{"i": %d}`, i), string(v), "item %d", i)
		}
	}
}

func TestSkippedSplitterSkipsItsRegion(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	flow := h.createFlow(
		[]map[string]any{node("a", "Condition", nil), node("split", "Splitter", map[string]any{"arrayPath": "items"}),
			node("x", "Condition", nil), node("gather", "Collector", nil), node("after", "Condition", nil), node("other", "Condition", nil)},
		[]map[string]any{redge("a", "split", map[string]any{"condition": "len(input.items) > 0"}), redge("a", "other", map[string]any{"default": true}),
			edge("split", "x", nil), edge("x", "gather", nil), edge("gather", "after", nil)})
	r := h.startRun(flow, map[string]any{"items": []int{}})
	fin := h.waitRun(r.ID, "completed")
	for _, k := range []string{"split", "gather", "after"} {
		require.Equal(t, "skipped", fin.Nodes[k].Status, k)
	}
	require.Equal(t, "completed", fin.Nodes["other"].Status)
	r = h.startRun(flow, map[string]any{"items": []int{1, 2}})
	fin = h.waitRun(r.ID, "completed")
	require.Equal(t, "completed", fin.Nodes["after"].Status)
	require.Equal(t, "skipped", fin.Nodes["other"].Status)
}

func TestBranchCompileErrors(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	graph := map[string]any{
		"nodes": []map[string]any{wnode(h, "s"), node("a", "Condition", nil), node("b", "Condition", nil), node("c", "Condition", nil),
			node("d", "Condition", nil), node("e", "Condition", nil), node("f", "Condition", nil)},
		"edges": []map[string]any{
			redge("s", "a", map[string]any{"condition": "output.score >"}),
			redge("s", "b", map[string]any{"condition": "output.score + 1"}),
			redge("s", "c", map[string]any{"condition": "lead.score > 1"}),
			redge("s", "d", map[string]any{"default": true}),
			redge("s", "e", map[string]any{"default": true}),
			redge("s", "f", map[string]any{"outcome": "approve"}),
		},
	}
	code, details := h.refused(422, "POST", "/api/v1/flows", map[string]any{"name": "bad", "graph": graph})
	require.Equal(t, "invalid_graph", code)
	byPath := map[string]string{}
	for _, d := range details {
		byPath[d.Path] = d.EdgeID + ": " + d.Message
	}
	require.Len(t, byPath, 5, "every problem: %v", byPath)
	require.Contains(t, byPath["edges[0].data.condition"], "s-a: ")
	require.Contains(t, byPath["edges[1].data.condition"], "bool")
	require.Contains(t, byPath["edges[2].data.condition"], "unknown name lead")
	require.Contains(t, byPath["edges[4].data.default"], "already has a default edge")
	require.Contains(t, byPath["edges[5].data.outcome"], "only a UX node's edges")
	var flows struct {
		Flows []any `json:"flows"`
	}
	require.Equal(t, 200, h.do("GET", "/api/v1/flows", nil, &flows))
	for _, f := range flows.Flows {
		require.NotContains(t, fmt.Sprint(f), "bad", "nothing saved")
	}
}
