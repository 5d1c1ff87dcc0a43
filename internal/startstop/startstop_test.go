package startstop_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/stitchd/stitchd/internal/startstop"
	"github.com/stitchd/stitchd/internal/startstop/startstoptest"
)

// counted is a service whose goroutines count themselves while they run.
type counted struct {
	startstop.Base
	workers int
	live    *atomic.Int64
	peak    *atomic.Int64
}

func (c *counted) Start(ctx context.Context) error {
	return c.StartWith(ctx, func(ctx context.Context) error {
		for range c.workers {
			c.Go(ctx, func(ctx context.Context) {
				n := c.live.Add(1)
				for p := c.peak.Load(); n > p; p = c.peak.Load() {
					if c.peak.CompareAndSwap(p, n) {
						break
					}
				}
				<-ctx.Done()
				c.live.Add(-1)
			})
		}
		return nil
	})
}

// TestStressStartStop: 64 goroutines start and stop one service at random,
// 200 times each, under -race: it never runs twice at once (never more
// goroutines than one start makes), and once stopped, none is left.
func TestStressStartStop(t *testing.T) {
	var live, peak atomic.Int64
	svc := &counted{workers: 3, live: &live, peak: &peak}
	startstoptest.Stress(t, svc, 200)
	require.LessOrEqual(t, peak.Load(), int64(3), "one start's goroutines at most")
	require.Zero(t, live.Load(), "none left after the last Stop")
	require.False(t, svc.Running())
}

// TestLoopRestarts: a stopped loop starts again; Stop waits for its
// goroutine; Stop on a service never started does nothing.
func TestLoopRestarts(t *testing.T) {
	var runs, done atomic.Int64
	l := startstop.NewLoop(func(ctx context.Context) {
		runs.Add(1)
		<-ctx.Done()
		done.Add(1)
	})
	l.Stop()
	for i := 1; i <= 3; i++ {
		require.NoError(t, l.Start(t.Context()))
		require.NoError(t, l.Start(t.Context()), "a second Start does nothing")
		l.Stop()
		require.EqualValues(t, i, done.Load(), "Stop returned after the goroutine")
	}
	require.EqualValues(t, 3, runs.Load())
}

// TestFailedLaunchStops: a launch that fails leaves nothing running, and
// the service can be started again.
func TestFailedLaunchStops(t *testing.T) {
	var b startstop.Base
	var ended atomic.Bool
	err := b.StartWith(t.Context(), func(ctx context.Context) error {
		b.Go(ctx, func(ctx context.Context) { <-ctx.Done(); ended.Store(true) })
		return errors.New("no port")
	})
	require.EqualError(t, err, "no port")
	require.True(t, ended.Load(), "what the launch started was stopped and waited for")
	require.False(t, b.Running())
	require.NoError(t, b.StartWith(t.Context(), func(context.Context) error { return nil }))
	require.True(t, b.Running())
	b.Stop()
}
