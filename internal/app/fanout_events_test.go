package app_test

import (
	"encoding/json"
	"log/slog"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/stitchd/stitchd/internal/app"
	"github.com/stitchd/stitchd/internal/syncbuf"
)

// TestBigFanOutWritesItsEventsAhead: a fan-out of several chunks writes
// each chunk's events ahead of its commit (its transaction does not hold
// an event per instance), numbered without gaps or repeats, and the commit
// hook still counts every transition: the instances' by kind, the
// transaction's others (the callback that fired the Splitter) one by one.
func TestBigFanOutWritesItsEventsAhead(t *testing.T) {
	t.Parallel()
	var logs syncbuf.Buffer
	// Chunks of 200, not the default 2,000: the same path at a tenth of
	// the instances, which under the race detector in a loaded suite took
	// longer than a wait allows.
	const chunk, items = 200, 450 // two chunks written ahead, 50 at the commit
	h := newHarness(t, func(c *app.Config) {
		c.FanOutChunk = chunk
		c.Logger = slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	})
	w := newAutoWorker(t)
	// src's callback ({"v": its input}) fires the Splitter: the fan-out
	// happens in the callback's transaction.
	flow := h.createFlow([]map[string]any{node("src", "Worker", map[string]any{"webhookUrl": w.URL}),
		splitter("s", "v.xs"), node("w", "Worker", map[string]any{"webhookUrl": w.URL}), node("c", "Collector", nil)},
		[]map[string]any{edge("src", "s", nil), edge("s", "w", nil), edge("w", "c", nil)})
	xs := make([]int, items)
	for i := range xs {
		xs[i] = i
	}
	r := h.startRun(flow, map[string]any{"xs": xs})
	fin := h.waitRun(r.ID, "completed")

	var out []struct {
		V int `json:"v"`
	}
	require.NoError(t, json.Unmarshal(fin.Nodes["c"].Output, &out))
	require.Len(t, out, items)
	for i, o := range out {
		require.Equal(t, i, o.V, "the collector's items in order")
	}

	var seqs struct{ N, Lo, Hi, Distinct, Running, RunSeq int64 }
	require.NoError(t, h.app.Store.Gorm().Raw(`SELECT count(*) AS n, min(seq) AS lo, max(seq) AS hi,
			count(DISTINCT seq) AS distinct,
			count(*) FILTER (WHERE type = 'node.status' AND payload->>'status' = 'running' AND key LIKE 'w\_%') AS running,
			(SELECT event_seq FROM runs WHERE id = ?) AS run_seq
		FROM run_events WHERE run_id = ?`, r.ID, r.ID).Scan(&seqs).Error)
	require.Equal(t, int64(1), seqs.Lo)
	require.Equal(t, seqs.N, seqs.Hi, "no gap in the run's events")
	require.Equal(t, seqs.N, seqs.Distinct, "no repeated sequence number")
	require.Equal(t, seqs.N, seqs.RunSeq, "the run's row counts every event")
	require.Equal(t, int64(items), seqs.Running, "one running event per instance")

	m := h.scrape()
	require.InDelta(t, float64(items+1), m[`stitchd_node_transitions_total{to="running",type="Worker"}`], 0)
	require.InDelta(t, float64(items+1), m[`stitchd_node_transitions_total{to="completed",type="Worker"}`], 0)
	require.InDelta(t, 1.0, m[`stitchd_node_transitions_total{to="completed",type="Splitter"}`], 0)
	log := logs.String()
	require.Contains(t, log, `msg="node transitions" run_id=`+r.ID+` type=Worker status=running count=`+strconv.Itoa(2*chunk),
		"the chunks written ahead come counted to the commit hook")
	for _, line := range []string{`node_key=src type=Worker status=completed`, `node_key=s type=Splitter status=running`,
		`node_key=w_` + strconv.Itoa(2*chunk) + ` type=Worker status=running`} {
		require.Contains(t, log, `msg="node transition" run_id=`+r.ID+` `+line, "listed: %s", line)
	}
}
