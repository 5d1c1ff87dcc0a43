package engine

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
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
// outbox row delivered — it changes no node state, so it takes no run lock
// and stays off the path of the worker's callback; its dispatch.attempt
// event is written by the transaction of the worker's callback (or of the
// deadline). A failed try is written
// to the outbox row and the run's events (dispatch.attempt) in one
// transaction; when the dispatch gives up, the node fails with the last
// reason.
func (e *Engine) RecordDelivery(ctx context.Context, o DeliveryOutcome) error {
	if o.Delivered {
		return e.markDelivered(ctx, o.DispatchID)
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
		n, err := t.tx.UpdateDispatches(t.ctx, []DispatchUpdate{u})
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

// deliveredBatch group-commits delivery marks: the first caller with
// nothing in flight writes every mark queued meanwhile with one statement,
// the others wait for it. A 10,000-item fan-out makes a few hundred
// statements instead of 10,000.
type deliveredBatch struct {
	mu      sync.Mutex
	ids     []string
	waiters []chan error
	running bool
}

func (e *Engine) markDelivered(ctx context.Context, id string) error {
	b := &e.delivered
	done := make(chan error, 1)
	b.mu.Lock()
	b.ids = append(b.ids, id)
	b.waiters = append(b.waiters, done)
	if !b.running {
		b.running = true
		go e.flushDelivered()
	}
	b.mu.Unlock()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (e *Engine) flushDelivered() {
	b := &e.delivered
	for {
		b.mu.Lock()
		ids, waiters := b.ids, b.waiters
		b.ids, b.waiters = nil, nil
		if len(ids) == 0 {
			b.running = false
			b.mu.Unlock()
			return
		}
		b.mu.Unlock()
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		err := e.cfg.Store.DispatchesDelivered(ctx, ids)
		cancel()
		if err != nil {
			err = fmt.Errorf("error marking %d dispatches delivered: %w", len(ids), err)
		}
		for _, w := range waiters {
			w <- err
		}
	}
}

// errorsIsConflict reports whether err is a conflict or invalid transition.
func errorsIsConflict(err error) bool {
	return errors.Is(err, ErrConflict) || errors.Is(err, ErrInvalidTransition)
}
