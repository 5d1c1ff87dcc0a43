package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/stitchd/stitchd/internal/bench"
)

// newBenchCmd is `stitchd bench`: the end-to-end benchmark
// (docs/performance.md).
func newBenchCmd(env envLookup, stderr io.Writer) *cobra.Command {
	var (
		scenarios string
		jsonOut   string
		o         bench.Options
	)
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "Run the end-to-end benchmark and print a table (and JSON)",
		Long: "Starts this stitchd against a fresh database (DATABASE_URL's server, else the local one, else a\n" +
			"throwaway cluster) with an instant worker on loopback, runs each scenario and prints throughput,\n" +
			"callback-to-next-dispatch latency, stitchd's CPU and memory and database work per completion.\n" +
			"Scenarios: chain, floor (the machine's least durable step, no stitchd), http, chains, pull (chains of pulled workers, 8 long-polling pollers), branches, fanout-1k, fanout-10k, fanout-100k, subflow-10k, steps-10k (a fan-out of Transform steps, all in one transaction), timers, idle, sleeping (the default: all, in this order);\n" +
			"fanout-<n> runs a fan-out of any size (fanout-300k, fanout-1m); history (only when named) runs chain and chains\n" +
			"on the empty database, loads --history-runs finished runs, runs them again, then chains while retention deletes\n" +
			"the loaded runs, on and off in turns of --history-window; fairness (only when named) times a quiet workspace's runs while\n" +
			"a busy one's --fairness-backlog deliveries wait; analytics (only when named) loads --analytics-runs finished runs over 400 days and\n" +
			"times the analytics endpoints before and after rolling them up. The database is dropped afterwards.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if o.DatabaseURL == "" {
				o.DatabaseURL, _ = env("DATABASE_URL")
			}
			if scenarios != "" {
				o.Scenarios = strings.Split(scenarios, ",")
			}
			o.Progress = stderr
			rep, err := bench.Run(cmd.Context(), o)
			if rep != nil && len(rep.Results) > 0 {
				if perr := bench.Print(cmd.OutOrStdout(), rep); perr != nil {
					return perr
				}
				bench.PrintStatements(cmd.OutOrStdout(), rep)
			}
			if err != nil {
				return err
			}
			if jsonOut == "" {
				return nil
			}
			if err := os.MkdirAll(filepath.Dir(jsonOut), 0o755); err != nil { //nolint:gosec // G301: the report the user asked for, in a directory of theirs
				return fmt.Errorf("error creating %s: %w", filepath.Dir(jsonOut), err)
			}
			b, err := json.MarshalIndent(rep, "", "  ")
			if err != nil {
				return err
			}
			if err := os.WriteFile(jsonOut, append(b, '\n'), 0o644); err != nil { //nolint:gosec // G306: the report the user asked for, readable as their files are
				return fmt.Errorf("error writing %s: %w", jsonOut, err)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "\nwrote %s\n", jsonOut)
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&scenarios, "scenarios", "", "comma-separated scenarios (default: all)")
	f.StringVar(&jsonOut, "json", "bench-results/bench.json", "write the report as JSON to this file (empty: don't)")
	f.StringVar(&o.DatabaseURL, "database-url", "", "Postgres server to create the bench database on (env DATABASE_URL)")
	f.IntVar(&o.ChainLength, "chain-length", 1000, "workers in the single chain")
	f.IntVar(&o.Chains, "chains", 64, "concurrent chains")
	f.IntVar(&o.ChainsRunLength, "chains-length", 100, "workers per concurrent chain run")
	f.IntVar(&o.Timers, "timers", 10000, "Wait nodes due at the same moment in the timers scenario")
	f.DurationVar(&o.ChainsDuration, "chains-duration", 60*time.Second, "how long the concurrent chains run")
	f.BoolVar(&o.KeepDatabase, "keep-database", false, "leave the bench's database behind (its name is logged) to look into")
	f.StringVar(&o.ProfileDir, "profile-dir", "", "save stitchd's pprof CPU and allocation profiles of each scenario here")
	f.IntVar(&o.IdleRuns, "idle-runs", 1000, "runs waiting on a person in the idle scenario")
	f.IntVar(&o.SleepingRuns, "sleeping-runs", 100000, "runs sleeping in a Wait node in the sleeping scenario")
	f.IntVar(&o.FairnessBacklog, "fairness-backlog", 10_000, "the fan-out a busy workspace queues in the fairness scenario")
	f.IntVar(&o.FairnessRuns, "fairness-runs", 100, "one-step runs a quiet workspace starts (one every 20 ms) during the fairness scenario's backlog")
	f.BoolVar(&o.FairnessOneWorkspace, "fairness-one-workspace", false, "run the fairness scenario's quiet runs in the busy workspace (the comparison)")
	f.IntVar(&o.AnalyticsRuns, "analytics-runs", 1_000_000, "finished runs the analytics scenario loads over 400 days")
	f.IntVar(&o.HistoryRuns, "history-runs", 1_000_000, "finished runs the history scenario loads (about 11 rows each)")
	f.StringVar(&o.HistoryLoader, "history-loader", "sql", "how the history scenario loads: sql (INSERT … SELECT generate_series) or copy (COPY from the bench)")
	f.DurationVar(&o.HistoryWindow, "history-window", 30*time.Second, "while retention deletes the history's runs, chains run with it on and off in turns this long")
	f.IntVar(&o.SubFlows, "subflows", 10000, "sub-flow runs the subflow-10k scenario fans out")
	f.IntVar(&o.Steps, "steps", 10000, "Transform steps the steps-10k scenario fans out")
	f.DurationVar(&o.IdleWindow, "idle-window", 10*time.Second, "how long idle CPU is sampled")
	return cmd
}
