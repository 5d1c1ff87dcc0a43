package bench

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // database/sql driver for the bench's own queries

	"github.com/stitchd/stitchd/handlers"
	"github.com/stitchd/stitchd/store/localpg"
)

// Options configure a benchmark run. Zero values take the defaults of
// `stitchd bench`.
type Options struct {
	// Binary is the stitchd executable to run (default: this executable).
	Binary string
	// DatabaseURL is a Postgres server to create the fresh database on;
	// empty finds the local server or starts a throwaway cluster.
	DatabaseURL string
	// Scenarios to run, by name (default: all, in order): chain, http,
	// floor, chains, pull, branches, fanout-1k, fanout-10k, fanout-100k, idle. Any fanout-<n> (n a count
	// with an optional k or m: fanout-300k, fanout-1m) is a fan-out of n
	// items, to see how time and memory grow with the size.
	Scenarios []string
	// ChainLength is the length of the single chain (default 1,000).
	ChainLength int
	// Chains concurrent chains (default 64), each ChainsRunLength long,
	// restarted until ChainsDuration has passed (defaults 100 and 60 s).
	Chains          int
	ChainsRunLength int
	ChainsDuration  time.Duration
	// IdleRuns wait on a UX node while CPU is sampled for IdleWindow
	// (defaults 1,000 and 10 s).
	IdleRuns   int
	IdleWindow time.Duration
	// Timers Wait nodes fall due in the same moment in the timers
	// scenario (default 10,000): a fan-out whose items each sleep until it.
	Timers int
	// FanOutSizes overrides the item counts of the fanout scenarios.
	FanOutSizes map[string]int
	// SubFlows is how many sub-flow runs the subflow-10k scenario fans out
	// (default 10,000).
	SubFlows int
	// Steps is how many Transform steps the steps-10k scenario fans out
	// (default 10,000).
	Steps int
	// HistoryRuns finished runs are loaded in the history scenario
	// (default 1,000,000), by HistoryLoader: "sql" (INSERT … SELECT
	// generate_series, in the server; the default) or "copy" (COPY from
	// the bench).
	HistoryRuns   int
	HistoryLoader string
	// AnalyticsRuns finished runs are loaded over 400 days in the
	// analytics scenario (default 1,000,000; the sql loader).
	AnalyticsRuns int
	// HistoryWindow is how long each turn of the history's last phase
	// lasts, retention on or off (default 30 s).
	HistoryWindow time.Duration
	// FairnessBacklog is the fan-out one workspace queues in the fairness
	// scenario (default 10,000), while FairnessRuns one-step runs of
	// another start one every 20 ms (default 100).
	FairnessBacklog, FairnessRuns int
	// FairnessOneWorkspace runs the quiet runs in the busy workspace: the
	// comparison, with nothing to share out between workspaces.
	FairnessOneWorkspace bool
	// SleepingRuns sleep in a Wait node (30 days) while CPU is sampled for
	// IdleWindow in the sleeping scenario (default 100,000).
	SleepingRuns int
	// WorkDir holds stitchd's log (default: a temp dir).
	WorkDir string
	// ProfileDir, when set, receives stitchd's pprof CPU and allocation
	// profiles of each scenario.
	ProfileDir string
	// KeepDatabase leaves the bench's database behind (its name is in the
	// progress log), to look into afterwards.
	KeepDatabase bool
	// Progress, if set, receives one line per step.
	Progress io.Writer
}

// Report is the outcome, written as JSON by `stitchd bench --json`.
type Report struct {
	StartedAt time.Time `json:"started_at"`
	Machine   Machine   `json:"machine"`
	Results   []Result  `json:"results"`
	// History is the history scenario's comparison (when it ran).
	History *History `json:"history,omitempty"`
	// Analytics is the analytics scenario's timings (when it ran).
	Analytics *Analytics `json:"analytics,omitempty"`
}

// Machine describes where the figures were taken.
type Machine struct {
	CPU       string `json:"cpu"`
	Cores     int    `json:"cores"`
	GoVersion string `json:"go_version"`
	OS        string `json:"os"`
	Postgres  string `json:"postgres"`
	// Autovacuum is the server's setting; the bench runs VACUUM ANALYZE
	// before each scenario either way.
	Autovacuum string `json:"autovacuum"`
	// PostgresCPU reports whether the server runs on this machine, so
	// that its CPU is measured (the pg cpu figures).
	PostgresCPU bool `json:"postgres_cpu_measured"`
}

// Result is one scenario's figures.
type Result struct {
	Name string `json:"name"`
	// Completions are node completions (worker callbacks accepted, plus
	// splitters, collectors and UX nodes that completed).
	Completions       int64    `json:"completions"`
	Seconds           float64  `json:"seconds"`
	CompletionsPerSec float64  `json:"completions_per_sec"`
	Latency           *Latency `json:"callback_to_next_dispatch_ms,omitempty"`
	// CollectorLagMs is the database time from the last item's completion
	// to the collector's (fan-out scenarios).
	CollectorLagMs *float64 `json:"collector_lag_ms,omitempty"`
	// QuietRunMs is the fairness scenario's: how long the quiet
	// workspace's one-step runs took, start to end (database times),
	// while the busy one's backlog was delivered.
	QuietRunMs *Latency `json:"quiet_workspace_run_ms,omitempty"`
	// WakeLagMs is the database time from the moment the timers scenario's
	// Wait nodes fell due to the last one's wake.
	WakeLagMs *float64 `json:"timers_last_wake_after_due_ms,omitempty"`
	// Phases of a fan-out, in ms from the run's start request: the start
	// answered (the fan-out committed), the first and the last item's
	// dispatch arrived at the worker, the last callback was sent.
	Phases     *Phases `json:"fan_out_phases_ms,omitempty"`
	CPUSeconds float64 `json:"stitchd_cpu_seconds"`
	// CPUPerCompletionMs is stitchd's CPU time per completion.
	CPUPerCompletionMs float64 `json:"stitchd_cpu_ms_per_completion"`
	// PostgresCPUPerCompletionMs is the Postgres server's CPU time per
	// completion (all its processes; only when it runs on this machine).
	PostgresCPUPerCompletionMs *float64 `json:"postgres_cpu_ms_per_completion,omitempty"`
	// BenchCPUPerCompletionMs is the bench process's own CPU time per
	// completion: its loopback worker, its watcher and its API client.
	BenchCPUPerCompletionMs float64 `json:"bench_worker_cpu_ms_per_completion"`
	// MachineBusyPercent is how busy the machine's cores were during the
	// scenario (100 = every core all the time): near 100, the figures are
	// bound by CPU. For the idle scenario, during its idle window.
	MachineBusyPercent float64 `json:"machine_cpu_busy_percent"`
	// IdleCPUPercent is stitchd's CPU use while runs only wait (idle), and
	// PostgresIdleCPUPercent the local Postgres server's.
	IdleCPUPercent         *float64 `json:"idle_cpu_percent,omitempty"`
	PostgresIdleCPUPercent *float64 `json:"postgres_idle_cpu_percent,omitempty"`
	// BackendsIdleCPUPercent is that of the Postgres backends serving
	// stitchd's connections alone: what its waiting costs the server,
	// whatever else the server does (the whole server's figure counts
	// other databases' work too).
	BackendsIdleCPUPercent *float64 `json:"postgres_backends_idle_cpu_percent,omitempty"`
	RSSMB                  float64  `json:"rss_mb"`
	PeakRSSMB              float64  `json:"peak_rss_mb"`
	// Database work per completion: rows inserted (runs, node states,
	// events, outbox, journey) and write transactions (server-wide).
	RowsPerCompletion float64 `json:"db_rows_inserted_per_completion"`
	TxPerCompletion   float64 `json:"db_write_transactions_per_completion"`
	WorkerFailures    int64   `json:"worker_callback_failures"`
	// TopStatements are the statements that took the most database time,
	// when the server has pg_stat_statements loaded.
	TopStatements []Statement `json:"top_statements,omitempty"`
}

// Phases are the milestones of a fan-out.
type Phases struct {
	Started       float64 `json:"started"`
	FirstDispatch float64 `json:"first_dispatch"`
	LastDispatch  float64 `json:"last_dispatch"`
	LastCallback  float64 `json:"last_callback"`
}

// Latency is a distribution in milliseconds.
type Latency struct {
	Samples int     `json:"samples"`
	P50     float64 `json:"p50"`
	P99     float64 `json:"p99"`
	Max     float64 `json:"max"`
}

var allScenarios = []string{"chain", "floor", "http", "chains", "pull", "branches", "fanout-1k", "fanout-10k", "fanout-100k", "subflow-10k", "steps-10k", "timers", "idle", "sleeping"}

// optInScenarios run only when named: history loads a million runs and
// runs chain and chains three times.
var optInScenarios = []string{"history", "fairness", "analytics"}

// serveFlagsFor returns the serve flags that let the biggest fan-out
// through: the default body limit (1 MiB) holds the run input of
// fanout-100k (up to 8 bytes an item, "99999,"; 9 are budgeted) and the default
// --max-fanout-items is 100,000; bigger fan-outs need more. The standard
// scenarios run with the defaults.
func serveFlagsFor(opts Options) []string {
	most := 0
	for _, s := range opts.Scenarios {
		if n, ok := opts.fanOutSize(s); ok {
			most = max(most, n)
		}
	}
	var flags []string
	if need := 9*int64(most) + 4096; need > 1<<20 {
		flags = append(flags, "--body-limit", strconv.FormatInt(need, 10))
	}
	if most > handlers.DefaultMaxItems {
		flags = append(flags, "--max-fanout-items", strconv.Itoa(most))
	}
	if slices.Contains(opts.Scenarios, "analytics") {
		// The scenario times raw reads, then rolls the days itself.
		flags = append(flags, "--analytics-roll-interval", "0")
	}
	return flags
}

// fanOutSize returns the items of fan-out scenario name: FanOutSizes' or
// the count its name gives.
func (o Options) fanOutSize(name string) (int, bool) {
	n, ok := fanOutItems(name)
	if v, set := o.FanOutSizes[name]; set && ok {
		n = v
	}
	return n, ok
}

// fanOutItems returns the item count a fanout-<n> scenario names: n is a
// positive count in digits (no sign, no leading zero), with an optional k
// (thousands) or m (millions).
func fanOutItems(name string) (int, bool) {
	n, ok := strings.CutPrefix(name, "fanout-")
	if !ok {
		return 0, false
	}
	mul := 1
	switch {
	case strings.HasSuffix(n, "k"):
		n, mul = strings.TrimSuffix(n, "k"), 1000
	case strings.HasSuffix(n, "m"):
		n, mul = strings.TrimSuffix(n, "m"), 1000000
	}
	if n == "" || n[0] < '1' || n[0] > '9' || strings.Trim(n, "0123456789") != "" {
		return 0, false
	}
	v, err := strconv.Atoi(n)
	if err != nil || v > 10_000_000/mul {
		return 0, false
	}
	return v * mul, true
}

const token = "bench-token"

type runner struct {
	opts   Options
	proc   *proc
	worker *worker
	db     *sql.DB
	dbURL  string
	watch  *watcher
	// pg is the Postgres server when it runs on this machine (its CPU is
	// measured), else nil.
	pg     *pgServer
	client *http.Client
	logf   func(string, ...any)
	// since is when the bench began, by the database's clock.
	since time.Time
}

// Run starts stitchd on a fresh database and runs the scenarios.
func Run(ctx context.Context, opts Options) (*Report, error) {
	if opts.Binary == "" {
		exe, err := os.Executable()
		if err != nil {
			return nil, fmt.Errorf("error finding the stitchd executable: %w", err)
		}
		opts.Binary = exe
	}
	if len(opts.Scenarios) == 0 {
		opts.Scenarios = allScenarios
	}
	for _, s := range opts.Scenarios {
		if _, fanOut := fanOutItems(s); !fanOut && !slices.Contains(allScenarios, s) && !slices.Contains(optInScenarios, s) {
			return nil, fmt.Errorf("unknown scenario %q (have %s, or fanout-<n> for up to 10m items)", s,
				strings.Join(append(slices.Clone(allScenarios), optInScenarios...), ", "))
		}
	}
	def := func(v *int, d int) {
		if *v <= 0 {
			*v = d
		}
	}
	def(&opts.ChainLength, 1000)
	def(&opts.Chains, 64)
	def(&opts.ChainsRunLength, 100)
	def(&opts.IdleRuns, 1000)
	def(&opts.Timers, 10000)
	def(&opts.SubFlows, 10000)
	def(&opts.Steps, 10000)
	def(&opts.SleepingRuns, 100000)
	def(&opts.HistoryRuns, 1_000_000)
	def(&opts.AnalyticsRuns, 1_000_000)
	def(&opts.FairnessBacklog, 10_000)
	def(&opts.FairnessRuns, 100)
	switch opts.HistoryLoader {
	case "":
		opts.HistoryLoader = "sql"
	case "sql", "copy":
	default:
		return nil, fmt.Errorf("unknown history loader %q (have sql, copy)", opts.HistoryLoader)
	}
	if opts.ChainsDuration <= 0 {
		opts.ChainsDuration = 60 * time.Second
	}
	if opts.IdleWindow <= 0 {
		opts.IdleWindow = 10 * time.Second
	}
	if opts.HistoryWindow <= 0 {
		opts.HistoryWindow = 30 * time.Second
	}
	if opts.WorkDir == "" {
		dir, err := os.MkdirTemp("", "stitchd-bench-")
		if err != nil {
			return nil, fmt.Errorf("error creating a work dir: %w", err)
		}
		opts.WorkDir = dir
	}
	r := &runner{opts: opts, client: &http.Client{Timeout: 60 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 256}}}
	r.logf = func(format string, args ...any) {
		if opts.Progress != nil {
			fmt.Fprintf(opts.Progress, format+"\n", args...)
		}
	}

	name := fmt.Sprintf("stitchd_bench_%d", time.Now().UnixNano())
	dbURL, cluster, err := localpg.Resolve(ctx, localpg.Options{DatabaseName: name, LocalURL: opts.DatabaseURL})
	if err != nil {
		return nil, fmt.Errorf("error preparing the bench database: %w", err)
	}
	if cluster != nil {
		defer func() { _ = cluster.Stop() }()
	}
	if !opts.KeepDatabase {
		defer dropDatabase(dbURL, name)
	}
	r.logf("database %s", name)

	r.dbURL = dbURL
	if r.db, err = sql.Open("pgx", dbURL); err != nil {
		return nil, fmt.Errorf("error opening the bench database: %w", err)
	}
	defer r.db.Close()
	if r.pg, err = findPostgres(ctx, r.db, dbURL); err != nil {
		r.logf("no Postgres CPU figures: %v", err)
	}

	wctx, stopWorker := context.WithCancel(ctx)
	defer stopWorker()
	r.watch = newWatcher(r.db, 50*time.Millisecond)
	if r.worker, err = startWorker(wctx, 256, r.watch.callbackAnswered); err != nil {
		return nil, err
	}
	defer r.worker.close()
	go r.watch.run(wctx)
	// Completions and rows are counted from this moment on: rows the
	// history scenario loads are older, and deleting them changes no count.
	if err := r.db.QueryRowContext(ctx, `SELECT now()`).Scan(&r.since); err != nil {
		return nil, fmt.Errorf("error reading the database's clock: %w", err)
	}

	if r.proc, err = startStitchd(ctx, opts.Binary, dbURL, token, filepath.Join(opts.WorkDir, "stitchd.log"), opts.ProfileDir != "",
		serveFlagsFor(opts)...); err != nil {
		return nil, err
	}
	defer r.proc.stop()

	rep := &Report{StartedAt: time.Now().UTC(), Machine: r.machine(ctx)}
	rep.Machine.PostgresCPU = r.pg != nil
	pgss := r.pgStatements(ctx)
	if !pgss {
		r.logf("pg_stat_statements is not loaded on this server: no per-statement database figures")
	}
	for _, s := range opts.Scenarios {
		// Start each scenario from fresh planner statistics and no dead rows,
		// as autovacuum would provide (it may be off on a dev server).
		if _, err := r.db.ExecContext(ctx, `VACUUM ANALYZE`); err != nil {
			return rep, fmt.Errorf("error vacuuming the bench database: %w", err)
		}
		r.logf("scenario %s…", s)
		r.worker.reset()
		var prof *profiler
		if opts.ProfileDir != "" {
			if prof, err = startProfiler(ctx, r.proc.pprof, opts.ProfileDir, s); err != nil {
				return rep, err
			}
		}
		if pgss {
			if _, err := r.db.ExecContext(ctx, `SELECT pg_stat_statements_reset()`); err != nil {
				return rep, fmt.Errorf("error resetting pg_stat_statements: %w", err)
			}
		}
		if s == "history" {
			// Several results, each measured on its own.
			if err := r.history(ctx, rep); err != nil {
				return rep, fmt.Errorf("scenario %s: %w", s, err)
			}
			continue
		}
		if s == "analytics" {
			if err := r.analytics(ctx, rep); err != nil {
				return rep, fmt.Errorf("scenario %s: %w", s, err)
			}
			continue
		}
		res, err := r.scenario(ctx, s)
		if err != nil {
			return rep, fmt.Errorf("scenario %s: %w", s, err)
		}
		if pgss {
			if res.TopStatements, err = r.topStatements(ctx, 12); err != nil {
				return rep, err
			}
		}
		if prof != nil {
			if err := prof.finish(ctx); err != nil {
				return rep, err
			}
		}
		rep.Results = append(rep.Results, *res)
		if b, err := json.Marshal(res); err == nil {
			r.logf("result %s", b)
		}
	}
	return rep, nil
}

func dropDatabase(dbURL, name string) {
	u, err := url.Parse(dbURL)
	if err != nil {
		return
	}
	u.Path = "/postgres"
	db, err := sql.Open("pgx", u.String())
	if err != nil {
		return
	}
	defer db.Close()
	// Not the run's context: the database is dropped when the run was cancelled too.
	_, _ = db.ExecContext(context.Background(), `DROP DATABASE IF EXISTS `+localpg.QuoteIdent(name)+` WITH (FORCE)`)
}

func (r *runner) machine(ctx context.Context) Machine {
	m := Machine{Cores: runtime.NumCPU(), GoVersion: runtime.Version(), OS: runtime.GOOS + "/" + runtime.GOARCH}
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
				m.CPU = strings.TrimSpace(v)
				break
			}
		}
	}
	_ = r.db.QueryRowContext(ctx, `SHOW server_version`).Scan(&m.Postgres)
	_ = r.db.QueryRowContext(ctx, `SHOW autovacuum`).Scan(&m.Autovacuum)
	return m
}

// snapshot is what a scenario's figures are differences of.
type snapshot struct {
	at          time.Time
	completions int64
	rows, xacts int64
	cpu         cpuSample
}

// cpuSample is the CPU time used so far by stitchd, the bench process,
// the Postgres server (when local) and the machine. It is taken next to
// the scenario's work, not around snapshot's counting queries, which
// would be counted as the scenario's database work.
type cpuSample struct {
	stitchd, bench, pg time.Duration
	pgOK               bool
	busy, total        int64 // machine ticks
}

func (r *runner) cpuNow() (cpuSample, error) {
	var c cpuSample
	var err error
	if c.stitchd, err = r.proc.cpu(); err != nil {
		return c, err
	}
	if c.bench, err = selfCPU(); err != nil {
		return c, err
	}
	if r.pg != nil {
		// Not measured this time (the server went away): no figure.
		c.pg, err = r.pg.cpu()
		c.pgOK = err == nil
	}
	c.busy, c.total, err = machineCPU()
	return c, err
}

func (r *runner) snap(ctx context.Context) (snapshot, error) {
	s := snapshot{at: time.Now()}
	if err := r.db.QueryRowContext(ctx, `SELECT count(*) FROM node_states WHERE status = 'completed' AND finished_at >= $1`,
		r.since).Scan(&s.completions); err != nil {
		return s, fmt.Errorf("error counting completions: %w", err)
	}
	// Rows stitchd inserted, counted exactly (pg_stat's counters reach the
	// statistics system only when each backend flushes them, up to 10 s
	// late for an idle connection).
	// Since the bench began: rows the history scenario loads are older
	// (node states by updated_at: they have no created_at, and the rows
	// loaded are never updated).
	if err := r.db.QueryRowContext(ctx, `SELECT (SELECT count(*) FROM runs WHERE created_at >= $1)
		+ (SELECT count(*) FROM node_states WHERE updated_at >= $1) + (SELECT count(*) FROM run_events WHERE created_at >= $1)
		+ (SELECT count(*) FROM dispatches WHERE created_at >= $1) + (SELECT count(*) FROM journey_events WHERE created_at >= $1)`,
		r.since).Scan(&s.rows); err != nil {
		return s, fmt.Errorf("error counting rows: %w", err)
	}
	// Write transactions, from the transaction id counter: exact, but
	// server-wide, so run the bench on a server nothing else writes to.
	if err := r.db.QueryRowContext(ctx, `SELECT txid_snapshot_xmax(txid_current_snapshot())`).Scan(&s.xacts); err != nil {
		return s, fmt.Errorf("error reading the transaction counter: %w", err)
	}
	return s, nil
}

// finish fills the common figures from two snapshots; elapsed is the
// scenario's own wall time (the snapshots add a settling pause).
func (r *runner) finish(res *Result, a, b snapshot, elapsed time.Duration) error {
	if res.Completions == 0 { // the floor counts its own steps: no stitchd completes them
		res.Completions = b.completions - a.completions
	}
	res.Seconds = elapsed.Seconds()
	if res.Seconds > 0 {
		res.CompletionsPerSec = float64(res.Completions) / res.Seconds
	}
	res.CPUSeconds = (b.cpu.stitchd - a.cpu.stitchd).Seconds()
	if t := b.cpu.total - a.cpu.total; t > 0 {
		res.MachineBusyPercent = 100 * float64(b.cpu.busy-a.cpu.busy) / float64(t)
	}
	if res.Completions > 0 {
		n := float64(res.Completions)
		res.CPUPerCompletionMs = res.CPUSeconds * 1000 / n
		res.BenchCPUPerCompletionMs = float64((b.cpu.bench - a.cpu.bench).Microseconds()) / 1000 / n
		if a.cpu.pgOK && b.cpu.pgOK {
			v := float64((b.cpu.pg - a.cpu.pg).Microseconds()) / 1000 / n
			res.PostgresCPUPerCompletionMs = &v
		}
		res.RowsPerCompletion = float64(b.rows-a.rows) / n
		res.TxPerCompletion = float64(b.xacts-a.xacts) / n
	}
	rss, peak, err := r.proc.memory()
	if err != nil {
		return err
	}
	res.RSSMB, res.PeakRSSMB = float64(rss)/(1<<20), float64(peak)/(1<<20)
	_, res.WorkerFailures = r.worker.stats()
	return nil
}

func (r *runner) scenario(ctx context.Context, name string) (*Result, error) {
	switch name {
	case "chain":
		return r.chain(ctx)
	case "floor":
		return r.floor(ctx)
	case "http":
		return r.httpChain(ctx)
	case "timers":
		return r.timers(ctx)
	case "chains":
		return r.chains(ctx)
	case "pull":
		return r.pull(ctx)
	case "branches":
		return r.branches(ctx)
	case "idle":
		return r.idle(ctx, fmt.Sprintf("%d runs waiting on a person", r.opts.IdleRuns), r.opts.IdleRuns,
			map[string]any{"id": "ask", "type": "UX", "data": map[string]any{"prompt": "Waiting"}}, "waiting_for_user")
	case "sleeping":
		return r.idle(ctx, fmt.Sprintf("%d runs sleeping", r.opts.SleepingRuns), r.opts.SleepingRuns,
			map[string]any{"id": "nap", "type": "Wait", "data": map[string]any{"duration": "720h"}}, "sleeping")
	case "subflow-10k":
		return r.subFlows(ctx, r.opts.SubFlows)
	case "steps-10k":
		return r.steps(ctx, r.opts.Steps)
	case "fairness":
		return r.fairness(ctx)
	default:
		n, _ := r.opts.fanOutSize(name)
		return r.fanOut(ctx, name, n)
	}
}

// api calls stitchd's API (in the default workspace).
func (r *runner) api(ctx context.Context, method, path string, body, out any) error {
	return r.apiIn(ctx, "", method, path, body, out)
}

func (r *runner) createFlow(ctx context.Context, name string, nodes, edges []map[string]any) (string, error) {
	var f struct{ ID string }
	err := r.api(ctx, "POST", "/flows", map[string]any{"name": name, "graph": map[string]any{"nodes": nodes, "edges": edges}}, &f)
	return f.ID, err
}

func (r *runner) startRun(ctx context.Context, flowID string, input any) (string, error) {
	var run struct{ ID string }
	err := r.api(ctx, "POST", "/flows/"+flowID+"/runs", map[string]any{"input": input}, &run)
	return run.ID, err
}

func chainGraph(url string, n int) (nodes, edges []map[string]any) {
	for i := range n {
		nodes = append(nodes, map[string]any{"id": fmt.Sprintf("n%d", i), "type": "Worker", "data": map[string]any{"webhookUrl": url}})
		if i > 0 {
			edges = append(edges, map[string]any{"id": fmt.Sprintf("e%d", i), "source": fmt.Sprintf("n%d", i-1), "target": fmt.Sprintf("n%d", i)})
		}
	}
	return nodes, edges
}

// waitRuns waits until every run in ids has finished, and fails unless
// all completed; each should have finished once the worker answered
// callbacks of its callbacks.
func (r *runner) waitRuns(ctx context.Context, ids []string, callbacks int) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Minute)
	defer cancel()
	failed := 0
	for _, id := range ids {
		st, err := r.watch.wait(ctx, id, callbacks)
		if err != nil {
			return err
		}
		if st != "completed" {
			failed++
		}
	}
	if failed > 0 {
		return fmt.Errorf("%d of %d runs did not complete", failed, len(ids))
	}
	return nil
}

// waitWaiting waits until each run in ids has a node in status.
func (r *runner) waitWaiting(ctx context.Context, ids []string, status string) error {
	deadline := time.Now().Add(30 * time.Minute)
	for {
		var n int
		if err := r.db.QueryRowContext(ctx, `SELECT count(DISTINCT run_id) FROM node_states
			WHERE run_id = ANY($1::uuid[]) AND status = $2`, "{"+strings.Join(ids, ",")+"}", status).Scan(&n); err != nil {
			return fmt.Errorf("error polling runs: %w", err)
		}
		if n == len(ids) {
			return nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return fmt.Errorf("only %d of %d runs were %s in time", n, len(ids), status)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// measure runs work between two snapshots and fills res's common figures;
// the elapsed time is work's own.
func (r *runner) measure(ctx context.Context, res *Result, work func() error) error {
	a, err := r.snap(ctx)
	if err != nil {
		return err
	}
	if a.cpu, err = r.cpuNow(); err != nil {
		return err
	}
	start := time.Now()
	if err := work(); err != nil {
		return err
	}
	elapsed := time.Since(start)
	cpu, err := r.cpuNow()
	if err != nil {
		return err
	}
	b, err := r.snap(ctx)
	if err != nil {
		return err
	}
	b.cpu = cpu
	return r.finish(res, a, b, elapsed)
}

// runToEnd starts a run and waits until it has completed, which it should
// have once the worker answered callbacks of its callbacks.
func (r *runner) runToEnd(ctx context.Context, flowID string, input any, callbacks int) (string, error) {
	run, err := r.startRun(ctx, flowID, input)
	if err != nil {
		return "", err
	}
	return run, r.waitRuns(ctx, []string{run}, callbacks)
}

func (r *runner) chain(ctx context.Context) (*Result, error) {
	n := r.opts.ChainLength
	nodes, edges := chainGraph(r.worker.url, n)
	flow, err := r.createFlow(ctx, "bench chain", nodes, edges)
	if err != nil {
		return nil, err
	}
	res := &Result{Name: fmt.Sprintf("chain of %d workers", n)}
	var run string
	if err := r.measure(ctx, res, func() (err error) {
		run, err = r.runToEnd(ctx, flow, map[string]any{}, n)
		return err
	}); err != nil {
		return nil, err
	}
	res.Latency = distribution(r.worker.chainLatencies([]string{run}, n))
	return res, nil
}

// httpChain is chain with HTTP nodes: ChainLength GETs, one after the
// other, against an instant loopback REST endpoint; each response
// completes its node (no callback).
func (r *runner) httpChain(ctx context.Context) (*Result, error) {
	n := r.opts.ChainLength
	var nodes, edges []map[string]any
	for i := range n {
		nodes = append(nodes, map[string]any{"id": fmt.Sprintf("n%d", i), "type": "HTTP",
			"data": map[string]any{"url": fmt.Sprintf("%s/n%d", r.worker.httpURL(), i)}})
		if i > 0 {
			edges = append(edges, map[string]any{"id": fmt.Sprintf("e%d", i), "source": fmt.Sprintf("n%d", i-1), "target": fmt.Sprintf("n%d", i)})
		}
	}
	flow, err := r.createFlow(ctx, "bench http", nodes, edges)
	if err != nil {
		return nil, err
	}
	res := &Result{Name: fmt.Sprintf("chain of %d HTTP requests", n)}
	if err := r.measure(ctx, res, func() error {
		_, err := r.runToEnd(ctx, flow, map[string]any{}, 0)
		return err
	}); err != nil {
		return nil, err
	}
	res.Latency = distribution(r.worker.requestLatencies(n))
	return res, nil
}

func (r *runner) chains(ctx context.Context) (*Result, error) {
	n := r.opts.ChainsRunLength
	nodes, edges := chainGraph(r.worker.url, n)
	flow, err := r.createFlow(ctx, "bench chains", nodes, edges)
	if err != nil {
		return nil, err
	}
	res, runs, err := r.concurrentRuns(ctx, flow, n, func(int64) any { return map[string]any{} })
	if err != nil {
		return nil, err
	}
	res.Name = fmt.Sprintf("%d concurrent chains (%d runs of %d workers)", r.opts.Chains, len(runs), n)
	res.Latency = distribution(r.worker.chainLatencies(runs, n))
	return res, nil
}

// pullPollers is how many workers poll the pull scenario's queue, each
// taking up to pullMax tasks a poll: a few worker processes with a
// concurrency limit each, as pull workers are deployed.
const (
	pullPollers = 8
	pullMax     = 16
)

// pull is chains with pulled Workers: every step's task waits in a queue
// that pullPollers long-polling workers take (POST /api/v1/tasks/poll,
// wait 20 s) and call back at once, from the worker's sender pool. Its
// latency is from a step's callback to the next step's task in a
// poller's hands: the completion, the NOTIFY and the long poll's wake.
func (r *runner) pull(ctx context.Context) (*Result, error) {
	n := r.opts.ChainsRunLength
	var nodes, edges []map[string]any
	for i := range n {
		nodes = append(nodes, map[string]any{"id": fmt.Sprintf("n%d", i), "type": "Worker", "data": map[string]any{"queue": "bench"}})
		if i > 0 {
			edges = append(edges, map[string]any{"id": fmt.Sprintf("e%d", i), "source": fmt.Sprintf("n%d", i-1), "target": fmt.Sprintf("n%d", i)})
		}
	}
	flow, err := r.createFlow(ctx, "bench pull", nodes, edges)
	if err != nil {
		return nil, err
	}
	pctx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	for p := range pullPollers {
		wg.Go(func() { r.poller(pctx, fmt.Sprintf("bench-%d", p)) })
	}
	res, runs, err := r.concurrentRuns(ctx, flow, n, func(int64) any { return map[string]any{} })
	stop()
	wg.Wait()
	if err != nil {
		return nil, err
	}
	res.Name = fmt.Sprintf("%d concurrent pulled chains (%d runs of %d workers, %d pollers)", r.opts.Chains, len(runs), n, pullPollers)
	res.Latency = distribution(r.worker.chainLatencies(runs, n))
	return res, nil
}

// poller long-polls the pull scenario's queue until ctx ends, handing
// each task to the worker's senders, which call back at once.
func (r *runner) poller(ctx context.Context, id string) {
	for ctx.Err() == nil {
		var out struct {
			Tasks []struct {
				RunID       string `json:"run_id"`
				NodeID      string `json:"node_id"`
				CallbackURL string `json:"callback_url"`
			} `json:"tasks"`
		}
		if err := r.api(ctx, "POST", "/tasks/poll", map[string]any{"queue": "bench", "worker": id, "max": pullMax,
			"wait_seconds": 20}, &out); err != nil {
			if ctx.Err() == nil {
				time.Sleep(100 * time.Millisecond) // the server is busy or away: poll again shortly
			}
			continue
		}
		now := time.Now()
		for _, t := range out.Tasks {
			r.worker.took(t.RunID, t.NodeID, t.CallbackURL, now)
		}
	}
}

// branches is chains with a switch at every other step: stage i's worker
// s<i> routes by run.input.v % 4 — three conditional edges and a default —
// to one of four workers, which join at s<i+1> (the three others are
// skipped). A run of ChainsRunLength callbacks has ChainsRunLength/2
// stages.
func (r *runner) branches(ctx context.Context) (*Result, error) {
	stages := max(r.opts.ChainsRunLength/2, 1)
	nodes, edges := branchesGraph(r.worker.url, stages)
	flow, err := r.createFlow(ctx, "bench branches", nodes, edges)
	if err != nil {
		return nil, err
	}
	res, runs, err := r.concurrentRuns(ctx, flow, 2*stages+1, func(i int64) any { return map[string]any{"v": i} })
	if err != nil {
		return nil, err
	}
	res.Name = fmt.Sprintf("%d concurrent switch chains (%d runs of %d switches, %d callbacks each)", r.opts.Chains, len(runs), stages, 2*stages+1)
	return res, nil
}

func branchesGraph(url string, stages int) (nodes, edges []map[string]any) {
	worker := func(id string) map[string]any {
		return map[string]any{"id": id, "type": "Worker", "data": map[string]any{"webhookUrl": url}}
	}
	for i := range stages {
		s := fmt.Sprintf("s%d", i)
		nodes = append(nodes, worker(s))
		for k := range 4 {
			b := fmt.Sprintf("b%d_%d", i, k)
			nodes = append(nodes, worker(b))
			rule := map[string]any{"condition": fmt.Sprintf("run.input.v %% 4 == %d", k)}
			if k == 3 {
				rule = map[string]any{"default": true}
			}
			edges = append(edges, map[string]any{"id": s + "-" + b, "source": s, "target": b, "data": rule},
				map[string]any{"id": b + "-j", "source": b, "target": fmt.Sprintf("s%d", i+1)})
		}
	}
	nodes = append(nodes, worker(fmt.Sprintf("s%d", stages)))
	return nodes, edges
}

// concurrentRuns runs Chains loops, each starting runs of flow (the i-th
// run's input is input(i)) one after the other until ChainsDuration has
// passed, each run done after callbacks callbacks.
func (r *runner) concurrentRuns(ctx context.Context, flow string, callbacks int, input func(i int64) any) (*Result, []string, error) {
	// The clock starts at the first run, after measure's snapshot.
	var stop time.Time
	var once sync.Once
	return r.concurrentRunsUntil(ctx, flow, callbacks, input, func() bool {
		once.Do(func() { stop = time.Now().Add(r.opts.ChainsDuration) })
		return !time.Now().Before(stop)
	})
}

// concurrentRunsUntil is concurrentRuns until done reports true (each
// loop asks before each run).
func (r *runner) concurrentRunsUntil(ctx context.Context, flow string, callbacks int, input func(i int64) any,
	done func() bool) (*Result, []string, error) {
	res := &Result{}
	var runs []string
	var started atomic.Int64
	err := r.measure(ctx, res, func() error {
		var mu sync.Mutex
		var firstErr error
		var wg sync.WaitGroup
		for range r.opts.Chains {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for !done() {
					run, err := r.runToEnd(ctx, flow, input(started.Add(1)), callbacks)
					mu.Lock()
					runs = append(runs, run)
					if err != nil && firstErr == nil {
						firstErr = err
					}
					mu.Unlock()
					if err != nil {
						return
					}
				}
			}()
		}
		wg.Wait()
		return firstErr
	})
	return res, runs, err
}

func (r *runner) fanOut(ctx context.Context, name string, items int) (*Result, error) {
	flow, err := r.fanOutFlow(ctx, "bench "+name, map[string]any{"id": "score", "type": "Worker",
		"data": map[string]any{"webhookUrl": r.worker.url}})
	if err != nil {
		return nil, err
	}
	list := indices(items)
	res := &Result{Name: fmt.Sprintf("fan-out of %d items", items)}
	var run string
	var t0, started time.Time
	if err := r.measure(ctx, res, func() (err error) {
		t0 = time.Now()
		if run, err = r.startRun(ctx, flow, map[string]any{"items": list}); err != nil {
			return err
		}
		started = time.Now()
		return r.waitRuns(ctx, []string{run}, items)
	}); err != nil {
		return nil, err
	}
	first, last, lastCb := r.worker.span(run)
	ms := func(t time.Time) float64 { return float64(t.Sub(t0).Microseconds()) / 1000 }
	res.Phases = &Phases{Started: ms(started), FirstDispatch: ms(first), LastDispatch: ms(last), LastCallback: ms(lastCb)}
	var lag sql.NullFloat64 // NULL for an empty fan-out: no item to lag behind
	if err := r.db.QueryRowContext(ctx, `SELECT extract(epoch FROM c.finished_at - (SELECT max(finished_at) FROM node_states
		WHERE run_id = $1 AND node_id = 'score')) * 1000 FROM node_states c WHERE c.run_id = $1 AND c.key = 'merge'`, run).Scan(&lag); err != nil {
		return nil, fmt.Errorf("error reading the collector lag: %w", err)
	}
	if lag.Valid {
		res.CollectorLagMs = &lag.Float64
	}
	return res, nil
}

// fanOutFlow creates flow name: a Splitter of the input's items, node on
// each, a Collector ("split" → node → "merge").
func (r *runner) fanOutFlow(ctx context.Context, name string, node map[string]any) (string, error) {
	id := node["id"]
	return r.createFlow(ctx, name, []map[string]any{
		{"id": "split", "type": "Splitter", "data": map[string]any{"arrayPath": "items"}},
		node,
		{"id": "merge", "type": "Collector", "data": map[string]any{}},
	}, []map[string]any{{"id": "e1", "source": "split", "target": id}, {"id": "e2", "source": id, "target": "merge"}})
}

// indices is [0, n).
func indices(n int) []int {
	list := make([]int, n)
	for i := range list {
		list[i] = i
	}
	return list
}

// subFlows fans out items sub-flow runs: each item's SubFlow node starts
// a child run of a one-worker flow, whose end completes the item; the
// Collector gathers the children's outputs in order.
func (r *runner) subFlows(ctx context.Context, items int) (*Result, error) {
	child, err := r.createFlow(ctx, "bench sub-flow child", []map[string]any{
		{"id": "score", "type": "Worker", "data": map[string]any{"webhookUrl": r.worker.url}},
	}, nil)
	if err != nil {
		return nil, err
	}
	flow, err := r.fanOutFlow(ctx, "bench sub-flows", map[string]any{"id": "each", "type": "SubFlow",
		"data": map[string]any{"flow": child}})
	if err != nil {
		return nil, err
	}
	list := indices(items)
	res := &Result{Name: fmt.Sprintf("fan-out of %d sub-flow runs", items)}
	var t0, started time.Time
	if err := r.measure(ctx, res, func() error {
		t0 = time.Now()
		run, err := r.startRun(ctx, flow, map[string]any{"items": list})
		if err != nil {
			return err
		}
		started = time.Now()
		return r.waitRuns(ctx, []string{run}, 0)
	}); err != nil {
		return nil, err
	}
	res.Phases = &Phases{Started: float64(started.Sub(t0).Microseconds()) / 1000}
	return res, nil
}

// steps fans out items Transform steps: synchronous, they all complete in
// the fan-out's own transaction, and the Collector with them.
func (r *runner) steps(ctx context.Context, items int) (*Result, error) {
	flow, err := r.fanOutFlow(ctx, "bench steps", map[string]any{"id": "double", "type": "Transform",
		"data": map[string]any{"expression": "{\"n\": input * 2}"}})
	if err != nil {
		return nil, err
	}
	list := indices(items)
	res := &Result{Name: fmt.Sprintf("fan-out of %d Transform steps", items)}
	if err := r.measure(ctx, res, func() error {
		run, err := r.startRun(ctx, flow, map[string]any{"items": list})
		if err != nil {
			return err
		}
		return r.waitRuns(ctx, []string{run}, 0)
	}); err != nil {
		return nil, err
	}
	return res, nil
}

// idle starts runs runs of one node that waits (in status waiting), then
// samples the CPU of stitchd and Postgres while nothing happens but that.
func (r *runner) idle(ctx context.Context, name string, runs int, node map[string]any, waiting string) (*Result, error) {
	flow, err := r.createFlow(ctx, "bench "+name, []map[string]any{node}, nil)
	if err != nil {
		return nil, err
	}
	res := &Result{Name: name}
	if err := r.measure(ctx, res, func() error {
		ids := make([]string, runs)
		sem := make(chan struct{}, 16)
		var wg sync.WaitGroup
		var mu sync.Mutex
		var firstErr error
		for i := range ids {
			wg.Add(1)
			sem <- struct{}{}
			go func() {
				defer func() { <-sem; wg.Done() }()
				id, err := r.startRun(ctx, flow, map[string]any{"i": i})
				mu.Lock()
				defer mu.Unlock()
				if err != nil && firstErr == nil {
					firstErr = err
				}
				ids[i] = id
			}()
		}
		wg.Wait()
		if firstErr != nil {
			return firstErr
		}
		return r.waitWaiting(ctx, ids, waiting)
	}); err != nil {
		return nil, err
	}
	// The steady state of runs that wait for days: what loading them left
	// to do (autovacuum of the fresh rows, a checkpoint of the dirty
	// pages) done first, so the window measures the waiting alone.
	if err := r.settle(ctx); err != nil {
		return nil, err
	}
	// Now nothing happens but waiting: sample the CPU over the window.
	backends, err := r.backends(ctx)
	if err != nil {
		return nil, err
	}
	c0, err := r.cpuNow()
	if err != nil {
		return nil, err
	}
	b0 := pidsCPU(backends)
	time.Sleep(r.opts.IdleWindow)
	c1, err := r.cpuNow()
	if err != nil {
		return nil, err
	}
	b1 := pidsCPU(backends)
	percent := func(d time.Duration) *float64 {
		v := 100 * d.Seconds() / r.opts.IdleWindow.Seconds()
		return &v
	}
	res.IdleCPUPercent = percent(c1.stitchd - c0.stitchd)
	if c0.pgOK && c1.pgOK {
		res.PostgresIdleCPUPercent = percent(c1.pg - c0.pg)
	}
	if len(backends) > 0 {
		res.BackendsIdleCPUPercent = percent(b1 - b0)
	}
	if t := c1.total - c0.total; t > 0 {
		res.MachineBusyPercent = 100 * float64(c1.busy-c0.busy) / float64(t)
	}
	rss, peak, err := r.proc.memory()
	if err != nil {
		return nil, err
	}
	res.RSSMB, res.PeakRSSMB = float64(rss)/(1<<20), float64(peak)/(1<<20)
	return res, nil
}

// settle vacuums and analyzes the database and checkpoints, then lets a
// second pass: an idle window after a big load would otherwise measure
// autovacuum and the checkpointer catching up with the load.
func (r *runner) settle(ctx context.Context) error {
	for _, q := range []string{`VACUUM (ANALYZE)`, `CHECKPOINT`} {
		if _, err := r.db.ExecContext(ctx, q); err != nil {
			return fmt.Errorf("error settling the database (%s): %w", q, err)
		}
	}
	time.Sleep(time.Second)
	return nil
}

// backends are the pids of the server processes serving stitchd's
// connections to the bench's database (none when the server is not on
// this machine).
func (r *runner) backends(ctx context.Context) ([]int, error) {
	if r.pg == nil {
		return nil, nil
	}
	rows, err := r.db.QueryContext(ctx, `SELECT pid FROM pg_stat_activity WHERE datname = current_database()
		AND pid <> pg_backend_pid() AND backend_type = 'client backend'`)
	if err != nil {
		return nil, fmt.Errorf("error listing stitchd's backends: %w", err)
	}
	defer rows.Close()
	var out []int
	for rows.Next() {
		var pid int
		if err := rows.Scan(&pid); err != nil {
			return nil, err
		}
		out = append(out, pid)
	}
	return out, rows.Err()
}

// pidsCPU is the CPU time so far of the processes still alive.
func pidsCPU(pids []int) time.Duration {
	var total time.Duration
	for _, p := range pids {
		if t, err := readProcStat(p); err == nil {
			total += t.self
		}
	}
	return total
}

func distribution(ds []time.Duration) *Latency {
	if len(ds) == 0 {
		return nil
	}
	slices.Sort(ds)
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	q := func(p float64) float64 { return ms(ds[min(len(ds)-1, int(p*float64(len(ds))))]) }
	return &Latency{Samples: len(ds), P50: q(0.50), P99: q(0.99), Max: ms(ds[len(ds)-1])}
}

// timers starts one run whose Timers items each sleep (a Wait node) until
// the same moment a few seconds ahead, and measures how long after it the
// last one woke: due timers are claimed in batches by the sweeper.
func (r *runner) timers(ctx context.Context) (*Result, error) {
	n := r.opts.Timers
	flow, err := r.fanOutFlow(ctx, "bench timers", map[string]any{"id": "wait", "type": "Wait",
		"data": map[string]any{"until": "input.at"}})
	if err != nil {
		return nil, err
	}
	// Far enough ahead for the fan-out to have committed before.
	due := time.Now().Add(2*time.Second + time.Duration(n)*200*time.Microsecond).UTC()
	items := make([]map[string]string, n)
	for i := range items {
		items[i] = map[string]string{"at": due.Format(time.RFC3339Nano)}
	}
	res := &Result{Name: fmt.Sprintf("%d timers due at once", n)}
	var run string
	if err := r.measure(ctx, res, func() (err error) {
		if run, err = r.startRun(ctx, flow, map[string]any{"items": items}); err != nil {
			return err
		}
		return r.waitRuns(ctx, []string{run}, 0)
	}); err != nil {
		return nil, err
	}
	var lag float64
	var early int
	if err := r.db.QueryRowContext(ctx, `SELECT extract(epoch FROM max(finished_at) - $2::timestamptz) * 1000,
		count(*) FILTER (WHERE finished_at < $2::timestamptz) FROM node_states WHERE run_id = $1 AND node_id = 'wait'`,
		run, due).Scan(&lag, &early); err != nil {
		return nil, fmt.Errorf("error reading the timers' wake times: %w", err)
	}
	if early > 0 {
		return nil, fmt.Errorf("%d of %d timers woke before they were due", early, n)
	}
	res.WakeLagMs = &lag
	return res, nil
}
