package maintenance

import (
	"context"
	"time"
)

// ActionCounter counts what the services did, by action
// (internal/metrics.Metrics.SweeperAction).
type ActionCounter interface {
	SweeperAction(action string, n int)
}

// noCounter counts nothing (a service built without Metrics).
type noCounter struct{}

func (noCounter) SweeperAction(string, int) {}

// everyPoll calls fn every interval until ctx ends.
func everyPoll(ctx context.Context, interval time.Duration, fn func()) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		fn()
	}
}
