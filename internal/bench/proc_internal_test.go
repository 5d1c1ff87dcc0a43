package bench

import (
	"context"
	"database/sql"
	"os"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib"
	"github.com/stretchr/testify/require"

	"github.com/stitchd/stitchd/store/storetest"
)

func TestParseProcStat(t *testing.T) {
	// A command name with spaces and a parenthesis; utime 250, stime 50,
	// cutime 1000, cstime 200 ticks.
	line := "4242 (my (odd) proc) S 17 4242 4242 0 -1 4194560 500 0 0 0 250 50 1000 200 20 0 1 0 100 1000 10"
	p, err := parseProcStat(line)
	require.NoError(t, err)
	require.Equal(t, procTimes{ppid: 17, comm: "my (odd) proc", self: 3 * time.Second, children: 12 * time.Second}, p)

	for _, bad := range []string{"", "4242 no parens", "4242 (x) S 1 2",
		"4242 (x) S 17 4242 4242 0 -1 4194560 500 0 0 0 25x 50 1000 200 20 0 1 0 100 1000 10"} {
		_, err := parseProcStat(bad)
		require.Error(t, err, bad)
	}

	// This process, read for real: its parent is the one that started it.
	self, err := readProcStat(os.Getpid())
	require.NoError(t, err)
	require.Equal(t, os.Getppid(), self.ppid)
}

func TestParseCPULine(t *testing.T) {
	// user nice system idle iowait irq softirq steal guest guest_nice
	busy, total, err := parseCPULine("cpu  100 5 50 800 20 3 2 10 7 1")
	require.NoError(t, err)
	require.EqualValues(t, 170, busy, "all but idle and iowait; guest time is part of user")
	require.EqualValues(t, 990, total)

	for _, bad := range []string{"", "cpu0 1 2 3 4 5", "cpu 1 2 x 4 5", "intr 1 2 3 4 5"} {
		_, _, err := parseCPULine(bad)
		require.Error(t, err, bad)
	}
	b, tot, err := machineCPU()
	require.NoError(t, err)
	require.Positive(t, tot)
	require.LessOrEqual(t, b, tot)
}

// TestFindPostgres: the server is found exactly when the test connection's
// backend is visible here as a postgres process (make test's server is
// local; a server elsewhere, or in a container, is not looked for), and its
// CPU time only grows.
func TestFindPostgres(t *testing.T) {
	ctx := context.Background()
	dbURL := storetest.ServerURL(t)
	db, err := sql.Open("pgx", dbURL)
	require.NoError(t, err)
	defer db.Close()
	_, err = findPostgres(ctx, db, "postgres://db.example.com:5432/x")
	require.ErrorContains(t, err, "not a loopback or socket address")

	var backend int
	require.NoError(t, db.QueryRowContext(ctx, `SELECT pg_backend_pid()`).Scan(&backend))
	visible := false
	if p, err := readProcStat(backend); err == nil && p.comm == "postgres" {
		visible = true
	}
	pg, err := findPostgres(ctx, db, dbURL)
	if !visible {
		require.Error(t, err, "the server's processes are not visible here")
		return
	}
	require.NoError(t, err, "the local server %s is found", dbURL)
	c0, err := pg.cpu()
	require.NoError(t, err)
	// Work for the server: its CPU time grows (in 10 ms ticks).
	require.Eventually(t, func() bool {
		if _, err := db.ExecContext(ctx, `SELECT count(*) FROM generate_series(1, 300000)`); err != nil {
			return false
		}
		c1, err := pg.cpu()
		return err == nil && c1 > c0
	}, 30*time.Second, time.Millisecond)
}

func TestFanOutItems(t *testing.T) {
	for name, want := range map[string]int{
		"fanout-1k": 1000, "fanout-10k": 10000, "fanout-100k": 100000, "fanout-300k": 300000,
		"fanout-1m": 1000000, "fanout-10m": 10000000, "fanout-250": 250,
	} {
		got, ok := fanOutItems(name)
		require.True(t, ok, name)
		require.Equal(t, want, got, name)
	}
	for _, name := range []string{"fanout-", "fanout-0", "fanout--5", "fanout-+5", "fanout-007", "fanout-k", "fanout-1g", "fanout-11m",
		"fanout-1.5k", "fanout-99999999999999999999", "chain", "fanout1k"} {
		_, ok := fanOutItems(name)
		require.False(t, ok, name)
	}
}

func TestServeFlagsFor(t *testing.T) {
	require.Nil(t, serveFlagsFor(Options{Scenarios: []string{"chain", "fanout-1k", "fanout-100k", "idle"}}),
		"the standard scenarios run with the defaults")
	require.Equal(t, []string{"--body-limit", "9004096", "--max-fanout-items", "1000000"},
		serveFlagsFor(Options{Scenarios: []string{"fanout-1m", "fanout-10k", "idle"}}))
	require.Equal(t, []string{"--body-limit", "1084096", "--max-fanout-items", "120000"},
		serveFlagsFor(Options{Scenarios: []string{"fanout-120000"}}))
	require.Equal(t, []string{"--body-limit", "1804096", "--max-fanout-items", "200000"},
		serveFlagsFor(Options{Scenarios: []string{"fanout-1k"}, FanOutSizes: map[string]int{"fanout-1k": 200000}}), "sizes set in Options count")
	require.Nil(t, serveFlagsFor(Options{Scenarios: []string{"fanout-1m"}, FanOutSizes: map[string]int{"fanout-1m": 50}}))
}
