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
