package engine

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/stitchd/stitchd/engine/internal/commit"
)

// The commit service. The rules (walk.go, fire.go, finished.go, …) say
// what one operation on a run does inside a transaction: an opFn. A
// committer (package engine/internal/commit) decides which transaction
// that function runs in and answers once the transaction committed, or
// the operation was rejected. Two implement it:
//
//   - Inline (CommitInline): one operation, one transaction — for engine
//     tests and tools, where what a test sees is what one operation did.
//   - Grouped (CommitGrouped, the default): per-run batching, cross-run
//     group commit and their retry paths.
//
// The committer owns the scheduling and the failure policy; what a
// transaction does is the engine's, handed to it as an Applier
// (commit_apply.go): transact, the single-transaction path; a batch's
// operations in one transaction, each rejected one left out by its
// writer's count and snapshot (commit_snapshot.go); a group's batches in
// one, with completions across runs (commit_together.go). What a commit
// did is handed on as values (committed): nothing calls another service
// from inside a transaction.

// Committer names a commit service (Config.Committer).
type Committer string

const (
	// CommitGrouped batches operations per run and shares transactions
	// across runs: production's committer, the default.
	CommitGrouped Committer = "grouped"
	// CommitInline applies each operation in a transaction of its own.
	CommitInline Committer = "inline"
)

// opFn is one operation on a run: what it does inside a transaction.
type opFn = func(t *txn) error

// Start lets the engine take operations (startstop.Service: on a started
// engine it does nothing). Until then, and after Stop, every operation
// is refused with ErrUnavailable.
func (e *Engine) Start(context.Context) error {
	e.gate.life.Lock()
	defer e.gate.life.Unlock()
	e.gate.mu.Lock()
	defer e.gate.mu.Unlock()
	e.gate.open = true
	return nil
}

// Stop refuses new operations and returns once those under way were
// answered and the committer's goroutines ended (on a stopped engine it
// does nothing). Delivered marks still held are written by
// FlushDeliveryMarks.
func (e *Engine) Stop() {
	e.gate.life.Lock()
	defer e.gate.life.Unlock()
	e.gate.mu.Lock()
	if !e.gate.open {
		e.gate.mu.Unlock()
		return
	}
	e.gate.open = false
	// An operation under way that submits another (none waits on one
	// today) has it refused, not waiting for this Stop.
	for e.gate.inflight > 0 {
		e.gate.idle.Wait()
	}
	e.gate.mu.Unlock()
	// No operation is under way and none is admitted: the committer's
	// goroutines end as their queues are empty.
	e.commit.Wait()
}

// gate admits operations while the engine runs.
type gate struct {
	// life serialises Start and Stop.
	life     sync.Mutex
	mu       sync.Mutex
	idle     *sync.Cond // on mu: inflight fell to 0
	open     bool
	inflight int
}

var errStopped = fmt.Errorf("%w: the engine is not running", ErrUnavailable)

// do submits o to the committer, if the engine runs.
func (e *Engine) do(ctx context.Context, o commit.Op[opFn]) error {
	g := &e.gate
	g.mu.Lock()
	if !g.open {
		g.mu.Unlock()
		return errStopped
	}
	g.inflight++
	g.mu.Unlock()
	defer func() {
		g.mu.Lock()
		if g.inflight--; g.inflight == 0 {
			g.idle.Broadcast()
		}
		g.mu.Unlock()
	}()
	return e.commit.Submit(ctx, o)
}

// submit applies fn to run runID, in a transaction it may share.
func (e *Engine) submit(ctx context.Context, runID string, fn func(t *txn) error) error {
	return e.do(ctx, commit.Op[opFn]{RunID: runID, Fn: fn})
}

// submitCallback applies worker callback p's operation fn.
func (e *Engine) submitCallback(ctx context.Context, p CallbackParams, fn func(t *txn) error) error {
	return e.do(ctx, commit.Op[opFn]{RunID: p.RunID, Fn: fn, Callback: &p})
}

// submitAlone applies fn to run runID in a transaction of its own.
func (e *Engine) submitAlone(ctx context.Context, runID string, fn func(t *txn) error) error {
	return e.do(ctx, commit.Op[opFn]{RunID: runID, Fn: fn, Alone: true})
}

// Waiting reports how many batches wait for a shared transaction to take
// them (all GroupTransactions are under way): the engine's backlog
// (stitchd_engine_waiting_batches).
func (e *Engine) Waiting() int { return e.commit.Waiting() }

// CompletedTogether is how many worker callbacks' nodes this process
// completed with those of other runs in one statement (completeTogether),
// in committed transactions (stitchd_engine_completed_together_total).
func (e *Engine) CompletedTogether() int64 { return e.together.Load() }

// transact applies fn to run runID, a batch that trace describes, in a
// transaction of its own with a fresh txn, flushes its events and run
// row, commits, then hands on what the commit did (committed). It is every committer's single-transaction
// path, with its retries: once after the run moved version, and without
// speculating (txn.speculate) when what speculation assumed did not hold
// — or from the start when noSpeculation is set.
func (e *Engine) transact(ctx context.Context, trace TransactionTrace, runID string, fn opFn,
	noSpeculation bool) error {
	var t *txn
	var ends *childEnds
	moved := false // applied again once, after errVersionMoved
	for {
		room := e.claimRoom()
		err := e.inTx(ctx, trace, func(ctx context.Context, tx Tx) error {
			ends = &childEnds{}
			t = e.newTxn(ctx, tx, noSpeculation, ends, room)
			if err := t.apply(runID, fn); err != nil {
				return err
			}
			return e.tellParents(ctx, tx, ends, room)
		})
		if errors.Is(err, errVersionMoved) && !moved && ctx.Err() == nil {
			moved, t = true, nil
			continue
		}
		if errors.Is(err, errNoChange) {
			return nil
		}
		if t != nil && t.w.Assumed() && errors.Is(err, ErrConflict) && ctx.Err() == nil {
			// What the speculation (or a count-down's known answer)
			// assumed did not hold (a repeated callback, say: its
			// compare-and-set moved no row): the
			// operation again, reading as it goes, to be answered as
			// usual. Any other failure (the database unreachable) is the
			// operation's answer, as it would have been unspeculated.
			noSpeculation, t = true, nil
			continue
		}
		if err != nil {
			return err
		}
		e.committed(t)
		e.committedParents(ends)
		return nil
	}
}

// committedParents hands on what telling parents of ended sub-flow runs
// did in a committed transaction.
func (e *Engine) committedParents(ends *childEnds) {
	for _, p := range ends.parents {
		e.committed(p)
	}
}

// apply runs fn on the transaction and ends its writes.
func (t *txn) apply(runID string, fn opFn) error {
	if err := fn(t); err != nil {
		return err
	}
	if err := t.w.Unwalked(); err != nil {
		return fmt.Errorf("error in run %s: %w", runID, err)
	}
	if err := t.w.AssumedReady(); err != nil {
		return fmt.Errorf("error in run %s: %w", runID, err)
	}
	return t.flush()
}

// committed hands what a committed transaction did to the process: the
// delivered marks it made unnecessary, the outbox rows it claimed, the
// commit hook.
func (e *Engine) committed(t *txn) { e.committedTxn(t, true) }

// committedTxn is committed, its writer's claims handed over when
// ownWriter (a nested txn shares its parent's writer).
func (e *Engine) committedTxn(t *txn, ownWriter bool) {
	for _, n := range t.nested {
		e.committedTxn(n, n.w != t.w)
	}
	if len(t.deliveredKeys) > 0 && t.run != nil {
		e.forget(t.run.ID, t.deliveredKeys, t.deliveredAttempts)
	}
	if ownWriter && len(t.w.Claimed()) > 0 && e.cfg.Claims != nil {
		e.cfg.Claims.put(t.w.Claimed())
	}
	if e.cfg.OnCommit != nil && t.run != nil && len(t.events)+t.spilledEvents > 0 {
		e.cfg.OnCommit(t.commitInfo())
	}
}
