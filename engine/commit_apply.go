package engine

import (
	"context"
	"errors"
	"fmt"

	"github.com/stitchd/stitchd/engine/internal/commit"
)

// The engine's side of the commit service (package engine/internal/commit,
// which schedules operations and decides what happens when a shared
// transaction fails): what a transaction does for it.

// defaultGroups is Config.GroupTransactions' default, below the store's
// pool of 16 connections so that the API and the dispatcher keep some.
// Fewer transactions in flight make bigger groups; a group of speculated
// chain steps (txn.speculate) is one round trip, whatever its size, so its
// members no longer wait for each other's round trips: with 4 in flight
// concurrent chains complete more steps a second than with 12 and as many
// as with 2, and 4 leave room for a slow batch (a Collector's or a
// fan-out's) beside the others
// (docs/performance.md#measurements-behind-the-code).
const defaultGroups = 4

// applier is the engine's commit.Applier.
type applier struct{ e *Engine }

// Transact applies fn in a transaction of its own (Engine.transact).
func (a applier) Transact(ctx context.Context, trace TransactionTrace, runID string, fn opFn, noSpeculation bool) error {
	return a.e.transact(ctx, trace, runID, fn, noSpeculation)
}

// Together: completeTogether may apply callback p (mayCompleteTogether).
func (a applier) Together(p *CallbackParams) string { return a.e.mayCompleteTogether(p) }

// itemError reports whether an operation's error concerns that operation
// only (a conflict, a duplicate, bad input), not the transaction.
func itemError(err error) bool {
	return errors.Is(err, errNoChange) || errors.Is(err, ErrConflict) || errors.Is(err, ErrInvalidTransition) ||
		errors.Is(err, ErrNotFound) || errors.Is(err, ErrInvalidRequest) || errors.Is(err, ErrForbidden)
}

// Batch applies a run's batch of operations in order, after completing
// its callbacks' nodes with one compare-and-set (loadAndBulkComplete). An
// operation rejected before it wrote anything is left out: its txn is
// restored to the snapshot taken before it, and its answer kept in
// results.
func (a applier) Batch(runID string, items []commit.Item[opFn], results []error) opFn {
	return func(t *txn) error {
		clear(results) // of an attempt in a group that failed
		if err := t.loadAndBulkComplete(runID, items); err != nil {
			return err
		}
		for i, it := range items {
			snap := t.snapshot()
			before, inBulk := t.w.Writes(), len(t.completedInBulk)
			err := it.Fn(t)
			if err == nil {
				continue
			}
			// An operation may be left out only if it wrote nothing — and
			// one whose node the bulk compare-and-set already completed did.
			if !itemError(err) || t.w.Writes() != before || len(t.completedInBulk) != inBulk {
				return err
			}
			t.restore(snap)
			if !errors.Is(err, errNoChange) {
				results[i] = err
			}
		}
		return nil
	}
}

// Group applies the batches of ms (in run-id order) in one transaction:
// the completions of a group of callbacks across runs first
// (completeTogether), then each batch in a txn of its own, one rejected
// before it wrote left out with its answer. Once committed, what each did
// is handed on (committed). A failure names the batch whose own
// compare-and-set failed, when it is known.
func (a applier) Group(ctx context.Context, trace TransactionTrace, ms []*commit.Member[opFn]) ([]error, int, error) {
	e := a.e
	ts := make([]*txn, len(ms))
	results := make([]error, len(ms))
	bad := -1 // the batch that failed after writing
	var ends *childEnds
	var together *together
	room := e.claimRoom() // shared by the group's batches
	err := e.inTx(ctx, trace, func(ctx context.Context, tx Tx) error {
		ends = &childEnds{}
		var err error
		together, err = e.completeTogether(ctx, tx, ms)
		if err != nil {
			return err
		}
		for i, m := range ms {
			t := e.newTxn(ctx, tx, false, ends, room)
			together.give(t, m.RunID)
			if err := t.apply(m.RunID, m.Fn); err != nil {
				// Left out if it wrote nothing (rejected before it did).
				if itemError(err) && t.w.Writes() == 0 {
					results[i] = err
					continue
				}
				if itemError(err) {
					// Its own compare-and-set's answer (a repeated
					// callback): not a queued write of an earlier batch
					// failing at this batch's statement.
					bad = i
				}
				return err
			}
			ts[i] = t
		}
		return e.tellParents(ctx, tx, ends, room)
	})
	if err != nil {
		var qe *QueuedTransitionError
		if errors.As(err, &qe) {
			// A queued compare-and-set surfaces at a later batch's
			// statement or at COMMIT, but names its run: the batch it
			// belongs to failed, whichever statement reported it (a
			// repeated callback of a speculated step, say).
			for i, m := range ms {
				if m.RunID == qe.RunID {
					bad = i
					break
				}
			}
		}
		return nil, bad, err
	}
	for i, t := range ts {
		if t == nil {
			if errors.Is(results[i], errNoChange) {
				results[i] = nil
			}
			continue
		}
		e.committed(t)
	}
	e.committedParents(ends)
	e.together.Add(int64(together.completed()))
	return results, -1, nil
}

// loadAndBulkComplete locks the run and applies the completions among a
// batch's callbacks with one compare-and-set (running → completed for the
// given attempt), in one round trip when the run is not locked yet: the
// lock is queued before the compare-and-set, which needs neither the run
// nor its graph. Each callback operation then finds its node already
// completed (takeCompletedInBulk) and runs only the consequences; a
// callback the bulk update did not match (stale, repeated, conflicting)
// runs its own compare-and-set as usual.
func (t *txn) loadAndBulkComplete(runID string, items []commit.Item[opFn]) error {
	if _, ok := t.e.versions.get(runID); !ok {
		// Which callbacks' nodes decide their edges first is unknown
		// until the run's graph is: no bulk completion this once.
		return t.load(runID)
	}
	var cs []BulkComplete
	for _, it := range items {
		if p := it.Callback; p != nil && p.Status == StatusCompleted && !t.mayBranch(runID, p.Key) {
			cs = append(cs, BulkComplete{Key: p.Key, Attempt: p.Attempt, Output: orNull(p.Output)})
		}
	}
	if len(cs) < 2 {
		return t.load(runID)
	}
	locked := t.tx.LockRunLater(t.ctx, runID) // each batch has a txn of its own
	done, err := t.w.BulkComplete(runID, cs)
	if lerr := t.lockAnswered(runID, locked, err); lerr != nil {
		return lerr
	}
	if err != nil {
		return fmt.Errorf("error completing %d nodes: %w", len(cs), err)
	}
	t.completedInBulk = make(map[string]*NodeState, len(done))
	for i := range done {
		t.completedInBulk[done[i].Key] = &done[i]
	}
	return nil
}

// takeCompletedInBulk returns (once) the node the batch's bulk compare-and-set
// completed for this callback.
func (t *txn) takeCompletedInBulk(p CallbackParams) *NodeState {
	st := t.completedInBulk[p.Key]
	if st == nil || st.Attempt != p.Attempt {
		return nil
	}
	delete(t.completedInBulk, p.Key)
	return st
}
