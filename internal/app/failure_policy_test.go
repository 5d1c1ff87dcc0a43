package app_test

import (
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/tidwall/gjson"

	"github.com/stitchd/stitchd/handlers"
	"github.com/stitchd/stitchd/internal/testkit"
)

// failWith calls a dispatch back as failed with msg.
func (h *harness) failWith(d dispatch, msg string) {
	h.t.Helper()
	b, _ := json.Marshal(map[string]string{"status": "failed", "error": msg})
	code, body := h.post(d.Payload.CallbackURL, string(b))
	require.Equal(h.t, 200, code, body)
}

func TestRetryNonRetryableErrorFailsAtOnce(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	retry := `{"maxAttempts":5,"initialDelayMs":1,"maxDelayMs":1,"nonRetryable":["invalid card","HTTP 4"]}`
	flow := h.createFlow([]map[string]any{wnode(h, "charge", "retry", retry)}, nil)

	// An error containing a listed substring: no retry.
	r := h.startRun(flow, map[string]any{})
	h.failWith(h.waitDispatch(r.ID, "charge", 1), "card 4242: invalid card number")
	fin := h.waitRun(r.ID, "failed")
	require.Equal(t, 1, fin.Nodes["charge"].Attempt)
	require.Equal(t, 1, h.dispatchCount(r.ID, "charge"), "a non-retryable failure is not retried")

	// Any other error is retried per maxAttempts.
	r2 := h.startRun(flow, map[string]any{})
	h.failWith(h.waitDispatch(r2.ID, "charge", 1), "upstream timeout")
	h.complete(h.waitDispatch(r2.ID, "charge", 2), `{"ok":true}`)
	h.waitRun(r2.ID, "completed")
}

// TestRetryMultiplierAndJitterDelays checks the delay written for a retry:
// initialDelayMs·multiplier^(n−1), less the jitter fraction derived from
// the run, key and attempt (handlers.JitterFraction). The delays are
// minutes, moved past on the test's clock: a row whose delay had run out
// would be claimed, and its next_attempt_at moved to the lease's end,
// before a test slowed by a loaded machine read it.
func TestRetryMultiplierAndJitterDelays(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	retry := `{"maxAttempts":3,"initialDelayMs":60000,"multiplier":10,"maxDelayMs":1000000,"jitter":0.5}`
	flow := h.createFlow([]map[string]any{wnode(h, "w", "retry", retry)}, nil)
	r := h.startRun(flow, map[string]any{})
	h.failWith(h.waitDispatch(r.ID, "w", 1), "boom 1")
	h.advance(time.Minute) // attempt 2's delay, at most a minute
	h.failWith(h.waitDispatch(r.ID, "w", 2), "boom 2")
	delay := func(attempt int) float64 {
		var ms float64
		h.eventually(func() bool {
			return h.app.Store.Gorm().Raw(`SELECT extract(epoch FROM next_attempt_at - created_at) * 1000 FROM dispatches
				WHERE run_id = ? AND key = 'w' AND attempt = ?`, r.ID, attempt).Row().Scan(&ms) == nil
		}, "the dispatch of attempt %d", attempt)
		return ms
	}
	// Attempt 3 waits 60,000·10 = 600,000 ms less up to half of it.
	want := math.Ceil(600000 * (1 - 0.5*handlers.JitterFraction(r.ID, "w", 2)))
	require.InDelta(t, want, delay(3), 1, "the retry after the second failure")
	require.Equal(t, "running", h.run(r.ID).Nodes["w"].Status)
}

// itemWorker calls back every dispatch at once: failed when fail says so
// for its input, else completed with the input.
func itemWorker(t *testing.T, fail func(item int) bool) string {
	return testkit.NewWorker(t, testkit.WorkerOptions{Tries: 50, Client: http.DefaultClient,
		CallBack: func(d testkit.Dispatch) (string, bool) {
			if item := int(gjson.GetBytes(d.Payload.Input, "n").Int()); fail(item) {
				return fmt.Sprintf(`{"status":"failed","error":"item %d is bad"}`, item), true
			}
			return testkit.EchoInput(d)
		}}).URL
}

func items(n int) []map[string]int {
	out := make([]map[string]int, n)
	for i := range out {
		out[i] = map[string]int{"n": i}
	}
	return out
}

func toleranceFlow(h *harness, url string, tolerated any) string {
	w := wnode(h, "w")
	as[map[string]any](h.t, w["data"])["webhookUrl"] = url
	return h.createFlow([]map[string]any{splitter("s", "xs"), w,
		node("c", "Collector", map[string]any{"toleratedFailures": tolerated}), node("after", "UX", nil)},
		[]map[string]any{edge("s", "w", nil), edge("w", "c", nil), edge("c", "after", nil)})
}

func TestCollectorToleratedFailuresWithin(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	// 3 % of 1,000 items fail (every n ≡ 7 mod 33 below 990): within 5 %.
	bad := func(n int) bool { return n%33 == 7 && n < 990 }
	flow := toleranceFlow(h, itemWorker(t, bad), "5%")
	r := h.startRun(flow, map[string]any{"xs": items(1000)})
	after := h.waitNode(r.ID, "after", "waiting_for_user")
	var out struct {
		Items  []json.RawMessage `json:"items"`
		Errors []struct {
			Index int    `json:"index"`
			Key   string `json:"key"`
			Error string `json:"error"`
		} `json:"errors"`
	}
	require.NoError(t, json.Unmarshal(after.Input, &out))
	require.Len(t, out.Items, 1000)
	var wantBad []int
	for i := range 1000 {
		if bad(i) {
			wantBad = append(wantBad, i)
			require.JSONEq(t, `null`, string(out.Items[i]), "item %d", i)
		} else {
			require.JSONEq(t, fmt.Sprintf(`{"n":%d}`, i), string(out.Items[i]), "item %d", i)
		}
	}
	require.Len(t, wantBad, 30)
	require.Len(t, out.Errors, 30)
	for j, e := range out.Errors {
		require.Equal(t, wantBad[j], e.Index)
		require.Equal(t, fmt.Sprintf("w_%d", e.Index), e.Key)
		require.Equal(t, fmt.Sprintf("item %d is bad", e.Index), e.Error)
	}
	got := h.run(r.ID)
	require.Equal(t, "completed", got.Nodes["c"].Status)
	require.Equal(t, 1, got.Nodes["c"].Attempt, "the Collector fired once")
	require.Equal(t, "running", got.Status)
}

func TestCollectorToleratedFailuresBeyond(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	// 6 % of 1,000 items fail: beyond 5 %.
	bad := func(n int) bool { return n%50 < 3 }
	flow := toleranceFlow(h, itemWorker(t, bad), "5%")
	r := h.startRun(flow, map[string]any{"xs": items(1000)})
	fin := h.waitRun(r.ID, "failed")
	require.Equal(t, "failed", fin.Nodes["c"].Status)
	require.NotNil(t, fin.Nodes["c"].Error)
	require.Regexp(t, `^item w_\d+ failed: item \d+ is bad \(51 of 1000 items failed, more than the 50 tolerated\)$`, *fin.Nodes["c"].Error,
		"the 51st failure fails the Collector")
	require.Equal(t, "pending", fin.Nodes["after"].Status)
	h.eventually(func() bool {
		for _, n := range h.run(r.ID).Nodes {
			if n.Status == "running" {
				return false
			}
		}
		return true
	}, "every item to finish")
	fin = h.run(r.ID)
	failed := 0
	for _, n := range fin.Nodes {
		if n.NodeID == "w" && n.Status == "failed" {
			failed++
		}
	}
	require.Equal(t, 60, failed)
	require.Equal(t, "failed", fin.Status)
}

// TestCollectorToleratedFailureRetried: a tolerated item retried before
// the Collector fires is counted once; a count limit of 1 tolerates one
// failed item, not two.
func TestCollectorToleratedFailureRetried(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	flow := h.createFlow([]map[string]any{splitter("s", "xs"), wnode(h, "w"),
		node("c", "Collector", map[string]any{"toleratedFailures": 1})},
		[]map[string]any{edge("s", "w", nil), edge("w", "c", nil)})
	r := h.startRun(flow, map[string]any{"xs": []int{0, 1, 2}})
	h.failWith(h.waitDispatch(r.ID, "w_0", 1), "bad 0")
	h.waitNode(r.ID, "w_0", "failed")
	require.Equal(t, 200, h.do("POST", "/api/v1/runs/"+r.ID+"/nodes/w_0/retry", nil, nil))
	h.complete(h.waitDispatch(r.ID, "w_1", 1), `"one"`)
	require.Equal(t, "pending", h.run(r.ID).Nodes["c"].Status, "w_0 (retried) and w_2 have not arrived")
	h.failWith(h.waitDispatch(r.ID, "w_0", 2), "bad 0 again")
	require.Equal(t, "pending", h.run(r.ID).Nodes["c"].Status, "w_2 has not arrived")
	h.complete(h.waitDispatch(r.ID, "w_2", 1), `"two"`)
	fin := h.waitRun(r.ID, "completed")
	require.JSONEq(t, `{"items":[null,"one","two"],"errors":[{"index":0,"key":"w_0","error":"bad 0 again"}]}`, string(fin.Output))

	// Two failures of three items with a limit of 1: the Collector fails.
	r2 := h.startRun(flow, map[string]any{"xs": []int{0, 1, 2}})
	h.failWith(h.waitDispatch(r2.ID, "w_0", 1), "bad 0")
	h.failWith(h.waitDispatch(r2.ID, "w_1", 1), "bad 1")
	h.complete(h.waitDispatch(r2.ID, "w_2", 1), `"two"`)
	fin = h.waitRun(r2.ID, "failed")
	require.Equal(t, "failed", fin.Nodes["c"].Status)
}

func TestFailurePolicyConfigRefused(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	graph := map[string]any{"nodes": []map[string]any{
		splitter("s", "xs"),
		wnode(h, "w", "retry", `{"multiplier":0.5,"jitter":2,"nonRetryable":["ok",""]}`),
		wnode(h, "w2", "retry", `{"backoff":"fixed","multiplier":3,"jitter":"some","nonRetryable":"x"}`),
		node("c", "Collector", map[string]any{"toleratedFailures": "105%"}),
		node("s2", "Splitter", map[string]any{"arrayPath": "xs", "maxConcurrency": 0}), wnode(h, "w3"),
		node("c2", "Collector", map[string]any{"toleratedFailures": -1}),
		node("s3", "Splitter", map[string]any{"arrayPath": "xs", "maxConcurrency": 2.5}), wnode(h, "w4"),
		node("c3", "Collector", map[string]any{"toleratedFailures": "x%"}),
	}, "edges": []map[string]any{edge("s", "w", nil), edge("w", "w2", nil), edge("w2", "c", nil),
		edge("c", "s2", nil), edge("s2", "w3", nil), edge("w3", "c2", nil), edge("c2", "s3", nil), edge("s3", "w4", nil),
		edge("w4", "c3", nil)}}
	_, details := h.refused(422, "POST", "/api/v1/flows", map[string]any{"name": "bad", "graph": graph})
	got := byPath(details)
	for _, p := range []string{"nodes[1].data.retry.multiplier", "nodes[1].data.retry.jitter", "nodes[1].data.retry.nonRetryable",
		"nodes[2].data.retry.multiplier", "nodes[2].data.retry.jitter", "nodes[2].data.retry.nonRetryable",
		"nodes[3].data.toleratedFailures", "nodes[4].data.maxConcurrency", "nodes[6].data.toleratedFailures",
		"nodes[7].data.maxConcurrency", "nodes[9].data.toleratedFailures"} {
		require.Contains(t, got, p)
	}
	require.Len(t, got, 11, "%v", got)
}
