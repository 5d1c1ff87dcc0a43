package engine

import (
	"context"
)

// Store is what the engine needs from persistence. Implemented by package
// store over Postgres.
type Store interface {
	// InTx runs fn inside one database transaction, committing when fn
	// returns nil and rolling back otherwise.
	InTx(ctx context.Context, fn func(ctx context.Context, tx Tx) error) error
	// ExecutionGraph loads the compiled graph of a flow version.
	ExecutionGraph(ctx context.Context, versionID string) (*ExecutionGraph, error)
	// DispatchesDelivered marks claimed outbox rows delivered, outside any
	// run's transaction (a successful delivery changes no node state).
	DispatchesDelivered(ctx context.Context, ids []string) error
}
