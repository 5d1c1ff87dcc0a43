package bench

import (
	"context"
	"fmt"
	"io"
	"regexp"
	"strings"
)

// Statement is one statement's share of the database's time in a
// scenario, from pg_stat_statements.
type Statement struct {
	Query   string  `json:"query"`
	Calls   int64   `json:"calls"`
	TotalMs float64 `json:"total_ms"`
	MeanMs  float64 `json:"mean_ms"`
	Rows    int64   `json:"rows"`
	// Plans and PlanMs count the statement's planning, when the server
	// tracks it (pg_stat_statements.track_planning): a statement planned
	// at every call is one whose cached generic plan Postgres rejected.
	Plans  int64   `json:"plans"`
	PlanMs float64 `json:"plan_ms"`
}

// pgStatements reports whether pg_stat_statements is loaded on the server
// (shared_preload_libraries) and, if so, makes it usable in the bench
// database.
func (r *runner) pgStatements(ctx context.Context) bool {
	if _, err := r.db.ExecContext(ctx, `CREATE EXTENSION IF NOT EXISTS pg_stat_statements`); err != nil {
		return false
	}
	_, err := r.db.ExecContext(ctx, `SELECT pg_stat_statements_reset()`)
	return err == nil
}

// topStatements returns the statements of the bench database that took the
// most time since the last reset, and resets.
func (r *runner) topStatements(ctx context.Context, n int) ([]Statement, error) {
	rows, err := r.db.QueryContext(ctx, `SELECT query, calls, total_exec_time, mean_exec_time, rows, plans, total_plan_time
		FROM pg_stat_statements WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database())
		ORDER BY total_exec_time + total_plan_time DESC LIMIT $1`, n)
	if err != nil {
		return nil, fmt.Errorf("error reading pg_stat_statements: %w", err)
	}
	defer rows.Close()
	var out []Statement
	for rows.Next() {
		var s Statement
		if err := rows.Scan(&s.Query, &s.Calls, &s.TotalMs, &s.MeanMs, &s.Rows, &s.Plans, &s.PlanMs); err != nil {
			return nil, err
		}
		s.Query = oneLine(s.Query)
		out = append(out, s)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	_, err = r.db.ExecContext(ctx, `SELECT pg_stat_statements_reset()`)
	return out, err
}

var spaces = regexp.MustCompile(`\s+`)

func oneLine(q string) string { return strings.TrimSpace(spaces.ReplaceAllString(q, " ")) }

// PrintStatements writes each fan-out's phases and each scenario's top
// statements, if collected.
func PrintStatements(w io.Writer, rep *Report) {
	for _, r := range rep.Results {
		if l := r.WakeLagMs; l != nil {
			fmt.Fprintf(w, "\n%s: the last woke %.0f ms after they fell due\n", r.Name, *l)
		}
		if p := r.Phases; p != nil {
			fmt.Fprintf(w, "\n%s: started (fan-out committed) %.0f ms, first dispatch %.0f ms, last dispatch %.0f ms, last callback %.0f ms, end %.0f ms\n",
				r.Name, p.Started, p.FirstDispatch, p.LastDispatch, p.LastCallback, r.Seconds*1000)
		}
	}
	for _, r := range rep.Results {
		if len(r.TopStatements) == 0 {
			continue
		}
		fmt.Fprintf(w, "\n%s: database time by statement (pg_stat_statements)\n", r.Name)
		for _, s := range r.TopStatements {
			q := s.Query
			if len(q) > 110 {
				q = q[:110] + "…"
			}
			plans := ""
			if s.Plans > 0 {
				plans = fmt.Sprintf("  (+%.0f ms planning it %d times)", s.PlanMs, s.Plans)
			}
			fmt.Fprintf(w, "  %9.0f ms  %8d calls  %7.3f ms/call  %s%s\n", s.TotalMs, s.Calls, s.MeanMs, q, plans)
		}
	}
}
