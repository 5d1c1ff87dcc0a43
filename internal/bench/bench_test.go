package bench_test

import (
	"bytes"
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stitchd/stitchd/internal/bench"
	"github.com/stitchd/stitchd/store/storetest"
)

// TestMain drops what storetest made for the package (its template and
// clones), so make test leaves no database behind on the server.
func TestMain(m *testing.M) { storetest.Main(m) }

// TestBenchSmall runs every scenario at a tiny size against a real stitchd
// process: the harness must count exactly, and measure something.
func TestBenchSmall(t *testing.T) {
	bin := buildStitchd(t)

	var progress bytes.Buffer
	rep, err := bench.Run(context.Background(), bench.Options{
		Binary: bin, DatabaseURL: storetest.ServerURL(t), WorkDir: t.TempDir(), Progress: &progress,
		ChainLength: 30, Chains: 3, ChainsRunLength: 10, ChainsDuration: time.Second,
		FanOutSizes: map[string]int{"fanout-1k": 50, "fanout-10k": 0, "fanout-100k": 1},
		IdleRuns:    20, IdleWindow: time.Second, Timers: 50, SubFlows: 20, Steps: 30, SleepingRuns: 20,
	})
	require.NoError(t, err, progress.String())
	require.Len(t, rep.Results, 14)
	byName := map[string]bench.Result{}
	cpu := 0.0
	for _, r := range rep.Results {
		cpu += r.CPUSeconds
		byName[r.Name] = r
		require.Zero(t, r.WorkerFailures, r.Name)
		require.Positive(t, r.PeakRSSMB, r.Name)
	}

	require.Positive(t, cpu, "stitchd's CPU time is measured (in 10 ms ticks)")
	// The bench process's CPU and how busy the machine was are always
	// measured (in 10 ms ticks: a scenario of a few milliseconds may see
	// none); Postgres's when the server runs on this machine, as make
	// test's does (TestFindPostgres checks the finding).
	localPG := rep.Machine.PostgresCPU
	pgCPU, benchCPU, busy := 0.0, 0.0, 0.0
	for _, r := range rep.Results {
		require.GreaterOrEqual(t, r.MachineBusyPercent, 0.0, r.Name)
		busy += r.MachineBusyPercent
		benchCPU += r.BenchCPUPerCompletionMs
		if r.Completions > 0 && localPG {
			require.NotNil(t, r.PostgresCPUPerCompletionMs, r.Name)
			pgCPU += *r.PostgresCPUPerCompletionMs
		} else if !localPG {
			require.Nil(t, r.PostgresCPUPerCompletionMs, r.Name)
		}
	}
	require.Positive(t, busy)
	if localPG {
		require.Positive(t, pgCPU, "Postgres's CPU time is measured")
	}
	require.Positive(t, benchCPU, "the bench worker's CPU time is measured")

	chain := byName["chain of 30 workers"]
	require.EqualValues(t, 30, chain.Completions)
	require.NotNil(t, chain.Latency)
	require.Equal(t, 29, chain.Latency.Samples, "one latency per step")
	require.Positive(t, chain.Latency.P50)
	require.GreaterOrEqual(t, chain.Latency.Max, chain.Latency.P99)
	require.Positive(t, chain.RowsPerCompletion)
	require.Positive(t, chain.TxPerCompletion)
	require.GreaterOrEqual(t, chain.CPUPerCompletionMs, 0.0)

	floor := byName["floor: 30 steps of a loopback callback, one synchronous commit, a loopback dispatch"]
	require.EqualValues(t, 30, floor.Completions)
	require.NotNil(t, floor.Latency)
	require.Equal(t, 29, floor.Latency.Samples, "one latency per step")
	require.Positive(t, floor.Latency.P50)

	httpChain := byName["chain of 30 HTTP requests"]
	require.EqualValues(t, 30, httpChain.Completions, "each response completes its node")
	require.NotNil(t, httpChain.Latency)
	require.Equal(t, 29, httpChain.Latency.Samples, "one latency per step")
	require.Positive(t, httpChain.Latency.P50)

	var chains, pulled bench.Result
	for _, r := range rep.Results {
		switch {
		case strings.Contains(r.Name, "concurrent chains"):
			chains = r
		case strings.Contains(r.Name, "concurrent pulled chains"):
			pulled = r
		}
	}
	require.NotEmpty(t, chains.Name)
	require.Zero(t, chains.Completions%10, "whole runs of 10 workers")
	require.GreaterOrEqual(t, chains.Completions, int64(30), "every chain ran at least once")
	require.NotEmpty(t, pulled.Name)
	require.Zero(t, pulled.Completions%10, "whole pulled runs of 10 workers")
	require.GreaterOrEqual(t, pulled.Completions, int64(30), "every pulled chain ran at least once")
	require.NotNil(t, pulled.Latency, "callback to the next task in a poller's hands")
	require.Positive(t, pulled.Latency.P50)

	var branches bench.Result
	for _, r := range rep.Results {
		if strings.Contains(r.Name, "switch chains") {
			branches = r
		}
	}
	require.NotEmpty(t, branches.Name, "the branches scenario ran")
	require.Zero(t, branches.Completions%11, "whole runs of 5 switches: 11 completions each, the branches not taken skipped")
	require.GreaterOrEqual(t, branches.Completions, int64(33), "every switch chain ran at least once")

	timers := byName["50 timers due at once"]
	require.NotNil(t, timers.WakeLagMs, "the timers' lag is measured")
	require.GreaterOrEqual(t, *timers.WakeLagMs, 0.0, "none woke early")
	require.EqualValues(t, 52, timers.Completions, "splitter, 50 Wait nodes and the collector")

	fan := byName["fan-out of 50 items"]
	require.EqualValues(t, 52, fan.Completions, "splitter, 50 items and the collector")
	require.NotNil(t, fan.CollectorLagMs)
	require.GreaterOrEqual(t, *fan.CollectorLagMs, 0.0)
	require.EqualValues(t, 2, byName["fan-out of 0 items"].Completions, "an empty fan-out completes splitter and collector")
	require.EqualValues(t, 3, byName["fan-out of 1 items"].Completions)

	require.EqualValues(t, 42, byName["fan-out of 20 sub-flow runs"].Completions,
		"splitter, 20 child workers, 20 SubFlow nodes and the collector")
	require.EqualValues(t, 32, byName["fan-out of 30 Transform steps"].Completions, "splitter, 30 steps and the collector")

	for _, name := range []string{"20 runs waiting on a person", "20 runs sleeping"} {
		idle := byName[name]
		require.NotNil(t, idle.IdleCPUPercent, name)
		require.GreaterOrEqual(t, *idle.IdleCPUPercent, 0.0)
		if localPG {
			require.NotNil(t, idle.PostgresIdleCPUPercent, name)
			require.GreaterOrEqual(t, *idle.PostgresIdleCPUPercent, 0.0)
			require.NotNil(t, idle.BackendsIdleCPUPercent, name)
			require.GreaterOrEqual(t, *idle.BackendsIdleCPUPercent, 0.0)
		}
	}

	var table bytes.Buffer
	require.NoError(t, bench.Print(&table, rep))
	require.Contains(t, table.String(), "chain of 30 workers")
}

// TestBenchHistory runs the history scenario small, with each loader: the
// loader writes the rows finished runs have, the chains run on, and
// stitchd's retention deletes every loaded run while they do.
func TestBenchHistory(t *testing.T) {
	bin := buildStitchd(t)
	const window = time.Second

	for _, loader := range []string{"sql", "copy"} {
		t.Run(loader, func(t *testing.T) {
			var progress bytes.Buffer
			rep, err := bench.Run(context.Background(), bench.Options{
				Binary: bin, DatabaseURL: storetest.ServerURL(t), WorkDir: t.TempDir(), Progress: &progress,
				Scenarios: []string{"history"}, HistoryRuns: 2000, HistoryLoader: loader,
				ChainLength: 20, Chains: 3, ChainsRunLength: 10, ChainsDuration: 500 * time.Millisecond, HistoryWindow: window,
			})
			require.NoError(t, err, progress.String())
			h := rep.History
			require.NotNil(t, h)
			require.Equal(t, 2000, h.Runs)
			require.Equal(t, loader, h.Loader)
			// 1,000 one-worker runs (8 rows), 1,000 two-worker runs (13), 500
			// of them with an entity (2 journey entries).
			require.EqualValues(t, 1000*8+1000*13+500*2, h.Rows)
			require.Positive(t, h.LoadSeconds)
			require.Positive(t, h.DeleteSeconds, "retention deleted the loaded runs")
			require.GreaterOrEqual(t, h.DeleteWallSeconds, h.DeleteSeconds)
			// Turns off and on, off first and last.
			require.GreaterOrEqual(t, len(h.Turns), 3)
			require.Len(t, h.Turns, h.On.Turns+h.Off.Turns)
			require.Equal(t, h.On.Turns+1, h.Off.Turns)
			var cut int
			for i, turn := range h.Turns {
				require.Equal(t, i%2 == 1, turn.On, "turn %d", i+1)
				// The turn on in which retention deletes the last loaded
				// run ends there, maybe within its first poll: on a loaded
				// machine such a cut turn may see no step finish. Every
				// whole turn sees the chains run.
				if turn.Cut {
					require.True(t, turn.On, "turn %d: only a turn on is cut", i+1)
					require.Equal(t, len(h.Turns)-2, i, "turn %d: the last turn on is cut, no other", i+1)
					cut++
					continue
				}
				require.GreaterOrEqual(t, turn.Seconds, window.Seconds(), "turn %d: a whole turn", i+1)
				require.Positive(t, turn.Completions, "turn %d (%.2f s): the chains ran\n%s", i+1, turn.Seconds, progress.String())
			}
			require.LessOrEqual(t, cut, 1)
			require.EqualValues(t, 2000, h.On.RunsDeleted+h.Off.RunsDeleted, "every loaded run, none else")
			require.Positive(t, h.On.RunsDeleted)
			require.Positive(t, h.On.CompletionsPerSec)
			require.Positive(t, h.Off.CompletionsPerSec)
			require.Len(t, h.Compared, 7)
			require.Len(t, rep.Results, 5, "chain and chains empty, chain and chains loaded, chains during retention")
			for i, r := range rep.Results {
				require.Zero(t, r.WorkerFailures, r.Name)
				require.NotNil(t, r.Latency, r.Name)
				if i%2 == 0 && i < 4 {
					require.EqualValues(t, 20, r.Completions, "%s: completions count the chain's alone, not the loaded runs'", r.Name)
				} else {
					require.Zero(t, r.Completions%10, "%s: whole runs of 10 workers", r.Name)
					require.Positive(t, r.Completions, r.Name)
				}
				require.Positive(t, r.RowsPerCompletion, r.Name)
			}
			var table bytes.Buffer
			require.NoError(t, bench.Print(&table, rep))
			require.Contains(t, table.String(), "retention on")
			t.Log("\n" + table.String())
		})
	}
}

// TestBenchFairness runs the fairness scenario small: the quiet
// workspace's runs all completed and their times are reported, with the
// busy workspace's fan-out delivered too.
func TestBenchFairness(t *testing.T) {
	bin := buildStitchd(t)
	var progress bytes.Buffer
	rep, err := bench.Run(context.Background(), bench.Options{
		Binary: bin, DatabaseURL: storetest.ServerURL(t), WorkDir: t.TempDir(), Progress: &progress,
		Scenarios: []string{"fairness"}, FairnessBacklog: 300, FairnessRuns: 10,
	})
	require.NoError(t, err, progress.String())
	require.Len(t, rep.Results, 1)
	r := rep.Results[0]
	require.NotNil(t, r.QuietRunMs)
	require.Equal(t, 10, r.QuietRunMs.Samples)
	require.Positive(t, r.QuietRunMs.P50)
	require.GreaterOrEqual(t, r.QuietRunMs.P99, r.QuietRunMs.P50)
	// 300 items and the splitter and collector, and the ten runs' steps.
	require.EqualValues(t, 300+2+10, r.Completions)
	require.Zero(t, r.WorkerFailures)
}

// buildStitchd builds the stitchd binary the bench runs.
func buildStitchd(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "stitchd")
	out, err := exec.CommandContext(t.Context(), "go", "build", "-o", bin, "github.com/stitchd/stitchd/cmd/stitchd").CombinedOutput()
	require.NoError(t, err, "go build: %s", out)
	return bin
}

// TestBenchAnalytics runs the analytics scenario small: the runs load over
// 400 days, the endpoints answer on raw rows, the days roll up, and the
// rolled answers keep every count (the scenario fails otherwise).
func TestBenchAnalytics(t *testing.T) {
	bin := buildStitchd(t)
	var progress bytes.Buffer
	rep, err := bench.Run(context.Background(), bench.Options{
		Binary: bin, DatabaseURL: storetest.ServerURL(t), WorkDir: t.TempDir(), Progress: &progress,
		Scenarios: []string{"analytics"}, AnalyticsRuns: 2000,
	})
	require.NoError(t, err, progress.String())
	a := rep.Analytics
	require.NotNil(t, a)
	require.Equal(t, 2000, a.Runs)
	require.EqualValues(t, 1000*8+1000*13+500*2, a.Rows)
	// 2,000 runs over 400 days: every day has runs of each flow, and the
	// board's entities move on one day in four or more; all but the
	// last day (not two days old) roll.
	require.Greater(t, a.DaysRolled, 2*398)
	for _, ms := range []map[string]float64{a.RawMs, a.RolledMs} {
		require.Len(t, ms, 8, "both endpoints, four ranges each")
		for name, v := range ms {
			require.Positive(t, v, name)
		}
	}
	var table bytes.Buffer
	require.NoError(t, bench.Print(&table, rep))
	require.Contains(t, table.String(), "days rolled")
}
