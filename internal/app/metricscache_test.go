package app_test

import (
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stitchd/stitchd/internal/app"
)

// TestMetricsScrapesShareOneRead: 64 scrape loops of 5 scrapes each, and
// the outbox is counted once (stitchd_metrics_gauge_reads_total), the
// depth served as read; by default a reading is at most 5 s old.
func TestMetricsScrapesShareOneRead(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(c *app.Config) { c.MetricsGaugeMaxAge = time.Hour })
	// A delivery the worker refuses for a while: a pending outbox row.
	h.worker.SetStatus(503)
	flow := h.createFlow([]map[string]any{node("a", "Worker", map[string]any{"webhookUrl": h.worker.URL,
		"retry": map[string]any{"maxAttempts": 5, "initialDelayMs": 600000, "maxDelayMs": 600000}})}, nil)
	r := h.startRun(flow, nil)
	h.waitDispatch(r.ID, "a", 1)
	h.eventually(func() bool {
		var n int
		require.NoError(t, h.app.Store.Gorm().Raw(`SELECT count(*) FROM dispatches WHERE status = 'pending' AND tries = 1`).Row().Scan(&n))
		return n == 1
	}, "the failed delivery to wait for its retry")

	var wg sync.WaitGroup
	scrapes := make([]map[string]float64, 64*5)
	errs := make([]error, 64*5)
	for loop := range 64 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 5 {
				// Not require: FailNow must not run outside the test's
				// goroutine, and a failed scrape must say why.
				scrapes[loop*5+i], errs[loop*5+i] = h.tryScrape()
			}
		}()
	}
	wg.Wait()
	for i, m := range scrapes {
		require.NoError(t, errs[i], "scrape %d", i)
		if _, ok := m["stitchd_metrics_gauge_reads_total"]; !ok {
			var names []string
			for k := range m {
				names = append(names, k)
			}
			sort.Strings(names)
			t.Fatalf("scrape %d has no stitchd_metrics_gauge_reads_total; it has %d metrics: %v", i, len(m), names)
		}
		require.InDelta(t, 1.0, m["stitchd_metrics_gauge_reads_total"], 0, "320 scrapes, one read of the database")
		// The refused delivery is in the outbox: pending, or being sent
		// again (the dispatcher's backoff is short) when it was read.
		require.InDelta(t, 1.0, m[`stitchd_outbox_depth{status="pending"}`]+m[`stitchd_outbox_depth{status="sending"}`], 0)
		require.InDelta(t, scrapes[0][`stitchd_outbox_depth{status="pending"}`], m[`stitchd_outbox_depth{status="pending"}`], 0,
			"every scrape served the one reading")
	}

	def := newHarness(t)
	require.InDelta(t, 1.0, def.scrape()["stitchd_metrics_gauge_reads_total"], 0)
	_, _, body := def.metricsRequest("GET", "/metrics", "")
	require.Contains(t, body, "# HELP stitchd_outbox_depth Outbox rows (dispatches) not yet delivered, by status; read from the database at most every 5s.")
}
