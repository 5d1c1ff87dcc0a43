package metrics_test

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stitchd/stitchd/engine"
	"github.com/stitchd/stitchd/internal/metrics"
)

func quiet() *slog.Logger { return slog.New(slog.DiscardHandler) }

// value returns the value of the series name{labels} ("" = no labels).
func value(t *testing.T, m *metrics.Metrics, name string, labels map[string]string) (float64, bool) {
	t.Helper()
	fams, err := m.Registry.Gather()
	require.NoError(t, err)
	for _, f := range fams {
		if f.GetName() != name {
			continue
		}
	next:
		for _, s := range f.GetMetric() {
			got := map[string]string{}
			for _, l := range s.GetLabel() {
				got[l.GetName()] = l.GetValue()
			}
			for k, v := range labels {
				if got[k] != v {
					continue next
				}
			}
			switch {
			case s.Counter != nil:
				return s.Counter.GetValue(), true
			case s.Gauge != nil:
				return s.Gauge.GetValue(), true
			case s.Histogram != nil:
				return float64(s.Histogram.GetSampleCount()), true
			}
		}
	}
	return 0, false
}

func TestOnCommit(t *testing.T) {
	t.Parallel()
	m := metrics.New(metrics.Config{Logger: quiet()})
	m.OnCommit(engine.CommitInfo{RunID: "r", RunStarted: true, Transitions: []engine.TransitionInfo{
		{Key: "a", NodeID: "a", Type: engine.NodeTypeWorker, To: engine.StatusRunning},
		{Key: "u", NodeID: "u", Type: engine.NodeTypeUX, To: engine.StatusRunning},
		{Key: "u", NodeID: "u", Type: engine.NodeTypeUX, To: engine.StatusWaitingForUser},
	}})
	m.OnCommit(engine.CommitInfo{RunID: "r", RunFinished: engine.RunFailed, Transitions: []engine.TransitionInfo{
		{Key: "a", NodeID: "a", Type: engine.NodeTypeWorker, To: engine.StatusFailed, Error: "boom"},
		{Key: "x_1", To: engine.StatusCancelled},
	}})
	// A big fan-out's transitions come counted.
	m.OnCommit(engine.CommitInfo{RunID: "f", Counted: []engine.TransitionCount{
		{Type: engine.NodeTypeWorker, To: engine.StatusRunning, Count: 4000},
		{Type: engine.NodeTypeUX, To: engine.StatusWaitingForUser, Count: 2000},
	}})
	tests := []struct {
		name   string
		labels map[string]string
		want   float64
	}{
		{"stitchd_runs_started_total", nil, 1},
		{"stitchd_runs_finished_total", map[string]string{"status": "failed"}, 1},
		{"stitchd_runs_finished_total", map[string]string{"status": "completed"}, 0},
		{"stitchd_node_transitions_total", map[string]string{"type": "Worker", "to": "running"}, 4001},
		{"stitchd_node_transitions_total", map[string]string{"type": "Worker", "to": "failed"}, 1},
		{"stitchd_node_transitions_total", map[string]string{"type": "UX", "to": "waiting_for_user"}, 2001},
		{"stitchd_node_transitions_total", map[string]string{"type": "unknown", "to": "cancelled"}, 1},
	}
	for _, tt := range tests {
		got, ok := value(t, m, tt.name, tt.labels)
		require.True(t, ok, "%s%v", tt.name, tt.labels)
		require.InDelta(t, tt.want, got, 0, "%s%v", tt.name, tt.labels)
	}
}

type recorderFunc func(engine.DeliveryOutcome) error

func (f recorderFunc) RecordDelivery(_ context.Context, o engine.DeliveryOutcome) error { return f(o) }

func TestRecorderCountsAndPassesOn(t *testing.T) {
	t.Parallel()
	m := metrics.New(metrics.Config{Logger: quiet()})
	var seen []engine.DeliveryOutcome
	inner := recorderFunc(func(o engine.DeliveryOutcome) error { seen = append(seen, o); return nil })
	r := m.Recorder(inner)
	for _, o := range []engine.DeliveryOutcome{{Delivered: true}, {Error: "503", RetryInMs: 10}, {Error: "503"}} {
		require.NoError(t, r.RecordDelivery(context.Background(), o))
	}
	require.Len(t, seen, 3, "every outcome reaches the engine")
	for labels, want := range map[[2]string]float64{
		{"outcome", "delivered"}: 1, {"outcome", "failed"}: 2,
	} {
		got, _ := value(t, m, "stitchd_dispatch_attempts_total", map[string]string{labels[0]: labels[1]})
		require.InDelta(t, want, got, 0, labels)
	}
	retry, _ := value(t, m, "stitchd_dispatch_failures_total", map[string]string{"next": "retry"})
	gaveUp, _ := value(t, m, "stitchd_dispatch_failures_total", map[string]string{"next": "gave_up"})
	require.Equal(t, []float64{1, 1}, []float64{retry, gaveUp})
}

func TestMiddlewareTimesCallbacksOnly(t *testing.T) {
	t.Parallel()
	m := metrics.New(metrics.Config{Logger: quiet()})
	h := m.Middleware(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "stale") {
			w.WriteHeader(http.StatusConflict)
			return
		}
		_, _ = w.Write([]byte("ok"))
	}))
	for _, req := range []*http.Request{
		httptest.NewRequestWithContext(t.Context(), http.MethodPost, "/callbacks/tok", nil),
		httptest.NewRequestWithContext(t.Context(), http.MethodPost, "/callbacks/tok", nil),
		httptest.NewRequestWithContext(t.Context(), http.MethodPost, "/callbacks/stale", nil),
		httptest.NewRequestWithContext(t.Context(), http.MethodPost, "/api/v1/flows", nil),
		httptest.NewRequestWithContext(t.Context(), http.MethodGet, "/callbacks/tok", nil),
	} {
		h.ServeHTTP(httptest.NewRecorder(), req)
	}
	ok, _ := value(t, m, "stitchd_callback_duration_seconds", map[string]string{"code": "200"})
	conflict, _ := value(t, m, "stitchd_callback_duration_seconds", map[string]string{"code": "409"})
	require.Equal(t, []float64{2, 1}, []float64{ok, conflict})
}

// fakeClock is a clock the test moves.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *fakeClock) add(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

func TestOutboxDepth(t *testing.T) {
	t.Parallel()
	depth := map[string]int64{"pending": 3, "sending": 1}
	var fail error
	clock := &fakeClock{now: time.Unix(1_800_000_000, 0)}
	m := metrics.New(metrics.Config{OutboxDepth: func(context.Context) (map[string]int64, error) { return depth, fail },
		Clock: clock, Logger: quiet()})
	p, _ := value(t, m, "stitchd_outbox_depth", map[string]string{"status": "pending"})
	s, _ := value(t, m, "stitchd_outbox_depth", map[string]string{"status": "sending"})
	require.Equal(t, []float64{3, 1}, []float64{p, s})

	fail = errors.New("database down")
	clock.add(metrics.DefaultGaugeMaxAge)
	_, err := m.Registry.Gather()
	require.ErrorContains(t, err, "database down", "a failed read is reported, not a false zero")
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequestWithContext(t.Context(), http.MethodGet, "/metrics", nil))
	require.Equal(t, http.StatusOK, rec.Code, "the other series are still served")
	require.Contains(t, rec.Body.String(), "stitchd_runs_started_total")
	require.NotContains(t, rec.Body.String(), `stitchd_outbox_depth{`)
}

// TestOutboxDepthIsShared: however many scrapes, at once or one after
// another, the outbox is read at most once per GaugeMaxAge (counted by
// the read function and by stitchd_metrics_gauge_reads_total); a failed
// read is kept as long.
func TestOutboxDepthIsShared(t *testing.T) {
	t.Parallel()
	var reads atomic.Int64
	var pending atomic.Int64
	var fail atomic.Bool
	release := make(chan struct{})
	clock := &fakeClock{now: time.Unix(1_800_000_000, 0)}
	m := metrics.New(metrics.Config{Clock: clock, GaugeMaxAge: 5 * time.Second, Logger: quiet(),
		OutboxDepth: func(context.Context) (map[string]int64, error) {
			reads.Add(1)
			<-release // every scrape arrives while the first reading is under way
			if fail.Load() {
				return nil, errors.New("database down")
			}
			return map[string]int64{"pending": pending.Load(), "sending": 0}, nil
		}})
	scrape := func() string {
		rec := httptest.NewRecorder()
		m.Handler().ServeHTTP(rec, httptest.NewRequestWithContext(t.Context(), http.MethodGet, "/metrics", nil))
		return rec.Body.String()
	}
	pending.Store(7)
	var wg sync.WaitGroup
	bodies := make([]string, 64)
	for i := range bodies {
		wg.Add(1)
		go func() { defer wg.Done(); bodies[i] = scrape() }()
	}
	require.Eventually(t, func() bool { return reads.Load() == 1 }, 10*time.Second, time.Millisecond)
	close(release)
	wg.Wait()
	for _, b := range bodies {
		require.Contains(t, b, `stitchd_outbox_depth{status="pending"} 7`)
	}
	require.EqualValues(t, 1, reads.Load(), "64 concurrent scrapes, one read")

	// Within the age, the reading is served as it was.
	pending.Store(9)
	clock.add(5*time.Second - time.Nanosecond)
	for range 100 {
		require.Contains(t, scrape(), `stitchd_outbox_depth{status="pending"} 7`)
	}
	require.EqualValues(t, 1, reads.Load())
	v, _ := value(t, m, "stitchd_metrics_gauge_reads_total", nil)
	require.InDelta(t, 1, v, 0)

	// Past it, the next scrape reads again.
	clock.add(time.Nanosecond)
	require.Contains(t, scrape(), `stitchd_outbox_depth{status="pending"} 9`)
	require.EqualValues(t, 2, reads.Load())

	// A failure is served, and kept, as a reading.
	fail.Store(true)
	clock.add(5 * time.Second)
	for range 10 {
		require.NotContains(t, scrape(), `stitchd_outbox_depth{`)
	}
	require.EqualValues(t, 3, reads.Load())
	fail.Store(false)
	clock.add(5 * time.Second)
	require.Contains(t, scrape(), `stitchd_outbox_depth{status="pending"} 9`)
	require.EqualValues(t, 4, reads.Load())
}

// TestEngineGauges: the engine's waiting batches and its count of nodes
// completed together are read at every scrape.
func TestEngineGauges(t *testing.T) {
	t.Parallel()
	m := metrics.New(metrics.Config{Logger: quiet()})
	var waiting, together int64 = 7, 12
	m.WatchBacklog(func() int { return int(waiting) })
	m.WatchTogether(func() int64 { return together })
	for name, n := range map[string]*int64{"stitchd_engine_waiting_batches": &waiting, "stitchd_engine_completed_together_total": &together} {
		before := *n
		v, ok := value(t, m, name, nil)
		require.True(t, ok, name)
		require.InDelta(t, float64(before), v, 0, name)
		*n += 33
		v, _ = value(t, m, name, nil)
		require.InDelta(t, float64(before+33), v, 0, name)
	}
}

// BenchmarkOnCommit measures the cost the commit hook adds per node
// transition (a 1,000-item fan-out commits 2,000 transitions at once).
func BenchmarkOnCommit(b *testing.B) {
	m := metrics.New(metrics.Config{Logger: quiet()})
	ci := engine.CommitInfo{RunID: "r"}
	for range 1000 {
		ci.Transitions = append(ci.Transitions, engine.TransitionInfo{Key: "w_1", NodeID: "w", Type: engine.NodeTypeWorker, To: engine.StatusRunning})
	}
	b.ResetTimer()
	for b.Loop() {
		m.OnCommit(ci)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(ci.Transitions)), "ns/transition")
}
