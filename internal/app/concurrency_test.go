package app_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/tidwall/gjson"

	"github.com/stitchd/stitchd/store/storetest"
)

// flightWorker accepts every dispatch and, a moment later, calls it back
// completed — through the two processes in turn — counting the items in
// flight: dispatched and not yet called back.
type flightWorker struct {
	mu       sync.Mutex
	inFlight map[string]bool
	max      int
	seen     map[string]int
	done     int
	finished chan struct{}
}

func newFlightWorker(t *testing.T, total int, bases []string) (*flightWorker, string) {
	w := &flightWorker{inFlight: map[string]bool{}, seen: map[string]int{}, finished: make(chan struct{})}
	var wg sync.WaitGroup
	t.Cleanup(wg.Wait)
	url := newServer(t, http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		var p struct {
			NodeID      string          `json:"nodeId"`
			Input       json.RawMessage `json:"input"`
			CallbackURL string          `json:"callbackUrl"`
		}
		if !assert.NoError(t, json.NewDecoder(r.Body).Decode(&p)) { // not require: a handler's goroutine
			rw.WriteHeader(http.StatusBadRequest)
			return
		}
		w.mu.Lock()
		w.seen[p.NodeID]++
		first := w.seen[p.NodeID] == 1
		if first {
			w.inFlight[p.NodeID] = true
			w.max = max(w.max, len(w.inFlight))
		}
		n := len(w.seen)
		w.mu.Unlock()
		rw.WriteHeader(http.StatusAccepted)
		if !first {
			return // a delivery repeated: called back already or soon
		}
		cb := p.CallbackURL
		for _, b := range bases {
			cb = strings.Replace(cb, b, bases[n%len(bases)], 1)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			// The work: real time, so items finish out of order while
			// others are in flight.
			time.Sleep(time.Duration(n%5) * time.Millisecond)
			w.mu.Lock()
			delete(w.inFlight, p.NodeID) // done: from now on the item may be replaced
			w.mu.Unlock()
			for range 100 {
				code := postJSON(t.Context(), cb, `{"status":"completed","output":`+string(p.Input)+`}`)
				if code == 200 || code == 409 {
					break
				}
				time.Sleep(20 * time.Millisecond) // the worker's retry backoff (a real client's pacing)
			}
			w.mu.Lock()
			w.done++
			if w.done == total {
				close(w.finished)
			}
			w.mu.Unlock()
		}()
	}))
	return w, url
}

// wait returns once every item was called back, and fails the test when
// none was for a minute: progress, not a total time, which a loaded
// machine stretches (1,000 items took 190 s beside the whole suite once).
func (w *flightWorker) wait(t *testing.T, total int) {
	t.Helper()
	last, since := -1, time.Now()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-w.finished:
			return
		case <-tick.C:
		}
		w.mu.Lock()
		done := w.done
		w.mu.Unlock()
		if done != last {
			last, since = done, time.Now()
		} else if time.Since(since) > time.Minute {
			t.Fatalf("stalled: %d of %d items called back, none in the last minute", done, total)
		}
	}
}

// TestSplitterMaxConcurrencyAcrossProcesses: 1,000 items with
// maxConcurrency 10, callbacks arriving at two stitchd processes on one
// database in turn: the worker never has more than 10 items in flight,
// and every item is collected in order.
func TestSplitterMaxConcurrencyAcrossProcesses(t *testing.T) {
	t.Parallel()
	_, dbURL := storetest.IsolatedDB(t)
	a := newHarnessOn(t, dbURL)
	b := newHarnessOn(t, dbURL)
	const total = 1000
	fw, url := newFlightWorker(t, total, []string{a.app.URL, b.app.URL})
	w := wnode(a, "w")
	as[map[string]any](t, w["data"])["webhookUrl"] = url
	flow := a.createFlow([]map[string]any{node("s", "Splitter", map[string]any{"arrayPath": "xs", "maxConcurrency": 10}),
		w, node("c", "Collector", nil)}, []map[string]any{edge("s", "w", nil), edge("w", "c", nil)})
	r := a.startRun(flow, map[string]any{"xs": items(total)})
	fw.wait(t, total)
	fin := b.waitRun(r.ID, "completed")
	fw.mu.Lock()
	defer fw.mu.Unlock()
	require.Len(t, fw.seen, total, "every item dispatched")
	require.LessOrEqual(t, fw.max, 10, "items in flight at the worker")
	require.Greater(t, fw.max, 1, "items ran in parallel")
	out := gjson.ParseBytes(fin.Output).Array()
	require.Len(t, out, total)
	for i, v := range out {
		require.Equal(t, int64(i), v.Get("n").Int(), "item %d in order", i)
	}
	t.Logf("at most %d items in flight", fw.max)
}

// TestSplitterMaxConcurrencyWithFailures: a failed item frees its slot
// (the Collector tolerating it), and the run completes.
func TestSplitterMaxConcurrencyWithFailures(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	w := wnode(h, "w")
	as[map[string]any](t, w["data"])["webhookUrl"] = itemWorker(t, func(n int) bool { return n%10 == 3 })
	flow := h.createFlow([]map[string]any{node("s", "Splitter", map[string]any{"arrayPath": "xs", "maxConcurrency": 2}),
		w, node("c", "Collector", map[string]any{"toleratedFailures": "10%"})},
		[]map[string]any{edge("s", "w", nil), edge("w", "c", nil)})
	r := h.startRun(flow, map[string]any{"xs": items(40)})
	fin := h.waitRun(r.ID, "completed")
	require.Len(t, gjson.GetBytes(fin.Output, "items").Array(), 40)
	require.Equal(t, fmt.Sprint([]int{3, 13, 23, 33}), fmt.Sprint(gjson.GetBytes(fin.Output, "errors.#.index").Value()))
}
