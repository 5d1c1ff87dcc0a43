package app_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
)

func (h *harness) rerun(runID, key string, body any) int {
	h.t.Helper()
	var out map[string]any
	code := h.do("POST", "/api/v1/runs/"+runID+"/nodes/"+key+"/rerun", body, &out)
	if code != 200 {
		h.t.Logf("rerun %s: %d %v", key, code, out["error"])
	}
	return code
}

func TestRerunAStepAndWhatFollows(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	flow := h.createFlow([]map[string]any{wnode(h, "a"), wnode(h, "b"), wnode(h, "c")},
		[]map[string]any{edge("a", "b", nil), edge("b", "c", nil)})
	r := h.startRun(flow, map[string]any{"x": 1})
	h.complete(h.waitDispatch(r.ID, "a", 1), `{"x": 1}`)
	db := h.waitDispatch(r.ID, "b", 1)
	require.Equal(t, 409, h.rerun(r.ID, "b", nil), "a running node is not re-run")
	require.Equal(t, 409, h.rerun(r.ID, "a", nil), "nor one whose successor runs")
	h.complete(db, `{"y": 1}`)
	h.complete(h.waitDispatch(r.ID, "c", 1), `{"z": 1}`)
	h.waitRun(r.ID, "completed")

	require.Equal(t, 200, h.rerun(r.ID, "b", map[string]any{"input": map[string]any{"x": 2}}))
	got := h.run(r.ID)
	require.Equal(t, "running", got.Status, "a finished run runs again")
	require.Equal(t, "pending", got.Nodes["c"].Status)
	require.Equal(t, "completed", got.Nodes["a"].Status, "what came before stays")
	db2 := h.waitDispatch(r.ID, "b", 2)
	require.JSONEq(t, `{"x": 2}`, string(db2.Payload.Input))
	h.complete(db2, `{"y": 2}`)
	dc2 := h.waitDispatch(r.ID, "c", 2)
	require.JSONEq(t, `{"y": 2}`, string(dc2.Payload.Input))
	h.complete(dc2, `{"z": 2}`)
	done := h.waitRun(r.ID, "completed")
	require.JSONEq(t, `{"z": 2}`, string(done.Output))

	// The first attempts stay in the events.
	var n int
	require.NoError(t, h.app.Store.Gorm().Raw(`SELECT count(*) FROM run_events WHERE run_id = ? AND key = 'c'
		AND type = 'node.status' AND payload->>'status' = 'completed'`, r.ID).Row().Scan(&n))
	require.Equal(t, 2, n)
	require.NoError(t, h.app.Store.Gorm().Raw(`SELECT count(*) FROM run_events WHERE run_id = ? AND type = 'node.rerun'`, r.ID).
		Row().Scan(&n))
	require.Equal(t, 1, n)
}

func TestRerunOneItemOfAThousand(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	w := newAutoWorker(t)
	flow := h.createFlow([]map[string]any{splitter("s", "xs"), node("w", "Worker", map[string]any{"webhookUrl": w.URL}),
		node("c", "Collector", nil), node("after", "Transform", map[string]any{"expression": "len(input)"})},
		[]map[string]any{edge("s", "w", nil), edge("w", "c", nil), edge("c", "after", nil)})
	xs := make([]int, 1000)
	for i := range xs {
		xs[i] = i
	}
	r := h.startRun(flow, map[string]any{"xs": xs})
	first := h.waitRun(r.ID, "completed")
	var before []struct {
		V int `json:"v"`
	}
	require.NoError(t, json.Unmarshal(first.Nodes["c"].Output, &before))
	require.Len(t, before, 1000)

	require.Equal(t, 200, h.rerun(r.ID, "w_500", map[string]any{"input": 9999}))
	done := h.waitRun(r.ID, "completed")
	var after []struct {
		V int `json:"v"`
	}
	require.NoError(t, json.Unmarshal(done.Nodes["c"].Output, &after))
	require.Len(t, after, 1000)
	for i := range after {
		if i == 500 {
			require.Equal(t, 9999, after[i].V, "the item re-run")
		} else {
			require.Equal(t, before[i].V, after[i].V, "item %d unchanged", i)
		}
	}
	require.Equal(t, 2, done.Nodes["c"].Attempt, "the Collector fired again")
	require.Equal(t, 2, done.Nodes["w_500"].Attempt)
	require.Equal(t, 1, done.Nodes["w_499"].Attempt, "only that item ran again")
	require.Equal(t, 2, done.Nodes["after"].Attempt)
}

func TestRerunFansOutAnew(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	w := newAutoWorker(t)
	flow := h.createFlow([]map[string]any{node("src", "Transform", map[string]any{"expression": "input"}), splitter("s", "xs"),
		node("w", "Worker", map[string]any{"webhookUrl": w.URL}), node("c", "Collector", nil)},
		[]map[string]any{edge("src", "s", nil), edge("s", "w", nil), edge("w", "c", nil)})
	r := h.startRun(flow, map[string]any{"xs": []int{1, 2, 3}})
	h.waitRun(r.ID, "completed")

	require.Equal(t, 200, h.rerun(r.ID, "src", map[string]any{"input": map[string]any{"xs": []int{7, 8}}}))
	done := h.waitRun(r.ID, "completed")
	require.JSONEq(t, `[{"v": 7}, {"v": 8}]`, string(done.Output))
	_, old := done.Nodes["w_2"]
	require.False(t, old, "the earlier fan-out's instances are gone")
}

func TestRerunRefused(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	flow := h.createFlow([]map[string]any{wnode(h, "a")}, nil)
	r := h.startRun(flow, map[string]any{})
	require.Equal(t, 404, h.rerun(r.ID, "nope", nil))
	require.Equal(t, 409, h.rerun(r.ID, "a", nil), "running")
	require.Equal(t, 200, h.do("POST", "/api/v1/runs/"+r.ID+"/cancel", nil, nil))
	require.Equal(t, 409, h.rerun(r.ID, "a", nil), "cancelled run")
}

// TestRerunATolerableFailure: re-running an item whose failure its
// Collector tolerated counts the item back in, and the Collector fires
// again with the item's new output and no error.
func TestRerunATolerableFailure(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	w := wnode(h, "w")
	as[map[string]any](t, w["data"])["webhookUrl"] = itemWorker(t, func(n int) bool { return n == 3 })
	flow := h.createFlow([]map[string]any{splitter("s", "xs"), w,
		node("c", "Collector", map[string]any{"toleratedFailures": "50%"}), node("after", "Transform", map[string]any{"expression": "input"})},
		[]map[string]any{edge("s", "w", nil), edge("w", "c", nil), edge("c", "after", nil)})
	r := h.startRun(flow, map[string]any{"xs": items(6)})
	first := h.waitRun(r.ID, "completed")
	require.JSONEq(t, `{"items": [{"n":0},{"n":1},{"n":2},null,{"n":4},{"n":5}],
		"errors": [{"index": 3, "key": "w_3", "error": "item 3 is bad"}]}`, string(first.Output))

	require.Equal(t, 200, h.rerun(r.ID, "w_3", map[string]any{"input": map[string]any{"n": 30}}))
	done := h.waitRun(r.ID, "completed")
	require.JSONEq(t, `{"items": [{"n":0},{"n":1},{"n":2},{"n":30},{"n":4},{"n":5}], "errors": []}`, string(done.Output))
}
