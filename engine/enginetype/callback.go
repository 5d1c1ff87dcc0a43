package enginetype

import (
	"context"
	"encoding/json"
)

// CallbackParams is a verified worker callback.
type CallbackParams struct {
	RunID   string
	Key     string
	Attempt int
	// Status is completed, failed or running (heartbeat).
	Status Status
	Output json.RawMessage
	Error  string
	// NoRetry: the worker said the failure is not retryable.
	NoRetry bool
}

// TransactionTrace describes one transaction for a Tracer (engine.Tracer).
type TransactionTrace struct {
	// Runs is how many runs' batches the transaction applies, Operations
	// how many operations in all.
	Runs, Operations int
	// Others are the contexts of the operations it applies beyond the one
	// its context comes from (a shared transaction serves several
	// requests): span links.
	Others []context.Context
}
