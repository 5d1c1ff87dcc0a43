package retrypolicy

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestEqualJitterSchedule: try n+1 waits between half and all of
// min(base·2^(n-1), max) — the schedule docs/workers.md gives: the default
// 12 tries (0.5 s doubling to 60 s) span 2.5 to 5 minutes.
func TestEqualJitterSchedule(t *testing.T) {
	t.Parallel()
	var least, most time.Duration
	for try := 1; try <= 11; try++ {
		d := min(500*time.Millisecond<<(try-1), time.Minute)
		lo, hi := time.Duration(1<<62), time.Duration(0)
		for range 500 {
			w := Delivery(try)
			require.GreaterOrEqual(t, w, d/2, "try %d", try)
			require.LessOrEqual(t, w, d, "try %d", try)
			lo, hi = min(lo, w), max(hi, w)
		}
		require.Greater(t, hi, lo, "try %d: the delay is drawn", try)
		least += d / 2
		most += d
	}
	require.Equal(t, 151750*time.Millisecond, least)
	require.Equal(t, 303500*time.Millisecond, most)
}

// TestNotificationSchedule: 1 s doubling, capped at 5 minutes, no jitter.
func TestNotificationSchedule(t *testing.T) {
	t.Parallel()
	for try := 1; try <= 40; try++ {
		require.Equal(t, min(time.Second<<min(try-1, 20), 5*time.Minute), Notification(try), "try %d", try)
	}
}

// TestReconnect: lo doubled per failure, at most hi, within 25% either way.
func TestReconnect(t *testing.T) {
	t.Parallel()
	lo, hi := 500*time.Millisecond, 30*time.Second
	for n := range 20 {
		d := Reconnect(n, lo, hi)
		want := min(lo<<n, hi)
		if n > 10 {
			want = hi
		}
		require.GreaterOrEqual(t, d, want*3/4, "failure %d", n)
		require.LessOrEqual(t, d, want*5/4, "failure %d", n)
	}
}

// TestAttempts: the three backoffs, their ceiling, the jitter's range, and
// when a failure is not retried.
func TestAttempts(t *testing.T) {
	t.Parallel()
	a := Attempts{MaxAttempts: 4, Backoff: BackoffExponential, InitialDelayMs: 1000, MaxDelayMs: 5000, Multiplier: 2}
	require.Equal(t, []int64{1000, 2000, 4000, 5000}, []int64{a.BaseDelayMs(1), a.BaseDelayMs(2), a.BaseDelayMs(3), a.BaseDelayMs(4)})
	a.Backoff = BackoffLinear
	require.Equal(t, []int64{1000, 2000, 3000, 5000}, []int64{a.BaseDelayMs(1), a.BaseDelayMs(2), a.BaseDelayMs(3), a.BaseDelayMs(9)})
	a.Backoff = BackoffFixed
	require.Equal(t, int64(1000), a.BaseDelayMs(3))

	a.Backoff, a.Jitter = BackoffExponential, 0.5
	require.Equal(t, int64(1500), a.DelayMs(2, 0.5), "2000·(1 − 0.5·0.5)")
	u := JitterFraction("run", "w", 2)
	require.Equal(t, a.DelayMs(2, u), a.DelayMs(2, JitterFraction("run", "w", 2)), "reproducible")
	require.NotEqual(t, u, JitterFraction("run", "w", 3))
	require.GreaterOrEqual(t, u, 0.0)
	require.Less(t, u, 1.0)

	d, retry := a.Next("run", "w", 2, "boom")
	require.True(t, retry)
	require.Equal(t, a.DelayMs(2, u), d)
	_, retry = a.Next("run", "w", 4, "boom")
	require.False(t, retry, "the last attempt failed")
	a.NonRetryable = []string{"invalid card"}
	_, retry = a.Next("run", "w", 1, "payment: invalid card")
	require.False(t, retry, "a non-retryable error")

	z := Attempts{MaxAttempts: 2, InitialDelayMs: 0, MaxDelayMs: 0}
	d, retry = z.Next("run", "w", 1, "boom")
	require.True(t, retry)
	require.Equal(t, int64(1), d, "at least 1 ms")
}
