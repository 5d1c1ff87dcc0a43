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
		{"0 0 30 2 *", "", "cron"},
		{"0 0 31 4 *", "Europe/Paris", "cron"},
		{"0 0 29 2 *", "", ""},
		{"0 0 30 2 MON", "", ""}, // day of month or of week: every Monday in February
	} {
		_, errs := Parse(tc.expr, tc.tz)
		if tc.field == "" {
			require.Empty(t, errs, tc.expr)
		} else {
			require.Len(t, errs, 1, tc.expr)
			require.Equal(t, tc.field, errs[0].Field, tc.expr)
		}
	}
	// Every field at fault at once.
	_, errs := Parse("61 * * * *", "Mars/Olympus")
	require.Len(t, errs, 2)
	require.Equal(t, "timezone", errs[0].Field)
	require.Equal(t, "cron", errs[1].Field)
}

// TestLatestOfASpecWithNoNextTime: Latest stops at once when no next time
// comes (it walked 100,000 empty five-year searches).
func TestLatestOfASpecWithNoNextTime(t *testing.T) {
	t.Parallel()
	s, errs := Parse("0 0 29 2 *", "")
	require.Empty(t, errs)
	// From March 2096 the next 29 February is in 2104: more than five
	// years ahead, past what the library looks at.
	from := time.Date(2096, 3, 1, 0, 0, 0, 0, time.UTC)
	require.True(t, s.Next(from).IsZero())
	latest, missed := s.Latest(from, from.Add(24*time.Hour))
	require.Equal(t, from, latest)
	require.Zero(t, missed)
}

func TestNextFollowsTheZone(t *testing.T) {
	t.Parallel()
	s, errs := Parse("0 9 * * MON-FRI", "Europe/Paris")
	require.Empty(t, errs)
	paris, _ := time.LoadLocation("Europe/Paris")
	// Friday 2026-03-27 10:00 Paris → Monday 30th 09:00, after the switch
	// to summer time on the 29th (UTC+2).
	next := s.Next(time.Date(2026, 3, 27, 10, 0, 0, 0, paris))
	require.Equal(t, time.Date(2026, 3, 30, 7, 0, 0, 0, time.UTC), next.UTC())
}

func TestLatest(t *testing.T) {
	t.Parallel()
	s, errs := Parse("* * * * * *", "")
	require.Empty(t, errs)
	due := time.Date(2026, 11, 25, 9, 0, 0, 0, time.UTC)
	latest, missed := s.Latest(due, due.Add(5500*time.Millisecond))
	require.Equal(t, due.Add(5*time.Second), latest)
	require.Equal(t, 5, missed)
	latest, missed = s.Latest(due, due)
	require.Equal(t, due, latest)
	require.Zero(t, missed)
}
