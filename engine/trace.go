package engine

import (
	"context"
	"errors"
	"time"
)

// Tracer sees each transaction the commit service runs (Config.Tracer),
// so that a trace shows a request's operation committed, and in a
// transaction shared with which others. The engine core knows no tracing
// library: internal/tracing implements this with OpenTelemetry.
type Tracer interface {
	// StartTransaction returns the context the transaction runs in (a
	// span's, a child of ctx's) and a func to call once with the
	// transaction's outcome when it ended.
	StartTransaction(ctx context.Context, p TransactionTrace) (context.Context, func(err error))
}

// TransactionTrace describes one transaction for a Tracer.
type TransactionTrace struct {
	// Runs is how many runs' batches the transaction applies, Operations
	// how many operations in all.
	Runs, Operations int
	// Others are the contexts of the operations it applies beyond the one
	// its context comes from (a shared transaction serves several
	// requests): span links.
	Others []context.Context
}

// inTx runs fn in a store transaction, seen by the Tracer if one is set.
func (e *Engine) inTx(ctx context.Context, p TransactionTrace, fn func(ctx context.Context, tx Tx) error) error {
	if e.cfg.Tracer == nil {
		return e.cfg.Store.InTx(ctx, fn)
	}
	ctx, end := e.cfg.Tracer.StartTransaction(ctx, p)
	err := e.cfg.Store.InTx(ctx, fn)
	if itemError(err) || errors.Is(err, errVersionMoved) {
		// An operation's own answer (a repeated or stale callback, a
		// speculation tried again, nothing to do), not a failure.
		end(nil)
	} else {
		end(err)
	}
	return err
}

// transactionTimeout bounds a transaction the commit service runs for
// operations it may share.
const transactionTimeout = time.Minute

// detached is the context a transaction serving the operation of ctx runs
// in: ctx's values (its trace), not its cancellation — the transaction
// may serve other callers too, and an operation once under way is
// finished (its caller, gone, is answered by its retry) — bounded by a
// minute.
func detached(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), transactionTimeout)
}
