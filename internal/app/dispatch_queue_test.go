package app_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stitchd/stitchd/engine"
	"github.com/stitchd/stitchd/internal/app"
	"github.com/stitchd/stitchd/internal/testkit"
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
	slow := testkit.NewWorker(t, testkit.WorkerOptions{Delay: 20 * time.Millisecond, CallBack: testkit.OnlyComplete(`{"ok":true}`)})

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

	h.waitRun(run.ID, string(engine.RunCompleted))

	got := map[string]int{}
	for _, d := range slow.All() {
		got[d.Payload.NodeID]++
	}
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
