package app_test

import (
	"context"
	"net/url"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/stitchd/stitchd/internal/app"
	"github.com/stitchd/stitchd/store"
)

func utcMidnight(t time.Time) time.Time {
	t = t.UTC()
	return time.Date(t.Year(), t.Month(), t.Day(), 0, 0, 0, 0, time.UTC)
}

// requireSameNodes: the same nodes with the same counts and outcomes, and
// durations within 1 % (rolled days keep them as log histograms).
func requireSameNodes(t *testing.T, want, got []store.NodeAnalytics) {
	t.Helper()
	require.Len(t, got, len(want))
	for i, w := range want {
		g := got[i]
		require.Equal(t, w.Key, g.Key)
		require.Equal(t, [5]int{w.Fired, w.Completed, w.Failed, w.Skipped, w.WaitingNow},
			[5]int{g.Fired, g.Completed, g.Failed, g.Skipped, g.WaitingNow}, "node %s", w.Key)
		require.Equal(t, w.Outcomes, g.Outcomes, "node %s", w.Key)
		requireWithinOnePercent(t, w.DurationMs.P50, g.DurationMs.P50, w.Key+" p50")
		requireWithinOnePercent(t, w.DurationMs.P95, g.DurationMs.P95, w.Key+" p95")
	}
}

func requireWithinOnePercent(t *testing.T, want, got *float64, what string) {
	t.Helper()
	if want == nil {
		require.Nil(t, got, what)
		return
	}
	require.NotNil(t, got, what)
	require.InEpsilon(t, *want, *got, 0.01, what)
}

// TestAnalyticsRollupsReadAsRawRows: a flow's runs and a board's journeys
// spread over past days read the same from the daily rollups as from the
// raw rows — counts, outcomes, timeline and entities exactly, durations
// and time in section within 1 % — and stay right as runs change: a run
// of a rolled day that finishes late, a run deleted (retention's path), an
// entity deleted with its journey, each read raw until rolled again.
func TestAnalyticsRollupsReadAsRawRows(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(c *app.Config) { c.AnalyticsRollInterval = -1 })
	ctx := context.Background()
	db := h.app.Store.Gorm()
	flow := h.createFlow([]map[string]any{
		node("check", "Condition", nil),
		node("big", "Transform", map[string]any{"expression": `{"big": true}`}),
		node("small", "Transform", map[string]any{"expression": `{"big": false}`}),
		wnode(h, "ask"),
	}, []map[string]any{
		{"id": "e1", "source": "check", "target": "big", "data": map[string]any{"condition": "input.amount > 100"}},
		{"id": "e2", "source": "check", "target": "small", "data": map[string]any{"default": true}},
		{"id": "e3", "source": "big", "target": "ask"},
	})
	var runs []string
	for i := range 24 {
		runs = append(runs, h.startRun(flow, map[string]any{"amount": i * 50}).ID)
	}
	// Runs 3… wait at the worker: one in five fails, runs 3 and 4 stay.
	for i := 5; i < len(runs); i++ {
		d := h.waitDispatch(runs[i], "ask", 1)
		if i%5 == 0 {
			code, body := h.post(d.Payload.CallbackURL, `{"status":"failed","error":"no"}`)
			require.Equal(t, 200, code, body)
		} else {
			h.complete(d, `{"ok": true}`)
		}
	}
	for i, id := range runs {
		switch {
		case i == 3 || i == 4:
			h.waitDispatch(id, "ask", 1)
		case i >= 5 && i%5 == 0:
			h.waitRun(id, "failed")
		default:
			h.waitRun(id, "completed")
		}
	}
	// Spread over six past days (three to eight days ago), each node of
	// run i taking its own time.
	now := time.Now().UTC()
	base := utcMidnight(now).AddDate(0, 0, -3).Add(10 * time.Hour)
	for i, id := range runs {
		at := base.AddDate(0, 0, -(i % 6)).Add(time.Duration(i) * time.Minute)
		require.NoError(t, db.Exec(`UPDATE runs SET created_at = ? WHERE id = ?`, at, id).Error)
		require.NoError(t, db.Exec(`UPDATE node_states SET started_at = ?,
				finished_at = CASE WHEN finished_at IS NULL THEN NULL ELSE ?::timestamptz + (? * length(node_id)) * interval '1 ms' END
			WHERE run_id = ? AND started_at IS NOT NULL`, at, at, 37*(i+1), id).Error)
	}

	// A board: six entities' journeys over nine days, stays of hours and
	// of days, some still open.
	board := h.createBoard("lead", "qualified", "won", "lost")
	t0 := utcMidnight(now).AddDate(0, 0, -10).Add(6 * time.Hour)
	var ents []string
	for i, steps := range [][]journeyStep{
		{{0, "", "lead"}, {5, "lead", "qualified"}, {30, "qualified", "won"}},
		{{2, "", "lead"}, {50, "lead", "qualified"}, {51, "qualified", "lost"}},
		{{24, "", "lead"}, {26, "lead", "qualified"}},
		{{48, "", "lead"}, {120, "lead", "qualified"}, {150, "qualified", "won"}},
		{{70, "", "lead"}},
		{{100, "", "lead"}, {101, "lead", "lost"}, {170, "lost", "qualified"}},
	} {
		e := h.newEntity(board, "e"+string(rune('1'+i)))
		h.setJourney(e, t0, steps...)
		ents = append(ents, e)
	}

	q := url.Values{"from": {now.AddDate(0, 0, -12).Format(time.RFC3339)}, "to": {now.Format(time.RFC3339)}}
	flowURL := "/api/v1/flows/" + flow + "/analytics?" + q.Encode()
	boardURL := "/api/v1/boards/" + board + "/analytics?" + q.Encode()
	read := func() (store.FlowAnalytics, store.BoardAnalytics) {
		t.Helper()
		var f store.FlowAnalytics
		var b store.BoardAnalytics
		require.Equal(t, 200, h.do("GET", flowURL, nil, &f))
		require.Equal(t, 200, h.do("GET", boardURL, nil, &b))
		return f, b
	}
	requireSame := func(wantF store.FlowAnalytics, wantB store.BoardAnalytics) {
		t.Helper()
		f, b := read()
		require.Equal(t, wantF.Runs, f.Runs)
		require.Equal(t, wantF.Bucket, f.Bucket)
		require.Equal(t, wantF.Timeline, f.Timeline)
		requireSameNodes(t, wantF.Nodes, f.Nodes)
		require.Equal(t, wantB.Entities, b.Entities)
		require.Len(t, b.Sections, len(wantB.Sections))
		for i, w := range wantB.Sections {
			g := b.Sections[i]
			require.Equal(t, [4]int{w.Entered, w.Left, w.Current, w.Overdue}, [4]int{g.Entered, g.Left, g.Current, g.Overdue}, w.ID)
			require.Equal(t, w.Next, g.Next, w.ID)
			requireWithinOnePercent(t, w.TimeInSection.P50, g.TimeInSection.P50, w.ID+" p50")
			requireWithinOnePercent(t, w.TimeInSection.P90, g.TimeInSection.P90, w.ID+" p90")
			requireWithinOnePercent(t, w.TimeInSection.Max, g.TimeInSection.Max, w.ID+" max")
		}
	}
	rolledRows := func() (n int) {
		t.Helper()
		require.NoError(t, db.Raw(`SELECT (SELECT count(*) FROM analytics_node_days WHERE flow_id = ?)
			+ (SELECT count(*) FROM analytics_stay_days WHERE board_id = ?)`, flow, board).Row().Scan(&n))
		return n
	}

	rawF, rawB := read() // nothing rolled yet: raw rows, exact
	require.Equal(t, store.FlowRunCounts{Started: 24, Completed: 18, Failed: 4, Running: 2}, rawF.Runs)
	require.Equal(t, "day", rawF.Bucket)
	require.Len(t, rawF.Timeline, 6)
	require.Equal(t, 6, rawB.Entities)
	require.Zero(t, rolledRows())

	// Four rollers at once (processes share the work, a flow or board
	// one at a time): every day rolled, some maybe twice.
	var wg sync.WaitGroup
	var total atomic.Int64
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				n, err := h.app.Store.RollAnalytics(ctx, store.RollParams{})
				assert.NoError(t, err)
				total.Add(int64(n))
				if n == 0 || err != nil {
					return
				}
			}
		}()
	}
	wg.Wait()
	require.GreaterOrEqual(t, total.Load(), int64(6+8), "the flow's six days and the board's eight")
	var rolledDays int
	require.NoError(t, db.Raw(`SELECT (SELECT count(DISTINCT day) FROM analytics_run_days WHERE flow_id = ?)
		+ (SELECT count(DISTINCT day) FROM analytics_entity_days WHERE board_id = ?)`, flow, board).Row().Scan(&rolledDays))
	require.Equal(t, 6+8, rolledDays)
	require.Positive(t, rolledRows())
	requireSame(rawF, rawB)
	again, err := h.app.Store.RollAnalytics(ctx, store.RollParams{})
	require.NoError(t, err)
	require.Zero(t, again, "caught up")

	// A waiting run of a rolled day finishes: its day reads raw at once
	// (it is marked stale), and the same once rolled again.
	h.complete(h.waitDispatch(runs[3], "ask", 1), `{"ok": true}`)
	h.waitRun(runs[3], "completed")
	rawF.Runs.Running--
	rawF.Runs.Completed++
	f, _ := read()
	require.Equal(t, rawF.Runs, f.Runs)
	days, err := h.app.Store.RollAnalytics(ctx, store.RollParams{})
	require.NoError(t, err)
	require.Equal(t, 1, days, "the stale day rolled again")
	f, _ = read()
	require.Equal(t, rawF.Runs, f.Runs)

	// Retention deletes a run of a rolled day; an entity goes with its
	// journey: both read raw until rolled again, then the same.
	require.NoError(t, db.Exec(`DELETE FROM runs WHERE id = ?`, runs[6]).Error)
	require.NoError(t, db.Exec(`DELETE FROM entities WHERE id = ?`, ents[5]).Error)
	wantF, wantB := read()
	require.Equal(t, store.FlowRunCounts{Started: 23, Completed: 18, Failed: 4, Running: 1}, wantF.Runs)
	require.Equal(t, 5, wantB.Entities)
	_, err = h.app.Store.RollAnalytics(ctx, store.RollParams{})
	require.NoError(t, err)
	var stale int
	require.NoError(t, db.Raw(`SELECT count(*) FROM analytics_stale`).Row().Scan(&stale))
	require.Zero(t, stale)
	requireSame(wantF, wantB)

	// A journey entry deleted from a day in the middle marks its day
	// stale: the range reads it raw between rolled days, as a read of raw
	// rows alone does (the board's watermark taken away), and the same
	// once rolled again.
	require.NoError(t, db.Exec(`DELETE FROM journey_events WHERE entity_id = ? AND from_section_id = 'lead'`, ents[1]).Error)
	require.NoError(t, db.Raw(`SELECT count(*) FROM analytics_stale WHERE key = ?`, board).Row().Scan(&stale))
	require.Positive(t, stale)
	var through time.Time
	require.NoError(t, db.Raw(`SELECT rolled_through::timestamp FROM analytics_rolled WHERE key = ?`, board).Row().Scan(&through))
	require.NoError(t, db.Exec(`DELETE FROM analytics_rolled WHERE key = ?`, board).Error)
	_, rawB = read()
	require.NoError(t, db.Exec(`INSERT INTO analytics_rolled (kind, key, rolled_through) VALUES ('board', ?, ?::date)`,
		board, through.Format(time.DateOnly)).Error)
	requireSame(wantF, rawB)
	_, err = h.app.Store.RollAnalytics(ctx, store.RollParams{})
	require.NoError(t, err)
	requireSame(wantF, rawB)

	// The figures come from the rollups: node states removed behind the
	// triggers' back still count on their rolled day.
	require.NoError(t, db.Exec(`DELETE FROM node_states WHERE run_id = ?`, runs[7]).Error)
	f, _ = read()
	requireSameNodes(t, wantF.Nodes, f.Nodes)
}
