package store_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stitchd/stitchd/store/storetest"
)

// TestDispatchTokensShared: a bucket starts full (burst), refills at
// rate, and many takers at once (as several processes) get no more
// tokens than it holds.
func TestDispatchTokensShared(t *testing.T) {
	t.Parallel()
	st, _ := storetest.IsolatedDB(t)
	ctx := context.Background()
	// A slow refill (1 a minute): the burst of 5 is all there is.
	var got atomic.Int32
	var wg sync.WaitGroup
	for range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ok, wait, err := st.TakeDispatchToken(ctx, "h:1", 1.0/60, 5)
			if err != nil {
				t.Error(err)
				return
			}
			if ok {
				got.Add(1)
			} else if wait <= 0 || wait > time.Minute {
				t.Errorf("wait %s", wait)
			}
		}()
	}
	wg.Wait()
	require.EqualValues(t, 5, got.Load())
	// Another host has its own bucket.
	ok, _, err := st.TakeDispatchToken(ctx, "h:2", 1.0/60, 1)
	require.NoError(t, err)
	require.True(t, ok)
	// A fast refill gives tokens again soon.
	ok, _, err = st.TakeDispatchToken(ctx, "h:3", 1000, 1)
	require.NoError(t, err)
	require.True(t, ok)
	require.Eventually(t, func() bool {
		ok, _, err := st.TakeDispatchToken(ctx, "h:3", 1000, 1)
		return err == nil && ok
	}, 5*time.Second, 5*time.Millisecond)
	_, _, err = st.TakeDispatchToken(ctx, "h:4", 0, 1)
	require.Error(t, err)
}

// TestDispatchTokensWaitNoLonger: once a bucket is drained, the waits it
// asks for add up to no more than the rate demands — 25 tokens at 50/s
// never cost more than half a second of waiting, however late the taker
// comes back (a late taker only finds more refilled) — and a taker that
// waits what it was told gets its token.
func TestDispatchTokensWaitNoLonger(t *testing.T) {
	t.Parallel()
	st, _ := storetest.IsolatedDB(t)
	ctx := context.Background()
	const rate, burst, tokens = 50.0, 5.0, 25
	for range int(burst) {
		ok, _, err := st.TakeDispatchToken(ctx, "h:w", rate, burst)
		require.NoError(t, err)
		require.True(t, ok, "a new bucket starts full")
	}
	var waited time.Duration
	refusals := 0
	for got := 0; got < tokens; {
		ok, wait, err := st.TakeDispatchToken(ctx, "h:w", rate, burst)
		require.NoError(t, err)
		if ok {
			got++
			continue
		}
		refusals++
		require.Greater(t, wait, time.Duration(0))
		require.LessOrEqual(t, wait, time.Duration(float64(time.Second)/rate), "one token is never more than 1/rate away")
		waited += wait
		time.Sleep(wait)
	}
	require.LessOrEqual(t, waited, time.Duration(tokens*float64(time.Second)/rate), "waits for %d tokens", tokens)
	// A wait rounded down to the nanosecond may be refused once more.
	require.LessOrEqual(t, refusals, 2*tokens)
}

func TestDeleteOldLoginFailures(t *testing.T) {
	t.Parallel()
	st := storetest.TestTx(t)
	ctx := context.Background()
	now := time.Now()
	require.NoError(t, st.RecordLoginFailure(ctx, "a@example.com", "10.0.0.1", now.Add(-2*time.Hour), now.Add(-3*time.Hour)))
	require.NoError(t, st.RecordLoginFailure(ctx, "b@example.com", "10.0.0.2", now, now.Add(-time.Hour)))
	n, err := st.DeleteOldLoginFailures(ctx, now.Add(-time.Hour))
	require.NoError(t, err)
	require.EqualValues(t, 1, n)
	a, _, err := st.LoginFailures(ctx, "a@example.com", "x", now.Add(-24*time.Hour))
	require.NoError(t, err)
	require.Zero(t, a)
	b, _, err := st.LoginFailures(ctx, "B@example.com", "x", now.Add(-time.Minute))
	require.NoError(t, err)
	require.Equal(t, 1, b)
}
