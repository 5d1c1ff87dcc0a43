package maintenance

import (
	"context"
	"log/slog"

	"github.com/stitchd/stitchd/engine"
	"github.com/stitchd/stitchd/internal/startstop"
	"github.com/stitchd/stitchd/store"
)

// DeferredFirerParams configures a DeferredFirer.
type DeferredFirerParams struct {
	// Claim claims the due timers, deferred firings among them
	// (store.Store.DueTimers); Wake fires them (engine.Engine.Wake).
	Claim func(ctx context.Context, limit int) ([]store.Due, error)
	Wake  func(ctx context.Context, runID string, due []engine.DueNode) error
	// Metrics counts the nodes woken (nil: not counted).
	Metrics ActionCounter
	Logger  *slog.Logger
}

// DeferredFirer fires the nodes a transaction left for later
// (engine.Config.MaxFirings) as soon as it commits (Poke); the Sweeper
// finds those another process left, or this one before it stopped.
type DeferredFirer struct {
	p         DeferredFirerParams
	poke      chan struct{}
	lifecycle startstop.Base
}

// NewDeferredFirer returns a DeferredFirer; Start runs it.
func NewDeferredFirer(p DeferredFirerParams) *DeferredFirer {
	if p.Metrics == nil {
		p.Metrics = noCounter{}
	}
	if p.Logger == nil {
		p.Logger = slog.Default()
	}
	return &DeferredFirer{p: p, poke: make(chan struct{}, 1)}
}

// Poke tells the firer a transaction left nodes to fire later; it never
// blocks (one poke pending stands for any number).
func (f *DeferredFirer) Poke() {
	select {
	case f.poke <- struct{}{}:
	default: // one is pending already
	}
}

// Start fires deferred nodes after each Poke until Stop
// (startstop.Service).
func (f *DeferredFirer) Start(ctx context.Context) error {
	return f.lifecycle.StartWith(ctx, func(ctx context.Context) error {
		f.lifecycle.Go(ctx, f.run)
		return nil
	})
}

// Stop stops firing and returns once a round under way ended.
func (f *DeferredFirer) Stop() { f.lifecycle.Stop() }

func (f *DeferredFirer) run(ctx context.Context) {
	due := dueSweep{Logger: f.p.Logger, Metrics: f.p.Metrics}
	for {
		select {
		case <-ctx.Done():
			return
		case <-f.poke:
		}
		due.run(ctx, "woken", f.p.Claim, f.p.Wake)
	}
}
