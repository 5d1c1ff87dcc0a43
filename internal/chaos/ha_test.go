package chaos

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stitchd/stitchd/store/localpg"
)

// The quick form (make test: the soak's 50 runs, one failover) is the
// default; make ha-soak passes -chaos.runs=200 -ha.failovers=3.
var (
	flagHA        = flag.Bool("ha", true, "run TestHASoak: Patroni-managed Postgres pair, primary SIGKILLed mid-flight")
	flagFailovers = flag.Int("ha.failovers", 1, "failovers (SIGKILLs of the Postgres primary's postmaster) in TestHASoak")
)

const (
	// maxStall is the longest the issue allows without a completion.
	maxStall = 30 * time.Second
	// listenerApp is the application_name of stitchd's LISTEN connection
	// (store.Listen).
	listenerApp = "stitchd-listener"
)

// TestHASoak runs the chaos soak's workload on three stitchd processes
// connected with a multi-host URL (target_session_attrs=read-write) to two
// Postgres instances managed by Patroni (synchronous_mode, etcd as the
// DCS), and SIGKILLs the primary's postmaster mid-flight; Patroni fails
// over to the synchronous standby (primary_start_timeout 0: no restart in
// place) and brings the old primary back as a standby. Nothing else is
// disrupted (no stitchd is killed, the worker misbehaves as in the soak).
// Afterwards: every answer was within the contract (503, never 500),
// /readyz answered 503 during the failover and 200 after it on every
// instance, each instance's listener is connected to the new primary, the
// soak's invariants hold (no lost run, no duplicate completion, no
// double-fired collector, no stuck node), and the longest time without a
// node completing is at most 30 s.
func TestHASoak(t *testing.T) {
	if !*flagHA {
		t.Skip("-ha=false")
	}
	for _, bin := range []string{"patroni", "etcd"} {
		_, err := exec.LookPath(bin)
		require.NoError(t, err, "%s is needed: make deps-ha (part of make test and make ha-soak) installs Debian's patroni and etcd-server", bin)
	}
	began := time.Now()
	s := newSoak(t)
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	built := buildInBackground(t, dir)
	ha := startHACluster(ctx, t, filepath.Join(dir, "ha"))
	primary := ha.waitHealthy(ctx, "")
	_, err := localpg.EnsureDatabase(ctx, ha.nodes[primary].url("postgres"), "stitchd")
	require.NoError(t, err)
	// On the standby too before stitchd starts: a synchronous commit waits
	// for the standby's disk, not its replay, and pgx does not try the next
	// host after one that says the database does not exist.
	for _, n := range ha.nodes {
		waitFor(t, 30*time.Second, "the database on "+n.name, func() bool { return localpg.Ping(ctx, n.url("stitchd")) == nil })
	}
	dsn := ha.dsn("stitchd")
	s.openDB(dsn)
	bin := built()
	if t.Failed() {
		return
	}
	setup := time.Since(began)

	s.startInstances(ctx, bin, dir, dsn, "a", "b", "c")
	ready := watchReadyz(ctx, s.cl)
	var kills []failover
	flowed := s.run(ctx, func(ctx context.Context, stop <-chan struct{}) {
		kills = s.failovers(ctx, stop, ha, *flagFailovers)
	})
	ready.stop()
	require.Len(t, kills, *flagFailovers, "every planned failover happened")

	// Each instance's listener followed the primary: its LISTEN connection
	// is on the last one.
	last := ha.waitHealthy(ctx, "")
	waitFor(t, 30*time.Second, "each instance's listener on the new primary", func() bool {
		var n int
		err := s.db.QueryRowContext(ctx, `SELECT count(*) FROM pg_stat_activity WHERE application_name = $1`, listenerApp).Scan(&n)
		return err == nil && n == len(s.cl.instances)
	})
	var onPrimary bool
	require.NoError(t, s.db.QueryRowContext(ctx, `SELECT NOT pg_is_in_recovery()`).Scan(&onPrimary))
	require.True(t, onPrimary, "the checker's read-write connection is on the primary (%s)", ha.nodes[last].name)

	f, cf, sf := s.check(ctx)
	tally := s.tallyHA(ctx)
	require.Equal(t, haTally{}, tally, "no lost run, duplicate completion, double-fired collector or stuck node")
	readyLines := ready.check(t, kills)
	worst, stalls := s.stalls(ctx, kills)

	lines := []string{fmt.Sprintf("Postgres pair under Patroni (synchronous_mode), 3 stitchd on %s", dsn)}
	for i, k := range kills {
		lines = append(lines, fmt.Sprintf("failover %d: SIGKILL of %s's postmaster; %s promoted after %s, %s back as a standby after %s; "+
			"longest without a completion from then until it was back %s, from %s after the SIGKILL", i+1, k.from, k.to, k.promoted.Round(100*time.Millisecond), k.from,
			k.rejoined.Round(100*time.Millisecond), stalls[i].gap.Round(10*time.Millisecond), stalls[i].from.Sub(k.at).Round(10*time.Millisecond)))
	}
	lines = append(lines, readyLines...)
	lines = append(lines, fmt.Sprintf("longest time without a node completing at any time: %s, from %s (allowed around a failover: %s); "+
		"lost runs %d, duplicate completions %d, double-fired collectors %d, stuck nodes %d", worst.gap.Round(10*time.Millisecond),
		worst.from.Format("15:04:05.000"), maxStall, tally.lostRuns, tally.dupCompletions,
		tally.doubleCollectors, tally.stuckNodes))
	s.report(f, cf, sf, setup, flowed, lines...)
	for i, st := range stalls {
		require.LessOrEqual(t, st.gap, maxStall, "the stall without completions around failover %d", i+1)
	}
}

// haNode is one Postgres instance with its Patroni.
type haNode struct {
	name             string
	dir              string
	pgPort, restPort int

	cmd    *exec.Cmd
	exited chan struct{}
}

func (n *haNode) dataDir() string { return filepath.Join(n.dir, "data") }

func (n *haNode) url(db string) string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/%s?sslmode=disable", n.pgPort, db)
}

// haCluster is etcd and two Patroni-managed Postgres instances on loopback.
type haCluster struct {
	t     *testing.T
	etcd  *exec.Cmd
	nodes []*haNode
	api   *http.Client
}

// startHACluster starts etcd and two Patroni instances under dir; Patroni
// initialises one instance, makes it primary and the other its
// synchronous standby. Everything is stopped when the test ends.
func startHACluster(ctx context.Context, t *testing.T, dir string) *haCluster {
	pgBin, err := localpg.BinDir()
	require.NoError(t, err)
	cred, err := localpg.ServerCredential()
	require.NoError(t, err)
	port := func() int {
		p, err := localpg.FreePort(ctx)
		require.NoError(t, err)
		return p
	}
	ha := &haCluster{t: t, api: &http.Client{Timeout: 2 * time.Second}}
	require.NoError(t, os.MkdirAll(dir, 0o755))

	clientPort, peerPort := port(), port()
	etcdLog, err := os.Create(filepath.Join(dir, "etcd.log"))
	require.NoError(t, err)
	peer := fmt.Sprintf("http://127.0.0.1:%d", peerPort)
	client := fmt.Sprintf("http://127.0.0.1:%d", clientPort)
	// Not CommandContext: etcd and Patroni are stopped in order by SIGTERM
	// in Cleanup; a context would kill them first and orphan Postgres.
	ha.etcd = exec.Command("etcd", //nolint:noctx // stopped by Cleanup, see above
		"--name", "e0", "--data-dir", filepath.Join(dir, "etcd"),
		"--listen-client-urls", client, "--advertise-client-urls", client,
		"--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer, "--initial-cluster", "e0="+peer)
	ha.etcd.Stdout, ha.etcd.Stderr = etcdLog, etcdLog
	require.NoError(t, ha.etcd.Start())
	t.Cleanup(func() {
		_ = ha.etcd.Process.Signal(syscall.SIGTERM)
		_ = ha.etcd.Wait()
		etcdLog.Close()
	})

	for i := range 2 {
		n := &haNode{name: fmt.Sprintf("pg%d", i), dir: filepath.Join(dir, fmt.Sprintf("pg%d", i)), pgPort: port(), restPort: port()}
		require.NoError(t, os.MkdirAll(n.dir, 0o700))
		require.NoError(t, os.WriteFile(filepath.Join(n.dir, "patroni.yml"), []byte(patroniConfig(n, clientPort, pgBin)), 0o600))
		require.NoError(t, localpg.OwnDir(n.dir, cred))
		ha.nodes = append(ha.nodes, n)
	}
	t.Cleanup(func() {
		ha.stop()
		if t.Failed() {
			for _, name := range []string{"etcd", "pg0", "pg1"} {
				t.Logf("%s's log ends:\n%s", name, tail(filepath.Join(dir, name+".log"), 30))
			}
		}
	})
	for _, n := range ha.nodes {
		logf, err := os.Create(filepath.Join(dir, n.name+".log"))
		require.NoError(t, err)
		n.cmd = exec.Command("patroni", filepath.Join(n.dir, "patroni.yml")) //nolint:noctx // stopped by Cleanup, as etcd
		localpg.SetCredential(n.cmd, cred)
		n.cmd.Stdout, n.cmd.Stderr = logf, logf
		require.NoError(t, n.cmd.Start())
		n.exited = make(chan struct{})
		go func() {
			_ = n.cmd.Wait()
			logf.Close()
			close(n.exited)
		}()
	}
	return ha
}

// patroniConfig is node n's patroni.yml. loop_wait 1 s: Patroni notices a
// dead postmaster within a second; primary_start_timeout 0: a crashed
// primary fails over at once instead of being restarted in place;
// synchronous_mode: a commit waits for the standby, so a failover loses no
// acknowledged transaction. fsync is off as in the other throwaway
// clusters: a SIGKILL leaves the page cache, which is all the kernel needs.
func patroniConfig(n *haNode, etcdPort int, pgBin string) string {
	return fmt.Sprintf(`scope: stitchd-ha
name: %[1]s
log: {level: WARNING}
restapi: {listen: 127.0.0.1:%[2]d, connect_address: 127.0.0.1:%[2]d}
etcd3: {hosts: 127.0.0.1:%[3]d}
bootstrap:
  dcs:
    ttl: 20
    loop_wait: 1
    retry_timeout: 5
    synchronous_mode: true
    primary_start_timeout: 0
    postgresql:
      use_pg_rewind: true
      use_slots: true
      parameters: {wal_log_hints: 'on', fsync: 'off', max_connections: 200}
  initdb: [{encoding: UTF8}, {auth: trust}, {username: postgres}]
  pg_hba:
    - local all all trust
    - host all all 127.0.0.1/32 trust
    - host replication all 127.0.0.1/32 trust
postgresql:
  listen: 127.0.0.1:%[4]d
  connect_address: 127.0.0.1:%[4]d
  data_dir: %[5]s
  bin_dir: %[6]s
  pgpass: %[7]s
  authentication:
    superuser: {username: postgres}
    replication: {username: postgres}
    rewind: {username: postgres}
  parameters: {unix_socket_directories: '%[8]s'}
`, n.name, n.restPort, etcdPort, n.pgPort, n.dataDir(), pgBin, filepath.Join(n.dir, "pgpass"), n.dir)
}

// dsn is the multi-host connection string stitchd is given: both
// instances, the primary whichever it is.
func (ha *haCluster) dsn(db string) string {
	hosts, ports := make([]string, len(ha.nodes)), make([]string, len(ha.nodes))
	for i, n := range ha.nodes {
		hosts[i], ports[i] = "127.0.0.1", strconv.Itoa(n.pgPort)
	}
	return fmt.Sprintf("host=%s port=%s user=postgres dbname=%s sslmode=disable target_session_attrs=read-write",
		strings.Join(hosts, ","), strings.Join(ports, ","), db)
}

type patroniMember struct {
	Name  string          `json:"name"`
	Role  string          `json:"role"`
	State string          `json:"state"`
	Lag   json.RawMessage `json:"lag"`
}

// members asks any Patroni that answers for the cluster's members.
func (ha *haCluster) members() ([]patroniMember, error) {
	var last error
	for _, n := range ha.nodes {
		resp, err := httpGet(ha.t.Context(), ha.api, fmt.Sprintf("http://127.0.0.1:%d/cluster", n.restPort))
		if err != nil {
			last = err
			continue
		}
		var c struct {
			Members []patroniMember `json:"members"`
		}
		err = json.NewDecoder(resp.Body).Decode(&c)
		resp.Body.Close()
		if err != nil {
			last = err
			continue
		}
		return c.Members, nil
	}
	return nil, fmt.Errorf("error asking Patroni for the cluster: %w", last)
}

// waitHealthy waits until a primary other than not runs with the other
// instance streaming to it as its synchronous standby, and returns the
// primary's index.
func (ha *haCluster) waitHealthy(ctx context.Context, not string) int {
	var leader int
	waitFor(ha.t, 3*time.Minute, "a primary and its synchronous standby", func() bool {
		ha.requireRunning()
		ms, err := ha.members()
		if err != nil {
			return false
		}
		leader = -1
		sync := false
		for _, m := range ms {
			switch {
			case (m.Role == "leader" || m.Role == "master") && m.State == "running" && m.Name != not:
				leader = ha.index(m.Name)
			case m.Role == "sync_standby" && (m.State == "running" || m.State == "streaming"):
				sync = true
			}
		}
		return leader >= 0 && sync && ctx.Err() == nil
	})
	return leader
}

// waitPromoted waits until an instance other than old is primary.
func (ha *haCluster) waitPromoted(ctx context.Context, old string) int {
	leader := -1
	waitFor(ha.t, time.Minute, "Patroni to promote the standby", func() bool {
		ha.requireRunning()
		ms, err := ha.members()
		if err != nil {
			return false
		}
		for _, m := range ms {
			if (m.Role == "leader" || m.Role == "master") && m.State == "running" && m.Name != old {
				leader = ha.index(m.Name)
			}
		}
		return leader >= 0 || ctx.Err() != nil
	})
	return leader
}

// requireRunning fails the test if a Patroni exited.
func (ha *haCluster) requireRunning() {
	for _, n := range ha.nodes {
		select {
		case <-n.exited:
			ha.t.Fatalf("%s's Patroni exited", n.name)
		default:
		}
	}
}

func (ha *haCluster) index(name string) int {
	for i, n := range ha.nodes {
		if n.name == name {
			return i
		}
	}
	return -1
}

// killPostmaster SIGKILLs node i's postmaster: its backends quit when they
// notice, with no shutdown and no message to the clients.
func (ha *haCluster) killPostmaster(i int) error {
	pid, err := postmasterPID(ha.nodes[i].dataDir())
	if err != nil {
		return err
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		return fmt.Errorf("error killing the postmaster (%d) of %s: %w", pid, ha.nodes[i].name, err)
	}
	return nil
}

func postmasterPID(dataDir string) (int, error) {
	b, err := os.ReadFile(filepath.Join(dataDir, "postmaster.pid"))
	if err != nil {
		return 0, fmt.Errorf("error reading the postmaster's pid: %w", err)
	}
	pid, err := strconv.Atoi(strings.SplitN(string(b), "\n", 2)[0])
	if err != nil {
		return 0, fmt.Errorf("error reading the postmaster's pid in %s: %w", dataDir, err)
	}
	return pid, nil
}

// stop stops each Patroni (which stops its Postgres) and, should one not
// stop in time, kills it and its postmaster.
func (ha *haCluster) stop() {
	for _, n := range ha.nodes {
		if n.cmd != nil && n.cmd.Process != nil {
			_ = n.cmd.Process.Signal(syscall.SIGTERM)
		}
	}
	for _, n := range ha.nodes {
		if n.cmd == nil || n.cmd.Process == nil {
			continue
		}
		select {
		case <-n.exited:
		case <-time.After(30 * time.Second):
			_ = n.cmd.Process.Kill()
			<-n.exited
		}
		// A postmaster Patroni left behind (it was killed) goes too.
		if pid, err := postmasterPID(n.dataDir()); err == nil && syscall.Kill(pid, 0) == nil {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}

// failover is one SIGKILL of the primary and what followed.
type failover struct {
	from, to           string
	at                 time.Time
	promoted, rejoined time.Duration
}

// failovers kills the primary's postmaster n times, the k-th once
// (k+1)/(n+2) of the runs completed, and waits each time for the standby
// to be promoted and the old primary to be back as the new one's
// synchronous standby; it returns when done or told to stop.
func (s *soak) failovers(ctx context.Context, stop <-chan struct{}, ha *haCluster, n int) []failover {
	var out []failover
	for len(out) < n {
		select {
		case <-stop:
			return out
		case <-time.After(200 * time.Millisecond):
		}
		if float64(s.completed.Load()) < float64(len(out)+1)*float64(s.runs)/float64(n+2) || s.completed.Load() >= s.started.Load() {
			continue
		}
		ms, err := ha.members()
		if err != nil {
			s.fail("asking Patroni for the primary: %v", err)
			return out
		}
		primary := -1
		for _, m := range ms {
			if m.Role == "leader" || m.Role == "master" {
				primary = ha.index(m.Name)
			}
		}
		if primary < 0 {
			s.fail("no primary before failover %d: %+v", len(out)+1, ms)
			return out
		}
		f := failover{from: ha.nodes[primary].name, at: time.Now()}
		if err := ha.killPostmaster(primary); err != nil {
			s.fail("%v", err)
			return out
		}
		s.t.Logf("SIGKILL of %s's postmaster at %s", f.from, f.at.Format("15:04:05.000"))
		f.to = ha.nodes[ha.waitPromoted(ctx, f.from)].name
		f.promoted = time.Since(f.at)
		s.t.Logf("%s promoted after %s", f.to, f.promoted.Round(10*time.Millisecond))
		ha.waitHealthy(ctx, f.from)
		f.rejoined = time.Since(f.at)
		s.t.Logf("%s back as the synchronous standby after %s", f.from, f.rejoined.Round(10*time.Millisecond))
		out = append(out, f)
	}
	return out
}

// haTally is what the issue names, counted from the database.
type haTally struct {
	lostRuns, dupCompletions, doubleCollectors, stuckNodes int
}

func (s *soak) tallyHA(ctx context.Context) haTally {
	var h haTally
	var completed int
	require.NoError(s.t, s.db.QueryRowContext(ctx, `SELECT count(*) FROM runs WHERE status = 'completed' AND id = ANY($1::uuid[])`,
		s.runIDs).Scan(&completed))
	h.lostRuns = s.runs - completed
	require.NoError(s.t, s.db.QueryRowContext(ctx, `SELECT
		(SELECT count(*) FROM (SELECT 1 FROM run_events WHERE type = 'node.status' AND payload->>'status' = 'completed'
			GROUP BY run_id, key, payload->>'attempt' HAVING count(*) > 1) d),
		(SELECT count(*) FROM (SELECT 1 FROM run_events e JOIN node_states n ON n.run_id = e.run_id AND n.key = e.key
			WHERE n.type = 'Collector' AND e.type = 'node.status' AND e.payload->>'status' = 'completed'
			GROUP BY e.run_id, e.key HAVING count(*) > 1) c),
		(SELECT count(*) FROM node_states WHERE status <> 'completed')
			+ (SELECT count(*) FROM dispatches WHERE status IN ('pending', 'sending'))`).
		Scan(&h.dupCompletions, &h.doubleCollectors, &h.stuckNodes))
	return h
}

// stall is a time without node completions.
type stall struct {
	from time.Time
	gap  time.Duration
}

// stalls measures, from the completion events' times (each its
// transaction's start), the longest gap between two node completions at
// any time, and around each failover the longest gap that reaches into
// its span from the SIGKILL to the old primary's return as the synchronous
// standby. (Not merely the gap that spans the SIGKILL: the old primary's
// backends may still commit for a moment after their postmaster is gone.)
func (s *soak) stalls(ctx context.Context, kills []failover) (stall, []stall) {
	const gaps = `WITH c AS (SELECT created_at t, lag(created_at) OVER (ORDER BY created_at) p FROM run_events
		WHERE type = 'node.status' AND payload->>'status' = 'completed')
		SELECT coalesce(p, t), extract(epoch FROM t - coalesce(p, t))::float8 FROM c`
	longest := func(q string, args ...any) stall {
		var st stall
		var secs float64
		err := s.db.QueryRowContext(ctx, q+` ORDER BY t - p DESC NULLS LAST LIMIT 1`, args...).Scan(&st.from, &secs)
		if !errors.Is(err, sql.ErrNoRows) {
			require.NoError(s.t, err)
		}
		st.gap = time.Duration(secs * float64(time.Second))
		return st
	}
	around := make([]stall, len(kills))
	for i, k := range kills {
		around[i] = longest(gaps+` WHERE t > $1 AND p < $2`, k.at, k.at.Add(k.rejoined))
	}
	return longest(gaps), around
}

// readyzWatch polls every instance's /readyz and keeps each change of
// answer.
type readyzWatch struct {
	cancel context.CancelFunc
	wg     sync.WaitGroup
	mu     sync.Mutex
	seen   map[string][]readyzChange
}

type readyzChange struct {
	at   time.Time
	code int // 0: no answer
}

func watchReadyz(ctx context.Context, cl *cluster) *readyzWatch {
	ctx, cancel := context.WithCancel(ctx)
	w := &readyzWatch{cancel: cancel, seen: map[string][]readyzChange{}}
	client := &http.Client{Timeout: 5 * time.Second}
	for _, in := range cl.instances {
		w.wg.Add(1)
		go func() {
			defer w.wg.Done()
			last := -1
			for ctx.Err() == nil {
				code := 0
				if resp, err := httpGet(ctx, client, in.url()+"/readyz"); err == nil {
					resp.Body.Close()
					code = resp.StatusCode
				}
				if code != last && ctx.Err() == nil {
					w.mu.Lock()
					w.seen[in.name] = append(w.seen[in.name], readyzChange{time.Now(), code})
					w.mu.Unlock()
					last = code
				}
				select {
				case <-ctx.Done():
				case <-time.After(100 * time.Millisecond):
				}
			}
		}()
	}
	return w
}

func (w *readyzWatch) stop() {
	w.cancel()
	w.wg.Wait()
}

// check requires that each instance's /readyz answered only 200 or 503,
// 503 after each kill and 200 again before the next (and at the end), and
// returns report lines with how long it was 503.
func (w *readyzWatch) check(t *testing.T, kills []failover) []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	var lines []string
	for name, changes := range w.seen {
		var downs []string
		for i, k := range kills {
			end := time.Now()
			if i+1 < len(kills) {
				end = kills[i+1].at
			}
			var down time.Duration
			var since time.Time
			for _, c := range changes {
				require.Contains(t, []int{http.StatusOK, http.StatusServiceUnavailable}, c.code,
					"%s's /readyz answered %d at %s", name, c.code, c.at.Format("15:04:05.000"))
				if c.at.Before(k.at) || c.at.After(end) {
					continue
				}
				if c.code != http.StatusOK && since.IsZero() {
					since = c.at
				} else if c.code == http.StatusOK && !since.IsZero() {
					down += c.at.Sub(since)
					since = time.Time{}
				}
			}
			require.True(t, since.IsZero(), "%s's /readyz was 200 again after failover %d", name, i+1)
			require.Positive(t, down, "%s's /readyz answered 503 during failover %d", name, i+1)
			downs = append(downs, down.Round(100*time.Millisecond).String())
		}
		lines = append(lines, fmt.Sprintf("%s's /readyz 503 for %s", name, strings.Join(downs, ", ")))
	}
	require.NotEmpty(t, lines, "/readyz was watched")
	sort.Strings(lines)
	return lines
}
