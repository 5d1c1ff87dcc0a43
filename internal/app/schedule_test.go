package app_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/stitchd/stitchd/store/storetest"
)

type scheduleJSON struct {
	ID         string     `json:"id"`
	Kind       string     `json:"kind"`
	Cron       string     `json:"cron"`
	Enabled    bool       `json:"enabled"`
	NextFireAt *time.Time `json:"next_fire_at"`
	LastRunID  *string    `json:"last_run_id"`
	LastError  *string    `json:"last_error"`
}

func (h *harness) createSchedule(flowID string, body map[string]any) scheduleJSON {
	h.t.Helper()
	body["kind"] = "schedule"
	var sc scheduleJSON
	require.Equal(h.t, 201, h.do("POST", "/api/v1/flows/"+flowID+"/triggers", body, &sc))
	require.Equal(h.t, "schedule", sc.Kind)
	return sc
}

// scheduledRuns returns, for each tick of schedule id, how many runs it
// started.
func scheduledRuns(t *testing.T, h *harness, id string) map[time.Time]int {
	t.Helper()
	rows, err := h.app.Store.Gorm().WithContext(context.Background()).Raw(`SELECT (trigger->>'tick')::timestamptz, count(*)
		FROM runs WHERE trigger->>'schedule_id' = ? GROUP BY 1`, id).Rows()
	require.NoError(t, err)
	defer rows.Close()
	out := map[time.Time]int{}
	for rows.Next() {
		var tick time.Time
		var n int
		require.NoError(t, rows.Scan(&tick, &n))
		out[tick.UTC()] = n
	}
	return out
}

func TestScheduleOneRunPerTickAcrossProcesses(t *testing.T) {
	t.Parallel()
	_, dbURL := storetest.IsolatedDB(t)
	a, b := newHarnessOn(t, dbURL), newHarnessOn(t, dbURL)
	flow := a.createFlow([]map[string]any{node("tick", "Condition", nil)}, nil)
	sc := a.createSchedule(flow, map[string]any{"cron": "*/2 * * * * *", "input": map[string]any{"from": "schedule"}, "overlap": "allow"})
	require.NotNil(t, sc.NextFireAt)
	// Ticks are the cron's even seconds of the database's clock, so they
	// come in real time: six of them, two schedulers racing for each. A
	// tick no pass of either reaches before the next is due is folded into
	// it (README, Schedules), so ticks are two seconds apart: a loaded
	// machine (the ticks of one second were, once) stalls both schedulers'
	// 200 ms polls for less than that.
	a.eventually(func() bool { return len(scheduledRuns(t, a, sc.ID)) >= 6 }, "six ticks' runs")
	var off scheduleJSON
	require.Equal(t, 200, b.do("PATCH", "/api/v1/triggers/"+sc.ID, map[string]any{"enabled": false}, &off))
	require.False(t, off.Enabled)
	require.Nil(t, off.NextFireAt)
	a.schedulePasses(1) // a tick being started when it was disabled is done
	b.schedulePasses(1)
	runs := scheduledRuns(t, a, sc.ID)
	require.GreaterOrEqual(t, len(runs), 4, "a tick every two seconds")
	var first, last time.Time
	for tick, n := range runs {
		require.Equal(t, 1, n, "tick %s started one run", tick)
		if first.IsZero() || tick.Before(first) {
			first = tick
		}
		if tick.After(last) {
			last = tick
		}
	}
	require.Len(t, runs, int(last.Sub(first)/(2*time.Second))+1, "no tick missed between the first and the last")
	// Disabled: no more runs, ticks later.
	a.advance(5 * time.Second)
	a.schedulePasses(2)
	b.schedulePasses(2)
	require.Len(t, scheduledRuns(t, a, sc.ID), len(runs))
	var got runJSON
	require.Equal(t, 200, a.do("GET", "/api/v1/runs/"+*off.LastRunID, nil, &got))
	require.JSONEq(t, `{"from": "schedule"}`, string(got.Input))
}

func TestScheduleCatchUp(t *testing.T) {
	t.Parallel()
	for _, catchUp := range []string{"one", "none"} {
		t.Run(catchUp, func(t *testing.T) {
			t.Parallel()
			st, dbURL := storetest.IsolatedDB(t)
			a := newHarnessOn(t, dbURL)
			flow := a.createFlow([]map[string]any{node("tick", "Condition", nil)}, nil)
			sc := a.createSchedule(flow, map[string]any{"cron": "* * * * * *", "catch_up": catchUp, "enabled": false})
			sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			require.NoError(t, a.app.Stop(sctx)) // no process runs the schedulers
			// Enabled while nothing runs (straight in the database, as a
			// process stopped just after the PATCH would leave it): five
			// ticks go by.
			conn, err := pgx.Connect(context.Background(), dbURL)
			require.NoError(t, err)
			_, err = conn.Exec(context.Background(), `UPDATE schedules SET enabled = true, next_fire_at = now() WHERE id = $1`, sc.ID)
			require.NoError(t, err)
			require.NoError(t, conn.Close(context.Background()))
			storetest.AdvanceDueTimes(t, st, 5*time.Second)
			restart := time.Now()
			b := newHarnessOn(t, dbURL)
			var first scheduleJSON // its last_error may say the ticks were skipped, until the next run
			b.eventually(func() bool {
				require.Equal(t, 200, b.do("GET", "/api/v1/triggers/"+sc.ID, nil, &first))
				return first.NextFireAt != nil && first.NextFireAt.After(restart)
			}, "the scheduler to look at the schedule")
			var catchUps, missed, onTime int
			// The ticks after the restart start their runs (real ticks of
			// the database's clock).
			b.eventually(func() bool {
				require.NoError(t, b.app.Store.Gorm().Raw(`SELECT count(*) FILTER (WHERE (trigger->>'missed')::int > 0),
					coalesce(sum((trigger->>'missed')::int), 0), count(*) FILTER (WHERE (trigger->>'missed')::int = 0)
					FROM runs WHERE trigger->>'schedule_id' = ?`, sc.ID).Row().Scan(&catchUps, &missed, &onTime))
				return onTime >= 2
			}, "two ticks on time after the restart")
			for _, n := range scheduledRuns(t, b, sc.ID) {
				require.Equal(t, 1, n)
			}
			if catchUp == "one" {
				require.Equal(t, 1, catchUps, "the missed ticks started one run")
				require.GreaterOrEqual(t, missed, 4, "standing for the ticks of the five seconds stopped")
			} else {
				require.Zero(t, catchUps, "the missed ticks started none")
			}
		})
	}
}

func TestScheduleOverlapSkip(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	flow := h.createFlow([]map[string]any{node("ask", "UX", nil)}, nil)
	sc := h.createSchedule(flow, map[string]any{"cron": "* * * * * *"})
	h.eventually(func() bool { return len(scheduledRuns(t, h, sc.ID)) == 1 }, "the first tick's run")
	var first time.Time
	for tick := range scheduledRuns(t, h, sc.ID) {
		first = tick
	}
	// Two more ticks (real ones: the cron's seconds of the database's
	// clock) while the first run waits for a person: each says it skipped.
	var s scheduleJSON
	h.eventually(func() bool {
		require.Equal(t, 200, h.do("GET", "/api/v1/triggers/"+sc.ID, nil, &s))
		if s.LastError == nil {
			return false
		}
		var tick string
		if _, err := fmt.Sscanf(*s.LastError, "skipped the tick of %s", &tick); err != nil {
			return false
		}
		at, err := time.Parse(time.RFC3339, strings.TrimSuffix(tick, ":"))
		return err == nil && !at.Before(first.Add(2*time.Second))
	}, "the second tick after the first run's to be skipped")
	require.Len(t, scheduledRuns(t, h, sc.ID), 1, "overlap skip: no run while the last one waits")
	require.Contains(t, *s.LastError, "is still running (overlap skip)")
	require.Equal(t, 204, h.do("DELETE", "/api/v1/triggers/"+sc.ID, nil, nil))
	require.Equal(t, 404, h.do("GET", "/api/v1/triggers/"+sc.ID, nil, nil))
}

func TestScheduleBadInputAndTriggerList(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	flow := h.createFlow([]map[string]any{node("tick", "Condition", nil)}, nil)
	var e struct {
		Error struct {
			Code    string `json:"code"`
			Details []struct {
				Path    string `json:"path"`
				Message string `json:"message"`
			} `json:"details"`
		} `json:"error"`
	}
	require.Equal(t, 422, h.do("POST", "/api/v1/flows/"+flow+"/triggers", map[string]any{"kind": "schedule", "cron": "61 * * * *",
		"timezone": "Mars/Olympus", "overlap": "sometimes", "input": []int{1}}, &e))
	require.Equal(t, "invalid_schedule", e.Error.Code)
	paths := map[string]bool{}
	for _, d := range e.Error.Details {
		paths[d.Path] = true
	}
	require.Equal(t, map[string]bool{"cron": true, "timezone": true, "overlap": true, "input": true}, paths,
		"every field at fault at once")
	require.Equal(t, 422, h.do("POST", "/api/v1/flows/"+flow+"/triggers", map[string]any{"kind": "schedule", "cron": "61 * * * *"}, &e))
	require.Equal(t, "cron", e.Error.Details[0].Path)
	// An expression that reads but names no date there is would never
	// fire: refused, as an unreadable one.
	for _, never := range []string{"0 0 30 2 *", "0 0 31 4 *", "0 0 0 31 11 *"} {
		require.Equal(t, 422, h.do("POST", "/api/v1/flows/"+flow+"/triggers", map[string]any{"kind": "schedule", "cron": never}, &e), never)
		require.Len(t, e.Error.Details, 1, never)
		require.Equal(t, "cron", e.Error.Details[0].Path, never)
		require.Contains(t, e.Error.Details[0].Message, "never matches a time", never)
	}
	var list struct {
		Triggers []map[string]any `json:"triggers"`
	}
	require.Equal(t, 200, h.do("GET", "/api/v1/flows/"+flow+"/triggers", nil, &list))
	require.Empty(t, list.Triggers, "nothing stored")

	require.Equal(t, 201, h.do("POST", "/api/v1/flows/"+flow+"/triggers", map[string]any{"slug": "list-hook"}, nil))
	sc := h.createSchedule(flow, map[string]any{"cron": "0 9 * * MON-FRI", "timezone": "Europe/Paris", "enabled": false})
	require.Equal(t, 200, h.do("GET", "/api/v1/flows/"+flow+"/triggers", nil, &list))
	require.Len(t, list.Triggers, 2)
	require.Equal(t, "webhook", list.Triggers[0]["kind"])
	require.Equal(t, "schedule", list.Triggers[1]["kind"])
	// A bad change is refused and changes nothing.
	require.Equal(t, 422, h.do("PATCH", "/api/v1/triggers/"+sc.ID, map[string]any{"cron": "nope"}, nil))
	require.Equal(t, 422, h.do("PATCH", "/api/v1/triggers/"+sc.ID, map[string]any{"cron": "0 0 30 2 *"}, nil))
	var got scheduleJSON
	require.Equal(t, 200, h.do("PATCH", "/api/v1/triggers/"+sc.ID, map[string]any{"enabled": true}, &got))
	require.Equal(t, "0 9 * * MON-FRI", got.Cron)
	require.NotNil(t, got.NextFireAt)
	paris, _ := time.LoadLocation("Europe/Paris")
	require.Equal(t, 9, got.NextFireAt.In(paris).Hour())
	require.Equal(t, 400, h.do("PATCH", "/api/v1/triggers/"+as[string](t, list.Triggers[0]["id"]), map[string]any{"enabled": false}, nil))
	require.Equal(t, 204, h.do("DELETE", "/api/v1/triggers/"+as[string](t, list.Triggers[0]["id"]), nil, nil))
	code, _ := h.post(h.app.URL+"/hooks/list-hook", `{}`)
	require.Equal(t, 404, code, "a deleted webhook's slug answers 404")
}

// TestScheduleWithNoNextTimeStallsNothing: a schedule with no next time (a
// row saved before such expressions were refused) starts nothing and is
// looked at again in an hour, saying why; the other schedules fire as ever.
// It was due at the year 1 for ever: the scheduler walked 100,000 ticks
// of it at every pass and took it again first, and nothing else fired.
func TestScheduleWithNoNextTimeStallsNothing(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	flow := h.createFlow([]map[string]any{node("tick", "Condition", nil)}, nil)
	bad := h.createSchedule(flow, map[string]any{"cron": "@daily"})
	require.NoError(t, h.app.Store.Gorm().Exec(`UPDATE schedules SET cron = '0 0 30 2 *', next_fire_at = '0001-01-01T00:00:00Z' WHERE id = ?`,
		bad.ID).Error)
	good := h.createSchedule(flow, map[string]any{"cron": "* * * * * *", "overlap": "allow"})
	h.eventually(func() bool { return len(scheduledRuns(t, h, good.ID)) > 0 }, "the good schedule to fire")
	var got scheduleJSON
	h.eventually(func() bool {
		require.Equal(t, 200, h.do("GET", "/api/v1/triggers/"+bad.ID, nil, &got))
		return got.LastError != nil
	}, "the schedule with no next time to be looked at")
	require.Contains(t, *got.LastError, "never matches a time")
	require.NotNil(t, got.NextFireAt)
	require.WithinDuration(t, time.Now().Add(time.Hour), *got.NextFireAt, 10*time.Minute)
	require.Empty(t, scheduledRuns(t, h, bad.ID), "it started nothing")
	// It can be disabled as it stands, not enabled again.
	require.Equal(t, 200, h.do("PATCH", "/api/v1/triggers/"+bad.ID, map[string]any{"enabled": false}, &got))
	require.False(t, got.Enabled)
	require.Equal(t, 422, h.do("PATCH", "/api/v1/triggers/"+bad.ID, map[string]any{"enabled": true}, nil))
	require.Equal(t, 200, h.do("PATCH", "/api/v1/triggers/"+bad.ID, map[string]any{"cron": "@daily", "enabled": true}, &got))
	require.True(t, got.Enabled)
}
