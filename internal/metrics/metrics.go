package metrics

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/stitchd/stitchd/callbacks"
	"github.com/stitchd/stitchd/engine"
	"github.com/stitchd/stitchd/internal/httpstatus"
)

// OutboxDepthFunc counts outbox rows not yet delivered, by status
// (pending, sending).
type OutboxDepthFunc func(ctx context.Context) (map[string]int64, error)

// QueueGauge is one task queue's state (store.Store.Queues).
type QueueGauge struct {
	Workspace, Name      string
	Pending, Leased      int
	OldestPendingSeconds float64
}

// QueuesFunc reads the task queues' state.
type QueuesFunc func(ctx context.Context) ([]QueueGauge, error)

// Metrics holds stitchd's series and the registry they are in.
type Metrics struct {
	Registry *prometheus.Registry

	runsStarted      prometheus.Counter
	runsFinished     *prometheus.CounterVec
	nodeTransitions  *prometheus.CounterVec
	dispatchAttempts *prometheus.CounterVec
	dispatchFailures *prometheus.CounterVec
	callbackDuration *prometheus.HistogramVec
	sweeperActions   *prometheus.CounterVec
	log              *slog.Logger
}

// Config configures Metrics.
type Config struct {
	// OutboxDepth, if set, is read for the stitchd_outbox_depth gauge.
	OutboxDepth OutboxDepthFunc
	// Queues, if set, is read for the per-queue gauges
	// (stitchd_queue_pending, _leased, _oldest_pending_seconds), through
	// the same cache age as the outbox depth.
	Queues QueuesFunc
	// GaugeMaxAge is how old the database-backed gauges may be when served
	// (default 5s): they are read at most once in that time, by whichever
	// scrape comes first, and every other scrape is served that reading.
	// Scrape loops each counting the outbox slowed the runs down
	// (docs/performance.md#measurements-behind-the-code).
	GaugeMaxAge time.Duration
	// Clock dates the readings (default engine.SystemClock).
	Clock  engine.Clock
	Logger *slog.Logger
}

// DefaultGaugeMaxAge is Config.GaugeMaxAge's default.
const DefaultGaugeMaxAge = 5 * time.Second

// New creates a registry with stitchd's series, Go runtime and process
// metrics, and the outbox depth gauge.
func New(cfg Config) *Metrics {
	log := cfg.Logger
	if log == nil {
		log = slog.Default()
	}
	if cfg.GaugeMaxAge <= 0 {
		cfg.GaugeMaxAge = DefaultGaugeMaxAge
	}
	if cfg.Clock == nil {
		cfg.Clock = engine.SystemClock{}
	}
	m := &Metrics{
		Registry: prometheus.NewRegistry(),
		log:      log,
		runsStarted: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "stitchd_runs_started_total", Help: "Runs started by this process."}),
		runsFinished: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "stitchd_runs_finished_total",
			Help: "Runs that reached completed, failed or cancelled in this process (a failed run resumed by a retry may finish again)."},
			[]string{"status"}),
		nodeTransitions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "stitchd_node_transitions_total", Help: "Node status changes, by node type and destination status."},
			[]string{"type", "to"}),
		dispatchAttempts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "stitchd_dispatch_attempts_total",
			Help: "Deliveries to workers tried by this process, by outcome (delivered: 2xx; failed: anything else)."},
			[]string{"outcome"}),
		dispatchFailures: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "stitchd_dispatch_failures_total",
			Help: "Failed deliveries to workers, by what follows (retry: tried again later; gave_up: the node failed)."},
			[]string{"next"}),
		callbackDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "stitchd_callback_duration_seconds",
			Help:    "Time to handle a worker callback (POST /callbacks/…), by HTTP status code.",
			Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5}},
			[]string{"code"}),
		sweeperActions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "stitchd_sweeper_actions_total",
			Help: "Work found by the periodic sweeps: overdue worker nodes expired, outbox rows claimed for (re)delivery."},
			[]string{"action"}),
	}
	m.Registry.MustRegister(m.runsStarted, m.runsFinished, m.nodeTransitions, m.dispatchAttempts, m.dispatchFailures,
		m.callbackDuration, m.sweeperActions,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	if cfg.OutboxDepth != nil {
		m.Registry.MustRegister(&outboxCollector{depth: &cached[map[string]int64]{read: cfg.OutboxDepth, maxAge: cfg.GaugeMaxAge, clock: cfg.Clock}, log: log,
			desc: prometheus.NewDesc("stitchd_outbox_depth", "Outbox rows (dispatches) not yet delivered, by status; read from the database at most every "+
				cfg.GaugeMaxAge.String()+".", []string{"status"}, nil),
			readsDesc: prometheus.NewDesc("stitchd_metrics_gauge_reads_total", "Reads of the database for the database-backed gauges "+
				"(the outbox depth): at most one per "+cfg.GaugeMaxAge.String()+", shared by every scrape.", nil, nil)})
	}
	if cfg.Queues != nil {
		m.Registry.MustRegister(&queueCollector{queues: &cached[[]QueueGauge]{read: cfg.Queues, maxAge: cfg.GaugeMaxAge, clock: cfg.Clock}, log: log,
			pending: prometheus.NewDesc("stitchd_queue_pending", "Pulled tasks due and waiting for a worker's poll, by workspace and queue.",
				[]string{"workspace", "queue"}, nil),
			leased: prometheus.NewDesc("stitchd_queue_leased", "Pulled tasks leased to a worker whose attempt still runs, by workspace and queue.",
				[]string{"workspace", "queue"}, nil),
			oldest: prometheus.NewDesc("stitchd_queue_oldest_pending_seconds", "How long the oldest waiting task of a queue has waited.",
				[]string{"workspace", "queue"}, nil)})
	}
	// Every label value known up front shows as 0 rather than missing.
	for _, s := range []engine.RunStatus{engine.RunCompleted, engine.RunFailed, engine.RunCancelled} {
		m.runsFinished.WithLabelValues(string(s))
	}
	for _, o := range []string{"delivered", "failed"} {
		m.dispatchAttempts.WithLabelValues(o)
	}
	for _, n := range []string{"retry", "gave_up"} {
		m.dispatchFailures.WithLabelValues(n)
	}
	for _, a := range []string{"expired", "claimed"} {
		m.sweeperActions.WithLabelValues(a)
	}
	return m
}

// WatchBacklog registers a gauge read from waiting at every scrape: the
// engine's batches waiting for a shared transaction (engine.Engine.Waiting).
func (m *Metrics) WatchBacklog(waiting func() int) {
	m.Registry.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "stitchd_engine_waiting_batches",
		Help: "Batches of operations (callbacks, answers, deadlines) waiting for one of the engine's shared transactions: its backlog."},
		func() float64 { return float64(waiting()) }))
}

// WatchTogether registers a counter read from together at every scrape:
// worker callbacks whose nodes were completed with those of other runs in
// one statement (engine.Engine.CompletedTogether).
func (m *Metrics) WatchTogether(together func() int64) {
	m.Registry.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "stitchd_engine_completed_together_total",
		Help: "Worker callbacks whose nodes were completed together with other runs' in one statement (a fan-out's sub-flow runs ending at once)."},
		func() float64 { return float64(together()) }))
}

// WatchDispatchBacklog registers stitchd_dispatch_host_backlog, read from
// backlog at every scrape (callbacks.Dispatcher.Backlog, in memory): this
// process's deliveries queued and in flight, by destination host — a host
// whose in_flight stays at the per-host bound is slow or stuck. Only
// hosts with deliveries appear.
func (m *Metrics) WatchDispatchBacklog(backlog func() []callbacks.HostBacklog) {
	m.Registry.MustRegister(&backlogCollector{backlog: backlog,
		desc: prometheus.NewDesc("stitchd_dispatch_host_backlog",
			"Deliveries of this process by destination host (host:port) and state: queued (claimed, waiting for a delivery worker) or in_flight.",
			[]string{"host", "state"}, nil)})
}

type backlogCollector struct {
	backlog func() []callbacks.HostBacklog
	desc    *prometheus.Desc
}

func (c *backlogCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

func (c *backlogCollector) Collect(ch chan<- prometheus.Metric) {
	for _, b := range c.backlog() {
		ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, float64(b.Queued), b.Host, "queued")
		ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, float64(b.InFlight), b.Host, "in_flight")
	}
}

// Handler serves the registry in the Prometheus exposition format.
func (m *Metrics) Handler() http.Handler {
	// A failed collector (the outbox depth while the database is down)
	// leaves its series out; the others are still served.
	return promhttp.HandlerFor(m.Registry, promhttp.HandlerOpts{Registry: m.Registry, ErrorHandling: promhttp.ContinueOnError})
}

// OnCommit counts what a committed engine transaction did
// (engine.Config.OnCommit) and logs it with run_id and node_key: failures
// at info level, every other transition and completed runs at debug level.
func (m *Metrics) OnCommit(ci engine.CommitInfo) {
	if ci.RunStarted {
		m.runsStarted.Inc()
	}
	if ci.RunFinished != "" {
		m.runsFinished.WithLabelValues(string(ci.RunFinished)).Inc()
	}
	debug := m.log.Enabled(context.Background(), slog.LevelDebug)
	for _, c := range ci.Counted {
		typ := typeLabel(c.Type)
		m.nodeTransitions.WithLabelValues(typ, string(c.To)).Add(float64(c.Count))
		if debug {
			m.log.Debug("node transitions", "run_id", ci.RunID, "type", typ, "status", c.To, "count", c.Count)
		}
	}
	for _, t := range ci.Transitions {
		typ := typeLabel(t.Type)
		m.nodeTransitions.WithLabelValues(typ, string(t.To)).Inc()
		if t.To == engine.StatusFailed {
			m.log.Info("node failed", "run_id", ci.RunID, "node_key", t.Key, "type", typ, "attempt", t.Attempt, "error", t.Error)
		} else if debug {
			attrs := []any{"run_id", ci.RunID, "node_key", t.Key, "type", typ, "status", t.To, "attempt", t.Attempt}
			if t.Error != "" {
				attrs = append(attrs, "error", t.Error)
			}
			m.log.Debug("node transition", attrs...)
		}
	}
	switch ci.RunFinished {
	case "":
	case engine.RunCompleted:
		m.log.Debug("run finished", "run_id", ci.RunID, "status", ci.RunFinished)
	default:
		m.log.Info("run finished", "run_id", ci.RunID, "status", ci.RunFinished)
	}
}

// typeLabel is a node type's label value ("unknown" when the graph did
// not know the node).
func typeLabel(t engine.NodeType) string {
	if t == "" {
		return "unknown"
	}
	return string(t)
}

// SweeperAction counts n actions of a sweep ("expired", "claimed").
func (m *Metrics) SweeperAction(action string, n int) {
	if n > 0 {
		m.sweeperActions.WithLabelValues(action).Add(float64(n))
	}
}

// Recorder wraps the dispatcher's delivery recorder to count attempts and
// log failed ones with run_id and node_key.
func (m *Metrics) Recorder(inner callbacks.DeliveryRecorder) callbacks.DeliveryRecorder {
	return &recorder{inner: inner, m: m}
}

type recorder struct {
	inner callbacks.DeliveryRecorder
	m     *Metrics
}

func (r *recorder) RecordDelivery(ctx context.Context, o engine.DeliveryOutcome) error {
	if o.Delivered {
		r.m.dispatchAttempts.WithLabelValues("delivered").Inc()
	} else {
		r.m.dispatchAttempts.WithLabelValues("failed").Inc()
		next := "gave_up"
		if o.RetryInMs > 0 {
			next = "retry"
		}
		r.m.dispatchFailures.WithLabelValues(next).Inc()
		r.m.log.Info("delivery to worker failed", "run_id", o.RunID, "node_key", o.Key, "attempt", o.Attempt,
			"try", o.Try, "status_code", o.StatusCode, "error", o.Error, "next", next, "retry_in_ms", o.RetryInMs)
	}
	return r.inner.RecordDelivery(ctx, o)
}

// CompleteFromResponse forwards an HTTP node's response (or the failure to
// get one) to the inner recorder when it takes responses, counting it as a
// delivery attempt: delivered when a response came back, failed when none
// did.
func (r *recorder) CompleteFromResponse(ctx context.Context, resp engine.Response) error {
	rr, ok := r.inner.(callbacks.ResponseRecorder)
	if !ok {
		return errors.New("the delivery recorder takes no responses")
	}
	if resp.Status != 0 {
		r.m.dispatchAttempts.WithLabelValues("delivered").Inc()
	} else {
		r.m.dispatchAttempts.WithLabelValues("failed").Inc()
		r.m.log.Info("request failed", "run_id", resp.RunID, "node_key", resp.Key, "attempt", resp.Attempt,
			"error", resp.Error)
	}
	return rr.CompleteFromResponse(ctx, resp)
}

// DispatchStore wraps the dispatcher's store to count the rows its poller
// claims (due retries, rows whose claiming process died).
func (m *Metrics) DispatchStore(inner callbacks.DispatchStore) callbacks.DispatchStore {
	return &dispatchStore{DispatchStore: inner, m: m}
}

type dispatchStore struct {
	callbacks.DispatchStore
	m *Metrics
}

func (d *dispatchStore) ClaimDue(ctx context.Context, limit int, lease time.Duration) ([]engine.ClaimedDispatch, error) {
	rows, err := d.DispatchStore.ClaimDue(ctx, limit, lease)
	d.m.SweeperAction("claimed", len(rows))
	return rows, err
}

// Middleware times worker callbacks (POST /callbacks/…).
func (m *Metrics) Middleware(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || !strings.HasPrefix(r.URL.Path, "/callbacks/") {
			next.ServeHTTP(w, r)
			return
		}
		start := time.Now()
		sw := httpstatus.Wrap(w)
		next.ServeHTTP(sw, r)
		m.callbackDuration.WithLabelValues(strconv.Itoa(sw.Code)).Observe(time.Since(start).Seconds())
	})
}

// outboxCollector serves the outbox depth, read through a cache.
// Its readings are counted beside it (readsDesc), in the same collection,
// so that a scrape shows the count including the reading it was served.
type outboxCollector struct {
	depth           *cached[map[string]int64]
	desc, readsDesc *prometheus.Desc
	log             *slog.Logger
}

func (c *outboxCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc; ch <- c.readsDesc }

func (c *outboxCollector) Collect(ch chan<- prometheus.Metric) {
	counts, reads, fresh, err := c.depth.get()
	ch <- prometheus.MustNewConstMetric(c.readsDesc, prometheus.CounterValue, float64(reads))
	if err != nil {
		if fresh {
			c.log.Warn("metrics: error reading the outbox depth", "error", err)
		}
		ch <- prometheus.NewInvalidMetric(c.desc, err)
		return
	}
	for _, s := range []string{"pending", "sending"} {
		ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, float64(counts[s]), s)
	}
}

// cached is a database-backed reading (the outbox depth, the queues)
// made at most once per maxAge. Scrapes arriving while it is read wait for
// that reading rather than start their own; a failed reading is kept as
// long, so that scrapes do not pile queries onto a database that is
// struggling.
type cached[T any] struct {
	read   func(ctx context.Context) (T, error)
	maxAge time.Duration
	clock  engine.Clock

	mu    sync.Mutex
	at    time.Time // of the last reading; zero before the first
	reads int64
	val   T
	err   error
}

// get returns the last reading and the number of readings made, reading
// again when the last is maxAge old; fresh reports a reading made by this
// call.
func (c *cached[T]) get() (val T, reads int64, fresh bool, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if now := c.clock.Now(); !c.at.IsZero() && now.Sub(c.at) < c.maxAge && !now.Before(c.at) {
		return c.val, c.reads, false, c.err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	c.val, c.err = c.read(ctx)
	c.at = c.clock.Now()
	c.reads++
	return c.val, c.reads, true, c.err
}

// queueCollector serves the per-queue gauges, read through a cache.
type queueCollector struct {
	queues                  *cached[[]QueueGauge]
	pending, leased, oldest *prometheus.Desc
	log                     *slog.Logger
}

func (c *queueCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.pending
	ch <- c.leased
	ch <- c.oldest
}

func (c *queueCollector) Collect(ch chan<- prometheus.Metric) {
	qs, _, fresh, err := c.queues.get()
	if err != nil {
		if fresh {
			c.log.Warn("metrics: error reading the task queues", "error", err)
		}
		ch <- prometheus.NewInvalidMetric(c.pending, err)
		return
	}
	for _, q := range qs {
		ch <- prometheus.MustNewConstMetric(c.pending, prometheus.GaugeValue, float64(q.Pending), q.Workspace, q.Name)
		ch <- prometheus.MustNewConstMetric(c.leased, prometheus.GaugeValue, float64(q.Leased), q.Workspace, q.Name)
		ch <- prometheus.MustNewConstMetric(c.oldest, prometheus.GaugeValue, q.OldestPendingSeconds, q.Workspace, q.Name)
	}
}
