package maintenance

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"

	"github.com/stitchd/stitchd/engine"
	"github.com/stitchd/stitchd/store"
)

// dueSweep claims due nodes and applies them (the Sweeper's timers,
// approvals and event waits; the DeferredFirer's timers).
type dueSweep struct {
	Logger  *slog.Logger
	Metrics ActionCounter
}

// dueBatch is how many due nodes one claim takes.
const dueBatch = 2000

// run claims what is due with claim and applies it with apply, in
// batches, until nothing is left due: 10,000 timers due in one second
// do not wait a poll interval per 500.
func (d dueSweep) run(ctx context.Context, what string, claim func(context.Context, int) ([]store.Due, error),
	apply func(ctx context.Context, runID string, due []engine.DueNode) error) {
	for ctx.Err() == nil {
		due, err := claim(ctx, dueBatch)
		if err != nil {
			if ctx.Err() == nil {
				d.Logger.Warn("sweeper", "what", what, "error", err)
			}
			return
		}
		// One engine operation per run for all its due nodes (a fan-out's
		// timers wake in one transaction), runs in parallel.
		byRun := map[string][]engine.DueNode{}
		var runs []string
		for _, n := range due {
			if _, ok := byRun[n.RunID]; !ok {
				runs = append(runs, n.RunID)
			}
			byRun[n.RunID] = append(byRun[n.RunID], engine.DueNode{Key: n.Key, Attempt: n.Attempt, Deferred: n.Deferred})
		}
		var wg sync.WaitGroup
		sem := make(chan struct{}, 16)
		for _, runID := range runs {
			wg.Add(1)
			sem <- struct{}{}
			go func() {
				defer func() { <-sem; wg.Done() }()
				if err := apply(ctx, runID, byRun[runID]); err != nil && ctx.Err() == nil {
					d.Logger.Warn("sweeper: error applying "+what, "run_id", runID, "nodes", len(byRun[runID]), "error", err)
				}
			}()
		}
		wg.Wait()
		d.Metrics.SweeperAction(what, len(due))
		if len(due) < dueBatch {
			return
		}
	}
}

// each applies fn to a run's due nodes one at a time.
func each(fn func(ctx context.Context, runID, key string, attempt int) error) func(context.Context, string, []engine.DueNode) error {
	return func(ctx context.Context, runID string, due []engine.DueNode) error {
		var errs []error
		for _, d := range due {
			if err := fn(ctx, runID, d.Key, d.Attempt); err != nil {
				errs = append(errs, fmt.Errorf("node %s: %w", d.Key, err))
			}
		}
		return errors.Join(errs...)
	}
}
