package engine

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/stitchd/stitchd/engine/internal/writer"
)

// Events into running runs (README, Events): an Event node waits for an
// event with its name and key. POST /api/v1/events finds the nodes waiting
// on it and hands each to DeliverEvent, in one transaction per run; an
// event that arrives first is kept for the first wait that begins on it
// (WaitForEvent takes it under the same lock the post takes).

func (f *fireCtx) WaitForEvent(w EventWait, timeoutSeconds int) error {
	if err := f.act(); err != nil {
		return err
	}
	if f.unwritten() {
		return writer.ErrNeedsRow
	}
	if storableText(w.Key) != w.Key {
		return f.fail("the key holds a NUL character or is not valid UTF-8, which cannot be stored")
	}
	t := f.t
	ev, err := t.w.TakeEvent(t.run.ID, w)
	if err != nil {
		return fmt.Errorf("error looking for event %s/%s: %w", w.Name, w.Key, err)
	}
	if ev == nil {
		tr := f.start(StatusRunning, StatusWaitingForEvent)
		tr.Event, tr.DeadlineSeconds = &w, timeoutSeconds
		return t.transitionLater(tr, f.node.ID, f.attempt-1)
	}
	tr := f.start(StatusRunning, StatusCompleted)
	tr.Output = orNull(ev.Payload)
	tr.Event = &w
	t.event(EventReceived, f.key, map[string]any{"event_id": ev.ID, "name": w.Name, "key": w.Key, "early": true})
	return t.completeWith(f.node, nil, "", tr)
}

// completeWith applies tr, a completion of node n (cur: its row, nil when
// it is being fired: its iteration is then read if needed; outcome: a
// person's choice at a UX node), deciding its edges first, and walks on.
func (t *txn) completeWith(n *Node, cur *NodeState, outcome string, tr *NodeTransition) error {
	if t.graph.hasBranches(n.ID) {
		key, iter, input := tr.Key, -1, tr.Input
		if cur != nil {
			iter, input = cur.Iteration, cur.Input
		}
		taken, err := t.decide(n, key, iter, input, tr.Output, outcome)
		if err != nil {
			return t.failDecision(tr, err)
		}
		tr.Taken = taken
	}
	st, err := t.transition(tr)
	if err != nil {
		return err
	}
	return t.completed(st)
}

// failWith applies tr, a failure, and its consequences (no automatic
// retry: a person's, a deadline's or an event's failure).
func (t *txn) failWith(tr *NodeTransition) error {
	st, err := t.transition(tr)
	if err != nil {
		return err
	}
	return t.failed(st, *tr.Error, false)
}

// DeliverEventParams is one event for one waiting node.
type DeliverEventParams struct {
	RunID, Key string
	Attempt    int
	EventID    string
	Name, On   string
	Payload    json.RawMessage
}

// DeliverEvent completes a node waiting for an event with the event's
// payload (waiting_for_event → running → completed) and walks its edges,
// and removes the delivery. A node no longer waiting that attempt (woken
// already, timed out, cancelled) is left alone; the delivery goes anyway.
func (e *Engine) DeliverEvent(ctx context.Context, p DeliverEventParams) error {
	return e.submit(ctx, p.RunID, func(t *txn) error {
		if err := t.load(p.RunID); err != nil {
			return err
		}
		if err := t.w.EventDelivered(p.EventID, p.RunID, p.Key); err != nil {
			return fmt.Errorf("error removing the delivery of event %s: %w", p.EventID, err)
		}
		cur, err := t.tx.Node(t.ctx, p.RunID, p.Key)
		if err != nil {
			return err
		}
		n := t.graph.Nodes[cur.NodeID]
		if cur.Status != StatusWaitingForEvent || cur.Attempt != p.Attempt || n == nil {
			return nil // committed: the delivery is done with
		}
		t.event(EventReceived, p.Key, map[string]any{"event_id": p.EventID, "name": p.Name, "key": p.On})
		return t.completeWith(n, cur, "", &NodeTransition{Key: p.Key, From: StatusWaitingForEvent,
			Steps: []Status{StatusRunning, StatusCompleted}, Attempt: p.Attempt, Output: orNull(p.Payload)})
	})
}

// TimeOutEvent fails an Event node whose deadline passed while it waited
// (a failure edge may handle it). A node no longer waiting that attempt
// is left alone.
func (e *Engine) TimeOutEvent(ctx context.Context, runID, key string, attempt int) error {
	return e.whileIn(ctx, runID, key, attempt, StatusWaitingForEvent, func(t *txn, _ *Node, cur *NodeState) error {
		name, on := "", ""
		if cur.EventName != nil && cur.EventKey != nil {
			name, on = *cur.EventName, *cur.EventKey
		}
		msg := fmt.Sprintf("no event %s with key %q arrived in time", name, on)
		return t.failWith(&NodeTransition{Key: key, From: StatusWaitingForEvent,
			Steps: []Status{StatusRunning, StatusFailed}, Attempt: attempt, Error: &msg})
	})
}
