package engine

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
)

// Group commit. Every operation on a run locks the run's row, so concurrent
// operations on one run (a thousand items of a fan-out calling back at
// once) would commit one after another, each waiting for the previous
// commit. Instead, operations on a run are queued and a single goroutine per
// busy run applies everything queued in one transaction (which batches of
// other runs may share: cross-run group commit, below).
//
// An operation rejected before it wrote anything (a stale or conflicting
// callback fails its compare-and-set and writes nothing) is simply left
// out; one that fails after writing aborts the shared transaction, and every
// operation of the batch is then retried in a transaction of its own.

// maxBatch bounds how many operations one transaction applies.
const maxBatch = 512

type opItem struct {
	// ctx is the submitter's: its values (a trace) reach the transaction.
	ctx  context.Context
	op   func(t *txn) error
	done chan error
	// cb is set for worker callbacks: completions in a batch are applied
	// with one bulk compare-and-set before the operations run.
	cb *CallbackParams
}

type runQueue struct {
	items   []*opItem
	running bool
}

type batcher struct {
	mu     sync.Mutex
	queues map[string]*runQueue
}

// grouped is the production committer: per-run batching and cross-run
// group commit, with their retry paths.
type grouped struct {
	e      *Engine
	batch  batcher
	groups grouper
	// together counts nodes completed across runs (completeTogether) in
	// committed transactions.
	together atomic.Int64
	// wg counts the committer's goroutines (a busy run's drain, a group
	// runner), which end once their queues are empty: Stop waits for them.
	wg sync.WaitGroup
}

func newGrouped(e *Engine) *grouped {
	return &grouped{e: e, batch: batcher{queues: map[string]*runQueue{}},
		groups: grouper{alone: make(chan struct{}, e.cfg.GroupTransactions)}}
}

// submit applies o in a (possibly shared) transaction and returns its
// result once committed; an operation that must be alone gets a
// transaction of its own at once.
func (g *grouped) submit(ctx context.Context, o op) error {
	if o.alone {
		return g.e.transact(ctx, o.runID, o.fn, false)
	}
	return g.enqueue(ctx, o.runID, &opItem{ctx: ctx, op: o.fn, done: make(chan error, 1), cb: o.cb})
}

func (g *grouped) wait() { g.wg.Wait() }

func (g *grouped) enqueue(ctx context.Context, runID string, it *opItem) error {
	g.batch.mu.Lock()
	q := g.batch.queues[runID]
	if q == nil {
		q = &runQueue{}
		g.batch.queues[runID] = q
	}
	q.items = append(q.items, it)
	if !q.running {
		q.running = true
		g.wg.Add(1)
		go g.drain(runID, q)
	}
	g.batch.mu.Unlock()
	select {
	case err := <-it.done:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (g *grouped) drain(runID string, q *runQueue) {
	defer g.wg.Done()
	for {
		g.batch.mu.Lock()
		items := takeUpTo(&q.items, maxBatch)
		if len(items) == 0 {
			q.running = false
			delete(g.batch.queues, runID)
			g.batch.mu.Unlock()
			return
		}
		g.batch.mu.Unlock()
		g.runBatch(runID, items)
	}
}

// takeUpTo removes and returns the first n items of q (all when fewer).
func takeUpTo[T any](q *[]T, n int) []T {
	items := *q
	if len(items) > n {
		items, *q = items[:n:n], items[n:]
	} else {
		*q = nil
	}
	return items
}

// itemError reports whether an operation's error concerns that operation
// only (a conflict, a duplicate, bad input), not the transaction.
func itemError(err error) bool {
	return errors.Is(err, errNoChange) || errors.Is(err, ErrConflict) || errors.Is(err, ErrInvalidTransition) ||
		errors.Is(err, ErrNotFound) || errors.Is(err, ErrInvalidRequest) || errors.Is(err, ErrForbidden)
}

func (g *grouped) runBatch(runID string, items []*opItem) {
	// A worker's callback whose request was given up before its batch
	// began is not applied: the worker was answered with no 2xx and calls
	// back again. Every other operation is applied once submitted (the
	// dispatcher's record of a request already sent, at shutdown, must not
	// be lost).
	items = slices.DeleteFunc(items, func(it *opItem) bool {
		if err := it.ctx.Err(); err != nil && it.cb != nil {
			it.done <- err
			return true
		}
		return false
	})
	if len(items) == 0 {
		return
	}
	ctx, cancel := detached(items[0].ctx)
	defer cancel()
	trace := TransactionTrace{Runs: 1, Operations: len(items)}
	if g.e.cfg.Tracer != nil {
		for _, it := range items[1:] {
			trace.Others = append(trace.Others, it.ctx)
		}
	}
	if len(items) == 1 {
		items[0].done <- g.sharedCallback(ctx, trace, runID, items[0].op, items[0].cb)
		return
	}
	results := make([]error, len(items))
	err := g.sharedCallback(ctx, trace, runID, func(t *txn) error {
		clear(results) // of an attempt in a group that failed
		if err := t.loadAndBulkComplete(runID, items); err != nil {
			return err
		}
		for i, it := range items {
			snap := t.snapshot()
			before, inBulk := t.w.Writes(), len(t.completedInBulk)
			err := it.op(t)
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
	}, nil)
	if err != nil {
		// The shared transaction failed: give each operation its own, in
		// its own context, all within one more minute.
		fctx, fcancel := detached(ctx)
		defer fcancel()
		dl, _ := fctx.Deadline()
		for i, it := range items {
			ictx, icancel := context.WithDeadline(context.WithoutCancel(it.ctx), dl)
			results[i] = g.e.transact(ictx, runID, it.op, false)
			icancel()
		}
	}
	for i, it := range items {
		it.done <- results[i]
	}
}

// Cross-run group commit. Concurrent operations on different runs (64
// chains progressing at once) would each make a transaction: its BEGIN,
// COMMIT and fsync, and a round trip per step. Instead, the batches of up
// to maxGroup runs that are ready at the same moment share one
// transaction, at most Config.GroupTransactions of them at a time; a batch's
// queued writes travel with the next batch's first statement. A lone batch
// is a group of one: no waiting is added. A group's batches run in the
// order of their runs' ids, so that groups (of this process or another)
// always lock runs in one order and cannot deadlock on them.
//
// A group commits or fails as a whole. A batch rejected before it wrote
// anything is left out as in group commit. A batch that fails after writing
// rolls the group back. When the batch was rejected by its own
// compare-and-set (a repeated completion callback, whose successors'
// count-down travelled with it), that batch is applied on its own and the
// others again together; so it is when a queued compare-and-set fails
// (QueuedTransitionError names its run: a speculated step's, or a
// count-down whose answer was assumed, whose failure surfaces at a later
// batch's statement or at COMMIT), and that batch is then applied without
// speculating or assuming. Any other failure (it may be
// an earlier batch's queued write, surfacing at a later statement) or a
// failed commit has each batch applied on its own. Entity rows are not locked in any order: two
// groups moving the same two entities may deadlock, which Postgres breaks
// after deadlock_timeout, and the batches are then applied on their own.

// maxGroup bounds the runs whose batches share one transaction.
const maxGroup = 32

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

type member struct {
	// ctx is the batch's (detached from its first operation's caller);
	// trace describes the batch.
	ctx   context.Context
	trace TransactionTrace
	runID string
	fn    func(t *txn) error
	done  chan error
	// cb is set when the batch is one worker callback: a group of
	// completions may be applied together (completeTogether).
	cb *CallbackParams
	// version is the run's flow version when completeTogether may apply
	// the member ("" otherwise), judged once, before it waits.
	version string
}

type grouper struct {
	mu      sync.Mutex
	pending []*member
	running int
	// alone bounds the batches applied on their own after their shared
	// transaction failed (Engine.alone).
	alone chan struct{}
}

// sharedCallback applies fn, a batch that trace describes, to run runID
// in a transaction it may share with other runs' batches, and returns once
// that transaction committed (or fn was rejected, or failed alone). cb is
// set when the batch is the one worker callback cb.
func (g *grouped) sharedCallback(ctx context.Context, trace TransactionTrace, runID string, fn func(t *txn) error,
	cb *CallbackParams) error {
	m := &member{ctx: ctx, trace: trace, runID: runID, fn: fn, done: make(chan error, 1), cb: cb,
		version: g.mayCompleteTogether(cb)}
	gr := &g.groups
	gr.mu.Lock()
	gr.pending = append(gr.pending, m)
	if gr.running < g.e.cfg.GroupTransactions {
		gr.running++
		g.wg.Add(1)
		go g.runGroups()
	}
	gr.mu.Unlock()
	// Not abandoned on ctx: the group may be running fn, and the caller's
	// fallback must not run it at the same time. The group's own timeout
	// bounds the wait.
	err := <-m.done
	switch {
	case errors.Is(err, errAssumptionFailed):
		return g.alone(ctx, trace, runID, fn, true) // on its own, reading as it goes
	case errors.Is(err, errGroupFailed):
		return g.alone(ctx, trace, runID, fn, false) // on its own
	}
	return err
}

// alone applies fn on its own, once the shared transaction it was in
// failed: at most GroupTransactions at a time, so that a failed group
// (up to maxTogether members) does not take every connection at once.
func (g *grouped) alone(ctx context.Context, trace TransactionTrace, runID string, fn func(t *txn) error,
	noSpeculation bool) error {
	select {
	case g.groups.alone <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	defer func() { <-g.groups.alone }()
	// A fresh minute: the batch's was partly spent waiting for, and in,
	// the shared transaction that failed.
	ctx, cancel := detached(ctx)
	defer cancel()
	return g.e.transactTraced(ctx, trace, runID, fn, noSpeculation)
}

// waiting is how many batches wait for a shared transaction to take
// them (all GroupTransactions are under way).
func (g *grouped) waiting() int {
	g.groups.mu.Lock()
	defer g.groups.mu.Unlock()
	return len(g.groups.pending)
}

func (g *grouped) completedTogether() int64 { return g.together.Load() }

var (
	errGroupFailed = errors.New("the shared transaction failed")
	// errAssumptionFailed: the shared transaction failed by this batch's
	// own compare-and-set.
	errAssumptionFailed = fmt.Errorf("%w by the batch's own compare-and-set", errGroupFailed)
)

func (g *grouped) runGroups() {
	defer g.wg.Done()
	gr := &g.groups
	for {
		gr.mu.Lock()
		ms := takeUpTo(&gr.pending, maxGroup)
		if len(ms) == maxGroup {
			ms = takeTogether(ms, &gr.pending)
		}
		if len(ms) == 0 {
			gr.running--
			gr.mu.Unlock()
			return
		}
		gr.mu.Unlock()
		g.runGroup(ms)
	}
}

func (g *grouped) runGroup(ms []*member) {
	// The first batch's context (its first caller's trace) is the
	// group's; the others' are linked.
	lead := ms[0].ctx
	ctx, cancel := detached(lead)
	defer cancel()
	slices.SortFunc(ms, func(a, b *member) int { return strings.Compare(a.runID, b.runID) })
	g.applyGroup(ctx, lead, ms)
}

// groupTrace describes the transaction of ms's batches, whose context
// comes from lead's, for the Tracer (none: nothing).
func (g *grouped) groupTrace(lead context.Context, ms []*member) TransactionTrace {
	if g.e.cfg.Tracer == nil {
		return TransactionTrace{}
	}
	trace := TransactionTrace{Runs: len(ms)}
	for _, m := range ms {
		trace.Operations += m.trace.Operations
		if m.ctx != lead {
			trace.Others = append(trace.Others, m.ctx)
		}
		trace.Others = append(trace.Others, m.trace.Others...)
	}
	return trace
}

// applyGroup applies the batches of ms (in run-id order) in one
// transaction and answers each.
func (g *grouped) applyGroup(ctx, lead context.Context, ms []*member) {
	if len(ms) == 1 {
		ms[0].done <- g.e.transactTraced(ctx, g.groupTrace(lead, ms), ms[0].runID, ms[0].fn, false)
		return
	}
	ts := make([]*txn, len(ms))
	results := make([]error, len(ms))
	bad := -1 // the batch that failed after writing
	var ends *childEnds
	var together *together
	room := g.e.claimRoom() // shared by the group's batches
	err := g.e.inTx(ctx, g.groupTrace(lead, ms), func(ctx context.Context, tx Tx) error {
		ends = &childEnds{}
		var err error
		together, err = g.completeTogether(ctx, tx, ms)
		if err != nil {
			return err
		}
		for i, m := range ms {
			t := g.e.newTxn(ctx, tx, false, ends, room)
			together.give(t, m.runID)
			if err := t.apply(m.runID, m.fn); err != nil {
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
		return g.e.tellParents(ctx, tx, ends, room)
	})
	var qe *QueuedTransitionError
	if errors.As(err, &qe) {
		// A queued compare-and-set surfaces at a later batch's statement
		// or at COMMIT, but names its run: the batch it belongs to failed,
		// whichever statement reported it (a repeated callback of a
		// speculated step, say).
		if i := slices.IndexFunc(ms, func(m *member) bool { return m.runID == qe.RunID }); i >= 0 {
			bad = i
		}
	}
	if err != nil && bad >= 0 {
		// That batch on its own (without speculating: its assumption
		// failed), the others again together.
		ms[bad].done <- errAssumptionFailed
		if ms[bad].ctx == lead && len(ms) > 1 {
			// The others' transaction is a child of a request it serves.
			lead = ms[(bad+1)%len(ms)].ctx
			dl, _ := ctx.Deadline()
			var cancel context.CancelFunc
			ctx, cancel = context.WithDeadline(context.WithoutCancel(lead), dl)
			defer cancel()
		}
		g.applyGroup(ctx, lead, slices.Delete(ms, bad, bad+1))
		return
	}
	for i, m := range ms {
		switch {
		case err != nil:
			m.done <- errGroupFailed
		case ts[i] == nil:
			if errors.Is(results[i], errNoChange) {
				results[i] = nil
			}
			m.done <- results[i]
		default:
			g.e.committed(ts[i])
			m.done <- nil
		}
	}
	if err == nil {
		g.e.committedParents(ends)
		g.together.Add(int64(together.completed()))
	}
}

// loadAndBulkComplete locks the run and applies the completions among a
// batch's callbacks with one compare-and-set (running → completed for the
// given attempt), in one round trip when the run is not locked yet: the
// lock is queued before the compare-and-set, which needs neither the run
// nor its graph. Each callback operation then finds its node already
// completed (takeCompletedInBulk) and runs only the consequences; a
// callback the bulk update did not match (stale, repeated, conflicting)
// runs its own compare-and-set as usual.
func (t *txn) loadAndBulkComplete(runID string, items []*opItem) error {
	if _, ok := t.e.versions.get(runID); !ok {
		// Which callbacks' nodes decide their edges first is unknown
		// until the run's graph is: no bulk completion this once.
		return t.load(runID)
	}
	var cs []BulkComplete
	for _, it := range items {
		if it.cb != nil && it.cb.Status == StatusCompleted && !t.mayBranch(runID, it.cb.Key) {
			cs = append(cs, BulkComplete{Key: it.cb.Key, Attempt: it.cb.Attempt, Output: orNull(it.cb.Output)})
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
