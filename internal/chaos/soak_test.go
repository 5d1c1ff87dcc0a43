package chaos

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib"
	"github.com/stretchr/testify/require"

	"github.com/stitchd/stitchd/internal/contracttest"
	"github.com/stitchd/stitchd/internal/testkit"
	"github.com/stitchd/stitchd/store/localpg"
)

// The quick form (make test) is the default; make soak passes
// -chaos.runs=500 -chaos.kills=-1.
var (
	flagRuns     = flag.Int("chaos.runs", 50, "runs to start")
	flagItems    = flag.Int("chaos.items", 50, "splitter items per run")
	flagKills    = flag.Int("chaos.kills", 3, "SIGKILLs of a stitchd process; -1 kills one every 5–15 s until every run completed")
	flagInFlight = flag.Int("chaos.inflight", 20, "runs in flight at once")
	flagRace     = flag.Bool("chaos.race", true, "build stitchd with the race detector")
)

const (
	// nodeTimeout is the worker nodes' timeoutSeconds; late callbacks come
	// after it.
	nodeTimeout = 20 * time.Second
	// maxAttempts is the worker nodes' retry.maxAttempts (attempts per node
	// and delivery tries per attempt).
	maxAttempts = 6
	// sweepBound is how far past its deadline a worker attempt may run: the
	// sweeper claims an overdue node for 30 s, so a sweeper killed between
	// claiming and expiring delays the expiry by that much, plus slack for
	// the poll interval and a database restart.
	sweepBound = 30*time.Second + 10*time.Second
)

// soak is one chaos soak: two stitchd processes on a throwaway Postgres
// cluster, a misbehaving worker, and a controller that kills processes and
// restarts the database while runs flow.
type soak struct {
	t      *testing.T
	runs   int
	items  int
	kills  int
	flight int

	pg     *localpg.Cluster
	db     *sql.DB
	cl     *cluster
	worker *chaosWorker
	client *http.Client
	flowID string
	runIDs []string

	// followers follow event streams across the kills: every run's (one
	// per instance it prefers) and those of every tenth run.
	followers []*follower
	followCtx context.Context
	followWG  sync.WaitGroup

	started   atomic.Int64
	completed atomic.Int64

	nKills, nRestarts, nPGRestarts atomic.Int64
	lastKilled                     int
	api503, apiConnErr             atomic.Int64
	pgDowntime                     time.Duration

	mu         sync.Mutex
	unexpected []string
	retried    map[[2]string]int
	reasons    map[string]int
	maxSampled time.Duration
}

func (s *soak) fail(format string, args ...any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.unexpected) < 50 {
		s.unexpected = append(s.unexpected, fmt.Sprintf(format, args...))
	}
}

// TestChaosSoak runs runs of a flow with a splitter (items ways), a chain
// of two workers per item, a collector and a join with a side branch, on
// two stitchd processes sharing one throwaway Postgres cluster, against a
// misbehaving worker; one process is SIGKILLed and restarted (once, or
// every 5–15 s with -chaos.kills=-1) and Postgres is crashed and restarted
// once. Failed runs (a poisoned item's dispatch gives up per its retry
// policy) are resumed by retrying the failed node through the API. Every run must
// complete; the invariants are then checked from the database.
func TestChaosSoak(t *testing.T) {
	began := time.Now()
	s := newSoak(t)
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	// Build stitchd and start a cluster of our own at once: this test
	// restarts Postgres, so it must never use a shared server.
	built := buildInBackground(t, dir)
	pg, err := localpg.StartCluster(ctx, filepath.Join(dir, "pg"))
	require.NoError(t, err)
	s.pg = pg
	t.Cleanup(func() { _ = pg.Stop() })
	dbURL, err := localpg.EnsureDatabase(ctx, pg.URL("postgres"), "stitchd")
	require.NoError(t, err)
	s.openDB(dbURL)
	bin := built()
	if t.Failed() {
		return
	}
	setup := time.Since(began)

	s.startInstances(ctx, bin, dir, dbURL, "a", "b")
	flowed := s.run(ctx, s.chaos)
	if s.kills >= 0 {
		require.EqualValues(t, s.kills, s.nKills.Load(), "every planned kill happened")
	}
	require.EqualValues(t, 1, s.nPGRestarts.Load(), "Postgres was restarted once")

	f, cf, sf := s.check(ctx)
	s.report(f, cf, sf, setup, flowed,
		fmt.Sprintf("kills (SIGKILL) %d, restarts %d, Postgres restarts %d (down %s)", s.nKills.Load(), s.nRestarts.Load(),
			s.nPGRestarts.Load(), s.pgDowntime.Round(100*time.Millisecond)))
	require.Positive(t, sf.globalCuts, "a stream of every run's events was cut by a kill and followed on")
	require.Positive(t, sf.perRunCuts, "a run's stream was cut by a kill and followed on")
}

// newSoak is a soak of the flags' size.
func newSoak(t *testing.T) *soak {
	s := &soak{t: t, runs: *flagRuns, items: *flagItems, kills: *flagKills, flight: *flagInFlight,
		// Every API answer is checked against openapi.yaml (internal/contracttest).
		client:  contracttest.Client(t, &http.Client{Timeout: 20 * time.Second}),
		retried: map[[2]string]int{}, reasons: map[string]int{}}
	require.Less(t, s.items, 1000, "items are numbered run*1000+i")
	return s
}

// openDB opens the checker's own connections to the database at dbURL.
func (s *soak) openDB(dbURL string) {
	var err error
	s.db, err = sql.Open("pgx", dbURL)
	require.NoError(s.t, err)
	s.db.SetMaxOpenConns(4)
	s.t.Cleanup(func() { s.db.Close() })
}

// startInstances starts one stitchd process (bin, logs in dir) on dbURL
// for each name and waits until each is ready.
func (s *soak) startInstances(ctx context.Context, bin, dir, dbURL string, names ...string) {
	s.cl = &cluster{}
	s.t.Cleanup(func() {
		for _, in := range s.cl.instances {
			in.kill()
		}
	})
	for _, name := range names {
		in := &instance{name: name, bin: bin, addr: freeAddr(s.t), dbURL: dbURL, logDir: dir}
		sctx, scancel := context.WithTimeout(ctx, 2*time.Minute)
		err := in.start(sctx)
		scancel()
		require.NoError(s.t, err)
		s.cl.instances = append(s.cl.instances, in)
	}
}

// run runs the workload — the misbehaving worker, event-stream
// followers, runs started until all completed — with disrupt doing its
// damage until it is told to stop, then waits until every callback was
// answered, every outbox row settled and the streams caught up. It
// returns how long the runs took.
func (s *soak) run(ctx context.Context, disrupt func(ctx context.Context, stop <-chan struct{})) time.Duration {
	t := s.t
	began := time.Now()
	wctx, wcancel := context.WithCancel(ctx)
	defer wcancel()
	var err error
	s.worker, err = newChaosWorker(wctx, s.t, s.cl, nodeTimeout)
	require.NoError(t, err)
	defer s.worker.close()
	go s.worker.outages(wctx, func() time.Duration { return 15*time.Second + rand.N(20*time.Second) }, time.Second)
	go s.monitor(wctx)
	fctx, fcancel := context.WithCancel(ctx)
	defer fcancel()
	s.followCtx = fctx
	for i := range s.cl.instances {
		s.follow(newFollower(s.t, s.cl, i, ""))
	}

	s.createFlow(ctx)
	chaosDone := make(chan struct{})
	stop := make(chan struct{})
	go func() {
		defer close(chaosDone)
		disrupt(ctx, stop)
	}()
	s.drive(ctx)
	close(stop)
	<-chaosDone
	flowed := time.Since(began)

	// Late and repeated callbacks still in flight get their answers, and
	// outbox rows of attempts that ended are retired once their lease ends.
	waitFor(t, 2*nodeTimeout, "the worker's callbacks to finish", func() bool { return s.worker.pending() == 0 })
	waitFor(t, 90*time.Second, "every outbox row to be delivered, failed or retired", func() bool {
		var n int
		err := s.db.QueryRowContext(ctx, `SELECT count(*) FROM dispatches WHERE status IN ('pending', 'sending')`).Scan(&n)
		return err == nil && n == 0
	})
	wcancel()

	// The event streams catch up with the database.
	stored, total := storedEvents(ctx, t, s.db)
	caughtUp := func() bool {
		for _, f := range s.followers {
			want := total
			if f.runID != "" {
				want = len(stored[f.runID])
			}
			if f.received() < want {
				return false
			}
		}
		return true
	}
	// Within a minute, and while they make progress: one that lost an
	// event never catches up.
	progress, moved := -1, time.Now()
	for deadline := time.Now().Add(time.Minute); !caughtUp() && time.Now().Before(deadline) && time.Since(moved) < 10*time.Second; {
		time.Sleep(100 * time.Millisecond) // a poll with a deadline that also ends when progress stops
		n := 0
		for _, f := range s.followers {
			n += f.received()
		}
		if n != progress {
			progress, moved = n, time.Now()
		}
	}
	fcancel()
	s.followWG.Wait()
	return flowed
}

// check checks, once run returned, that every answer was one the contract
// allows, the invariants in the database, the worker's callbacks against
// the attempts' histories, and each event stream against the stored events.
func (s *soak) check(ctx context.Context) (figures, callbackFigures, streamFigures) {
	t := s.t
	stored, _ := storedEvents(ctx, t, s.db) // what the streams are checked against: all there is now
	require.Empty(t, s.worker.problems(), "the worker saw only answers the contract allows")
	s.mu.Lock()
	require.Empty(t, s.unexpected, "the API answered only as the contract allows")
	s.mu.Unlock()

	f, h := checkInvariants(ctx, t, s.db, s.runIDs, s.items, nodeTimeout, sweepBound)
	cf := checkCallbacks(t, s.worker.callbacks(), h, nodeTimeout)
	var sf streamFigures
	for _, fl := range s.followers {
		sf.add(fl)
	}
	for _, fl := range s.followers {
		checkStream(t, fl, stored)
	}
	return f, cf, sf
}

// waitFor polls cond until it holds or within passes.
func waitFor(t *testing.T, within time.Duration, what string, cond func() bool) {
	t.Helper()
	testkit.Eventually(t, within, cond, "%s", what)
}

func (w *chaosWorker) pending() int64 {
	return w.stats.accepted.Load() - w.stats.done.Load()
}

func (s *soak) workerNode(id string) map[string]any {
	return map[string]any{"id": id, "type": "Worker", "position": map[string]int{"x": 0, "y": 0},
		"data": map[string]any{"webhookUrl": s.worker.url() + "/" + id, "timeoutSeconds": int(nodeTimeout.Seconds()),
			"retry": map[string]any{"maxAttempts": maxAttempts, "initialDelayMs": 200, "maxDelayMs": 2000},
			// As many tries of a delivery as attempts (the defaults span
			// minutes): the soak's misbehaving worker fails some for good.
			"delivery": map[string]any{"maxTries": maxAttempts}}}
}

func (s *soak) createFlow(ctx context.Context) {
	n := func(id, typ string, data map[string]any) map[string]any {
		return map[string]any{"id": id, "type": typ, "position": map[string]int{"x": 0, "y": 0}, "data": data}
	}
	e := func(src, dst string, data map[string]any) map[string]any {
		m := map[string]any{"id": src + "-" + dst, "source": src, "target": dst}
		if data != nil {
			m["data"] = data
		}
		return m
	}
	graph := map[string]any{
		"nodes": []any{
			n("split", "Splitter", map[string]any{"arrayPath": "items"}),
			s.workerNode("first"), s.workerNode("second"),
			n("merge", "Collector", nil),
			s.workerNode("side"), s.workerNode("join"),
		},
		"edges": []any{
			e("split", "first", nil), e("first", "second", nil), e("second", "merge", nil),
			e("merge", "join", map[string]any{"mapping": map[string]string{"items": "@this"}}),
			e("side", "join", nil),
		},
	}
	var flow struct {
		ID string `json:"id"`
	}
	b := s.call(ctx, "POST", "/api/v1/flows", map[string]any{"name": "chaos soak", "graph": graph}, "", http.StatusCreated)
	require.NoError(s.t, json.Unmarshal(b, &flow))
	s.flowID = flow.ID
}

// call sends an API request to a live instance, retrying connection errors
// and 503 (an instance or the database is down) until it gets one of ok.
func (s *soak) call(ctx context.Context, method, path string, body any, idemKey string, ok ...int) []byte {
	s.t.Helper()
	raw, err := json.Marshal(body)
	require.NoError(s.t, err)
	deadline := time.Now().Add(2 * time.Minute)
	for {
		require.False(s.t, time.Now().After(deadline), "%s %s got no answer for 2 minutes", method, path)
		in := s.cl.pick()
		if in == nil {
			time.Sleep(50 * time.Millisecond) // both instances are down (a real client's pacing, as below)
			continue
		}
		req, err := http.NewRequestWithContext(ctx, method, in.url()+path, bytes.NewReader(raw))
		require.NoError(s.t, err)
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Content-Type", "application/json")
		if idemKey != "" {
			req.Header.Set("Idempotency-Key", idemKey)
		}
		resp, err := s.client.Do(req)
		if err != nil {
			s.apiConnErr.Add(1)
			time.Sleep(50 * time.Millisecond)
			continue
		}
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil { // the instance was killed while answering
			s.apiConnErr.Add(1)
			time.Sleep(50 * time.Millisecond)
			continue
		}
		for _, c := range ok {
			if resp.StatusCode == c {
				return b
			}
		}
		if resp.StatusCode == http.StatusServiceUnavailable {
			s.api503.Add(1)
			if !bytes.Contains(b, []byte(`"code":"unavailable"`)) {
				s.fail("%s %s answered 503 without the contract's error body: %s", method, path, b)
			}
			time.Sleep(100 * time.Millisecond)
			continue
		}
		s.fail("%s %s answered %d: %s", method, path, resp.StatusCode, b)
		require.FailNow(s.t, "unexpected answer", "%s %s answered %d: %s", method, path, resp.StatusCode, b)
	}
}

func (s *soak) startRun(ctx context.Context, r int) {
	xs := make([]int, s.items)
	for i := range xs {
		xs[i] = r*1000 + i
	}
	var run struct {
		ID string `json:"id"`
	}
	// The Idempotency-Key makes a start whose answer was lost (the instance
	// was killed) safe to send again, to either instance.
	b := s.call(ctx, "POST", "/api/v1/flows/"+s.flowID+"/runs", map[string]any{"input": map[string]any{"items": xs, "run": r}},
		fmt.Sprintf("soak-%d", r), http.StatusCreated, http.StatusOK)
	require.NoError(s.t, json.Unmarshal(b, &run))
	s.runIDs = append(s.runIDs, run.ID)
	if r%10 == 3 {
		s.follow(newFollower(s.t, s.cl, r%len(s.cl.instances), run.ID))
	}
}

// follow starts f.
func (s *soak) follow(f *follower) {
	s.followers = append(s.followers, f)
	s.followWG.Add(1)
	go func() {
		defer s.followWG.Done()
		f.run(s.followCtx)
	}()
}

// streamFigures sum up what the followers saw.
type streamFigures struct {
	global, perRun                            int
	globalEvents, perRunEvents                int
	globalConnects, globalCuts, globalRefused int64
	perRunConnects, perRunCuts, perRunRefused int64
	ends                                      int64
}

func (sf *streamFigures) add(f *follower) {
	if f.runID == "" {
		sf.global++
		sf.globalEvents += f.received()
		sf.globalConnects += f.connects.Load()
		sf.globalCuts += f.cuts.Load()
		sf.globalRefused += f.refused.Load()
	} else {
		sf.perRun++
		sf.perRunEvents += f.received()
		sf.perRunConnects += f.connects.Load()
		sf.perRunCuts += f.cuts.Load()
		sf.perRunRefused += f.refused.Load()
	}
	sf.ends += f.ends.Load()
}

var digits = regexp.MustCompile(`\d+`)

// drive starts runs, at most flight at once, resumes failed runs by
// retrying their failed nodes, and returns when every run completed.
func (s *soak) drive(ctx context.Context) {
	deadline := time.Now().Add(time.Duration(s.runs)*3*time.Second + 5*time.Minute)
	for {
		var completed int
		var failed [][3]string
		err := s.db.QueryRowContext(ctx, `SELECT count(*) FROM runs WHERE status = 'completed'`).Scan(&completed)
		if err == nil {
			failed, err = s.failedNodes(ctx)
		}
		if err == nil { // else the database is restarting
			s.completed.Store(int64(completed))
			if completed == s.runs {
				return
			}
			for _, fn := range failed {
				s.retryNode(ctx, fn[0], fn[1], fn[2])
			}
			for len(s.runIDs) < s.runs && len(s.runIDs)-completed < s.flight {
				s.startRun(ctx, len(s.runIDs))
				s.started.Store(int64(len(s.runIDs)))
			}
		}
		if time.Now().After(deadline) {
			var st string
			_ = s.db.QueryRowContext(ctx, `SELECT string_agg(status || ':' || n, ', ') FROM
				(SELECT status, count(*) n FROM node_states GROUP BY status) x`).Scan(&st)
			var logs strings.Builder
			for _, in := range s.cl.instances {
				fmt.Fprintf(&logs, "\nlog %s: %s", in.name, tail(in.logPath(), 20))
			}
			s.t.Fatalf("%d of %d runs completed in time; node states: %s%s", completed, s.runs, st, logs.String())
		}
		time.Sleep(200 * time.Millisecond) // polling the database (its failure reports what is stuck)
	}
}

// failedNodes lists (run, key, error) of the failed non-collector nodes of
// failed runs.
func (s *soak) failedNodes(ctx context.Context) ([][3]string, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT n.run_id::text, n.key, coalesce(n.error, '') FROM node_states n
		JOIN runs r ON r.id = n.run_id WHERE r.status = 'failed' AND n.status = 'failed' AND n.type <> 'Collector'`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out [][3]string
	for rows.Next() {
		var f [3]string
		if err := rows.Scan(&f[0], &f[1], &f[2]); err != nil {
			return nil, err
		}
		out = append(out, f)
	}
	return out, rows.Err()
}

func (s *soak) retryNode(ctx context.Context, runID, key, reason string) {
	s.mu.Lock()
	k := [2]string{runID, key}
	s.retried[k]++
	n := s.retried[k]
	s.reasons[digits.ReplaceAllString(reason, "N")]++
	s.mu.Unlock()
	require.LessOrEqual(s.t, n, 3, "node %s of run %s failed again and again: %s", key, runID, reason)
	s.call(ctx, "POST", "/api/v1/runs/"+runID+"/nodes/"+key+"/retry", nil, "", http.StatusOK, http.StatusConflict)
}

// chaos kills processes and restarts Postgres until stop is closed. With
// a kill count, kill k happens once (k+1)/(kills+2) of the runs completed
// (spread over the runs' time: the first 20 start at once); with -1, one
// process is killed every 5–15 s. Postgres restarts once, when 60% (40%
// with endless kills) of the runs were started.
func (s *soak) chaos(ctx context.Context, stop <-chan struct{}) {
	pgAt := 0.6
	if s.kills < 0 {
		pgAt = 0.4
	}
	done := 0
	nextKill := time.Now().Add(5*time.Second + rand.N(10*time.Second))
	for {
		select {
		case <-stop:
			return
		case <-time.After(200 * time.Millisecond):
		}
		frac := float64(s.started.Load()) / float64(s.runs)
		switch {
		case s.nPGRestarts.Load() == 0 && frac >= pgAt && s.completed.Load() < s.started.Load():
			s.restartPostgres(ctx)
		case s.kills < 0 && time.Now().After(nextKill):
			s.killOne(ctx)
			nextKill = time.Now().Add(5*time.Second + rand.N(10*time.Second))
		case s.kills > 0 && done < s.kills && float64(s.completed.Load()) >= float64(done+1)*float64(s.runs)/float64(s.kills+2) &&
			s.completed.Load() < s.started.Load():
			s.killOne(ctx)
			done++
		}
	}
}

// killOne kills an instance — the first at random, then each in turn, so
// that two kills hit both — and starts it again.
func (s *soak) killOne(ctx context.Context) {
	if s.nKills.Load() == 0 {
		s.lastKilled = rand.IntN(len(s.cl.instances))
	} else {
		s.lastKilled = (s.lastKilled + 1) % len(s.cl.instances)
	}
	in := s.cl.instances[s.lastKilled]
	in.kill()
	s.nKills.Add(1)
	killed := time.Now()
	s.t.Logf("%s killed at %s", in.name, killed.Format("15:04:05.000"))
	time.Sleep(500*time.Millisecond + rand.N(1500*time.Millisecond)) // down for a while: the soak's real outage
	sctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	if err := in.start(sctx); err != nil {
		s.fail("restart after a kill: %v", err)
		return
	}
	s.nRestarts.Add(1)
	s.t.Logf("%s ready again at %s", in.name, time.Now().Format("15:04:05.000"))
}

// restartPostgres crashes Postgres (immediate stop: no shutdown
// checkpoint, connections cut without a word) and starts it again, which
// recovers from the write-ahead log: committed work must all be there.
func (s *soak) restartPostgres(ctx context.Context) {
	began := time.Now()
	if err := s.pg.Crash(); err != nil {
		s.fail("crashing Postgres: %v", err)
		return
	}
	s.t.Logf("Postgres crashed at %s", began.Format("15:04:05.000"))
	time.Sleep(2 * time.Second) // down for a while: a real Postgres outage
	if err := s.pg.Start(ctx); err != nil {
		s.fail("starting Postgres again: %v", err)
		return
	}
	s.pgDowntime = time.Since(began)
	s.t.Logf("Postgres up again at %s", time.Now().Format("15:04:05.000"))
	// The processes' listeners reconnect within seconds after.
	s.nPGRestarts.Add(1)
}

// monitor samples how far past its deadline the most overdue running
// node is.
func (s *soak) monitor(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-time.After(500 * time.Millisecond):
		}
		var secs float64
		if err := s.db.QueryRowContext(ctx, `SELECT coalesce(max(extract(epoch FROM now() - deadline)), 0)::float8
			FROM node_states WHERE status = 'running' AND deadline < now()`).Scan(&secs); err != nil {
			continue
		}
		s.mu.Lock()
		if d := time.Duration(secs * float64(time.Second)); d > s.maxSampled {
			s.maxSampled = d
		}
		s.mu.Unlock()
	}
}

// report logs the figures, with the disruption's own lines after the
// first two.
func (s *soak) report(f figures, cf callbackFigures, sf streamFigures, setup, flowed time.Duration, disruption ...string) {
	w := &s.worker.stats
	var reasons []string
	s.mu.Lock()
	for r, n := range s.reasons {
		reasons = append(reasons, fmt.Sprintf("%dx %q", n, r))
	}
	retries := len(s.retried)
	sampled := s.maxSampled
	s.mu.Unlock()
	sort.Strings(reasons)
	lines := []string{
		fmt.Sprintf("runs %d (%d items each), all completed; node instances %d; events %d", f.runs, s.items, f.nodes, f.events),
		fmt.Sprintf("setup (build, initdb) %s; runs flowed in %s", setup.Round(time.Second), flowed.Round(time.Second)),
	}
	lines = append(lines, disruption...)
	lines = append(lines,
		fmt.Sprintf("worker attempts (= outbox rows) %d, of them retries %d; delivery tries %d; rows failed %d, retired %d",
			f.workerAttempts, f.retriedAttempts, f.dispatchTries, f.dispatchFailed, f.dispatchCancelled),
		fmt.Sprintf("attempts failed %d (deadline %d); collectors re-fired after a retried item %d", f.failedAttempts,
			f.deadlineFailures, f.collectorRefires),
		fmt.Sprintf("worker saw %d deliveries: %d redeliveries of a webhook-id, accepted %d, 500 %d, 503 %d, 429 %d, hung %d, "+
			"dropped %d, poisoned %d, listener outages %d", w.deliveries.Load(), w.redeliveries.Load(), w.accepted.Load(),
			w.a500.Load(), w.a503.Load(), w.a429.Load(), w.hung.Load(), w.hijacked.Load(), w.poisoned.Load(), w.outages.Load()),
		fmt.Sprintf("callbacks %d (failed %d, heartbeats %d); duplicates %d → 200 unchanged %d, 409 %d; late %d → 409 %d, 200 %d",
			w.callbacks.Load(), w.failedReported.Load(), w.heartbeats.Load(), w.dupSent.Load(), w.dup200.Load(), w.dup409.Load(),
			w.lateSent.Load(), w.late409.Load(), w.late200.Load()),
		fmt.Sprintf("callbacks checked against the attempts: %d results (200 %d, 409 %d), %d heartbeats (200 %d, 409 %d); "+
			"late without a heartbeat → 409 %d (failed by the deadline), 200 %d (applied before the sweeper); "+
			"late after a heartbeat: %d attempts, their %d callbacks required and answered 200", cf.results, cf.result200, cf.result409,
			cf.heartbeats, cf.beat200, cf.b409, cf.late409, cf.late200, w.beatLateSent.Load(), cf.beatLate200),
		fmt.Sprintf("event streams: %d of every run's events, %d events each (%d connections, %d cut, %d refused); "+
			"%d runs' own, %d events (%d connections, %d cut, %d refused): every event exactly once, in order, in both kinds",
			sf.global, sf.globalEvents/max(sf.global, 1), sf.globalConnects, sf.globalCuts, sf.globalRefused,
			sf.perRun, sf.perRunEvents, sf.perRunConnects, sf.perRunCuts, sf.perRunRefused),
		fmt.Sprintf("failed tries logged %d (429 retried after Retry-After %d), successful deliveries logged %d",
			f.failedTriesLogd, f.retryAfter429, f.deliveredLogged),
		fmt.Sprintf("callbacks answered 503 %d, connection errors %d; API 503 %d, connection errors %d",
			w.cb503.Load(), w.cbConnErr.Load(), s.api503.Load(), s.apiConnErr.Load()),
		fmt.Sprintf("nodes retried through the API %d: %s", retries, strings.Join(reasons, ", ")),
		fmt.Sprintf("max time past deadline: %s (events), %s (sampled)", f.maxOverrun.Round(10*time.Millisecond),
			sampled.Round(10*time.Millisecond)),
	)
	s.t.Log("soak report:\n  " + strings.Join(lines, "\n  "))
}
