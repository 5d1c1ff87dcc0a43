package bench

import (
	"fmt"
	"io"
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
	return tw.Flush()
}
