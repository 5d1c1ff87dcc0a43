package commit

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/stitchd/stitchd/engine/enginetype"
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
// out (Applier.Batch); one that fails after writing aborts the shared
// transaction, and every operation of the batch is then retried in a
// transaction of its own.

// maxBatch bounds how many operations one transaction applies.
const maxBatch = 512

// transactionTimeout bounds a transaction the commit service runs for
// operations it may share.
const transactionTimeout = time.Minute

type opItem[F any] struct {
	Item[F]
	done chan error
}

// runQueue is a busy run's queue: while it is in the batcher's map, a
// drain applies it.
type runQueue[F any] struct {
	items []*opItem[F]
}

type batcher[F any] struct {
	mu     sync.Mutex
	queues map[string]*runQueue[F]
}

// GroupedParams are what a Grouped committer is made of.
type GroupedParams[F any] struct {
	Applier Applier[F]
	// Groups is how many shared transactions may be under way at once.
	Groups int
	// Traced: a Tracer sees the transactions, so their traces name the
	// other operations they serve.
	Traced bool
}

// Grouped is the production committer: per-run batching and cross-run
// group commit, with their retry paths.
type Grouped[F any] struct {
	a      Applier[F]
	limit  int
	traced bool
	batch  batcher[F]
	groups grouper[F]
	// wg counts the committer's goroutines (a busy run's drain, a group
	// runner), which end once their queues are empty: Wait waits for them.
	wg sync.WaitGroup
}

// NewGrouped is a Grouped committer.
func NewGrouped[F any](p GroupedParams[F]) *Grouped[F] {
	return &Grouped[F]{a: p.Applier, limit: p.Groups, traced: p.Traced,
		batch:  batcher[F]{queues: map[string]*runQueue[F]{}},
		groups: grouper[F]{alone: make(chan struct{}, p.Groups)}}
}

// Submit applies o in a (possibly shared) transaction and returns its
// result once committed; an operation that must be alone gets a
// transaction of its own at once.
func (g *Grouped[F]) Submit(ctx context.Context, o Op[F]) error {
	if o.Alone {
		return g.a.Transact(ctx, enginetype.TransactionTrace{Runs: 1, Operations: 1}, o.RunID, o.Fn, false)
	}
	return g.enqueue(ctx, o.RunID, &opItem[F]{Item: Item[F]{Ctx: ctx, Fn: o.Fn, Callback: o.Callback}, done: make(chan error, 1)})
}

// Wait returns once the committer's goroutines have ended.
func (g *Grouped[F]) Wait() { g.wg.Wait() }

func (g *Grouped[F]) enqueue(ctx context.Context, runID string, it *opItem[F]) error {
	g.batch.mu.Lock()
	q := g.batch.queues[runID]
	if q == nil {
		// The run is idle: its caller applies the first batch (its own
		// operation, and any that queued meanwhile) on its own goroutine,
		// and hands what queues behind it to a drain of its own — a
		// chain's step is not handed to a new goroutine and back. It
		// waits for its transaction then, as the drain would.
		q = &runQueue[F]{items: []*opItem[F]{it}}
		g.batch.queues[runID] = q
		g.wg.Add(1)
		g.batch.mu.Unlock()
		func() {
			defer crashOnPanic()
			g.drainNext(runID, q)
			g.handOn(runID, q)
		}()
		return <-it.done
	}
	q.items = append(q.items, it)
	g.batch.mu.Unlock()
	select {
	case err := <-it.done:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (g *Grouped[F]) drain(runID string, q *runQueue[F]) {
	for g.drainNext(runID, q) {
	}
}

// drainNext applies run's next batch, or ends its drain when nothing is
// queued; it reports whether it applied one.
func (g *Grouped[F]) drainNext(runID string, q *runQueue[F]) bool {
	g.batch.mu.Lock()
	items := takeUpTo(&q.items, maxBatch)
	if len(items) == 0 {
		g.endDrain(runID)
		g.batch.mu.Unlock()
		return false
	}
	g.batch.mu.Unlock()
	g.runBatch(runID, items)
	return true
}

// handOn hands what queued for run while its caller applied the first
// batch to a drain goroutine, or ends the drain.
func (g *Grouped[F]) handOn(runID string, q *runQueue[F]) {
	g.batch.mu.Lock()
	defer g.batch.mu.Unlock()
	if len(q.items) > 0 {
		go g.drain(runID, q)
		return
	}
	g.endDrain(runID)
}

// endDrain ends run's drain; called with the batcher's lock held.
func (g *Grouped[F]) endDrain(runID string) {
	delete(g.batch.queues, runID)
	g.wg.Done()
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

func (g *Grouped[F]) runBatch(runID string, items []*opItem[F]) {
	// A worker's callback whose request was given up before its batch
	// began is not applied: the worker was answered with no 2xx and calls
	// back again. Every other operation is applied once submitted (the
	// dispatcher's record of a request already sent, at shutdown, must not
	// be lost).
	items = slices.DeleteFunc(items, func(it *opItem[F]) bool {
		if err := it.Ctx.Err(); err != nil && it.Callback != nil {
			it.done <- err
			return true
		}
		return false
	})
	if len(items) == 0 {
		return
	}
	ctx, cancel := detached(items[0].Ctx)
	defer cancel()
	trace := enginetype.TransactionTrace{Runs: 1, Operations: len(items)}
	if g.traced {
		for _, it := range items[1:] {
			trace.Others = append(trace.Others, it.Ctx)
		}
	}
	if len(items) == 1 {
		items[0].done <- g.shared(ctx, trace, runID, items[0].Fn, items[0].Callback)
		return
	}
	batch := make([]Item[F], len(items))
	for i, it := range items {
		batch[i] = it.Item
	}
	results := make([]error, len(items))
	err := g.shared(ctx, trace, runID, g.a.Batch(runID, batch, results), nil)
	if err != nil {
		// The shared transaction failed: give each operation its own, in
		// its own context, all within one more minute.
		fctx, fcancel := detached(ctx)
		defer fcancel()
		dl, _ := fctx.Deadline()
		for i, it := range items {
			ictx, icancel := context.WithDeadline(context.WithoutCancel(it.Ctx), dl)
			results[i] = g.a.Transact(ictx, enginetype.TransactionTrace{Runs: 1, Operations: 1}, runID, it.Fn, false)
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
// transaction, at most Params.Groups of them at a time; a batch's
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
// (the Applier names its batch: a speculated step's, or a count-down whose
// answer was assumed, whose failure surfaces at a later batch's statement
// or at COMMIT), and that batch is then applied without speculating or
// assuming. Any other failure (it may be an earlier batch's queued write,
// surfacing at a later statement) or a failed commit has each batch
// applied on its own. Entity rows are not locked in any order: two groups
// moving the same two entities may deadlock, which Postgres breaks after
// deadlock_timeout, and the batches are then applied on their own.

// maxGroup bounds the runs whose batches share one transaction.
const maxGroup = 32

// maxTogether bounds the runs of a group whose members the Applier may
// complete together, beyond maxGroup: every group of a fan-out's children
// ending locks the parent run until it commits, one group after another,
// so fewer, bigger groups end them sooner.
const maxTogether = 512

type grouper[F any] struct {
	mu      sync.Mutex
	pending []*Member[F]
	running int
	// alone bounds the batches applied on their own after their shared
	// transaction failed.
	alone chan struct{}
}

// shared applies fn, a batch that trace describes, to run runID in a
// transaction it may share with other runs' batches, and returns once
// that transaction committed (or fn was rejected, or failed alone). cb is
// set when the batch is the one worker callback cb.
func (g *Grouped[F]) shared(ctx context.Context, trace enginetype.TransactionTrace, runID string, fn F,
	cb *enginetype.CallbackParams) error {
	m := &Member[F]{Ctx: ctx, Trace: trace, RunID: runID, Fn: fn, Callback: cb, done: make(chan error, 1)}
	if cb != nil {
		m.Version = g.a.Together(cb)
	}
	gr := &g.groups
	gr.mu.Lock()
	gr.pending = append(gr.pending, m)
	runner := gr.running < g.limit
	if runner {
		gr.running++
		g.wg.Add(1)
	}
	gr.mu.Unlock()
	if runner {
		// As with a run's drain: the caller runs groups until its own
		// batch is taken, then hands the runner on.
		g.runGroupsFor(m)
	}
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
// failed: at most Params.Groups at a time, so that a failed group (up to
// maxTogether members) does not take every connection at once.
func (g *Grouped[F]) alone(ctx context.Context, trace enginetype.TransactionTrace, runID string, fn F,
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
	return g.a.Transact(ctx, trace, runID, fn, noSpeculation)
}

// Waiting is how many batches wait for a shared transaction to take
// them (all Params.Groups are under way).
func (g *Grouped[F]) Waiting() int {
	g.groups.mu.Lock()
	defer g.groups.mu.Unlock()
	return len(g.groups.pending)
}

var (
	errGroupFailed = errors.New("the shared transaction failed")
	// errAssumptionFailed: the shared transaction failed by this batch's
	// own compare-and-set.
	errAssumptionFailed = fmt.Errorf("%w by the batch's own compare-and-set", errGroupFailed)
)

func (g *Grouped[F]) runGroups() {
	for {
		ms := g.nextGroup(nil)
		if ms == nil {
			return
		}
		g.runGroup(ms)
	}
}

// runGroupsFor runs groups on the caller's goroutine until its own batch
// m was taken — by this runner, and answered, or by another — then hands
// the runner to a goroutine of its own while batches wait (nextGroup).
func (g *Grouped[F]) runGroupsFor(m *Member[F]) {
	defer crashOnPanic()
	for {
		ms := g.nextGroup(m)
		if ms == nil {
			return
		}
		g.runGroup(ms)
	}
}

// nextGroup takes the next group of the batches waiting, or ends a runner
// when none waits (nil then). A caller's runner (mine: its batch) ends
// once mine was taken, handing the runner to a goroutine while batches
// wait: it runs no more groups of others than it must.
func (g *Grouped[F]) nextGroup(mine *Member[F]) []*Member[F] {
	gr := &g.groups
	gr.mu.Lock()
	defer gr.mu.Unlock()
	if mine != nil && mine.taken && len(gr.pending) > 0 {
		go g.runGroups()
		return nil
	}
	var ms []*Member[F]
	if mine == nil || !mine.taken {
		ms = takeUpTo(&gr.pending, maxGroup)
		if len(ms) == maxGroup {
			ms = takeTogether(ms, &gr.pending)
		}
	}
	if len(ms) == 0 {
		gr.running--
		g.wg.Done()
		return nil
	}
	for _, m := range ms {
		m.taken = true
	}
	return ms
}

// crashOnPanic keeps a panic in an operation applied on its caller's
// goroutine what it is on the committer's own: the end of the process. A
// caller's recover (the HTTP server's) would otherwise leave the run's
// queue and the runner held, and every later operation waiting.
func crashOnPanic() {
	if p := recover(); p != nil {
		msg := fmt.Sprintf("%v\n\n%s", p, debug.Stack())
		go func() { panic(msg) }()
		select {} // what the caller would do next must not happen
	}
}

// takeTogether extends group ms (maxGroup members taken from pending)
// with the members after it, up to maxTogether, while all are members
// the Applier may complete together. Called with the grouper's lock held.
func takeTogether[F any](ms []*Member[F], pending *[]*Member[F]) []*Member[F] {
	for _, m := range ms {
		if m.Version == "" {
			return ms
		}
	}
	n := 0
	for n < len(*pending) && len(ms)+n < maxTogether && (*pending)[n].Version != "" {
		n++
	}
	if n == 0 {
		return ms
	}
	ms = append(ms, (*pending)[:n]...)
	*pending = (*pending)[n:]
	return ms
}

func (g *Grouped[F]) runGroup(ms []*Member[F]) {
	// The first batch's context (its first caller's trace) is the
	// group's; the others' are linked.
	lead := ms[0].Ctx
	ctx, cancel := detached(lead)
	defer cancel()
	slices.SortFunc(ms, func(a, b *Member[F]) int { return strings.Compare(a.RunID, b.RunID) })
	g.applyGroup(ctx, lead, ms)
}

// groupTrace describes the transaction of ms's batches, whose context
// comes from lead's (not traced: nothing).
func (g *Grouped[F]) groupTrace(lead context.Context, ms []*Member[F]) enginetype.TransactionTrace {
	if !g.traced {
		return enginetype.TransactionTrace{}
	}
	trace := enginetype.TransactionTrace{Runs: len(ms)}
	for _, m := range ms {
		trace.Operations += m.Trace.Operations
		if m.Ctx != lead {
			trace.Others = append(trace.Others, m.Ctx)
		}
		trace.Others = append(trace.Others, m.Trace.Others...)
	}
	return trace
}

// applyGroup applies the batches of ms (in run-id order) in one
// transaction and answers each.
func (g *Grouped[F]) applyGroup(ctx, lead context.Context, ms []*Member[F]) {
	if len(ms) == 1 {
		ms[0].done <- g.a.Transact(ctx, g.groupTrace(lead, ms), ms[0].RunID, ms[0].Fn, false)
		return
	}
	results, bad, err := g.a.Group(ctx, g.groupTrace(lead, ms), ms)
	if err != nil && bad >= 0 {
		// That batch on its own (without speculating: its assumption
		// failed), the others again together.
		ms[bad].done <- errAssumptionFailed
		if ms[bad].Ctx == lead && len(ms) > 1 {
			// The others' transaction is a child of a request it serves.
			lead = ms[(bad+1)%len(ms)].Ctx
			dl, _ := ctx.Deadline()
			var cancel context.CancelFunc
			ctx, cancel = context.WithDeadline(context.WithoutCancel(lead), dl)
			defer cancel()
		}
		g.applyGroup(ctx, lead, slices.Delete(ms, bad, bad+1))
		return
	}
	for i, m := range ms {
		if err != nil {
			m.done <- errGroupFailed
		} else {
			m.done <- results[i]
		}
	}
}

// detached is the context a transaction serving the operation of ctx runs
// in: ctx's values (its trace), not its cancellation — the transaction
// may serve other callers too, and an operation once under way is
// finished (its caller, gone, is answered by its retry) — bounded by a
// minute.
func detached(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), transactionTimeout)
}
