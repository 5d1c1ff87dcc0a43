package engine

import (
	"encoding/json"
	"fmt"
	"slices"
)

// Firing a node: its handler takes the action its type calls for (a
// dispatch, a wait for a person, a completion), as a first fire or a
// retry.

// fire starts node n at index idx with input, from status `from` (pending
// for a first fire, failed for a retry) as attempt prevAttempt+1.
func (t *txn) fire(n *Node, idx []int, input json.RawMessage, from Status, prevAttempt int) error {
	return t.fireDelayed(n, idx, input, from, prevAttempt, 0)
}

// mayDefer reports whether a fire (n, key) may wait for a later
// transaction: a first fire, not delayed, whose row exists, and in a
// collection of first fires (a fan-out's, or fireDeferred's sub-flow
// starts) anything but the fire collected itself (collectedFirst) — a
// fan-out's own instances fire at once, bar its sub-flow starts (whose
// child run may hold a fan-out of its own: byRows); what they set off (a
// synchronous node walking on, a child ending at once) keeps the bounds.
func (t *txn) mayDefer(n *Node, key string, from Status, delayMs int64) bool {
	if from != StatusPending || delayMs != 0 {
		return false
	}
	on, unwritten := t.w.Collecting(t.run.ID)
	switch {
	case !on:
		return true
	case unwritten:
		return false
	default:
		return n.Caps.StartsRuns || key != t.collectedFirst
	}
}

// byRows: a fan-out's sub-flow instance (n, idx) is bounded by the rows a
// transaction made (MaxRows), not by its firings: the child's nodes and
// its loops' iterations are rows, which bound what its start fires, and
// counting each start as a firing too left all but 250 of a 10,000-item
// fan-out's sub-flow runs to later transactions, one sweep at a time.
func byRows(n *Node, idx []int) bool { return n.Caps.StartsRuns && len(idx) > 0 }

// atBound reports whether the transaction fired or made all it may before
// it fires n's instance idx (MaxFirings, MaxRows).
func (t *txn) atBound(n *Node, idx []int) bool {
	return t.rowsMade() >= t.e.maxRows() || (!byRows(n, idx) && t.firings >= t.e.maxFirings())
}

// answerCaller records a Respond node's answer to the run's caller,
// unless the run answered before.
func (t *txn) answerCaller(a *CallerAnswer) error {
	ok, err := t.w.SetRunResponse(t.run.ID, a)
	if err != nil {
		return fmt.Errorf("error recording the answer of %s: %w", a.Node, err)
	}
	if ok {
		t.event(EventRunResponded, a.Node, map[string]any{"node_key": a.Node, "status": a.Status})
	}
	return nil
}

func (t *txn) fireDelayed(n *Node, idx []int, input json.RawMessage, from Status, prevAttempt int, delayMs int64) error {
	h := t.e.handlers[n.Type]
	if h == nil {
		return fmt.Errorf("no handler for node type %s", n.Type)
	}
	key := InstanceKey(n.ID, idx)
	// A transaction fires at most MaxFirings nodes (a fan-out's bulk
	// start counts as one): past them, first fires wait for a later
	// transaction, so a loop of synchronous nodes runs in many short
	// transactions instead of one long one.
	if t.mayDefer(n, key, from, delayMs) {
		if t.atBound(n, idx) {
			if err := t.w.DeferNode(t.run.ID, key, input); err != nil {
				return err
			}
			// A fire left for later is work under way: the run neither
			// completes nor fails while it waits (fireDeferred takes it
			// back).
			t.run.ActiveNodes++
			t.deferred++
			return nil
		}
		if !byRows(n, idx) {
			t.firings++
		}
	}
	fc := &fireCtx{t: t, node: n, key: key, idx: idx, input: input,
		from: from, attempt: prevAttempt + 1, delayMs: delayMs}
	mark := len(t.events)
	if err := h.Fire(t.ctx, fc); err != nil {
		return fmt.Errorf("error firing node %s: %w", fc.key, err)
	}
	if !fc.acted {
		return fmt.Errorf("handler for %s node %s took no action", n.Type, fc.key)
	}
	if fc.answer != nil {
		if err := t.answerCaller(fc.answer); err != nil {
			return err
		}
	}
	if len(fc.logs) > 0 {
		// Logged before the action's own events, as the handler did: a
		// fire tried again (writer.ErrNeedsRow) returned above and logs nothing.
		// When the action wrote the events so far already (a big fan-out
		// after it spilled them), the logs come first of the rest.
		t.events = slices.Insert(t.events, min(mark, len(t.events)), fc.logs...)
	}
	return nil
}
