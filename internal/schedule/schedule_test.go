package schedule

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestParse(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ expr, tz, field string }{
		{"0 9 * * MON-FRI", "Europe/Paris", ""},
		{"* * * * * *", "", ""},
		{"@daily", "UTC", ""},
		{"61 * * * *", "", "cron"},
		{"every day", "", "cron"},
		{"0 9 * * *", "Mars/Olympus", "timezone"},
		{"0 9 * * *", "Local", "timezone"},
	} {
		_, err := Parse(tc.expr, tc.tz)
		if tc.field == "" {
			require.Nil(t, err, tc.expr)
		} else {
			require.NotNil(t, err, tc.expr)
			require.Equal(t, tc.field, err.Field)
		}
	}
}

func TestNextFollowsTheZone(t *testing.T) {
	t.Parallel()
	s, err := Parse("0 9 * * MON-FRI", "Europe/Paris")
	require.Nil(t, err)
	paris, _ := time.LoadLocation("Europe/Paris")
	// Friday 2026-03-27 10:00 Paris → Monday 30th 09:00, after the switch
	// to summer time on the 29th (UTC+2).
	next := s.Next(time.Date(2026, 3, 27, 10, 0, 0, 0, paris))
	require.Equal(t, time.Date(2026, 3, 30, 7, 0, 0, 0, time.UTC), next.UTC())
}

func TestLatest(t *testing.T) {
	t.Parallel()
	s, err := Parse("* * * * * *", "")
	require.Nil(t, err)
	due := time.Date(2026, 11, 25, 9, 0, 0, 0, time.UTC)
	latest, missed := s.Latest(due, due.Add(5500*time.Millisecond))
	require.Equal(t, due.Add(5*time.Second), latest)
	require.Equal(t, 5, missed)
	latest, missed = s.Latest(due, due)
	require.Equal(t, due, latest)
	require.Zero(t, missed)
}
