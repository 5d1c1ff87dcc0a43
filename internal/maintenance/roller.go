package maintenance

import (
	"context"
	"log/slog"
	"time"

	"github.com/stitchd/stitchd/internal/startstop"
	"github.com/stitchd/stitchd/store"
)

// RollerStore rolls analytics up by day (store.Store).
type RollerStore interface {
	RollAnalytics(ctx context.Context, p store.RollParams) (int, error)
}

// RollerParams configures a Roller.
type RollerParams struct {
	Store RollerStore
	// Metrics counts the days rolled (nil: not counted).
	Metrics ActionCounter
	Logger  *slog.Logger
	// Interval is the pause between passes once caught up (default 30s):
	// days are rolled two days after they end, and a stale day reads raw
	// until it is rolled again, so a pass now and then is enough.
	Interval time.Duration
	// Days bounds the days one pass rolls (default 50).
	Days int
}

// Roller keeps the analytics rollups (docs/analytics.md, Rollups): each
// flow's and board's whole days, two days after they end, and the days
// a change made stale. Like the Retainer it has a loop of its own and
// paces a backlog (a million runs loaded, a year of a new flow): pass
// after pass while passes are full, each followed by a pause twice as
// long as it took.
type Roller struct {
	p         RollerParams
	lifecycle startstop.Base
}

// NewRoller returns a Roller; Start runs it.
func NewRoller(p RollerParams) *Roller {
	if p.Metrics == nil {
		p.Metrics = noCounter{}
	}
	if p.Logger == nil {
		p.Logger = slog.Default()
	}
	if p.Interval <= 0 {
		p.Interval = 30 * time.Second
	}
	if p.Days <= 0 {
		p.Days = 50
	}
	return &Roller{p: p}
}

// Start rolls until Stop (startstop.Service).
func (r *Roller) Start(ctx context.Context) error {
	return r.lifecycle.StartWith(ctx, func(ctx context.Context) error {
		r.lifecycle.Go(ctx, r.run)
		return nil
	})
}

// Stop stops rolling and returns once a pass under way ended.
func (r *Roller) Stop() { r.lifecycle.Stop() }

func (r *Roller) run(ctx context.Context) {
	// The first pass soon after start: a restarted process catches up.
	timer := time.NewTimer(time.Second)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-timer.C:
		}
		// Wall time, not the clock: the pause paces the database's work.
		start := time.Now()
		n, err := r.p.Store.RollAnalytics(ctx, store.RollParams{Days: r.p.Days})
		if err != nil && ctx.Err() == nil {
			r.p.Logger.Error("error rolling analytics up", "error", err)
		}
		r.p.Metrics.SweeperAction("analytics_day_rolled", n)
		wait := r.p.Interval
		if n >= r.p.Days {
			wait = 2 * time.Since(start)
		}
		timer.Reset(wait)
	}
}
