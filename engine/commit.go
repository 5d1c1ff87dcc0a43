package engine

import (
	"context"
	"errors"
	"fmt"
	"sync"
)

// The commit service. The rules (walk.go, fire.go, finished.go, …) say
// what one operation on a run does inside a transaction: a func(*txn)
// error. A committer decides which transaction that function runs in and
// answers once the transaction committed, or the operation was rejected.
// Two implement it:
//
//   - Inline (CommitInline): one operation, one transaction — for engine
//     tests and tools, where what a test sees is what one operation did.
//   - Grouped (CommitGrouped, the default): per-run batching, cross-run
//     group commit, completions across runs and their retry paths
//     (commit_grouped.go, commit_together.go), with the write counting
//     and snapshots that let a rejected operation be left out of a shared
//     transaction (commit_snapshot.go).
//
// Both end in transact, the single-transaction path, and hand what a
// commit did on as values (committed): nothing calls another service from
// inside a transaction.

// Committer names a commit service (Config.Committer).
type Committer string

const (
	// CommitGrouped batches operations per run and shares transactions
	// across runs: production's committer, the default.
	CommitGrouped Committer = "grouped"
	// CommitInline applies each operation in a transaction of its own.
	CommitInline Committer = "inline"
)

// op is one operation on a run.
type op struct {
	runID string
	fn    func(t *txn) error
	// cb is set for a worker callback: completions may be applied in bulk
	// (a batch's, or across runs).
	cb *CallbackParams
	// alone asks for a transaction of its own (operator controls, starting
	// a run): never batched.
	alone bool
}

// committer applies operations and answers each once its transaction
// committed (or it was rejected).
type committer interface {
	submit(ctx context.Context, o op) error
	// wait returns once the committer's goroutines have ended (after its
	// submissions have been answered).
	wait()
	// waiting is how many batches wait for a transaction.
	waiting() int
	// completedTogether counts nodes completed across runs.
	completedTogether() int64
}

// inline is the committer of one operation a transaction.
type inline struct{ e *Engine }

func (c inline) submit(ctx context.Context, o op) error {
	return c.e.transact(ctx, o.runID, o.fn, false)
}
func (inline) wait()                    {}
func (inline) waiting() int             { return 0 }
func (inline) completedTogether() int64 { return 0 }

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
	e.commit.wait()
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
func (e *Engine) do(ctx context.Context, o op) error {
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
	return e.commit.submit(ctx, o)
}

// submit applies fn to run runID, in a transaction it may share.
func (e *Engine) submit(ctx context.Context, runID string, fn func(t *txn) error) error {
	return e.do(ctx, op{runID: runID, fn: fn})
}

// submitCallback applies worker callback p's operation fn.
func (e *Engine) submitCallback(ctx context.Context, p CallbackParams, fn func(t *txn) error) error {
	return e.do(ctx, op{runID: p.RunID, fn: fn, cb: &p})
}

// submitAlone applies fn to run runID in a transaction of its own.
func (e *Engine) submitAlone(ctx context.Context, runID string, fn func(t *txn) error) error {
	return e.do(ctx, op{runID: runID, fn: fn, alone: true})
}

// Waiting reports how many batches wait for a shared transaction to take
// them (all GroupTransactions are under way): the engine's backlog
// (stitchd_engine_waiting_batches).
func (e *Engine) Waiting() int { return e.commit.waiting() }

// CompletedTogether is how many worker callbacks' nodes this process
// completed with those of other runs in one statement (completeTogether),
// in committed transactions (stitchd_engine_completed_together_total).
func (e *Engine) CompletedTogether() int64 { return e.commit.completedTogether() }

// transact applies fn to run runID in a transaction of its own with a
// fresh txn, flushes its events and run row, commits, then hands on what
// the commit did (committed). It is every committer's single-transaction
// path, with its retries: once after the run moved version, and without
// speculating (txn.speculate) when what speculation assumed did not hold
// — or from the start when noSpeculation is set.
func (e *Engine) transact(ctx context.Context, runID string, fn func(t *txn) error, noSpeculation bool) error {
	return e.transactTraced(ctx, TransactionTrace{Runs: 1, Operations: 1}, runID, fn, noSpeculation)
}

// transactTraced is transact of a batch that trace describes.
func (e *Engine) transactTraced(ctx context.Context, trace TransactionTrace, runID string, fn func(t *txn) error,
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
func (t *txn) apply(runID string, fn func(t *txn) error) error {
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
