package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
)

// HTTPMethods are the methods an HTTP node may send.
var HTTPMethods = []string{"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"}

// Response is the outcome of one try at a request/response delivery
// (DispatchHTTP): the response, or why there was none.
type Response struct {
	DispatchID string
	RunID      string
	Key        string
	Attempt    int
	// Try identifies the claim that made the try (the row's tries count).
	Try int
	// Status is the response's status code; 0 when there was no response
	// (Error says why: a timeout, a refused connection, the address
	// guard).
	Status int
	// Headers are the response's headers (lower-case names, several
	// values joined with ", ").
	Headers map[string]string
	// Body is the response's body, read up to a bound; BodyTruncated says
	// the bound was reached.
	Body          []byte
	BodyTruncated bool
	Error         string
	// NoRetry: the failure (no response) is not worth another attempt (the
	// address guard refused the address, the URL is invalid).
	NoRetry bool
	// RetryAfterMs is the response's Retry-After, in milliseconds.
	RetryAfterMs int64
	// Logs are what a script logged (DispatchCode), written as the node's
	// node.log events with its outcome.
	Logs []string
}

// Responder is implemented by handlers whose nodes send a request whose
// response completes them (HTTP).
type Responder interface {
	// Respond turns the response to node n's request into its output, or
	// into a failure reason and whether another attempt may follow (per
	// the node's retry policy, Retrier).
	Respond(n *Node, r Response) (output json.RawMessage, failure string, retry bool)
}

// CompleteFromResponse applies the response to a request/response
// delivery (or the failure to get one) in one transaction: the node
// completes with the handler's output, or fails with its reason and, when
// the failure is retryable and the node's policy allows, starts another
// attempt after its backoff (and no sooner than the response's
// Retry-After). A response for an attempt the node is no longer running
// (cancelled, retried, timed out), or whose outbox row another claim took
// over, changes nothing.
func (e *Engine) CompleteFromResponse(ctx context.Context, r Response) error {
	err := e.submit(ctx, r.RunID, func(t *txn) error {
		if err := t.load(r.RunID); err != nil {
			return err
		}
		cur, err := t.runningAttempt(r.Key, r.Attempt)
		if errors.Is(err, ErrNotFound) || errorsIsConflict(err) {
			return errNoChange
		} else if err != nil {
			return err
		}
		n := t.graph.Nodes[cur.NodeID]
		if n == nil {
			return fmt.Errorf("node %s is not in the run's graph: %w", cur.NodeID, ErrNotFound)
		}
		h, ok := t.e.handlers[n.Type].(Responder)
		if !ok {
			return fmt.Errorf("%w: node %s (%s) does not take responses", ErrInvalidRequest, r.Key, n.Type)
		}
		for _, l := range r.Logs {
			t.event(EventNodeLog, r.Key, map[string]any{"node_id": n.ID, "message": storableText(l)})
		}
		out, failure, retry := h.Respond(n, r)
		if failure == "" {
			// What a script made that Postgres cannot store fails the step
			// (fireCtx.Complete): stored, it would fail the transaction.
			if msg := unstorable("the output", out); msg != "" {
				failure, retry = msg, false
			}
		}
		failure = storableText(failure)
		if failure == "" {
			// Marks the row delivered and logs its delivery.
			t.deliveredKeys = append(t.deliveredKeys, r.Key)
			t.deliveredAttempts = append(t.deliveredAttempts, r.Attempt)
			return t.completeWith(n, cur, "", &NodeTransition{Key: r.Key, From: StatusRunning,
				Steps: []Status{StatusCompleted}, Attempt: r.Attempt, Output: orNull(out)})
		}
		u := DispatchUpdate{ID: r.DispatchID, Tries: r.Try, Status: "failed", LastError: failure}
		if changed, err := t.w.UpdateDispatches([]DispatchUpdate{u}); err != nil {
			return fmt.Errorf("error recording delivery of %s: %w", r.DispatchID, err)
		} else if changed == 0 {
			return errNoChange // another claim took the row over, or the run cancelled it
		}
		p := map[string]any{"dispatch_id": r.DispatchID, "attempt": r.Attempt, "try": r.Try, "delivered": false,
			"error": failure}
		if r.Status != 0 {
			p["status_code"] = r.Status
		}
		t.event(EventDispatchAttempt, r.Key, p)
		st, err := t.transition(&NodeTransition{Key: r.Key, From: StatusRunning, Steps: []Status{StatusFailed},
			Attempt: r.Attempt, Error: &failure})
		if err != nil {
			return err
		}
		if retry {
			if rt, ok := t.e.handlers[n.Type].(Retrier); ok {
				if delay, retry := rt.RetryDelayMs(RetryParams{Node: n, RunID: t.run.ID, Key: r.Key,
					Attempt: st.Attempt, Error: failure}); retry {
					return t.fireDelayed(n, cur.Index, cur.Input, StatusFailed, st.Attempt, max(delay, r.RetryAfterMs))
				}
			}
		}
		return t.failed(st, failure, false)
	})
	if errorsIsConflict(err) {
		return nil // the node moved on meanwhile
	}
	return err
}
