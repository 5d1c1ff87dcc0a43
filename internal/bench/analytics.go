package bench

import (
	"context"
	"fmt"
	"net/url"
	"reflect"
	"time"

	"github.com/stitchd/stitchd/store"
)

// Analytics is the analytics scenario's outcome: AnalyticsRuns finished
// runs and their journeys loaded over 400 days (up to a day ago), the
// analytics endpoints timed over several ranges on raw rows, the days
// rolled up, and the endpoints timed again.
type Analytics struct {
	Runs        int     `json:"runs"`
	Rows        int64   `json:"rows"`
	LoadSeconds float64 `json:"load_seconds"`
	// RawMs and RolledMs are each endpoint and range's best of three
	// calls, before and after the rollups (the server's own roller is off:
	// --analytics-roll-interval 0).
	RawMs    map[string]float64 `json:"raw_ms"`
	RolledMs map[string]float64 `json:"rolled_ms"`
	// DaysRolled and RollSeconds: store.RollAnalytics, pass after pass
	// until caught up, unpaced (the roller paces its passes).
	DaysRolled  int     `json:"days_rolled"`
	RollSeconds float64 `json:"roll_seconds"`
}

// analyticsRanges are the ranges the scenario reads, as query strings,
// each ending at now (the same range before and after rolling up: the
// default, the last 30 days, would move meanwhile).
func analyticsRanges(now time.Time) map[string]string {
	to := now.UTC().Format(time.RFC3339)
	from := func(days int) string {
		return "?" + url.Values{"from": {now.AddDate(0, 0, -days).UTC().Format(time.RFC3339)}, "to": {to}}.Encode()
	}
	return map[string]string{"30 days": from(30), "90 days": from(90), "365 days": from(365), "500 days": from(500)}
}

// analytics runs the analytics scenario (opt-in: it loads a million runs
// by default).
func (r *runner) analytics(ctx context.Context, rep *Report) error {
	a := &Analytics{Runs: r.opts.AnalyticsRuns}
	flows, err := r.historyFlows(ctx)
	if err != nil {
		return err
	}
	// Run i started 401 days ago plus i steps of 400 days / runs.
	step := (400 * 24 * time.Hour / time.Duration(a.Runs)).Microseconds()
	t0 := fmt.Sprintf(`now() - interval '401 days' + i * interval '%d microseconds'`, step)
	r.logf("analytics: loading %d finished runs over 400 days…", a.Runs)
	start := time.Now()
	if a.Rows, err = r.loadRuns(ctx, flows, a.Runs, t0); err != nil {
		return err
	}
	// Each entity where its last move left it.
	if _, err := r.db.ExecContext(ctx, `UPDATE entities e SET section_id = l.to_section_id, section_since = l.created_at
		FROM (SELECT DISTINCT ON (entity_id) entity_id, to_section_id, created_at FROM journey_events
			ORDER BY entity_id, entity_seq DESC) l WHERE l.entity_id = e.id AND e.board_id = $1`, flows[1].board); err != nil {
		return fmt.Errorf("error placing the loaded entities: %w", err)
	}
	a.LoadSeconds = time.Since(start).Seconds()
	if _, err := r.db.ExecContext(ctx, `VACUUM ANALYZE`); err != nil {
		return fmt.Errorf("error vacuuming the loaded runs: %w", err)
	}
	r.logf("analytics: %d rows in %.1f s", a.Rows, a.LoadSeconds)
	now := time.Now()
	raw, rawAnswers, err := r.timeAnalytics(ctx, flows[1], now)
	if err != nil {
		return err
	}
	a.RawMs = raw
	r.logf("analytics: raw %v ms", raw)

	st, err := store.Open(ctx, r.dbURL, store.Options{MaxOpenConns: 2})
	if err != nil {
		return err
	}
	defer st.Close()
	start = time.Now()
	for {
		n, err := st.RollAnalytics(ctx, store.RollParams{})
		if err != nil {
			return err
		}
		a.DaysRolled += n
		if n == 0 {
			break
		}
		r.logf("analytics: %d days rolled", a.DaysRolled)
	}
	a.RollSeconds = time.Since(start).Seconds()
	rolled, rolledAnswers, err := r.timeAnalytics(ctx, flows[1], now)
	if err != nil {
		return err
	}
	a.RolledMs = rolled
	r.logf("analytics: rolled %v ms (%d days in %.1f s)", rolled, a.DaysRolled, a.RollSeconds)
	// The rollups change no count.
	for name, want := range rawAnswers {
		if !reflect.DeepEqual(want, rolledAnswers[name]) {
			return fmt.Errorf("analytics %s: rolled up %+v, raw %+v", name, rolledAnswers[name], want)
		}
	}
	rep.Analytics = a
	return nil
}

// analyticsCounts are the figures of an analytics answer the rollups
// must keep exactly.
type analyticsCounts struct {
	Runs     map[string]int
	Entities *int
	Entered  []int
	Fired    []int
}

// timeAnalytics times the board's and the flow's analytics over each
// range (best of three), and keeps each answer's counts.
func (r *runner) timeAnalytics(ctx context.Context, f historyFlow, now time.Time) (map[string]float64, map[string]analyticsCounts, error) {
	ms := map[string]float64{}
	answers := map[string]analyticsCounts{}
	for rng, q := range analyticsRanges(now) {
		for kind, path := range map[string]string{"board": "/boards/" + f.board + "/analytics", "flow": "/flows/" + f.id + "/analytics"} {
			name := kind + ", " + rng
			best := 0.0
			var out struct {
				Runs     map[string]int
				Entities *int
				Sections []struct{ Entered int }
				Nodes    []struct{ Fired int }
			}
			for i := range 3 {
				start := time.Now()
				if err := r.api(ctx, "GET", path+q, nil, &out); err != nil {
					return nil, nil, err
				}
				if d := float64(time.Since(start).Microseconds()) / 1000; i == 0 || d < best {
					best = d
				}
			}
			ms[name] = best
			c := analyticsCounts{Runs: out.Runs, Entities: out.Entities}
			for _, s := range out.Sections {
				c.Entered = append(c.Entered, s.Entered)
			}
			for _, n := range out.Nodes {
				c.Fired = append(c.Fired, n.Fired)
			}
			answers[name] = c
		}
	}
	return ms, answers, nil
}
