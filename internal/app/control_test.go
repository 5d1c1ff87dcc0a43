package app_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestPauseWithWorkInFlight(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	flow := h.createFlow(
		[]map[string]any{node("split", "Splitter", map[string]any{"arrayPath": "items"}), wnode(h, "w"), wnode(h, "next"),
			node("gather", "Collector", nil), wnode(h, "after")},
		[]map[string]any{edge("split", "w", nil), edge("w", "next", nil), edge("next", "gather", nil), edge("gather", "after", nil)})
	const n = 50
	items := make([]int, n)
	for i := range items {
		items[i] = i
	}
	r := h.startRun(flow, map[string]any{"items": items})
	ds := make([]dispatch, n)
	for i := range ds {
		ds[i] = h.waitDispatch(r.ID, fmt.Sprintf("w_%d", i), 1)
	}
	var paused struct {
		runJSON
		FinishedAt *string `json:"finished_at"`
	}
	require.Equal(t, 200, h.do("POST", "/api/v1/runs/"+r.ID+"/pause", nil, &paused))
	require.Equal(t, "paused", paused.Status)
	require.Nil(t, paused.FinishedAt, "a paused run has not finished")
	require.Equal(t, 409, h.do("POST", "/api/v1/runs/"+r.ID+"/pause", nil, nil), "already paused")

	// The work in flight is recorded; nothing new fires.
	for i, d := range ds {
		h.complete(d, fmt.Sprintf(`{"i": %d}`, i))
	}
	got := h.run(r.ID)
	require.Equal(t, "paused", got.Status)
	for i := 0; i < n; i++ {
		require.Equal(t, "completed", got.Nodes[fmt.Sprintf("w_%d", i)].Status)
		require.Equal(t, "pending", got.Nodes[fmt.Sprintf("next_%d", i)].Status)
		require.Zero(t, h.dispatchCount(r.ID, fmt.Sprintf("next_%d", i)))
	}

	var resumed runJSON
	require.Equal(t, 200, h.do("POST", "/api/v1/runs/"+r.ID+"/resume", nil, &resumed))
	require.Equal(t, "running", resumed.Status)
	require.Equal(t, 409, h.do("POST", "/api/v1/runs/"+r.ID+"/resume", nil, nil), "running, not paused")
	for i := 0; i < n; i++ {
		d := h.waitDispatch(r.ID, fmt.Sprintf("next_%d", i), 1)
		require.JSONEq(t, fmt.Sprintf(`{"i": %d}`, i), string(d.Payload.Input), "what the callbacks recorded is the input")
		h.complete(d, fmt.Sprintf(`%d`, i))
	}
	h.complete(h.waitDispatch(r.ID, "after", 1), `{"done": true}`)
	fin := h.waitRun(r.ID, "completed")
	require.JSONEq(t, `{"done": true}`, string(fin.Output))
	require.Equal(t, 409, h.do("POST", "/api/v1/runs/"+r.ID+"/pause", nil, nil), "a completed run cannot pause")
}

func TestPauseHoldsDispatchesAndBranches(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	// a's worker refuses (500): its dispatch waits to be retried. Pausing
	// holds it; resuming sends it again at once.
	h.worker.SetStatus(500)
	flow := h.createFlow(
		[]map[string]any{wnode(h, "a", "retry", `{"maxAttempts": 5, "initialDelayMs": 60000, "maxDelayMs": 60000}`, "delivery", `{"maxTries": 5}`),
			node("yes", "Condition", nil), node("no", "Condition", nil)},
		[]map[string]any{redge("a", "yes", map[string]any{"condition": "output.ok"}), redge("a", "no", map[string]any{"default": true})})
	r := h.startRun(flow, map[string]any{})
	h.waitDispatch(r.ID, "a", 1)
	count := func(status string) int {
		var c int
		require.NoError(t, h.app.Store.Gorm().Raw(`SELECT count(*) FROM dispatches WHERE run_id = ? AND status = ?`, r.ID, status).Row().Scan(&c))
		return c
	}
	require.Equal(t, 200, h.do("POST", "/api/v1/runs/"+r.ID+"/pause", nil, nil))
	// Held at once, or when the delivery in flight at the pause fails.
	h.eventually(func() bool { return count("held") == 1 }, "the refused dispatch to be held")
	sent := len(h.worker.All())
	// Several backoffs, within the node's deadline (300 s) and its retry's
	// delay (60 s): nothing goes out while paused.
	h.advance(30 * time.Second)
	h.sweeps(2)
	require.Len(t, h.worker.All(), sent, "no delivery while paused")
	require.Zero(t, count("pending"))
	h.worker.SetStatus(202)
	require.Equal(t, 200, h.do("POST", "/api/v1/runs/"+r.ID+"/resume", nil, nil))
	d := h.waitDispatch(r.ID, "a", 1)
	// Paused again before the callback: the branch is decided when it
	// resumes.
	require.Equal(t, 200, h.do("POST", "/api/v1/runs/"+r.ID+"/pause", nil, nil))
	h.complete(d, `{"ok": true}`)
	got := h.run(r.ID)
	require.Equal(t, "pending", got.Nodes["yes"].Status)
	require.Equal(t, "pending", got.Nodes["no"].Status)
	require.Equal(t, 200, h.do("POST", "/api/v1/runs/"+r.ID+"/resume", nil, nil))
	fin := h.waitRun(r.ID, "completed")
	require.Equal(t, "completed", fin.Nodes["yes"].Status)
	require.Equal(t, "skipped", fin.Nodes["no"].Status)
}

func TestSkipNodeByHand(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	flow := h.createFlow([]map[string]any{wnode(h, "a"), wnode(h, "b"), node("ask", "UX", nil)},
		[]map[string]any{edge("a", "b", nil), edge("b", "ask", nil)})
	r := h.startRun(flow, map[string]any{})
	var refused apiErrorJSON
	require.Equal(t, 409, h.do("POST", "/api/v1/runs/"+r.ID+"/nodes/b/skip", map[string]any{}, &refused), "b is pending")
	require.Contains(t, refused.Error.Message, "node b is pending; only a running, failed, waiting or sleeping node can be skipped")
	var unknown apiErrorJSON
	require.Equal(t, 404, h.do("POST", "/api/v1/runs/"+r.ID+"/nodes/nope/skip", map[string]any{}, &unknown))
	require.Contains(t, unknown.Error.Message, "nope")
	d := h.waitDispatch(r.ID, "a", 1)
	code, body := h.post(d.Payload.CallbackURL, `{"status": "failed", "error": "broken"}`)
	require.Equal(t, 200, code, body)
	require.Equal(t, "failed", h.waitRun(r.ID, "failed").Nodes["a"].Status)

	// The operator completes a by hand; the run goes on.
	var got runJSON
	require.Equal(t, 200, h.do("POST", "/api/v1/runs/"+r.ID+"/nodes/a/skip", map[string]any{"output": map[string]any{"fixed": true}}, &got))
	require.Equal(t, "running", got.Status)
	require.Equal(t, "completed", got.Nodes["a"].Status)
	db := h.waitDispatch(r.ID, "b", 1)
	require.JSONEq(t, `{"fixed": true}`, string(db.Payload.Input))
	// A late callback for a's attempt is stale now.
	code, _ = h.post(d.Payload.CallbackURL, `{"status": "completed", "output": {}}`)
	require.Equal(t, 409, code)
	// b is running: skipping it makes its worker's callback stale too.
	require.Equal(t, 200, h.do("POST", "/api/v1/runs/"+r.ID+"/nodes/b/skip", nil, nil))
	code, _ = h.post(db.Payload.CallbackURL, `{"status": "completed", "output": {}}`)
	require.Equal(t, 409, code)
	// ask waits for a person: skipped with an output.
	h.waitNode(r.ID, "ask", "waiting_for_user")
	require.Equal(t, 200, h.do("POST", "/api/v1/runs/"+r.ID+"/nodes/ask/skip", map[string]any{"output": "done"}, nil))
	fin := h.waitRun(r.ID, "completed")
	require.JSONEq(t, `"done"`, string(fin.Output))
	require.Equal(t, 409, h.do("POST", "/api/v1/runs/"+r.ID+"/nodes/ask/skip", nil, nil), "the run completed")
	var events int
	require.NoError(t, h.app.Store.Gorm().WithContext(context.Background()).Raw(`SELECT count(*) FROM run_events WHERE run_id = ?
		AND type = 'node.completed_by_hand' AND payload->>'by' = 'admin'`, r.ID).Row().Scan(&events))
	require.Equal(t, 3, events, "each skip is recorded with its actor")
}

func TestNonRetryableFailure(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	flow := h.createFlow([]map[string]any{wnode(h, "a", "retry", `{"maxAttempts": 3, "initialDelayMs": 10}`)}, nil)
	r := h.startRun(flow, map[string]any{})
	d := h.waitDispatch(r.ID, "a", 1)
	code, body := h.post(d.Payload.CallbackURL, `{"status": "failed", "error": "invalid VAT number", "retryable": false}`)
	require.Equal(t, 200, code, body)
	fin := h.waitRun(r.ID, "failed")
	require.Equal(t, 1, fin.Nodes["a"].Attempt, "no retry")
	require.Equal(t, 1, h.dispatchCount(r.ID, "a"))
	// retryable on a completion is refused.
	r = h.startRun(flow, map[string]any{})
	d = h.waitDispatch(r.ID, "a", 1)
	code, _ = h.post(d.Payload.CallbackURL, `{"status": "completed", "retryable": false}`)
	require.Equal(t, 400, code)
}

func TestBulkRetryAndCancel(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	flow := h.createFlow([]map[string]any{wnode(h, "a"), node("b", "Condition", nil)}, []map[string]any{edge("a", "b", nil)})
	other := h.createFlow([]map[string]any{wnode(h, "a")}, nil)
	const n = 200
	ids := make([]string, n)
	for i := range ids {
		ids[i] = h.startRun(flow, map[string]any{"i": i}).ID
	}
	otherRun := h.startRun(other, map[string]any{}).ID
	fail := func(runID string, attempt int) {
		d := h.waitDispatch(runID, "a", attempt)
		code, body := h.post(d.Payload.CallbackURL, `{"status":"failed","error":"boom: upstream down"}`)
		require.Equal(t, 200, code, body)
	}
	for _, id := range ids {
		fail(id, 1)
	}
	fail(otherRun, 1)
	for _, id := range ids {
		h.waitRun(id, "failed")
	}
	h.waitRun(otherRun, "failed")

	type bulkAnswer struct {
		Matched, Applied, Skipped int
		Errors                    []map[string]string
	}
	bulk := func(body map[string]any) bulkAnswer {
		var out bulkAnswer
		require.Equal(t, 200, h.do("POST", "/api/v1/runs/bulk", body, &out))
		return out
	}
	filter := map[string]any{"flow_id": flow, "status": "failed", "node": "a", "error_contains": "upstream down"}
	dry := bulk(map[string]any{"action": "retry", "filter": filter, "dry_run": true})
	require.Equal(t, bulkAnswer{Matched: n, Errors: []map[string]string{}}, dry, "a dry run counts and changes nothing")
	require.Equal(t, "failed", h.run(ids[0]).Status)

	// The runs list filters the same way, so the runs a bulk action picks
	// can be looked at first.
	var page struct {
		Runs []struct{ ID string } `json:"runs"`
	}
	require.Equal(t, 200, h.do("GET", "/api/v1/runs?status=failed&node=a&error=upstream+down&limit=500", nil, &page))
	require.Len(t, page.Runs, n+1, "both flows' runs failed at a with that error")
	require.Equal(t, 200, h.do("GET", "/api/v1/runs?flow_id="+other+"&node=a&error=upstream+down", nil, &page))
	require.Len(t, page.Runs, 1)
	require.Equal(t, 200, h.do("GET", "/api/v1/runs?node=b", nil, &page))
	require.Empty(t, page.Runs, "no run failed at b")
	require.Equal(t, 200, h.do("GET", "/api/v1/runs?error=not+this", nil, &page))
	require.Empty(t, page.Runs)

	done := bulk(map[string]any{"action": "retry", "filter": filter})
	require.Equal(t, n, done.Matched)
	require.Equal(t, n, done.Applied)
	require.Empty(t, done.Errors)
	for _, id := range ids {
		h.waitDispatch(id, "a", 2)
	}
	require.Equal(t, "failed", h.run(otherRun).Status, "another flow's run is left alone")
	again := bulk(map[string]any{"action": "retry", "filter": filter})
	require.Equal(t, 0, again.Matched, "applied again: nothing left to retry")

	cancel := map[string]any{"action": "cancel", "filter": map[string]any{"flow_id": flow}}
	first := bulk(cancel)
	require.Equal(t, n, first.Applied)
	second := bulk(cancel)
	require.Equal(t, n, second.Matched)
	require.Equal(t, n, second.Skipped, "cancelled already: skipped")
	require.Zero(t, second.Applied)
	require.Equal(t, "cancelled", h.run(ids[n-1]).Status)

	require.Equal(t, 400, h.do("POST", "/api/v1/runs/bulk", map[string]any{"action": "delete"}, nil))
	require.Equal(t, 400, h.do("POST", "/api/v1/runs/bulk", map[string]any{"action": "cancel"}, nil), "every run: only with all")
	var all bulkAnswer
	require.Equal(t, 200, h.do("POST", "/api/v1/runs/bulk", map[string]any{"action": "cancel", "all": true}, &all))
	require.Equal(t, n+1, all.Matched)
	require.Equal(t, 1, all.Applied, "the other flow's failed run")
	require.Equal(t, 400, h.do("POST", "/api/v1/runs/bulk", map[string]any{"action": "cancel", "filter": map[string]any{"status": "sleeping"}}, nil))
	require.Equal(t, 400, h.do("POST", "/api/v1/runs/bulk", map[string]any{"action": "cancel", "filter": map[string]any{"flow_id": "x"}}, nil))
}

// A failed Collector whose last item completes while the run is paused
// fires when the run resumes.
func TestPausedFailedCollectorFiresOnResume(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	flow := h.createFlow(
		[]map[string]any{node("split", "Splitter", map[string]any{"arrayPath": "items"}), wnode(h, "w"),
			node("gather", "Collector", nil), node("after", "Condition", nil)},
		[]map[string]any{edge("split", "w", nil), edge("w", "gather", nil), edge("gather", "after", nil)})
	r := h.startRun(flow, map[string]any{"items": []int{0, 1}})
	d0, d1 := h.waitDispatch(r.ID, "w_0", 1), h.waitDispatch(r.ID, "w_1", 1)
	code, body := h.post(d0.Payload.CallbackURL, `{"status":"failed","error":"boom"}`)
	require.Equal(t, 200, code, body)
	h.waitNode(r.ID, "gather", "failed")
	h.complete(d1, `1`)
	h.waitRun(r.ID, "failed")
	require.Equal(t, 200, h.do("POST", "/api/v1/runs/"+r.ID+"/nodes/w_0/retry", nil, nil))
	retried := h.waitDispatch(r.ID, "w_0", 2)
	require.Equal(t, 200, h.do("POST", "/api/v1/runs/"+r.ID+"/pause", nil, nil))
	h.complete(retried, `0`)
	require.Equal(t, "failed", h.run(r.ID).Nodes["gather"].Status, "paused: the Collector waits")
	require.Equal(t, 200, h.do("POST", "/api/v1/runs/"+r.ID+"/resume", nil, nil))
	fin := h.waitRun(r.ID, "completed")
	require.JSONEq(t, `[0, 1]`, string(fin.Nodes["gather"].Output))
}

// A Collector's failure handed on while other items still run: the run
// completes only once they are done.
func TestHandledCollectorFailureWaitsForItems(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	flow := h.createFlow(
		[]map[string]any{node("split", "Splitter", map[string]any{"arrayPath": "items"}), wnode(h, "w"),
			node("gather", "Collector", nil), node("after", "Condition", nil), node("handler", "Condition", nil)},
		[]map[string]any{edge("split", "w", nil), edge("w", "gather", nil), edge("gather", "after", nil),
			redge("gather", "handler", map[string]any{"on": "failure"})})
	r := h.startRun(flow, map[string]any{"items": []int{0, 1}})
	d0, d1 := h.waitDispatch(r.ID, "w_0", 1), h.waitDispatch(r.ID, "w_1", 1)
	code, body := h.post(d0.Payload.CallbackURL, `{"status":"failed","error":"boom"}`)
	require.Equal(t, 200, code, body)
	h.waitNode(r.ID, "handler", "completed")
	got := h.run(r.ID)
	require.Equal(t, "running", got.Status, "w_1 still runs")
	require.Equal(t, "running", got.Nodes["w_1"].Status)
	h.complete(d1, `1`)
	fin := h.waitRun(r.ID, "completed")
	require.Equal(t, "failed", fin.Nodes["gather"].Status, "its failure was handled: it does not fire again")
	require.Equal(t, "skipped", fin.Nodes["after"].Status)
}

// A paused run's worker node does not time out meanwhile, and a retry it
// makes is held.
func TestPauseHoldsDeadlines(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.worker.SetStatus(500)
	flow := h.createFlow([]map[string]any{wnode(h, "a", "retry", `{"maxAttempts": 3, "initialDelayMs": 60000, "maxDelayMs": 60000}`,
		"delivery", `{"maxTries": 3}`, "timeoutSeconds", "1")}, nil)
	r := h.startRun(flow, map[string]any{})
	h.waitDispatch(r.ID, "a", 1)
	require.Equal(t, 200, h.do("POST", "/api/v1/runs/"+r.ID+"/pause", nil, nil))
	h.advance(5 * time.Minute) // past the node's deadline and its retries' backoff
	h.sweeps(2)
	got := h.run(r.ID)
	require.Equal(t, "running", got.Nodes["a"].Status)
	require.Equal(t, 1, got.Nodes["a"].Attempt, "no timeout and no new attempt while paused")
	var sendable int
	require.NoError(t, h.app.Store.Gorm().Raw(`SELECT count(*) FROM dispatches WHERE run_id = ? AND status IN ('pending', 'sending')`, r.ID).
		Row().Scan(&sendable))
	require.Zero(t, sendable, "nothing waits to be sent")
}
