package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/stitchd/stitchd/engine/internal/writer"
)

// Sub-flows (README, Sub-flows): a SubFlow node starts a run of another
// flow version — its child — in the transaction that fires it, and the
// child's final transaction (completed, failed or cancelled) completes or
// fails the node before it commits, locking the parent's run after its
// own (tellParents). Each of those is a txn of its own over the same
// database transaction, whose effects after commit (outbox rows it
// claimed, the commit hook) are the process's as any transaction's.

// ChildRun is the run a SubFlow node starts.
type ChildRun struct {
	Target SubFlowTarget
	Input  json.RawMessage
	// PassEntity attaches the parent run's entity to the child.
	PassEntity bool
}

// parentRef names the SubFlow node instance that starts a run.
type parentRef struct {
	runID, key string
	attempt    int
}

// startRun creates run id of graph g inside this transaction and fires its
// entry nodes (parent: the SubFlow node starting it, or nil).
func (t *txn) startRun(id string, g *ExecutionGraph, p StartRunParams, parent *parentRef) (*Run, error) {
	r := &Run{ID: id, FlowID: p.FlowID, FlowVersionID: p.VersionID, EntityID: p.EntityID,
		Status: RunRunning, Trigger: p.Trigger, Input: p.Input, DeadlineSeconds: p.DeadlineSeconds, StartedBy: p.StartedBy}
	if r.DeadlineSeconds == 0 {
		r.DeadlineSeconds = g.DeadlineSeconds
	}
	if parent != nil {
		r.ParentRunID, r.ParentKey, r.ParentAttempt = &parent.runID, &parent.key, parent.attempt
	}
	if p.Entity != nil {
		eid, err := t.w.UpsertEntity(t.e.cfg.NewID(), *p.Entity)
		if err != nil {
			return nil, fmt.Errorf("error saving entity: %w", err)
		}
		r.EntityID = &eid
	}
	if p.IdempotencyKey != "" {
		k := p.IdempotencyKey
		r.IdempotencyKey = &k
	}
	for _, tid := range g.TerminalNodes {
		if g.Nodes[tid].Depth == 0 {
			r.TerminalsLeft++
		}
	}
	if parent == nil && r.EntityID != nil {
		queued, err := t.entityTurn(r, g)
		if err != nil || queued {
			return r, err
		}
	}
	if err := t.w.InsertRun(r); err != nil {
		return nil, err
	}
	return r, t.beginRun(r, g, parent)
}

// beginRun starts inserted run r: run.started, its entity's move, its
// entry nodes fired with its input and its nodes' rows. Entry nodes that
// only start (a dispatch, a wait for a person) are created started, as a
// fan-out's instances are (instantiate): one INSERT, no UPDATE of each;
// the others fire once the rows exist.
func (t *txn) beginRun(r *Run, g *ExecutionGraph, parent *parentRef) error {
	id := r.ID
	t.setRun(r, g)
	started := map[string]any{"flow_version_id": r.FlowVersionID, "input": r.Input}
	if parent != nil {
		started["parent_run_id"], started["parent_key"] = parent.runID, parent.key
	}
	t.event(EventRunStarted, "", started)
	if r.EntityID != nil {
		if err := t.moveEntity(EntityMove{Kind: JourneyRunStarted}); err != nil {
			return err
		}
	}
	end := t.w.CollectBulk(id, true)
	var needRows []string
	for _, nid := range g.EntryNodes {
		err := t.fire(g.Nodes[nid], nil, r.Input, StatusPending, 0)
		if errors.Is(err, writer.ErrNeedsRow) {
			needRows = append(needRows, nid)
		} else if err != nil {
			end()
			return err
		}
	}
	first := end()
	starts := make(map[string]BulkStart, len(first.Starts))
	for _, st := range first.Starts {
		starts[st.Key] = st
	}
	order := sortedStatic(g)
	rows, rowStarts := make([]NodeState, 0, len(order)), make([]BulkStart, 0, len(order))
	for _, nid := range order {
		rows = append(rows, NodeState{Key: nid, NodeID: nid, Type: g.Nodes[nid].Type, Index: []int{},
			Status: StatusPending, PendingParents: len(g.Upstream[nid])})
		rowStarts = append(rowStarts, starts[nid])
	}
	if err := t.w.InsertStartedNodes(id, rows, rowStarts); err != nil {
		return err
	}
	t.addRows(len(rows))
	if err := t.flushBulk(first); err != nil {
		return err
	}
	for _, nid := range needRows {
		if err := t.fire(g.Nodes[nid], nil, r.Input, StatusPending, 0); err != nil {
			return err
		}
	}
	return nil
}

// growTree counts n more node instances in the run's tree (the root run
// and its sub-flow runs, all levels), unless that would pass
// Config.MaxRunNodes: fan-outs inside sub-flows inside fan-outs multiply,
// and --max-fanout-items bounds only one of them.
func (t *txn) growTree(n int) (bool, error) {
	ok, err := t.w.AddTreeNodes(t.run.ID, n, t.e.maxRunNodes())
	if err != nil {
		return false, fmt.Errorf("error counting the node instances of run %s: %w", t.run.ID, err)
	}
	return ok, nil
}

// treeLimitMessage is a node's failure past Config.MaxRunNodes.
func (t *txn) treeLimitMessage(doing string) string {
	return fmt.Sprintf("run_tree_limit: %s would take the run and its sub-flow runs past %d node instances (--max-run-nodes)",
		doing, t.e.maxRunNodes())
}

// nestedTxn is a txn over another run in this transaction's database
// transaction; committed hands on its effects with this one's.
func (t *txn) nestedTxn() *txn {
	if t.work == nil {
		t.work = &txWork{} // shared with the nested transaction from now on
	}
	n := &txn{e: t.e, ctx: t.ctx, tx: t.tx, w: t.w, noSpeculation: true, ends: t.ends, work: t.work, sharesWriter: true}
	t.nested = append(t.nested, n)
	return n
}

func (f *fireCtx) StartChild(c ChildRun) error {
	if err := f.act(); err != nil {
		return err
	}
	if f.unwritten() {
		return writer.ErrNeedsRow
	}
	t := f.t
	g, err := t.e.Graph(t.ctx, c.Target.VersionID)
	if err != nil {
		return err
	}
	if ok, err := t.growTree(len(g.Nodes)); err != nil {
		return err
	} else if !ok {
		return f.fail(t.treeLimitMessage("starting a sub-flow run"))
	}
	id := t.e.cfg.NewID()
	// The person who started the parent started the child too (separation
	// of duties holds across sub-flows).
	p := StartRunParams{FlowID: c.Target.FlowID, VersionID: c.Target.VersionID, Input: c.Input, StartedBy: t.run.StartedBy}
	if len(p.Input) == 0 || string(p.Input) == "null" {
		p.Input = json.RawMessage("{}")
	}
	if c.PassEntity {
		p.EntityID = t.run.EntityID
	}
	trig, err := json.Marshal(map[string]any{"type": "subflow", "parent_run_id": t.run.ID, "parent_key": f.key,
		"parent_attempt": f.attempt})
	if err != nil {
		return fmt.Errorf("error encoding the sub-flow trigger of %s: %w", f.key, err)
	}
	p.Trigger = trig
	ct := t.nestedTxn()
	ct.starting = true // its end, should it end at once, is told here, not by tellParents
	child, err := ct.startRun(id, g, p, &parentRef{runID: t.run.ID, key: f.key, attempt: f.attempt})
	if err != nil {
		return fmt.Errorf("error starting the sub-flow run of %s: %w", f.key, err)
	}
	if err := ct.flush(); err != nil {
		return fmt.Errorf("error starting the sub-flow run of %s: %w", f.key, err)
	}
	t.event(EventChildStarted, f.key, map[string]any{"child_run_id": id, "flow_id": c.Target.FlowID,
		"version": c.Target.Version, "attempt": f.attempt})
	switch child.Status {
	case RunCompleted: // a child with nothing to wait for
		tr := f.start(StatusRunning, StatusCompleted)
		tr.ChildRunID, tr.Output = &id, orNull(child.Output)
		t.event(EventChildFinished, f.key, map[string]any{"child_run_id": id, "status": child.Status})
		return t.completeWith(f.node, nil, "", tr)
	case RunFailed:
		tr := f.start(StatusRunning, StatusFailed)
		msg := childFailure(child)
		tr.ChildRunID, tr.Error = &id, &msg
		t.event(EventChildFinished, f.key, map[string]any{"child_run_id": id, "status": child.Status})
		return t.failWith(tr)
	default: // under way: the node runs until the child ends
	}
	if f.bulkable() {
		// A fan-out's SubFlow instances start in one UPDATE.
		s := f.bulkStart(StatusRunning, 0)
		s.ChildRunID = id
		t.w.StartInBulk(t.run.ID, f.node.ID, s, nil)
		return nil
	}
	tr := f.start(StatusRunning)
	tr.ChildRunID = &id
	return t.transitionLater(tr, f.node.ID, f.attempt-1)
}

// errVersionMoved: a run's version, taken from this process's cache, was
// not the row's (the run was migrated); the transaction is applied again
// (Engine.transact), knowing it now.
var errVersionMoved = errors.New("the run moved to another version")

// childFailure is the reason a SubFlow node fails with when its child run
// failed or was cancelled.
func childFailure(child *Run) string {
	if child.Status == RunCancelled {
		return fmt.Sprintf("sub-flow run %s was cancelled", child.ID)
	}
	msg := "it failed"
	if child.Error != nil {
		msg = *child.Error
	}
	return childFailurePrefix(child.ID) + ": " + msg
}

func childFailurePrefix(childID string) string { return "sub-flow run " + childID + " failed" }

// childEnds collects, for one database transaction, the sub-flow runs
// that ended in it; tellParents tells their SubFlow nodes before it
// commits. Told together, the children of one parent that end in one
// transaction (a group's) take the parent's lock once and complete their
// nodes with one statement.
type childEnds struct {
	ends []childEnd
	// parents are the transactions over the parents told: committed hands
	// on their effects.
	parents []*txn
}

// childEnd is a sub-flow run that ended (a copy: its txn moves on).
type childEnd struct {
	parentRunID, parentKey string
	attempt                int
	child                  Run
}

// childEnded records that the transaction's run, a sub-flow run, ended.
func (t *txn) childEnded() error {
	if t.ends == nil {
		return fmt.Errorf("run %s ended outside a transaction that tells its parent", t.run.ID)
	}
	r := *t.run
	t.ends.ends = append(t.ends.ends, childEnd{parentRunID: *r.ParentRunID, parentKey: *r.ParentKey,
		attempt: r.ParentAttempt, child: r})
	return nil
}

// tellParents tells the SubFlow nodes of the sub-flow runs that ended in
// this database transaction how they ended — and so on up, when telling
// ends a parent that is itself a sub-flow run — parents in id order.
func (e *Engine) tellParents(ctx context.Context, tx Tx, ends *childEnds, room *writer.ClaimRoom) error {
	for len(ends.ends) > 0 {
		batch := ends.ends
		ends.ends = nil
		byParent := map[string][]childEnd{}
		for _, c := range batch {
			byParent[c.parentRunID] = append(byParent[c.parentRunID], c)
		}
		for _, id := range slices.Sorted(maps.Keys(byParent)) {
			pt := &txn{e: e, ctx: ctx, tx: tx, w: e.newWriter(ctx, tx, room), noSpeculation: true, ends: ends}
			ends.parents = append(ends.parents, pt)
			if err := pt.tellParent(id, byParent[id]); err != nil {
				return err
			}
		}
	}
	return nil
}

// tellParent tells run runID's SubFlow nodes that their children ended:
// completed, the node completes with the child's output and walks its
// edges; failed or cancelled, the node fails (a failure edge may take it
// on). A node no longer running that child — cancelled, retried with a
// new child — is left alone. A node that failed because this child
// failed, and was not retried, completes when the child completes after
// all (an operator repaired the child). The completions of nodes that
// decide no edges are one statement.
func (t *txn) tellParent(runID string, ends []childEnd) error {
	// The parent's lock is held from here to the commit, and the groups of
	// its children's ends wait for it one after another: when this
	// process knows the parent's graph, the lock travels with the
	// completions (one round trip).
	version, g, cached := t.e.cachedGraph(runID)
	if !cached {
		if err := t.load(runID); err != nil {
			return fmt.Errorf("error loading the parent of %d sub-flow run(s): %w", len(ends), err)
		}
		g = t.graph
	}
	var bulk []BulkComplete
	var rest []childEnd
	for _, c := range ends {
		n, _, ok := g.parseKey(c.parentKey)
		if c.child.Status == RunCompleted && ok && !g.hasBranches(n.ID) && g.loopOf(n.ID) == nil {
			bulk = append(bulk, BulkComplete{Key: c.parentKey, Attempt: c.attempt, Output: orNull(c.child.Output)})
		} else {
			rest = append(rest, c)
		}
	}
	if cached && len(bulk) == 0 {
		if err := t.load(runID); err != nil {
			return fmt.Errorf("error loading the parent of %d sub-flow run(s): %w", len(ends), err)
		}
	}
	if len(bulk) > 0 {
		var locked func() (*Run, error)
		if cached {
			locked = t.tx.LockRunLater(t.ctx, runID)
		}
		done, err := t.w.BulkComplete(runID, bulk)
		if cached {
			if lerr := t.lockAnswered(runID, locked, err); lerr != nil {
				return fmt.Errorf("error loading the parent of %d sub-flow run(s): %w", len(ends), lerr)
			}
			if t.run.FlowVersionID != version {
				// The lock taught this process the run's version
				// (setRun): the transaction is applied again.
				return fmt.Errorf("error telling run %s of its sub-flow runs: %w (version %s, not %s)",
					runID, errVersionMoved, t.run.FlowVersionID, version)
			}
		}
		if err != nil {
			return fmt.Errorf("error completing %d SubFlow nodes of run %s: %w", len(bulk), runID, err)
		}
		told := make(map[string]bool, len(done))
		for i := range done {
			st := &done[i]
			told[st.Key] = true
			t.event(EventChildFinished, st.Key, map[string]any{"child_run_id": st.ChildRunID, "status": RunCompleted})
			t.transitioned(&NodeTransition{Key: st.Key, From: StatusRunning, Steps: []Status{StatusCompleted}}, st)
			if err := t.completed(st); err != nil {
				return err
			}
		}
		for _, c := range ends {
			if c.child.Status == RunCompleted && !told[c.parentKey] && slices.ContainsFunc(bulk, func(b BulkComplete) bool {
				return b.Key == c.parentKey && b.Attempt == c.attempt
			}) {
				rest = append(rest, c) // not running that attempt: read and judged below
			}
		}
	}
	for _, c := range rest {
		if err := t.tellNode(c); err != nil {
			return err
		}
	}
	return t.flush()
}

// tellNode tells one SubFlow node how its child ended, reading the node.
func (t *txn) tellNode(c childEnd) error {
	r := &c.child
	cur, err := t.tx.Node(t.ctx, t.run.ID, c.parentKey)
	if err != nil {
		return fmt.Errorf("error loading the SubFlow node of run %s: %w", r.ID, err)
	}
	n := t.graph.Nodes[cur.NodeID]
	if n == nil || cur.ChildRunID == nil || *cur.ChildRunID != r.ID || cur.Attempt != c.attempt {
		return nil
	}
	revived := cur.Status == StatusFailed && cur.Taken == nil && r.Status == RunCompleted &&
		t.run.Status != RunCancelled && cur.Error != nil && strings.HasPrefix(*cur.Error, childFailurePrefix(r.ID))
	if cur.Status != StatusRunning && !revived {
		return nil
	}
	t.event(EventChildFinished, cur.Key, map[string]any{"child_run_id": r.ID, "status": r.Status})
	if r.Status == RunCompleted {
		tr := &NodeTransition{Key: cur.Key, From: cur.Status, Steps: []Status{StatusCompleted}, Attempt: cur.Attempt,
			Output: orNull(r.Output)}
		if revived {
			tr.Steps = []Status{StatusRunning, StatusCompleted}
		}
		return t.completeWith(n, cur, "", tr)
	}
	msg := childFailure(r)
	return t.failWith(&NodeTransition{Key: cur.Key, From: StatusRunning, Steps: []Status{StatusFailed},
		Attempt: cur.Attempt, Error: &msg})
}
