package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"
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

// submit applies op to run runID in a (possibly shared) transaction and
// returns its result once committed.
func (e *Engine) submit(ctx context.Context, runID string, op func(t *txn) error) error {
	return e.enqueue(ctx, runID, &opItem{op: op, done: make(chan error, 1)})
}

func (e *Engine) submitCallback(ctx context.Context, p CallbackParams, op func(t *txn) error) error {
	return e.enqueue(ctx, p.RunID, &opItem{op: op, done: make(chan error, 1), cb: &p})
}

func (e *Engine) enqueue(ctx context.Context, runID string, it *opItem) error {
	e.batch.mu.Lock()
	q := e.batch.queues[runID]
	if q == nil {
		q = &runQueue{}
		e.batch.queues[runID] = q
	}
	q.items = append(q.items, it)
	if !q.running {
		q.running = true
		go e.drain(runID, q)
	}
	e.batch.mu.Unlock()
	select {
	case err := <-it.done:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (e *Engine) drain(runID string, q *runQueue) {
	for {
		e.batch.mu.Lock()
		items := takeUpTo(&q.items, maxBatch)
		if len(items) == 0 {
			q.running = false
			delete(e.batch.queues, runID)
			e.batch.mu.Unlock()
			return
		}
		e.batch.mu.Unlock()
		e.runBatch(runID, items)
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

func (e *Engine) runBatch(runID string, items []*opItem) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if len(items) == 1 {
		items[0].done <- e.sharedCallback(ctx, runID, items[0].op, items[0].cb)
		return
	}
	results := make([]error, len(items))
	err := e.shared(ctx, runID, func(t *txn) error {
		clear(results) // of an attempt in a group that failed
		if err := t.loadAndBulkComplete(runID, items); err != nil {
			return err
		}
		for i, it := range items {
			snap := t.snapshot()
			before, inBulk := t.tx.(*countingTx).writes, len(t.completedInBulk)
			err := it.op(t)
			if err == nil {
				continue
			}
			// An operation may be left out only if it wrote nothing — and
			// one whose node the bulk compare-and-set already completed did.
			if !itemError(err) || t.tx.(*countingTx).writes != before || len(t.completedInBulk) != inBulk {
				return err
			}
			t.restore(snap)
			if !errors.Is(err, errNoChange) {
				results[i] = err
			}
		}
		return nil
	})
	if err != nil {
		// The shared transaction failed: give each operation its own.
		for i, it := range items {
			results[i] = e.inTx(ctx, runID, it.op)
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
// (QueuedTransitionError names its run: a speculated step's, whose
// failure surfaces at a later batch's statement or at COMMIT), and that
// batch is then applied without speculating. Any other failure (it may be
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
// members no longer wait for each other's round trips. On the 2-core bench
// machine 64 concurrent chains made 2,614–2,643 completions/s with 12,
// 2,896–3,156 with 4 and 2,994–3,036 with 2 (p99 67–72 ms against 40–47);
// 4 leaves room for a slow batch (a Collector's or a fan-out's) beside the
// others. (Before speculation, 12 or 24 made 1,900–1,940 and 8 only 1,300:
// each member waited for its own round trips.)
const defaultGroups = 4

type member struct {
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

// shared applies fn to run runID in a transaction it may share with other
// runs' batches, and returns once that transaction committed (or fn was
// rejected, or failed alone).
func (e *Engine) shared(ctx context.Context, runID string, fn func(t *txn) error) error {
	return e.sharedCallback(ctx, runID, fn, nil)
}

// sharedCallback is shared for a batch that is the one worker callback cb
// (nil: any other batch).
func (e *Engine) sharedCallback(ctx context.Context, runID string, fn func(t *txn) error, cb *CallbackParams) error {
	m := &member{runID: runID, fn: fn, done: make(chan error, 1), cb: cb, version: e.mayCompleteTogether(cb)}
	g := &e.groups
	g.mu.Lock()
	g.pending = append(g.pending, m)
	if g.running < e.cfg.GroupTransactions {
		g.running++
		go e.runGroups()
	}
	g.mu.Unlock()
	// Not abandoned on ctx: the group may be running fn, and the caller's
	// fallback must not run it at the same time. The group's own timeout
	// bounds the wait.
	err := <-m.done
	switch {
	case errors.Is(err, errAssumptionFailed):
		return e.alone(ctx, runID, fn, true) // on its own, reading as it goes
	case errors.Is(err, errGroupFailed):
		return e.alone(ctx, runID, fn, false) // on its own
	}
	return err
}

// alone applies fn on its own, once the shared transaction it was in
// failed: at most GroupTransactions at a time, so that a failed group
// (up to maxTogether members) does not take every connection at once.
func (e *Engine) alone(ctx context.Context, runID string, fn func(t *txn) error, noSpeculation bool) error {
	select {
	case e.groups.alone <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	defer func() { <-e.groups.alone }()
	return e.inTxAs(ctx, runID, fn, noSpeculation)
}

// Waiting reports how many batches wait for a shared transaction to take
// them (all GroupTransactions are under way): the engine's backlog
// (stitchd_engine_waiting_batches).
func (e *Engine) Waiting() int {
	e.groups.mu.Lock()
	defer e.groups.mu.Unlock()
	return len(e.groups.pending)
}

var (
	errGroupFailed = errors.New("the shared transaction failed")
	// errAssumptionFailed: the shared transaction failed by this batch's
	// own compare-and-set.
	errAssumptionFailed = fmt.Errorf("%w by the batch's own compare-and-set", errGroupFailed)
)

func (e *Engine) runGroups() {
	g := &e.groups
	for {
		g.mu.Lock()
		ms := takeUpTo(&g.pending, maxGroup)
		if len(ms) == maxGroup {
			ms = takeTogether(ms, &g.pending)
		}
		if len(ms) == 0 {
			g.running--
			g.mu.Unlock()
			return
		}
		g.mu.Unlock()
		e.runGroup(ms)
	}
}

func (e *Engine) runGroup(ms []*member) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	slices.SortFunc(ms, func(a, b *member) int { return strings.Compare(a.runID, b.runID) })
	e.applyGroup(ctx, ms)
}

// applyGroup applies the batches of ms (in run-id order) in one
// transaction and answers each.
func (e *Engine) applyGroup(ctx context.Context, ms []*member) {
	if len(ms) == 1 {
		ms[0].done <- e.inTx(ctx, ms[0].runID, ms[0].fn)
		return
	}
	ts := make([]*txn, len(ms))
	results := make([]error, len(ms))
	bad := -1 // the batch that failed after writing
	var ends *childEnds
	var together *together
	room := e.claimRoom() // shared by the group's batches
	err := e.cfg.Store.InTx(ctx, func(ctx context.Context, tx Tx) error {
		ends = &childEnds{}
		var err error
		together, err = e.completeTogether(ctx, tx, ms)
		if err != nil {
			return err
		}
		for i, m := range ms {
			t := e.newTxn(ctx, tx, false, ends, room)
			together.give(t, m.runID)
			if err := t.apply(m.runID, m.fn); err != nil {
				// Left out if it wrote nothing (rejected before it did).
				if itemError(err) && t.tx.(*countingTx).writes == 0 {
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
		e.applyGroup(ctx, slices.Delete(ms, bad, bad+1))
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
			e.committed(ts[i])
			m.done <- nil
		}
	}
	if err == nil {
		e.committedParents(ends)
		e.together.Add(int64(together.completed()))
	}
}

type txnSnapshot struct {
	run       Run
	events    int
	claimed   int
	arrivals  int
	delivered int
	nested    int
	notes     int
	failMsg   string
}

func (t *txn) snapshot() txnSnapshot {
	return txnSnapshot{run: *t.run, events: len(t.events), claimed: len(t.claimed), arrivals: len(t.arrivals), delivered: len(t.deliveredKeys),
		nested: len(t.nested), notes: len(t.notes), failMsg: t.failMsg}
}

func (t *txn) restore(s txnSnapshot) {
	*t.run = s.run
	t.events = t.events[:s.events]
	t.claimed = t.claimed[:s.claimed]
	t.arrivals = t.arrivals[:s.arrivals]
	t.deliveredKeys, t.deliveredAttempts = t.deliveredKeys[:s.delivered], t.deliveredAttempts[:s.delivered]
	t.nested = t.nested[:s.nested]
	t.notes = t.notes[:s.notes]
	t.failMsg = s.failMsg
}

// countingTx counts the writes an operation made, so group commit knows
// whether a rejected operation left anything behind.
type countingTx struct {
	Tx
	writes int
}

func (c *countingTx) wrote(err error) error {
	if err == nil {
		c.writes++
	}
	return err
}

func (c *countingTx) InsertRun(ctx context.Context, r *Run) error {
	return c.wrote(c.Tx.InsertRun(ctx, r))
}
func (c *countingTx) SaveRun(ctx context.Context, r *Run) error { return c.wrote(c.Tx.SaveRun(ctx, r)) }
func (c *countingTx) AddDecision(ctx context.Context, d UXDecision) ([]Vote, bool, error) {
	all, added, err := c.Tx.AddDecision(ctx, d)
	if added {
		err = c.wrote(err)
	}
	return all, added, err
}
func (c *countingTx) SaveRunWithEvents(ctx context.Context, s RunSave) error {
	return c.wrote(c.Tx.SaveRunWithEvents(ctx, s))
}
func (c *countingTx) InsertNodes(ctx context.Context, runID string, n []NodeState) error {
	return c.wrote(c.Tx.InsertNodes(ctx, runID, n))
}
func (c *countingTx) InsertStartedNodes(ctx context.Context, runID string, n []NodeState, s []BulkStart) error {
	return c.wrote(c.Tx.InsertStartedNodes(ctx, runID, n, s))
}
func (c *countingTx) Transition(ctx context.Context, t *NodeTransition) (*NodeState, error) {
	st, err := c.Tx.Transition(ctx, t)
	return st, c.wrote(err)
}
func (c *countingTx) TransitionLater(ctx context.Context, t *NodeTransition) error {
	return c.wrote(c.Tx.TransitionLater(ctx, t))
}
func (c *countingTx) AddPending(ctx context.Context, runID string, keys []string, d int) (map[string]Pending, error) {
	p, err := c.Tx.AddPending(ctx, runID, keys, d)
	return p, c.wrote(err)
}
func (c *countingTx) AddPendingLater(ctx context.Context, runID string, keys []string, d int) func() (map[string]Pending, error) {
	c.writes++
	return c.Tx.AddPendingLater(ctx, runID, keys, d)
}
func (c *countingTx) SetPending(ctx context.Context, runID, key string, n int) error {
	return c.wrote(c.Tx.SetPending(ctx, runID, key, n))
}
func (c *countingTx) InsertDispatch(ctx context.Context, d *Dispatch) error {
	return c.wrote(c.Tx.InsertDispatch(ctx, d))
}
func (c *countingTx) InsertDispatches(ctx context.Context, ds []*Dispatch) error {
	return c.wrote(c.Tx.InsertDispatches(ctx, ds))
}
func (c *countingTx) UpdateDispatches(ctx context.Context, us []DispatchUpdate) (int, error) {
	n, err := c.Tx.UpdateDispatches(ctx, us)
	if n == 0 {
		return n, err // nothing written
	}
	return n, c.wrote(err)
}
func (c *countingTx) BulkStart(ctx context.Context, runID string, s []BulkStart) (int, error) {
	n, err := c.Tx.BulkStart(ctx, runID, s)
	return n, c.wrote(err)
}
func (c *countingTx) ExtendDeadline(ctx context.Context, runID, key string, attempt, secs int) (bool, error) {
	ok, err := c.Tx.ExtendDeadline(ctx, runID, key, attempt, secs)
	return ok, c.wrote(err)
}
func (c *countingTx) CancelNodes(ctx context.Context, runID string) ([]CancelledNode, error) {
	k, err := c.Tx.CancelNodes(ctx, runID)
	return k, c.wrote(err)
}
func (c *countingTx) UpsertEntity(ctx context.Context, id string, e EntityUpsert) (string, error) {
	s, err := c.Tx.UpsertEntity(ctx, id, e)
	return s, c.wrote(err)
}
func (c *countingTx) ArchiveIteration(ctx context.Context, runID string, keys []string) (map[string]int, error) {
	a, err := c.Tx.ArchiveIteration(ctx, runID, keys)
	return a, c.wrote(err)
}

func (c *countingTx) InsertIteration(ctx context.Context, runID string, n []NodeState) error {
	return c.wrote(c.Tx.InsertIteration(ctx, runID, n))
}

func (c *countingTx) DeletePendingNodes(ctx context.Context, runID string, nodeIDs []string) error {
	return c.wrote(c.Tx.DeletePendingNodes(ctx, runID, nodeIDs))
}

func (c *countingTx) SetRunVersion(ctx context.Context, runID, versionID string) error {
	return c.wrote(c.Tx.SetRunVersion(ctx, runID, versionID))
}

func (c *countingTx) ResetNodes(ctx context.Context, runID string, nodes []ResetNode) error {
	return c.wrote(c.Tx.ResetNodes(ctx, runID, nodes))
}

func (c *countingTx) DeleteInstances(ctx context.Context, runID string, nodeIDs []string, idx []int) (int, error) {
	n, err := c.Tx.DeleteInstances(ctx, runID, nodeIDs, idx)
	return n, c.wrote(err)
}

func (c *countingTx) InsertNotifications(ctx context.Context, ns []Notification) error {
	return c.wrote(c.Tx.InsertNotifications(ctx, ns))
}

func (c *countingTx) SetRemindAt(ctx context.Context, runID, key string, secs int) error {
	return c.wrote(c.Tx.SetRemindAt(ctx, runID, key, secs))
}

func (c *countingTx) HoldDispatches(ctx context.Context, runID string, hold bool) (int, error) {
	n, err := c.Tx.HoldDispatches(ctx, runID, hold)
	return n, c.wrote(err)
}

func (c *countingTx) TakeEvent(ctx context.Context, w EventWait) (*TakenEvent, error) {
	ev, err := c.Tx.TakeEvent(ctx, w)
	return ev, c.wrote(err)
}

func (c *countingTx) EventDelivered(ctx context.Context, eventID, runID, key string) error {
	return c.wrote(c.Tx.EventDelivered(ctx, eventID, runID, key))
}

func (c *countingTx) FailActiveNodes(ctx context.Context, runID, msg string) ([]string, error) {
	k, err := c.Tx.FailActiveNodes(ctx, runID, msg)
	return k, c.wrote(err)
}

func (c *countingTx) WakeNodes(ctx context.Context, runID string, due []DueNode) ([]NodeState, error) {
	st, err := c.Tx.WakeNodes(ctx, runID, due)
	return st, c.wrote(err)
}

func (c *countingTx) SetTaken(ctx context.Context, runID, key string, taken []string, out json.RawMessage) error {
	return c.wrote(c.Tx.SetTaken(ctx, runID, key, taken, out))
}
func (c *countingTx) MoveEntity(ctx context.Context, m EntityMove) (EntityMoved, error) {
	s, err := c.Tx.MoveEntity(ctx, m)
	return s, c.wrote(err)
}
func (c *countingTx) AppendEvents(ctx context.Context, runID string, seq int64, ev []NewEvent) error {
	return c.wrote(c.Tx.AppendEvents(ctx, runID, seq, ev))
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
	done, err := t.tx.BulkComplete(t.ctx, runID, cs)
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

func (c *countingTx) BulkComplete(ctx context.Context, runID string, cs []BulkComplete) ([]NodeState, error) {
	st, err := c.Tx.BulkComplete(ctx, runID, cs)
	return st, c.wrote(err)
}
