package startstop

import (
	"context"
	"sync"
)

// Service is a goroutine owner with a guarded lifecycle.
type Service interface {
	// Start starts the service; on a running service it does nothing.
	Start(ctx context.Context) error
	// Stop stops it and returns once its goroutines returned; on a
	// stopped service it does nothing.
	Stop()
}

// Base is embedded by a service to get the lifecycle: its Start calls
// Base.StartWith with a launch function that starts its goroutines with Go.
type Base struct {
	mu     sync.Mutex
	cancel context.CancelFunc // nil when stopped
	wg     sync.WaitGroup
}

// StartWith starts the service unless it runs: launch, under the
// lifecycle's lock, starts its goroutines with Go and the service's
// context (cancelled by Stop). When launch fails, what it started is
// stopped and its error returned.
func (b *Base) StartWith(ctx context.Context, launch func(ctx context.Context) error) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.cancel != nil {
		return nil
	}
	ctx, cancel := context.WithCancel(ctx)
	if err := launch(ctx); err != nil {
		cancel()
		b.wg.Wait()
		return err
	}
	b.cancel = cancel
	return nil
}

// Go runs fn in a goroutine Stop waits for. Only a launch function (under
// the lifecycle's lock) calls it, so no goroutine starts after a Stop
// began waiting.
func (b *Base) Go(ctx context.Context, fn func(ctx context.Context)) {
	b.wg.Add(1)
	go func() {
		defer b.wg.Done()
		fn(ctx)
	}()
}

// Stop cancels the service's context and waits for its goroutines.
func (b *Base) Stop() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.cancel == nil {
		return
	}
	b.cancel()
	b.wg.Wait()
	b.cancel = nil
}

// Running reports whether the service is started and not stopped.
func (b *Base) Running() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.cancel != nil
}

// Loop is a service of one goroutine running fn until its context ends (a
// poll loop, a listener).
type Loop struct {
	Base
	fn func(ctx context.Context)
}

// NewLoop makes the service running fn.
func NewLoop(fn func(ctx context.Context)) *Loop { return &Loop{fn: fn} }

// Start implements Service.
func (l *Loop) Start(ctx context.Context) error {
	return l.StartWith(ctx, func(ctx context.Context) error {
		l.Go(ctx, l.fn)
		return nil
	})
}
