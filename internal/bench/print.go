package bench

import (
	"fmt"
	"io"
	"slices"
	"text/tabwriter"
)

// Print writes the report as a table.
func Print(w io.Writer, rep *Report) error {
	fmt.Fprintf(w, "machine: %s, %d cores, %s, %s, PostgreSQL %s (autovacuum %s)\n\n", rep.Machine.CPU, rep.Machine.Cores, rep.Machine.OS,
		rep.Machine.GoVersion, rep.Machine.Postgres, rep.Machine.Autovacuum)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	// CPU per completion: stitchd's, the local Postgres server's and the
	// bench process's (its worker); how busy the machine was.
	fmt.Fprintln(tw, "scenario\tcompletions\tseconds\tcompl/s\tp50 ms\tp99 ms\tmax ms\tcollector ms\t"+
		"stitchd cpu ms/compl\tpg cpu ms/compl\tworker cpu ms/compl\tbusy %\tidle cpu %\tpg idle cpu %\tits backends idle cpu %\t"+
		"rss MB\tpeak MB\trows ins/compl\twrite tx/compl\t")
	opt := func(v *float64, f string) string {
		if v == nil {
			return "–"
		}
		return fmt.Sprintf(f, *v)
	}
	for _, r := range rep.Results {
		p50, p99, mx := "–", "–", "–"
		if r.Latency != nil {
			p50, p99, mx = fmt.Sprintf("%.2f", r.Latency.P50), fmt.Sprintf("%.2f", r.Latency.P99), fmt.Sprintf("%.1f", r.Latency.Max)
		}
		fmt.Fprintf(tw, "%s\t%d\t%.2f\t%.0f\t%s\t%s\t%s\t%s\t%.3f\t%s\t%.3f\t%.0f\t%s\t%s\t%s\t%.0f\t%.0f\t%.1f\t%.2f\t\n",
			r.Name, r.Completions, r.Seconds, r.CompletionsPerSec, p50, p99, mx, opt(r.CollectorLagMs, "%.1f"),
			r.CPUPerCompletionMs, opt(r.PostgresCPUPerCompletionMs, "%.3f"), r.BenchCPUPerCompletionMs, r.MachineBusyPercent,
			opt(r.IdleCPUPercent, "%.2f"), opt(r.PostgresIdleCPUPercent, "%.2f"), opt(r.BackendsIdleCPUPercent, "%.2f"),
			r.RSSMB, r.PeakRSSMB, r.RowsPerCompletion, r.TxPerCompletion)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, r := range rep.Results {
		if q := r.QuietRunMs; q != nil {
			fmt.Fprintf(w, "\n%s: the quiet workspace's runs took p50 %.1f ms, p99 %.1f ms, max %.1f ms (%d runs)\n",
				r.Name, q.P50, q.P99, q.Max, q.Samples)
		}
	}
	if a := rep.Analytics; a != nil {
		fmt.Fprintf(w, "\nanalytics: %d finished runs over 400 days, %d rows loaded in %.1f s; %d days rolled in %.1f s\n",
			a.Runs, a.Rows, a.LoadSeconds, a.DaysRolled, a.RollSeconds)
		names := make([]string, 0, len(a.RawMs))
		for n := range a.RawMs {
			names = append(names, n)
		}
		slices.Sort(names)
		for _, n := range names {
			fmt.Fprintf(w, "  %-16s raw %8.1f ms   rolled %8.1f ms\n", n, a.RawMs[n], a.RolledMs[n])
		}
	}
	return printHistory(w, rep.History)
}

// printHistory writes the history scenario's comparison.
func printHistory(w io.Writer, h *History) error {
	if h == nil {
		return nil
	}
	fmt.Fprintf(w, "\nhistory: %d finished runs, %d rows (%.1f a run), loaded by %s in %.1f s (%.0f rows/s), VACUUM ANALYZE %.1f s, %.0f MB\n",
		h.Runs, h.Rows, float64(h.Rows)/float64(max(h.Runs, 1)), h.Loader, h.LoadSeconds, float64(h.Rows)/max(h.LoadSeconds, 1e-9),
		h.VacuumSeconds, h.TablesMB)
	fmt.Fprintf(w, "flows page: %.1f ms empty, %.1f ms loaded\n", h.FlowsPageMs[0], h.FlowsPageMs[1])
	fmt.Fprintf(w, "retention deleted them in %.1f s on (%.0f runs/s, %.0f rows/s), %.1f s with the turns off",
		h.DeleteSeconds, h.DeletedRunsPerSec, h.DeletedRowsPerSec, h.DeleteWallSeconds)
	if h.Vacuums > 0 {
		fmt.Fprintf(w, "; autovacuum off: the bench vacuumed meanwhile (%d passes)", h.Vacuums)
	}
	fmt.Fprintf(w, "\nchains with retention on: %.0f compl/s over %d turns (%.0f s, %d runs deleted); off: %.0f compl/s over %d turns (%.0f s)",
		h.On.CompletionsPerSec, h.On.Turns, h.On.Seconds, h.On.RunsDeleted, h.Off.CompletionsPerSec, h.Off.Turns, h.Off.Seconds)
	if h.On.Turns > 0 && len(h.Turns) > 2 {
		fmt.Fprintf(w, "; each turn on against the turns off around it: %+.1f to %+.1f %% (median %+.1f)",
			h.OnAgainstNeighbours[0], h.OnAgainstNeighbours[2], h.OnAgainstNeighbours[1])
	}
	fmt.Fprint(w, "\n\n")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "turn\tretention\tseconds\tchains compl/s\truns deleted\tpostgres cores\tmachine busy %\t")
	for i, t := range h.Turns {
		on := "off"
		if t.On {
			on = "on"
		}
		fmt.Fprintf(tw, "%d\t%s\t%.1f\t%.0f\t%d\t%.2f\t%.0f\t\n", i+1, on, t.Seconds, t.CompletionsPerSec, t.RunsDeleted,
			t.PostgresCores, t.MachineBusyPercent)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(w)
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "figure\tbase\t\tagainst\t\tchange %\ttarget %\tmet\t")
	for _, c := range h.Compared {
		met := "yes"
		if !c.Met {
			met = "NO"
		}
		sign := "-"
		if !c.HigherIsBetter {
			sign = "+"
		}
		fmt.Fprintf(tw, "%s\t%s\t%.2f\t%s\t%.2f\t%+.1f\t%s%.0f\t%s\t\n", c.Figure, c.BaseLabel, c.Base, c.ValueLabel, c.Value,
			c.ChangePercent, sign, c.TargetPercent, met)
	}
	return tw.Flush()
}
