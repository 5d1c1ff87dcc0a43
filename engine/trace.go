package engine

import (
	"context"
	"errors"
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
