package scheduler

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stitchd/stitchd/internal/startstop/startstoptest"
	"github.com/stitchd/stitchd/store"
)

// TestFireUnreadableSpec: a schedule whose cron or time zone no longer
// parses records why and is looked at again in an hour; nothing starts.
func TestFireUnreadableSpec(t *testing.T) {
	t.Parallel()
	s := New(Params{})
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	d := &store.DueSchedule{Schedule: store.Schedule{Cron: "* * * * *", Timezone: "Nowhere/Atlantis"}, Now: now}
	require.NoError(t, s.fire(t.Context(), d))
	require.NotNil(t, d.LastError)
	require.Equal(t, now.Add(time.Hour), d.NextFireAt)
}

// TestFireSpecWithNoNextTime: a schedule whose expression has no next
// time (saved before Parse refused it: next_fire_at the zero time) says
// why and is looked at again in a day; nothing starts (the Store and
// Engine are nil here: a start would panic).
func TestFireSpecWithNoNextTime(t *testing.T) {
	t.Parallel()
	s := New(Params{})
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for _, tc := range []struct {
		d     *store.DueSchedule
		after time.Duration
		why   string
	}{
		// Refused by Parse now: looked at hourly, as any unreadable spec.
		{&store.DueSchedule{Schedule: store.Schedule{Cron: "0 0 30 2 *"}, Now: now}, time.Hour, "never matches a time"},
		{&store.DueSchedule{Schedule: store.Schedule{Cron: "0 0 29 2 *", NextFireAt: now}, Now: time.Date(2096, 3, 1, 0, 0, 0, 0, time.UTC)},
			24 * time.Hour, "no time in the next five years"},
	} {
		d := tc.d
		require.NoError(t, s.fire(t.Context(), d), d.Cron)
		require.NotNil(t, d.LastError, d.Cron)
		require.Contains(t, *d.LastError, tc.why, d.Cron)
		require.Equal(t, d.Now.Add(tc.after), d.NextFireAt, d.Cron)
		require.Nil(t, d.LastRunID, d.Cron)
	}
	// Saved with no next time, and has one now: nothing was due, it goes
	// on from now.
	d := &store.DueSchedule{Schedule: store.Schedule{Cron: "@daily"}, Now: now}
	require.NoError(t, s.fire(t.Context(), d))
	require.Nil(t, d.LastError)
	require.Nil(t, d.LastRunID)
	require.Equal(t, time.Date(2026, 1, 3, 0, 0, 0, 0, time.UTC), d.NextFireAt)
}

// TestMissedTicks: a run stands for earlier ticks only when they were
// missed, not merely noticed a poll late.
func TestMissedTicks(t *testing.T) {
	t.Parallel()
	require.Equal(t, 0, missedTicks(false, 3))
	require.Equal(t, 3, missedTicks(true, 3))
}

// TestStartStop: the scheduler starts and stops cleanly under load.
func TestStartStop(t *testing.T) {
	t.Parallel()
	s := New(Params{Store: noSchedules{}, PollInterval: time.Millisecond})
	startstoptest.Stress(t, s, 50)
}

type noSchedules struct{}

func (noSchedules) FireSchedules(context.Context, int, func(context.Context, *store.DueSchedule) error) (int, error) {
	return 0, nil
}

func (noSchedules) GetFlow(context.Context, string) (*store.Flow, error) { return nil, nil }
