package engine

import (
	"context"
	"errors"
	"fmt"
)

// DeliveryOutcome is the result of one try at delivering a dispatch.
type DeliveryOutcome struct {
	DispatchID string
	RunID      string
	Key        string
	Attempt    int
	Try        int
	Delivered  bool
	StatusCode int
	Error      string
	// RetryInMs > 0 schedules another try of the same dispatch (same
	// webhook-id); 0 with Delivered=false gives up and fails the node.
	RetryInMs int64
}

// RecordDelivery records a delivery try. A successful one only marks the
// outbox row delivered, a moment later (deliveredBatch) unless the worker's
// callback does first — it changes no node state, so it takes no run lock
// and stays off the path of the worker's callback; its dispatch.attempt
// event is written by the transaction of the worker's callback (or of the
// deadline). A failed try is written
// to the outbox row and the run's events (dispatch.attempt) in one
// transaction; when the dispatch gives up, the node fails with the last
// reason.
func (e *Engine) RecordDelivery(ctx context.Context, o DeliveryOutcome) error {
	if o.Delivered {
		e.markDelivered(o)
		return nil
	}
	return e.submit(ctx, o.RunID, func(t *txn) error {
		if err := t.load(o.RunID); err != nil {
			return err
		}
		u := DispatchUpdate{ID: o.DispatchID, Tries: o.Try, LastError: o.Error}
		u.Status = "failed"
		if o.RetryInMs > 0 {
			u.Status, u.RetryInMs = "pending", o.RetryInMs
		}
		n, err := t.w.UpdateDispatches([]DispatchUpdate{u})
		if err != nil {
			return fmt.Errorf("error recording delivery of %s: %w", o.DispatchID, err)
		}
		if n == 0 {
			// The row is no longer this try's: the worker's callback (a
			// result or a heartbeat) proved it delivered while the try was
			// failing, or the lease ended and another claim took it over.
			// The outcome is stale and must neither undo the delivery nor
			// fail the node.
			return errNoChange
		}
		p := map[string]any{"dispatch_id": o.DispatchID, "attempt": o.Attempt, "try": o.Try, "delivered": false}
		if o.StatusCode != 0 {
			p["status_code"] = o.StatusCode
		}
		if o.Error != "" {
			p["error"] = o.Error
		}
		if o.RetryInMs > 0 {
			p["retry_in_ms"] = o.RetryInMs
		}
		t.event(EventDispatchAttempt, o.Key, p)
		if u.Status != "failed" {
			return nil
		}
		msg := "dispatch failed: " + o.Error
		st, err := t.transition(&NodeTransition{Key: o.Key, From: StatusRunning,
			Steps: []Status{StatusFailed}, Attempt: o.Attempt, Error: &msg})
		if _, ok := IsTransitionError(err); ok {
			return nil // the node moved on (cancelled, or a callback beat us)
		} else if err != nil {
			return err
		}
		return t.failed(st, msg, false)
	})
}

// errorsIsConflict reports whether err is a conflict or invalid transition.
func errorsIsConflict(err error) bool {
	return errors.Is(err, ErrConflict) || errors.Is(err, ErrInvalidTransition)
}
