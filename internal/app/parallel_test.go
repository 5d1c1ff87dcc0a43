package app_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"slices"
	"sort"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

func splitter(id, path string) map[string]any {
	return node(id, "Splitter", map[string]any{"arrayPath": path})
}

func TestSplitterMergesInOrderWhenCallbacksArriveReversed(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	flow := h.createFlow(
		[]map[string]any{splitter("split", "items"), wnode(h, "score"), node("merge", "Collector", nil), node("after", "UX", nil)},
		[]map[string]any{edge("split", "score", nil), edge("score", "merge", nil), edge("merge", "after", map[string]string{"scores": "@this"})})
	r := h.startRun(flow, map[string]any{"items": []string{"A", "B", "C"}})
	var ds []dispatch
	for i := 0; i < 3; i++ {
		ds = append(ds, h.waitDispatch(r.ID, fmt.Sprintf("score_%d", i), 1))
	}
	require.JSONEq(t, `"A"`, string(ds[0].Payload.Input), "each instance's input is its item")
	require.JSONEq(t, `"C"`, string(ds[2].Payload.Input))
	for i := 2; i >= 0; i-- {
		var item string
		require.NoError(t, json.Unmarshal(ds[i].Payload.Input, &item))
		h.complete(ds[i], fmt.Sprintf(`%q`, item+"!"))
		if i > 0 {
			require.Equal(t, "pending", h.run(r.ID).Nodes["merge"].Status)
		}
	}
	after := h.waitNode(r.ID, "after", "waiting_for_user")
	require.JSONEq(t, `{"scores":["A!","B!","C!"]}`, string(after.Input))
	got := h.run(r.ID)
	require.JSONEq(t, `["A!","B!","C!"]`, string(got.Nodes["merge"].Output))
	require.Equal(t, []int{1}, got.Nodes["score_1"].Index)
	require.Equal(t, 1, got.Nodes["merge"].Attempt)
}

func TestSplitterChainOfTwoWorkersPerItem(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	flow := h.createFlow(
		[]map[string]any{splitter("s", "xs"), wnode(h, "first"), wnode(h, "second"), node("c", "Collector", nil)},
		[]map[string]any{edge("s", "first", nil), edge("first", "second", nil), edge("second", "c", nil)})
	r := h.startRun(flow, map[string]any{"xs": []int{10, 20}})
	for i := 0; i < 2; i++ {
		d := h.waitDispatch(r.ID, fmt.Sprintf("first_%d", i), 1)
		h.complete(d, fmt.Sprintf(`{"v":%s}`, d.Payload.Input))
	}
	for i := 1; i >= 0; i-- {
		d := h.waitDispatch(r.ID, fmt.Sprintf("second_%d", i), 1)
		require.JSONEq(t, fmt.Sprintf(`{"v":%d}`, (i+1)*10), string(d.Payload.Input), "later nodes get the previous instance's output")
		h.complete(d, fmt.Sprintf(`{"done":%d}`, i))
	}
	fin := h.waitRun(r.ID, "completed")
	require.JSONEq(t, `[{"done":0},{"done":1}]`, string(fin.Output))
}

func TestSplitterUXPerItemAndParallelBranches(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	flow := h.createFlow(
		[]map[string]any{splitter("s", "xs"), node("ask", "UX", nil), wnode(h, "w"), node("c", "Collector", nil)},
		[]map[string]any{edge("s", "ask", nil), edge("s", "w", nil), edge("ask", "c", nil), edge("w", "c", nil)})
	r := h.startRun(flow, map[string]any{"xs": []string{"p", "q"}})
	for i := 0; i < 2; i++ {
		k := fmt.Sprintf("ask_%d", i)
		h.waitNode(r.ID, k, "waiting_for_user")
		require.Equal(t, 200, h.do("POST", "/api/v1/runs/"+r.ID+"/nodes/"+k+"/complete",
			map[string]any{"status": "completed", "output": map[string]any{"answer": i}}, nil))
		h.complete(h.waitDispatch(r.ID, fmt.Sprintf("w_%d", i), 1), fmt.Sprintf(`{"work":%d}`, i))
	}
	fin := h.waitRun(r.ID, "completed")
	// Several branches per item are merged per item: the UX node's output
	// (its item, under "input", with the decision) and the worker's.
	var items []struct {
		Input    string `json:"input"`
		Work     int    `json:"work"`
		Decision struct {
			Outcome string         `json:"outcome"`
			Answer  map[string]int `json:"answer"`
		} `json:"decision"`
	}
	require.NoError(t, json.Unmarshal(fin.Output, &items))
	require.Len(t, items, 2)
	for i, it := range items {
		require.Equal(t, []string{"p", "q"}[i], it.Input)
		require.Equal(t, i, it.Work)
		require.Equal(t, "approve", it.Decision.Outcome)
		require.Equal(t, map[string]int{"answer": i}, it.Decision.Answer)
	}
}

func TestSplitterEmptyArray(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	flow := h.createFlow(
		[]map[string]any{splitter("s", "xs"), wnode(h, "w"), node("c", "Collector", nil), node("next", "UX", nil)},
		[]map[string]any{edge("s", "w", nil), edge("w", "c", nil), edge("c", "next", nil)})
	r := h.startRun(flow, map[string]any{"xs": []int{}})
	n := h.waitNode(r.ID, "next", "waiting_for_user")
	require.JSONEq(t, `{"c":[]}`, string(n.Input))
	require.JSONEq(t, `[]`, string(h.run(r.ID).Nodes["c"].Output))
}

func TestSplitterBadPathFails(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	flow := h.createFlow(
		[]map[string]any{splitter("s", "xs"), wnode(h, "w"), node("c", "Collector", nil)},
		[]map[string]any{edge("s", "w", nil), edge("w", "c", nil)})
	for input, want := range map[string]string{`{"ys":[1]}`: "matches nothing", `{"xs":"abc"}`: "not an array"} {
		var in any
		require.NoError(t, json.Unmarshal([]byte(input), &in))
		r := h.startRun(flow, in)
		fin := h.waitRun(r.ID, "failed")
		require.Contains(t, *fin.Nodes["s"].Error, want)
		require.Contains(t, *fin.Error, want)
	}
}

func TestFailedItemFailsCollectorThenRetryFires(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	flow := h.createFlow(
		[]map[string]any{splitter("s", "xs"), wnode(h, "w"), node("c", "Collector", nil)},
		[]map[string]any{edge("s", "w", nil), edge("w", "c", nil)})
	r := h.startRun(flow, map[string]any{"xs": []int{0, 1, 2}})
	d1 := h.waitDispatch(r.ID, "w_1", 1)
	code, _ := h.post(d1.Payload.CallbackURL, `{"status":"failed","error":"bad item"}`)
	require.Equal(t, 200, code)
	c := h.waitNode(r.ID, "c", "failed")
	require.Contains(t, *c.Error, "w_1")
	require.Equal(t, "running", h.run(r.ID).Status, "other items still run")
	h.complete(h.waitDispatch(r.ID, "w_0", 1), `"a"`)
	h.complete(h.waitDispatch(r.ID, "w_2", 1), `"c"`)
	h.waitRun(r.ID, "failed")
	// Retrying the collector while an item is missing is refused.
	require.Equal(t, 409, h.do("POST", "/api/v1/runs/"+r.ID+"/nodes/c/retry", nil, nil))
	require.Equal(t, 200, h.do("POST", "/api/v1/runs/"+r.ID+"/nodes/w_1/retry", nil, nil))
	h.complete(h.waitDispatch(r.ID, "w_1", 2), `"b"`)
	fin := h.waitRun(r.ID, "completed")
	require.JSONEq(t, `["a","b","c"]`, string(fin.Output))
	require.Equal(t, "completed", fin.Nodes["c"].Status)
}

func TestNestedSplitters3x4(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	flow := h.createFlow(
		[]map[string]any{splitter("outer", "rows"), splitter("inner", "cells"), wnode(h, "cell"),
			node("rowc", "Collector", nil), node("tablec", "Collector", nil)},
		[]map[string]any{edge("outer", "inner", nil), edge("inner", "cell", nil), edge("cell", "rowc", nil),
			edge("rowc", "tablec", nil)})
	rows := [][]int{}
	for i := 0; i < 3; i++ {
		row := []int{}
		for j := 0; j < 4; j++ {
			row = append(row, i*10+j)
		}
		rows = append(rows, row)
	}
	input := map[string]any{"rows": []map[string]any{{"cells": rows[0]}, {"cells": rows[1]}, {"cells": rows[2]}}}
	r := h.startRun(flow, input)
	var ds []dispatch
	for i := 0; i < 3; i++ {
		for j := 0; j < 4; j++ {
			ds = append(ds, h.waitDispatch(r.ID, fmt.Sprintf("cell_%d_%d", i, j), 1))
		}
	}
	// Complete in a scrambled order.
	sort.Slice(ds, func(a, b int) bool { return ds[a].Payload.NodeID > ds[b].Payload.NodeID })
	for _, d := range ds {
		var v int
		require.NoError(t, json.Unmarshal(d.Payload.Input, &v))
		h.complete(d, fmt.Sprintf("%d", v*2))
	}
	fin := h.waitRun(r.ID, "completed")
	require.JSONEq(t, `[[0,2,4,6],[20,22,24,26],[40,42,44,46]]`, string(fin.Output))
	require.Equal(t, []int{2, 3}, fin.Nodes["cell_2_3"].Index)
	require.Equal(t, []int{1}, fin.Nodes["rowc_1"].Index)
	require.Equal(t, "completed", fin.Nodes["inner_2"].Status)
}

// flagTrials is how often Test1000ItemsConcurrentCallbacks runs its
// fan-out: 5 in make test, 20 in make volume.
var flagTrials = flag.Int("app.trials", 5, "trials of Test1000ItemsConcurrentCallbacks (make volume: 20)")

// Test1000ItemsConcurrentCallbacks: 1,000 items called back from 64
// goroutines; the collector fires exactly once with every item in order.
// Repeated -app.trials times (each trial about 3 s of two cores under
// -race: 20 were the suite's costliest test).
func Test1000ItemsConcurrentCallbacks(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	const items, workers = 1000, 64
	trials := *flagTrials
	// A delivery whose 202 was slow to come back (the suite on both
	// cores, a thousand at once) is tried again, not failed: this test is
	// about the callbacks.
	flow := h.createFlow(
		[]map[string]any{splitter("s", "xs"), wnode(h, "w", "delivery", `{"maxTries": 5}`), node("c", "Collector", nil)},
		[]map[string]any{edge("s", "w", nil), edge("w", "c", nil)})
	xs := make([]int, items)
	for i := range xs {
		xs[i] = i
	}
	want, _ := json.Marshal(xs)
	seen := 0 // the worker's dispatches looked at so far: a thousand more each trial
	for trial := 0; trial < trials; trial++ {
		r := h.startRun(flow, map[string]any{"xs": xs})
		byKey := map[string]dispatch{}
		h.eventually(func() bool {
			for _, d := range h.worker.From(seen) {
				seen++
				if d.Payload.RunID == r.ID {
					byKey[d.Payload.NodeID] = d
				}
			}
			return len(byKey) == items
		}, "%d dispatches", items)
		jobs := make(chan dispatch)
		var wg sync.WaitGroup
		var mu sync.Mutex
		bad := 0
		for g := 0; g < workers; g++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for d := range jobs {
					if code, body := h.post(d.Payload.CallbackURL, fmt.Sprintf(`{"status":"completed","output":%s}`, d.Payload.Input)); code != 200 {
						t.Logf("callback of %s answered %d: %s", d.Payload.NodeID, code, body)
						mu.Lock()
						bad++
						mu.Unlock()
					}
				}
			}()
		}
		for i := items - 1; i >= 0; i-- {
			jobs <- byKey[fmt.Sprintf("w_%d", i)]
		}
		close(jobs)
		wg.Wait()
		require.Zero(t, bad)
		fin := h.waitRun(r.ID, "completed")
		require.JSONEq(t, string(want), string(fin.Output), "trial %d", trial)
		require.Equal(t, 1, fin.Nodes["c"].Attempt)
		var fired int
		require.NoError(t, h.app.Store.Gorm().Raw(`SELECT count(*) FROM run_events WHERE run_id = ? AND key = 'c'
			AND payload->>'status' = 'completed'`, r.ID).Row().Scan(&fired))
		require.Equal(t, 1, fired, "collector fired exactly once")
	}
}

// TestRunAnswerStreamsNodesInKeyOrder: a run's answer (start and GET) is
// streamed node by node; it is the JSON a map would give — every node,
// keys in byte order ("score_10" before "score_2"), one object per key.
func TestRunAnswerStreamsNodesInKeyOrder(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	flow := h.createFlow(
		[]map[string]any{splitter("split", "items"), wnode(h, "score"), node("merge", "Collector", nil)},
		[]map[string]any{edge("split", "score", nil), edge("score", "merge", nil)})
	items := make([]int, 12)
	var started json.RawMessage
	require.Equal(t, 201, h.do("POST", "/api/v1/flows/"+flow+"/runs", map[string]any{"input": map[string]any{"items": items}}, &started))
	var id struct {
		ID string `json:"id"`
	}
	require.NoError(t, json.Unmarshal(started, &id))
	var got json.RawMessage
	require.Equal(t, 200, h.do("GET", "/api/v1/runs/"+id.ID, nil, &got))
	for _, body := range []json.RawMessage{started, got} {
		var r struct {
			ID    string                     `json:"id"`
			Nodes map[string]json.RawMessage `json:"nodes"`
		}
		require.NoError(t, json.Unmarshal(body, &r))
		require.Equal(t, id.ID, r.ID)
		require.Len(t, r.Nodes, 14, "split, merge and 12 instances")
		// The keys in the order they appear in the body.
		dec := json.NewDecoder(bytes.NewReader(body))
		var keys []string
		depth := 0
		inNodes := false
		for {
			tok, err := dec.Token()
			if err != nil {
				break
			}
			switch v := tok.(type) {
			case json.Delim:
				if v == '{' || v == '[' {
					depth++
				} else {
					depth--
					if depth == 1 {
						inNodes = false
					}
				}
			case string:
				if depth == 1 && v == "nodes" {
					inNodes = true
				} else if inNodes && depth == 2 && dec.More() {
					keys = append(keys, v)
					var skip json.RawMessage
					require.NoError(t, dec.Decode(&skip))
				}
			}
		}
		require.Len(t, keys, 14)
		require.True(t, sort.StringsAreSorted(keys), "keys in byte order: %v", keys)
		require.Less(t, slices.Index(keys, "score_10"), slices.Index(keys, "score_2"))
	}
}
