package worker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// Handler does the work of one task. Its output — any value encoding/json
// encodes, a json.RawMessage as it is — becomes the node's output; an
// error fails the attempt, which the node's retry policy retries unless
// the error is NonRetryable. ctx is cancelled when stitchd no longer runs
// the attempt (context.Cause is ErrStale) or when a shutdown's grace
// period ends (ErrShuttingDown): stop then, nothing more will be reported.
type Handler func(ctx context.Context, t *Task) (output any, err error)

var (
	// ErrStale is stitchd's 409: it no longer runs this attempt (its
	// lease ran out and it was retried, the run was cancelled, or another
	// result was reported). Whatever the handler returns is dropped.
	ErrStale = errors.New("stitchd no longer runs this attempt")
	// ErrShuttingDown is the failure reported for a task still running
	// when a shutdown's grace period ends: retryable, so the node's retry
	// policy queues the next attempt for another worker.
	ErrShuttingDown = errors.New("worker shutting down")
)

// Task is one attempt of a Worker node, pushed or pulled.
type Task struct {
	RunID  string
	NodeID string // the node-state key: the node's id, or <id>_<i> for a Splitter's item
	// Attempt is 1 on the first try of the node, +1 on each retry.
	Attempt int
	// Input is the node's input; Config the node's data as drawn.
	Input  json.RawMessage
	Config json.RawMessage
	// CallbackURL is where the result goes; the library calls it. It is
	// a credential: keep it out of logs.
	CallbackURL string
	// LeaseExpiresAt is when a pulled task's lease ends unless a heartbeat
	// extends it (zero for a pushed task).
	LeaseExpiresAt time.Time
	// MessageID is a pushed task's webhook-id (empty for a pulled task).
	MessageID string

	r     *runner
	stale func() // cancels the handler's context with ErrStale
}

// Heartbeat reports progress (any JSON value, or nil) and extends the
// attempt's deadline or lease, as the automatic heartbeats do. It returns
// ErrStale, and cancels the handler's context, when stitchd no longer runs
// the attempt.
func (t *Task) Heartbeat(ctx context.Context, progress any) error {
	body := callbackBody{Status: "running"}
	if progress != nil {
		b, err := json.Marshal(progress)
		if err != nil {
			return fmt.Errorf("worker: encoding progress: %w", err)
		}
		body.Progress = b
	}
	err := t.r.callBack(ctx, t.CallbackURL, body, heartbeatTries)
	if errors.Is(err, ErrStale) && t.stale != nil {
		t.stale()
	}
	return err
}

// NonRetryable marks err as a failure another attempt would repeat: the
// node fails at once ("retryable": false), whatever its retry policy.
func NonRetryable(err error) error {
	if err == nil {
		return nil
	}
	return &nonRetryableError{err: err}
}

type nonRetryableError struct{ err error }

func (e *nonRetryableError) Error() string { return e.err.Error() }
func (e *nonRetryableError) Unwrap() error { return e.err }

// IsNonRetryable reports whether err was marked with NonRetryable.
func IsNonRetryable(err error) bool {
	var nr *nonRetryableError
	return errors.As(err, &nr)
}
