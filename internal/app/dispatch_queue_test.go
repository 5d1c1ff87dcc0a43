package app_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stitchd/stitchd/engine"
	"github.com/stitchd/stitchd/internal/app"
)

// TestSlowFanOutIsDeliveredOnce: a fan-out whose deliveries take longer in
// all than one dispatch lease. The committing process claims only what its
// queue has room for, leaves the rest for its poller to take in chunks, and
// renews the leases of rows while they wait, so no lease expires and no
// item is delivered twice. (Claiming the whole fan-out at commit let leases
// expire while rows waited; re-claims then crowded out deliveries: the
// 100,000-item fan-out never finished.) With a small queue the fan-out is
// claimed in chunks; with a queue that takes it whole, rows wait longer
// than a lease and only the bulk renewal keeps them.
func TestSlowFanOutIsDeliveredOnce(t *testing.T) {
	t.Parallel()
	for _, queue := range []int{16, 1024} {
		t.Run(fmt.Sprintf("queue %d", queue), func(t *testing.T) {
			t.Parallel()
			slowFanOut(t, queue)
		})
	}
}

func slowFanOut(t *testing.T, queue int) {
	const items = 300
	h := newHarness(t, func(c *app.Config) {
		c.DispatchWorkers = 2
		c.DispatchQueue = queue
		c.DispatchTimeout = 500 * time.Millisecond
		c.DispatchLease = 2 * time.Second
	})

	// The worker takes 20 ms to accept each item (2 dispatch workers: at
	// least 3 s in all, beyond the 2 s lease) and calls back at once. (A
	// lease of 1 s left too little room for a renewal statement on a
	// loaded machine running every package's tests under -race.)
	var mu sync.Mutex
	got := map[string]int{}
	cb := &http.Client{Timeout: 10 * time.Second}
	slow := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		var p struct {
			NodeID      string `json:"nodeId"`
			CallbackURL string `json:"callbackUrl"`
		}
		if json.NewDecoder(r.Body).Decode(&p) != nil {
			rw.WriteHeader(http.StatusBadRequest)
			return
		}
		mu.Lock()
		got[p.NodeID]++
		mu.Unlock()
		time.Sleep(20 * time.Millisecond)
		rw.WriteHeader(http.StatusAccepted)
		go func() {
			resp, err := cb.Post(p.CallbackURL, "application/json", bytes.NewBufferString(`{"status":"completed","output":{"ok":true}}`))
			if err == nil {
				_ = resp.Body.Close()
			}
		}()
	}))
	defer slow.Close()

	flow := h.createFlow([]map[string]any{
		node("split", "Splitter", map[string]any{"arrayPath": "items"}),
		node("score", "Worker", map[string]any{"webhookUrl": slow.URL}),
		node("merge", "Collector", nil),
	}, []map[string]any{edge("split", "score", nil), edge("score", "merge", nil)})
	list := make([]int, items)
	for i := range list {
		list[i] = i
	}
	run := h.startRun(flow, map[string]any{"items": list})

	deadline := time.Now().Add(60 * time.Second)
	for h.run(run.ID).Status != string(engine.RunCompleted) {
		require.True(t, time.Now().Before(deadline), "the fan-out did not finish")
		time.Sleep(50 * time.Millisecond)
	}

	mu.Lock()
	defer mu.Unlock()
	require.Len(t, got, items, "every item was dispatched")
	for k, n := range got {
		require.Equal(t, 1, n, "item %s was dispatched %d times", k, n)
	}
	var rows, maxTries, delivered int
	require.NoError(t, h.app.Store.Gorm().Raw(`SELECT count(*), max(tries), count(*) FILTER (WHERE status = 'delivered')
		FROM dispatches WHERE run_id = ?`, run.ID).Row().Scan(&rows, &maxTries, &delivered))
	require.Equal(t, items, rows)
	require.Equal(t, 1, maxTries, "no row was claimed twice")
	require.Equal(t, items, delivered)
}
