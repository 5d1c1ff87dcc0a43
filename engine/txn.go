package engine

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"time"

	"github.com/tidwall/gjson"
)

// txn is the state of one engine transaction over one run.
type txn struct {
	e      *Engine
	ctx    context.Context
	tx     Tx
	run    *Run
	graph  *ExecutionGraph
	events []NewEvent
	// spilled is what the events written ahead of the commit
	// (spillEvents) did, for the commit hook; spilledEvents counts them.
	spilled       CommitInfo
	spilledEvents int
	claimed       []ClaimedDispatch
	failMsg       string
	// heard are (key, attempt) pairs a worker called back for: their
	// dispatches arrived.
	heardKeys     []string
	heardAttempts []int
	// arrivals are items that reached their Collector in this transaction;
	// flush counts them down with one UPDATE … RETURNING per Collector.
	arrivals []target
	// pre holds nodes a batch's bulk compare-and-set completed, by key.
	pre map[string]*NodeState
	// bulk collects first fires of Worker and UX instances while a
	// Splitter fans out, written with one statement each at the end.
	bulk *bulkFires
	// room is how many more outbox rows this transaction may claim for the
	// process (-1: not asked yet).
	room int
	// began is the clock's time before the transaction's first statement
	// (the leases of the rows it claims start later).
	began time.Time
	// ahead is the count-down of a completing node's successors, sent with
	// the run's lock and the node's compare-and-set (lockAndTransition) and
	// consumed by walk.
	ahead *countDown
	// speculated: the run was not read (speculate); run holds changes to
	// its counters, saved relative to the row.
	speculated bool
	// outcome is the outcome a person chose at the UX node this
	// transaction completes ("" otherwise), for its entity movement;
	// actor is who decided it, for the journey.
	outcome, actor string
	// comment is the person's comment on that decision, for the journey.
	comment string
	// noSpeculation forbids speculate (the retry of a transaction whose
	// speculation failed).
	noSpeculation bool
	// nested are transactions over other runs made in this one's database
	// transaction (a sub-flow's start, a parent told of its child's end).
	nested []*txn
	// starting: the transaction starts its run as a SubFlow node's child,
	// and the node learns at once if the run ends in it.
	starting bool
	// ended is the status the run finished in in this transaction.
	ended RunStatus
	// ends collects the sub-flow runs that end in the database
	// transaction, whose parents are told before it commits.
	ends *childEnds
	// notes are the notifications the transaction writes at flush.
	notes []Notification
	// lastOutput is the output of the last terminal node completed in
	// the transaction, as its row holds it (nil when not read back).
	lastOutput struct {
		key string
		out json.RawMessage
	}
}

// countDown is a count-down of node key's successors sent ahead.
type countDown struct {
	key string
	got func() (map[string]Pending, error)
}

type bulkFires struct {
	starts     []BulkStart
	dispatches []*Dispatch
	nodeIDs    []string
	// unwritten: the fired instances' rows do not exist yet — they are
	// created already started — so an action other than a plain start
	// (errNeedsRow) is taken again once they exist.
	unwritten bool
}

// errNeedsRow: a fire before its instance's row exists took an action that
// needs the row (not a plain dispatch or a wait for a person).
var errNeedsRow = errors.New("the instance's row does not exist yet")

func (b *bulkFires) add(f *fireCtx, status Status, secs int, d *Dispatch) {
	b.starts = append(b.starts, BulkStart{Key: f.key, Input: f.input, Status: status, DeadlineSeconds: secs})
	b.nodeIDs = append(b.nodeIDs, f.node.ID)
	if d != nil {
		b.dispatches = append(b.dispatches, d)
	}
}

// flushBulk writes the collected first fires: one UPDATE for the node
// states (unless they were created started), one INSERT for the outbox
// rows.
func (t *txn) flushBulk(b *bulkFires) error {
	if len(b.starts) == 0 {
		return nil
	}
	if !b.unwritten {
		n, err := t.tx.BulkStart(t.ctx, t.run.ID, b.starts)
		if err != nil {
			return fmt.Errorf("error starting %d instances: %w", len(b.starts), err)
		}
		if n != len(b.starts) {
			return fmt.Errorf("%w: started %d of %d instances", ErrConflict, n, len(b.starts))
		}
	}
	if err := t.tx.InsertDispatches(t.ctx, b.dispatches); err != nil {
		return fmt.Errorf("error writing %d dispatches: %w", len(b.dispatches), err)
	}
	t.run.ActiveNodes += len(b.starts)
	for i, s := range b.starts {
		t.event(EventNodeStatus, s.Key, &nodeStatus{Status: StatusRunning, Attempt: 1, NodeID: b.nodeIDs[i]})
		if s.Status == StatusWaitingForUser {
			t.event(EventNodeStatus, s.Key, &nodeStatus{Status: StatusWaitingForUser, Attempt: 1, NodeID: b.nodeIDs[i]})
		}
	}
	for _, d := range b.dispatches {
		t.noteDispatch(d)
	}
	return nil
}

// newTxn starts the state of a transaction over one run, before its first
// statement.
func (e *Engine) newTxn(ctx context.Context, tx Tx, noSpeculation bool, ends *childEnds) *txn {
	return &txn{e: e, ctx: ctx, tx: &countingTx{Tx: tx}, room: -1, noSpeculation: noSpeculation, began: e.cfg.Clock.Now(),
		ends: ends}
}

// claim marks an outbox row as claimed by this process when it is due now
// and the process has room for it (Waker.Room, asked once per transaction).
func (t *txn) claim(d *Dispatch) {
	if t.e.cfg.ClaimLease <= 0 || d.DelayMs != 0 || t.e.cfg.Waker == nil || t.run.Status == RunPaused {
		return
	}
	if t.room < 0 {
		t.room = t.e.cfg.Waker.Room()
	}
	if t.room == 0 {
		return
	}
	t.room--
	d.ClaimSeconds = t.e.cfg.ClaimLease.Seconds()
}

// noteDispatch records a written outbox row for after the commit.
func (t *txn) noteDispatch(d *Dispatch) {
	if d.ClaimSeconds > 0 {
		t.claimed = append(t.claimed, ClaimedDispatch{ID: d.ID, RunID: d.RunID, Key: d.Key, Attempt: d.Attempt,
			URL: d.URL, Payload: d.Payload, Tries: 1, MaxTries: max(d.MaxTries, 1), LeasedAt: t.began, Request: d.Request})
	}
}

var errNoChange = errors.New("no change")

func (t *txn) load(runID string) error {
	if t.run != nil && t.run.ID == runID {
		return nil // already locked by this transaction (group commit)
	}
	r, err := t.tx.LockRun(t.ctx, runID)
	if err != nil {
		return fmt.Errorf("error loading run %s: %w", runID, err)
	}
	g, err := t.e.Graph(t.ctx, r.FlowVersionID)
	if err != nil {
		return err
	}
	t.setRun(r, g)
	return nil
}

// lockAnswered makes the run a queued lock (Tx.LockRunLater) found the
// transaction's run, once the statement that carried the lock was
// answered; err is that statement's error, returned when the lock never
// was answered.
func (t *txn) lockAnswered(runID string, locked func() (*Run, error), err error) error {
	r, lerr := locked()
	if lerr != nil {
		return fmt.Errorf("error loading run %s: %w", runID, lerr)
	}
	if r == nil { // the round trip failed before the lock was answered
		return fmt.Errorf("error loading run %s: %w", runID, err)
	}
	g, gerr := t.e.Graph(t.ctx, r.FlowVersionID)
	if gerr != nil {
		return gerr
	}
	t.setRun(r, g)
	return nil
}

// setRun makes r, locked, the transaction's run.
func (t *txn) setRun(r *Run, g *ExecutionGraph) {
	t.run, t.graph = r, g
	t.e.versions.put(r.ID, r.FlowVersionID)
}

// lockAndTransition is load followed by transition, in one round trip
// when the run is not locked yet: the lock is queued ahead of the
// compare-and-set (which needs neither the run nor its graph). When the
// transition completes a node of a run whose graph this process knows,
// the count-down of the node's successors travels in the same round trip
// (walk then reads its answer instead of asking).
func (t *txn) lockAndTransition(runID string, tr *NodeTransition) (*NodeState, error) {
	if t.run != nil && t.run.ID == runID {
		return t.transition(tr)
	}
	if st, ok, err := t.speculate(runID, tr); ok || err != nil {
		return st, err
	}
	tr.RunID = runID
	if _, err := ValidatePath([]Status{tr.From}, tr.Steps); err != nil {
		return nil, fmt.Errorf("error moving node %s: %w", tr.Key, err)
	}
	locked := t.tx.LockRunLater(t.ctx, runID)
	ahead, aheadVersion, aheadNode := t.countDownAhead(runID, tr)
	st, err := t.tx.Transition(t.ctx, tr)
	if lerr := t.lockAnswered(runID, locked, err); lerr != nil {
		return nil, lerr
	}
	if err != nil {
		return nil, err // the transaction is rolled back, count-down included
	}
	if ahead != nil {
		// What the count-down assumed must be what the lock and the
		// compare-and-set found; else the transaction must not commit.
		if t.run.FlowVersionID != aheadVersion || st.NodeID != aheadNode {
			return nil, fmt.Errorf("error completing %s: counted down successors of node %s of version %s, found node %s of version %s",
				tr.Key, aheadNode, aheadVersion, st.NodeID, t.run.FlowVersionID)
		}
		t.ahead = ahead
	}
	t.transitioned(tr, st)
	return st, nil
}

// speculate applies the completion of a chain step without waiting for
// anything: the node's compare-and-set (which locks the run), its
// successors' starts and outbox rows and the run's save are all queued,
// to travel with COMMIT in one round trip. It does so only when the outcome cannot
// depend on what the database would answer: this process knows the run's
// flow version (and so its graph); the node is a Worker that moves no
// entity, and every node after it is a Worker or unassigned UX node at its depth
// whose only upstream node it is (so each is pending and fires now, with
// the callback's output as input, and the run stays running: it has work
// left and a node that just became active). What it assumed travels with
// the compare-and-set (the row's node, the run running on that version),
// which fails the transaction in the database when it moves no row — a
// repeated or stale callback, a cancelled run — and Engine.inTx then
// applies the operation again without speculating. The run's counters are
// saved as changes to the row's (RunSave.Relative).
func (t *txn) speculate(runID string, tr *NodeTransition) (*NodeState, bool, error) {
	if t.noSpeculation || tr.From != StatusRunning || len(tr.Steps) != 1 || tr.Steps[0] != StatusCompleted ||
		tr.Attempt <= 0 || tr.NewAttempt {
		return nil, false, nil
	}
	v, g, ok := t.e.knownGraph(runID)
	if !ok {
		return nil, false, nil
	}
	n, idx, ok := g.parseKey(tr.Key)
	if !ok || !speculable(g, n, idx, tr.Output) {
		return nil, false, nil
	}
	tr.RunID, tr.NodeID, tr.RunVersion = runID, n.ID, v
	// The compare-and-set checks and locks the run.
	if err := t.tx.TransitionLater(t.ctx, tr); err != nil {
		return nil, true, fmt.Errorf("error moving node %s: %w", tr.Key, err)
	}
	t.run, t.graph, t.speculated = &Run{ID: runID, FlowVersionID: v, Status: RunRunning}, g, true
	st := &NodeState{RunID: runID, Key: tr.Key, NodeID: n.ID, Index: idx, Type: n.Type, Status: StatusCompleted,
		Output: tr.Output, Attempt: tr.Attempt}
	t.transitioned(tr, st)
	return st, true, nil
}

// speculable reports whether completing node n at index idx with output
// may be speculated (speculate): a Worker that moves no entity and
// decides no edges, whose successors are Worker or unassigned UX nodes
// at its depth that it alone starts.
func speculable(g *ExecutionGraph, n *Node, idx []int, output json.RawMessage) bool {
	if n.Type != NodeTypeWorker || movementOf(n, true) != nil || g.hasBranches(n.ID) {
		return false
	}
	targets, arrivals := successors(g, n, idx)
	if len(targets) == 0 || len(targets) > maxAhead || len(arrivals) > 0 {
		return false
	}
	for _, tg := range targets {
		if !soleParent(g, tg.node) || tg.node.Depth != n.Depth || g.loopOf(tg.node.ID) != nil ||
			(tg.node.Type != NodeTypeWorker && tg.node.Type != NodeTypeUX) {
			return false
		}
		// An assigned UX node's assignees may need the run's entity, and
		// failing to work them out would fail the run.
		if tg.node.Type == NodeTypeUX && UXPeopleOf(tg.node).Assigned() {
			return false
		}
	}
	// The successors' inputs are made from the callback's bytes, where
	// the ordinary path reads the output back from Postgres: the same
	// JSON unless an object repeats a key (jsonb keeps the last, a gjson
	// mapping finds the first).
	return distinctKeys(gjson.ParseBytes(output))
}

// distinctKeys reports whether no object in the JSON value v repeats a key
// (keys compared unescaped, as jsonb compares them).
func distinctKeys(v gjson.Result) bool {
	ok := true
	switch {
	case v.IsObject():
		seen := map[string]struct{}{}
		v.ForEach(func(k, val gjson.Result) bool {
			if _, dup := seen[k.Str]; dup {
				ok = false
				return false
			}
			seen[k.Str] = struct{}{}
			ok = distinctKeys(val)
			return ok
		})
	case v.IsArray():
		v.ForEach(func(_, val gjson.Result) bool {
			ok = distinctKeys(val)
			return ok
		})
	}
	return ok
}

// errMisspeculated: a speculated step did something speculate ruled out.
var errMisspeculated = fmt.Errorf("%w: a speculated step did not leave its run running with a node started", ErrConflict)

// maxAhead bounds the successors counted down ahead, and those a
// speculated step fires.
const maxAhead = 8

// countDownAhead queues the count-down of the successors of the node tr
// completes, when the run's flow version is known to this process and its
// graph is in memory, and returns it with the version and node it assumed.
func (t *txn) countDownAhead(runID string, tr *NodeTransition) (*countDown, string, string) {
	if tr.Final() != StatusCompleted {
		return nil, "", ""
	}
	v, ok := t.e.versions.get(runID)
	if !ok {
		return nil, "", ""
	}
	gv, ok := t.e.graphs.Load(v)
	if !ok {
		return nil, "", ""
	}
	g := gv.(*ExecutionGraph)
	n, idx, ok := g.parseKey(tr.Key)
	if !ok || n.Type == NodeTypeSplitter {
		return nil, "", ""
	}
	targets, _ := successors(g, n, idx)
	keys := counted(g, targets)
	if len(keys) == 0 || len(keys) > maxAhead {
		return nil, "", ""
	}
	return &countDown{key: tr.Key, got: t.tx.AddPendingLater(t.ctx, runID, keys, -1)}, v, n.ID
}

// runInput returns the run's input, loading it on first use (LockRun
// leaves it out).
func (t *txn) runInput() (json.RawMessage, error) {
	if t.run.Input == nil {
		in, err := t.tx.RunInput(t.ctx, t.run.ID)
		if err != nil {
			return nil, fmt.Errorf("error loading the input of run %s: %w", t.run.ID, err)
		}
		t.run.Input = in
	}
	return t.run.Input, nil
}

func (t *txn) event(typ, key string, payload any) {
	t.events = append(t.events, NewEvent{Type: typ, Key: key, Payload: payload})
}

// spillEvents writes the events so far ahead of the commit, once they are
// a fan-out chunk's worth, so that a big fan-out's transaction does not
// hold an event per instance (and its commit information a transition per
// instance) until it commits: the fan-out's memory stays that of a chunk.
// The commit hook gets the transitions of all but the first listed events
// (the transaction's before the fan-out's) counted, failures listed. A
// speculated step's events are numbered relative to the run's row, unknown
// here: they stay for flush. It reports whether it wrote.
func (t *txn) spillEvents(listed int) (bool, error) {
	if t.speculated || len(t.events) < fanOutChunk {
		return false, nil
	}
	if err := t.tx.AppendEvents(t.ctx, t.run.ID, t.run.EventSeq+1, t.events); err != nil {
		return false, fmt.Errorf("error writing %d events of run %s: %w", len(t.events), t.run.ID, err)
	}
	t.run.EventSeq += int64(len(t.events))
	for i, ev := range t.events {
		t.spilled.note(ev, t.graph, i >= listed)
	}
	t.spilledEvents += len(t.events)
	t.events = nil
	return true, nil
}

// transition applies one compare-and-set and keeps the run's counters.
func (t *txn) transition(tr *NodeTransition) (*NodeState, error) {
	tr.RunID = t.run.ID
	if _, err := ValidatePath([]Status{tr.From}, tr.Steps); err != nil {
		return nil, fmt.Errorf("error moving node %s: %w", tr.Key, err)
	}
	st, err := t.tx.Transition(t.ctx, tr)
	if err != nil {
		return nil, err
	}
	t.transitioned(tr, st)
	return st, nil
}

// transitionLater applies a compare-and-set whose outcome is known — the
// row is in tr.From at attempt prevAttempt, as read under the run's lock
// in this transaction — without waiting for it (Tx.TransitionLater), and
// keeps the run's counters.
func (t *txn) transitionLater(tr *NodeTransition, nodeID string, prevAttempt int) error {
	tr.RunID = t.run.ID
	tr.Attempt = prevAttempt
	if _, err := ValidatePath([]Status{tr.From}, tr.Steps); err != nil {
		return fmt.Errorf("error moving node %s: %w", tr.Key, err)
	}
	if err := t.tx.TransitionLater(t.ctx, tr); err != nil {
		return fmt.Errorf("error moving node %s: %w", tr.Key, err)
	}
	st := &NodeState{RunID: t.run.ID, Key: tr.Key, NodeID: nodeID, Status: tr.Final(), Attempt: prevAttempt, Error: tr.Error}
	if tr.NewAttempt {
		st.Attempt++
	}
	t.transitioned(tr, st)
	return nil
}

// nodeStatus is the payload of a node.status event. It encodes as the map
// it replaced did (the same keys, in the same order) in a quarter of the
// memory: a fan-out holds one per instance until it commits.
type nodeStatus struct {
	Attempt int     `json:"attempt"`
	Error   *string `json:"error,omitempty"`
	NodeID  string  `json:"node_id"`
	Status  Status  `json:"status"`
}

// transitioned keeps the run's counters and writes the events of an applied
// transition.
func (t *txn) transitioned(tr *NodeTransition, st *NodeState) {
	final := tr.Final()
	if tr.From.Active() {
		t.run.ActiveNodes--
	}
	if final.Active() {
		t.run.ActiveNodes++
	}
	if tr.From == StatusFailed {
		t.run.FailedNodes--
	}
	if final == StatusFailed {
		t.run.FailedNodes++
	}
	for _, s := range tr.Steps {
		p := &nodeStatus{Status: s, Attempt: st.Attempt, NodeID: st.NodeID}
		if s == StatusFailed && st.Error != nil {
			p.Error = st.Error
		}
		t.event(EventNodeStatus, st.Key, p)
	}
}

// fire starts node n at index idx with input, from status `from` (pending
// for a first fire, failed for a retry) as attempt prevAttempt+1.
func (t *txn) fire(n *Node, idx []int, input json.RawMessage, from Status, prevAttempt int) error {
	return t.fireDelayed(n, idx, input, from, prevAttempt, 0)
}

func (t *txn) fireDelayed(n *Node, idx []int, input json.RawMessage, from Status, prevAttempt int, delayMs int64) error {
	h := t.e.cfg.Handlers[n.Type]
	if h == nil {
		return fmt.Errorf("no handler for node type %s", n.Type)
	}
	fc := &fireCtx{t: t, node: n, key: InstanceKey(n.ID, idx), idx: idx, input: input,
		from: from, attempt: prevAttempt + 1, delayMs: delayMs}
	if err := h.Fire(t.ctx, fc); err != nil {
		return fmt.Errorf("error firing node %s: %w", fc.key, err)
	}
	if !fc.acted {
		return fmt.Errorf("handler for %s node %s took no action", n.Type, fc.key)
	}
	return nil
}

// completed runs the consequences of a node reaching completed.
func (t *txn) completed(st *NodeState) error {
	n := t.graph.Nodes[st.NodeID]
	if n == nil {
		return fmt.Errorf("node %s is not in the run's graph: %w", st.NodeID, ErrNotFound)
	}
	if err := t.applyMovement(n, st, true); err != nil {
		return err
	}
	if l := t.graph.loopTaken(n.ID, st.Taken); l != nil {
		return t.nextIteration(l, st) // its exit edges wait for the last iteration
	}
	if n.Depth == 0 && len(t.graph.Adjacency[n.ID]) == 0 {
		t.run.TerminalsLeft--
		t.lastOutput.key, t.lastOutput.out = st.Key, st.Output
	}
	if n.Type == NodeTypeSplitter {
		return nil // FanOut instantiates the region instead of walking.
	}
	if st.Taken == nil && t.graph.hasBranches(n.ID) {
		return fmt.Errorf("node %s completed without deciding its edges", st.Key)
	}
	return t.walk(n, st.Key, st.Index, st.Output, st.Taken)
}

// failed runs the consequences of a node reaching failed: an automatic
// retry when allowed, else the enclosing Collector fails too.
func (t *txn) failed(st *NodeState, msg string, auto bool) error {
	n := t.graph.Nodes[st.NodeID]
	if n == nil {
		return fmt.Errorf("node %s is not in the run's graph: %w", st.NodeID, ErrNotFound)
	}
	if auto {
		if r, ok := t.e.cfg.Handlers[n.Type].(Retrier); ok {
			if delay, again := r.RetryDelayMs(RetryParams{Node: n, RunID: t.run.ID, Key: st.Key,
				Attempt: st.Attempt, Error: msg}); again {
				return t.fireDelayed(n, st.Index, st.Input, StatusFailed, st.Attempt, delay)
			}
		}
	}
	if err := t.applyMovement(n, st, false); err != nil {
		return err
	}
	if len(t.graph.failureTargets(n.ID)) > 0 {
		return t.handleFailure(n, st, msg)
	}
	var region *Region
	if n.Depth > 0 && n.Region != "" {
		region = t.graph.Regions[n.Region]
	}
	var coll *Node
	var cidx []int
	var beyond string
	if region != nil {
		if err := t.itemFinished(n, st.Index); err != nil {
			return err
		}
		coll = t.graph.Nodes[region.Collector]
		cidx = st.Index[:len(st.Index)-1]
		if tl, ok := toleranceOf(coll); ok {
			tolerated, b, err := t.tolerate(region, coll, cidx, st, msg, tl)
			if err != nil || tolerated {
				return err
			}
			beyond = b
		}
	}
	if t.failMsg == "" {
		t.failMsg = fmt.Sprintf("node %s failed: %s", st.Key, msg)
	}
	if region == nil {
		return nil
	}
	cmsg := fmt.Sprintf("item %s failed: %s%s", st.Key, msg, beyond)
	cst, err := t.transition(&NodeTransition{Key: InstanceKey(coll.ID, cidx), From: StatusPending,
		Steps: []Status{StatusRunning, StatusFailed}, NewAttempt: true, Error: &cmsg})
	if te, ok := IsTransitionError(err); ok && te.Current != nil {
		return nil // already failed (or cancelled)
	} else if err != nil {
		return err
	}
	return t.failed(cst, cmsg, false)
}

type target struct {
	node *Node
	idx  []int
	key  string
}

// walk reads the outbound edges of a node that finished (taken: the
// targets of the edges it took, nil for all) and fires every downstream
// node whose upstream count reached zero in this transaction, or skips it
// when none of its inbound edges was taken.
func (t *txn) walk(n *Node, key string, idx []int, output json.RawMessage, taken []string) error {
	targets, arrivals := successors(t.graph, n, idx)
	// Items arriving at the Collector closing n's region: counted down with
	// the other arrivals of this transaction at flush.
	t.arrivals = append(t.arrivals, arrivals...)
	if len(arrivals) > 0 {
		if err := t.itemFinished(n, idx); err != nil {
			return err
		}
	}
	if len(targets) == 0 {
		return nil
	}
	if t.run.Status == RunPaused {
		return t.countWhilePaused(key, targets)
	}
	var remaining map[string]Pending
	if keys := counted(t.graph, targets); len(keys) > 0 {
		var err error
		if a := t.ahead; a != nil && a.key == key {
			t.ahead = nil
			remaining, err = a.got()
		} else {
			remaining, err = t.tx.AddPending(t.ctx, t.run.ID, keys, -1)
		}
		if err != nil {
			return fmt.Errorf("error counting down successors of %s: %w", key, err)
		}
	}
	known := map[string]json.RawMessage{key: output}
	for _, tg := range targets {
		p, ok := remaining[tg.key]
		if soleParent(t.graph, tg.node) {
			// n was its only upstream node, and completed now: a first
			// completion, so the target is still pending (a cancelled run's
			// nodes cannot complete), and its start's compare-and-set from
			// pending would fail the transaction if it were not.
			p, ok = Pending{Status: StatusPending}, true
		}
		if !ok || p.Remaining != 0 {
			continue
		}
		if t.graph.MaySkip[tg.node.ID] {
			if err := t.readyDecided(tg, p.Status, key, taken, known); err != nil {
				return err
			}
			continue
		}
		if err := t.fireReady(tg, p.Status, known); err != nil {
			return err
		}
	}
	return nil
}

// soleParent reports whether node n fires as soon as its one upstream node
// completes, without counting its pending parents down: a node other than
// a Collector (whose count is of items) with one inbound edge.
func soleParent(g *ExecutionGraph, n *Node) bool {
	return n.Type != NodeTypeCollector && len(g.Upstream[n.ID]) == 1
}

// counted returns the keys of the targets whose pending parents are
// counted down (not soleParent), in order.
func counted(g *ExecutionGraph, targets []target) []string {
	var keys []string
	for _, tg := range targets {
		if !soleParent(g, tg.node) {
			keys = append(keys, tg.key)
		}
	}
	return keys
}

// successors returns the targets of node n's outbound edges at index idx
// that are at n's depth or deeper, and the Collectors closing n's region
// (an item's arrival, at the enclosing index).
func successors(g *ExecutionGraph, n *Node, idx []int) (targets, arrivals []target) {
	for _, id := range g.Adjacency[n.ID] {
		tn := g.Nodes[id]
		if tn.Depth < n.Depth {
			cidx := idx[:len(idx)-1]
			arrivals = append(arrivals, target{node: tn, idx: cidx, key: InstanceKey(id, cidx)})
			continue
		}
		targets = append(targets, target{node: tn, idx: idx, key: InstanceKey(id, idx)})
	}
	return targets, arrivals
}

// fireReady fires a node whose upstream count reached zero.
func (t *txn) fireReady(tg target, status Status, known map[string]json.RawMessage) error {
	if tg.node.Type == NodeTypeCollector {
		return t.fireCollector(tg.node, tg.idx, status, 0)
	}
	if status != StatusPending {
		return nil // cancelled, or already fired
	}
	input, err := t.inputFor(tg.node, tg.idx, known)
	if err != nil {
		return err
	}
	prev, err := t.pendingAttempt(tg)
	if err != nil {
		return err
	}
	return t.fire(tg.node, tg.idx, input, StatusPending, prev)
}

// inputFor merges the upstream outputs of node n at index idx.
func (t *txn) inputFor(n *Node, idx []int, known map[string]json.RawMessage) (json.RawMessage, error) {
	return t.inputFrom(n, idx, known, nil)
}

// inputFrom merges the outputs of the upstream nodes of n at index idx
// whose edge to n was taken (taken nil: all of them).
func (t *txn) inputFrom(n *Node, idx []int, known map[string]json.RawMessage, taken map[string]bool) (json.RawMessage, error) {
	ups := t.graph.Upstream[n.ID]
	if len(ups) == 0 {
		return t.runInput()
	}
	if taken != nil {
		ups = slices.DeleteFunc(slices.Clone(ups), func(u string) bool { return !taken[u] })
	}
	keys := make([]string, len(ups))
	var missing []string
	for i, u := range ups {
		un := t.graph.Nodes[u]
		k := InstanceKey(u, idx[:un.Depth])
		if un.Type == NodeTypeSplitter && n.Region == u {
			k = itemKey(k, idx[len(idx)-1])
			if _, ok := known[k]; !ok {
				missing = append(missing, InstanceKey(u, idx[:un.Depth]))
			}
		} else if _, ok := known[k]; !ok {
			missing = append(missing, k)
		}
		keys[i] = k
	}
	if len(missing) > 0 {
		outs, err := t.tx.Outputs(t.ctx, t.run.ID, missing)
		if err != nil {
			return nil, fmt.Errorf("error loading upstream outputs of %s: %w", InstanceKey(n.ID, idx), err)
		}
		for k, v := range outs {
			known[k] = v
		}
	}
	merge := make([]Upstream, len(ups))
	for i, u := range ups {
		out, ok := known[keys[i]]
		if !ok && t.graph.Nodes[u].Type == NodeTypeSplitter && n.Region == u {
			sk := InstanceKey(u, idx[:t.graph.Nodes[u].Depth])
			out = json.RawMessage(gjson.GetBytes(known[sk], strconv.Itoa(idx[len(idx)-1])).Raw)
		}
		merge[i] = Upstream{NodeID: u, Output: out, Mapping: t.graph.EdgeData[EdgeKey(u, n.ID)]}
	}
	if len(merge) == 1 && len(merge[0].Mapping) == 0 && t.graph.Nodes[ups[0]].Type == NodeTypeSplitter {
		return merge[0].Output, nil // a region's first node gets its item as is
	}
	return MergeInputs(merge)
}

func itemKey(splitterKey string, i int) string { return splitterKey + "#" + strconv.Itoa(i) }

// fanOut instantiates a Splitter's region once per item, in bulk
// statements, and fires the instances that depend on the Splitter alone.
func (t *txn) fanOut(s *Node, sidx []int, skey string, items []json.RawMessage) error {
	region := t.graph.Regions[s.ID]
	if region == nil {
		return fmt.Errorf("splitter %s has no region in the graph", s.ID)
	}
	coll := t.graph.Nodes[region.Collector]
	t.event(EventItemsSpawned, skey, map[string]any{"items": len(items)})
	if len(items) == 0 {
		return t.fireCollector(coll, sidx, StatusPending, 0)
	}
	collKey := InstanceKey(coll.ID, sidx)
	if err := t.tx.SetPending(t.ctx, t.run.ID, collKey, len(items)*len(t.graph.Upstream[coll.ID])); err != nil {
		return fmt.Errorf("error arming collector %s: %w", collKey, err)
	}
	pending := make(map[string]int, len(region.Direct))
	for _, m := range region.Direct {
		c := 0
		for _, u := range t.graph.Upstream[m] {
			if u != s.ID {
				c++
			}
		}
		pending[m] = c
	}
	// The instances that depend on the Splitter alone fire first, into
	// starts, so that their rows are created already started: one INSERT
	// instead of an INSERT and an UPDATE of every instance. A fire that
	// needs its row (a nested Splitter, a delayed dispatch) is taken again
	// once the rows exist. Items go fanOutChunk at a time, so that a big
	// fan-out does not hold every instance's row and outbox payload in
	// memory at once.
	// Under maxConcurrency, the items from limit on are created queued
	// (concurrency.go) and the Splitter's row points at the first of them.
	limit := maxConcurrencyOf(s)
	if limit >= len(items) {
		limit = 0
	} else if limit > 0 {
		if err := t.tx.SetPending(t.ctx, t.run.ID, skey, limit); err != nil {
			return fmt.Errorf("error queueing the items of %s: %w", skey, err)
		}
	}
	outer := t.bulk
	defer func() { t.bulk = outer }()
	var again []target
	listed := len(t.events) // the transaction's own, before the fan-out's
	for off := 0; off < len(items); off += fanOutChunk {
		more, err := t.instantiate(region, pending, sidx, skey, items[off:min(off+fanOutChunk, len(items))], off, limit)
		if err != nil {
			return fmt.Errorf("error creating instances of %s: %w", s.ID, err)
		}
		again = append(again, more...)
		if spilled, err := t.spillEvents(listed); err != nil {
			return err
		} else if spilled {
			listed = 0
		}
	}
	known := map[string]json.RawMessage{}
	for _, tg := range again {
		i := tg.idx[len(tg.idx)-1]
		known[itemKey(skey, i)] = items[i]
	}
	t.bulk = &bulkFires{}
	for _, tg := range again {
		if err := t.fireReady(tg, StatusPending, known); err != nil {
			return err
		}
	}
	return t.flushBulk(t.bulk)
}

// fanOutChunk is how many items of a fan-out are instantiated at a time.
const fanOutChunk = 2000

// instantiate creates the region's instances for items (at offset off of
// the fan-out), those that depend on the Splitter alone already started —
// or, from item limit on when limit > 0, queued — and returns the fires
// that need their row first.
func (t *txn) instantiate(region *Region, pending map[string]int, sidx []int, skey string,
	items []json.RawMessage, off, limit int) ([]target, error) {
	known := make(map[string]json.RawMessage, len(items))
	for i, it := range items {
		known[itemKey(skey, off+i)] = it
	}
	first := &bulkFires{unwritten: true}
	t.bulk = first
	var again []target
	for i := range items {
		if limit > 0 && off+i >= limit {
			break // queued
		}
		idx := childIndex(sidx, off+i)
		for _, m := range region.Direct {
			if pending[m] != 0 {
				continue
			}
			tg := target{node: t.graph.Nodes[m], idx: idx, key: InstanceKey(m, idx)}
			if err := t.fireReady(tg, StatusPending, known); errors.Is(err, errNeedsRow) {
				again = append(again, tg)
			} else if err != nil {
				return nil, err
			}
		}
	}
	started := make(map[string]BulkStart, len(first.starts))
	for _, st := range first.starts {
		started[st.Key] = st
	}
	rows := make([]NodeState, 0, len(items)*len(region.Direct))
	starts := make([]BulkStart, 0, cap(rows))
	for i := range items {
		idx := childIndex(sidx, off+i)
		queued := limit > 0 && off+i >= limit
		for _, m := range region.Direct {
			k := InstanceKey(m, idx)
			p := pending[m]
			if queued && p == 0 {
				p = 1 // the slot it waits for
			}
			rows = append(rows, NodeState{Key: k, NodeID: m, Type: t.graph.Nodes[m].Type,
				Index: idx, Status: StatusPending, PendingParents: p})
			starts = append(starts, started[k])
		}
	}
	if err := t.tx.InsertStartedNodes(t.ctx, t.run.ID, rows, starts); err != nil {
		return nil, err
	}
	return again, t.flushBulk(first)
}

func childIndex(parent []int, i int) []int {
	idx := make([]int, len(parent)+1)
	copy(idx, parent)
	idx[len(parent)] = i
	return idx
}

// fireCollector gathers a Collector's items in index order and fires it.
func (t *txn) fireCollector(c *Node, idx []int, from Status, prevAttempt int) error {
	if from != StatusPending && from != StatusFailed {
		return nil
	}
	if from == StatusFailed && t.graph.hasBranches(c.ID) {
		// A failure its failure edges handed on is final.
		cur, err := t.tx.Node(t.ctx, t.run.ID, InstanceKey(c.ID, idx))
		if err != nil {
			return err
		}
		if cur.Taken != nil {
			return nil
		}
		prevAttempt = cur.Attempt
	}
	ups := t.graph.Upstream[c.ID]
	if len(ups) == 1 && len(t.graph.EdgeData[EdgeKey(ups[0], c.ID)]) == 0 {
		// Each item's output as is: the array is built by the database,
		// not from every instance loaded (100,000 of them at the end of a
		// 100,000-item fan-out).
		arr, err := t.tx.ItemOutputs(t.ctx, t.run.ID, ups[0], c.ID, idx)
		if err != nil {
			return fmt.Errorf("error gathering items of %s: %w", InstanceKey(c.ID, idx), err)
		}
		return t.fireCollected(c, idx, arr, from, prevAttempt)
	}
	states, err := t.tx.ItemStates(t.ctx, t.run.ID, ups, idx)
	if err != nil {
		return fmt.Errorf("error gathering items of %s: %w", InstanceKey(c.ID, idx), err)
	}
	byItem := make(map[int]map[string]json.RawMessage)
	var order []int
	for _, s := range states {
		i := s.Index[len(s.Index)-1]
		m, ok := byItem[i]
		if !ok {
			m = make(map[string]json.RawMessage, len(ups))
			byItem[i] = m
			order = append(order, i)
		}
		if edgeTaken(&s, c.ID) {
			m[s.NodeID] = s.Output
		}
	}
	sort.Ints(order)
	items := make([]json.RawMessage, 0, len(order))
	for _, i := range order {
		m := byItem[i]
		merge := make([]Upstream, len(ups))
		for j, u := range ups {
			merge[j] = Upstream{NodeID: u, Output: m[u], Mapping: t.graph.EdgeData[EdgeKey(u, c.ID)]}
		}
		v, err := MergeInputs(merge)
		if err != nil {
			return err
		}
		items = append(items, v)
	}
	arr, err := json.Marshal(items)
	if err != nil {
		return fmt.Errorf("error encoding collector output: %w", err)
	}
	return t.fireCollected(c, idx, arr, from, prevAttempt)
}

// fireCollected fires Collector c with its items' array — or, under
// toleratedFailures, with {items, errors}, or fails it when more items
// failed than it tolerates.
func (t *txn) fireCollected(c *Node, idx []int, arr json.RawMessage, from Status, prevAttempt int) error {
	tl, ok := toleranceOf(c)
	if !ok {
		return t.fire(c, idx, arr, from, prevAttempt)
	}
	out, msg, ok, err := t.toleratedOutput(c, idx, arr, tl)
	if err != nil {
		return err
	}
	if ok {
		return t.fire(c, idx, out, from, prevAttempt)
	}
	cst, err := t.transition(&NodeTransition{Key: InstanceKey(c.ID, idx), From: from,
		Steps: []Status{StatusRunning, StatusFailed}, Attempt: prevAttempt, NewAttempt: true, Error: &msg})
	if err != nil {
		return err
	}
	return t.failed(cst, msg, false)
}

func orNull(v json.RawMessage) json.RawMessage {
	if len(v) == 0 {
		return json.RawMessage("null")
	}
	return v
}

func (t *txn) refireCollector(c *Node, cur *NodeState) error {
	if cur.PendingParents > 0 {
		return fmt.Errorf("%w: collector %s still waits for %d item(s); retry the failed items instead", ErrConflict, cur.Key, cur.PendingParents)
	}
	return t.fireCollector(c, cur.Index, StatusFailed, cur.Attempt)
}

func (t *txn) heartbeat(key string, attempt int) error {
	cur, err := t.tx.Node(t.ctx, t.run.ID, key)
	if err != nil {
		return err
	}
	if cur.Status != StatusRunning || cur.Attempt != attempt {
		return fmt.Errorf("%w: %v", ErrConflict, &TransitionError{Key: key, Want: StatusRunning, Current: cur})
	}
	secs := 0
	if to, ok := t.e.cfg.Handlers[cur.Type].(Timeouter); ok {
		secs = to.TimeoutSeconds(t.graph.Nodes[cur.NodeID])
	}
	if secs > 0 {
		if _, err := t.tx.ExtendDeadline(t.ctx, t.run.ID, key, attempt, secs); err != nil {
			return err
		}
	}
	t.event(EventNodeHeartbeat, key, map[string]any{"attempt": attempt})
	return nil
}

// duplicateOr turns a failed compare-and-set on a callback into errNoChange
// for an identical repeat, or a conflict.
func (t *txn) duplicateOr(err error, p CallbackParams) error {
	te, ok := IsTransitionError(err)
	if !ok {
		return err
	}
	if c := te.Current; c != nil && c.Attempt == p.Attempt && c.Status == p.Status {
		switch p.Status {
		case StatusCompleted:
			if jsonEqual(c.Output, orNull(p.Output)) {
				return errNoChange
			}
		case StatusFailed:
			if c.Error != nil && (*c.Error == p.Error || (p.Error == "" && *c.Error == "worker reported failure")) {
				return errNoChange
			}
		}
	}
	return fmt.Errorf("%w: %v", ErrConflict, te)
}

// jsonEqual compares two JSON documents semantically (key order and
// whitespace aside; numbers compared as written, so 1E700 works).
func jsonEqual(a, b json.RawMessage) bool {
	decode := func(raw json.RawMessage) (any, bool) {
		d := json.NewDecoder(bytes.NewReader(raw))
		d.UseNumber()
		var v any
		return v, d.Decode(&v) == nil
	}
	x, ok1 := decode(a)
	y, ok2 := decode(b)
	return ok1 && ok2 && reflect.DeepEqual(x, y)
}

// flush settles the run status and writes events and the run row.
func (t *txn) flush() error {
	if t.run == nil {
		return nil
	}
	if err := t.countArrivals(); err != nil {
		return err
	}
	// Deliveries the callbacks proved are logged after the events so far
	// and before the run's settlement.
	heardAt := len(t.events)
	if t.speculated {
		// A speculated step leaves the run running (speculate): its
		// completed node's successors started, nothing failed or
		// finished. Handlers are what fire them; should one have done
		// otherwise, the step is applied again the ordinary way.
		if r := t.run; r.ActiveNodes < 0 || r.FailedNodes != 0 || r.TerminalsLeft != 0 || t.failMsg != "" {
			return errMisspeculated
		}
	} else if err := t.settleRun(); err != nil {
		return err
	}
	if len(t.notes) > 0 {
		if err := t.tx.InsertNotifications(t.ctx, t.notes); err != nil {
			return fmt.Errorf("error writing %d notifications of run %s: %w", len(t.notes), t.run.ID, err)
		}
	}
	if t.run.Status == RunPaused {
		// What work in flight dispatched meanwhile (a retry, a loop's
		// next iteration) waits for the resume too.
		if _, err := t.tx.HoldDispatches(t.ctx, t.run.ID, true); err != nil {
			return fmt.Errorf("error holding the dispatches of run %s: %w", t.run.ID, err)
		}
	}
	first := t.run.EventSeq + 1
	t.run.EventSeq += int64(len(t.events))
	if err := t.tx.SaveRunWithEvents(t.ctx, RunSave{Run: t.run, FirstSeq: first, Events: t.events,
		HeardKeys: t.heardKeys, HeardAttempts: t.heardAttempts, HeardAt: heardAt, Relative: t.speculated}); err != nil {
		return fmt.Errorf("error saving run %s and %d events: %w", t.run.ID, len(t.events), err)
	}
	if t.ended != "" && !t.starting {
		if err := t.beginQueued(); err != nil {
			return fmt.Errorf("error beginning the next queued run of run %s's entity: %w", t.run.ID, err)
		}
	}
	if t.ended != "" && t.run.ParentRunID != nil && !t.starting {
		return t.childEnded()
	}
	return nil
}

// settleRun derives the run status from its counters: completed when every
// terminal node completed; failed when a node failed and nothing can
// progress; back to running when a retry made progress possible again.
func (t *txn) settleRun() error {
	r := t.run
	// A run past its deadline resumes only by a retry (a node active again).
	pastDeadline := r.Error != nil && *r.Error == RunDeadlineMessage
	if r.Status == RunFailed && (r.ActiveNodes > 0 || (r.FailedNodes == 0 && !pastDeadline)) {
		r.Status = RunRunning
		r.Error = nil
		r.FinishedAt = nil
		t.event(EventRunResumed, "", nil)
	}
	if r.Status != RunRunning {
		return nil
	}
	switch {
	case r.TerminalsLeft <= 0 && r.ActiveNodes <= 0:
		out, err := t.runOutput()
		if err != nil {
			return err
		}
		r.Status = RunCompleted
		t.finishRun(out, "")
		t.event(EventRunCompleted, "", nil)
	case r.FailedNodes > 0 && r.ActiveNodes == 0:
		msg := t.failMsg
		if msg == "" {
			m, err := t.tx.FirstFailure(t.ctx, r.ID)
			if err != nil {
				return err
			}
			msg = m
		}
		r.Status = RunFailed
		t.finishRun(nil, msg)
		t.event(EventRunFailed, "", map[string]any{"error": msg})
	}
	return nil
}

func (t *txn) finishRun(output json.RawMessage, errMsg string) {
	t.ended = t.run.Status
	if t.run.Status == RunFailed {
		t.notify(NotifyRunFailed, "", map[string]any{"error": errMsg})
	}
	t.run.Output = output
	if errMsg != "" {
		t.run.Error = &errMsg
	} else {
		t.run.Error = nil
	}
}

// runOutput is the single terminal node's output, or an object keyed by
// terminal node id when there are several.
func (t *txn) runOutput() (json.RawMessage, error) {
	var terms []string
	for _, id := range t.graph.TerminalNodes {
		if t.graph.Nodes[id].Depth == 0 {
			terms = append(terms, id)
		}
	}
	if len(terms) == 1 && t.lastOutput.key == terms[0] && t.lastOutput.out != nil {
		// The one terminal node completed in this transaction, its output
		// read back from its row (a sub-flow run's end, the last step of
		// a chain): nothing to load.
		return t.lastOutput.out, nil
	}
	outs, err := t.tx.Outputs(t.ctx, t.run.ID, terms)
	if err != nil {
		return nil, fmt.Errorf("error loading terminal outputs of run %s: %w", t.run.ID, err)
	}
	if len(terms) == 1 {
		return orNull(outs[terms[0]]), nil
	}
	if len(t.graph.MaySkip) > 0 {
		// Only the terminal nodes that completed: a skipped one has no
		// output to give.
		states, err := t.tx.NodeStates(t.ctx, t.run.ID, terms)
		if err != nil {
			return nil, fmt.Errorf("error loading terminal nodes of run %s: %w", t.run.ID, err)
		}
		terms = slices.DeleteFunc(terms, func(id string) bool {
			st := states[id]
			return st == nil || st.Status != StatusCompleted
		})
	}
	m := make(map[string]json.RawMessage, len(terms))
	for _, id := range terms {
		m[id] = orNull(outs[id])
	}
	return json.Marshal(m)
}

// sortedStatic lists the graph's static (depth 0) node ids, sorted.
func sortedStatic(g *ExecutionGraph) []string {
	ids := make([]string, 0, len(g.Nodes))
	for id, n := range g.Nodes {
		if n.Depth == 0 {
			ids = append(ids, id)
		}
	}
	sort.Strings(ids)
	return ids
}

// applyMovement moves the run's entity per the node's entityMovement (and
// writes its setMetadata from the node's output), in this transaction.
func (t *txn) applyMovement(n *Node, st *NodeState, success bool) error {
	key := st.Key
	if t.run.EntityID == nil {
		return nil
	}
	m := movementOf(n, success)
	if t.outcome != "" && n.Type == NodeTypeUX {
		if om := outcomeMovement(n, t.outcome); om != nil {
			m = om
		}
	}
	if m == nil {
		return nil
	}
	mv := EntityMove{Kind: JourneyMoved, ToSection: m.TargetSectionID, NodeKey: key,
		CompleteAs: m.CompleteAs, SetType: m.SetEntityType}
	if success {
		meta, err := m.metadataFrom(st.Output)
		if err != nil {
			return fmt.Errorf("error setting metadata from node %s: %w", key, err)
		}
		mv.Metadata = meta
	}
	if n.Type == NodeTypeUX {
		mv.Actor, mv.Comment = t.actor, t.comment
	}
	return t.moveEntity(mv)
}

// moveEntity moves the run's entity and records the journey and run events.
func (t *txn) moveEntity(m EntityMove) error {
	m.ID, m.EntityID, m.RunID = t.e.cfg.NewID(), *t.run.EntityID, t.run.ID
	moved, err := t.tx.MoveEntity(t.ctx, m)
	if err != nil {
		return fmt.Errorf("error moving entity %s: %w", m.EntityID, err)
	}
	p := map[string]any{"entity_id": m.EntityID, "board_id": moved.BoardID, "kind": m.Kind, "entity_seq": moved.Seq}
	if m.ToSection != "" {
		p["to_section_id"] = m.ToSection
	}
	if m.CompleteAs != "" {
		p["complete_as"] = m.CompleteAs
	}
	if m.SetType != "" {
		p["entity_type"] = m.SetType
	}
	if m.Comment != "" {
		p["comment"] = m.Comment
	}
	if len(m.Metadata) > 0 {
		p["metadata"] = m.Metadata
	}
	t.event(EventEntityMoved, m.NodeKey, p)
	return nil
}

// countArrivals counts down each Collector by the items that reached it in
// this transaction, in one UPDATE … RETURNING per Collector, and fires the
// Collectors that reached zero — exactly one transaction sees zero. Firing
// a Collector may complete further items (nested regions), so it repeats
// until nothing arrives.
func (t *txn) countArrivals() error {
	for len(t.arrivals) > 0 {
		arr := t.arrivals
		t.arrivals = nil
		count := map[string]int{}
		var order []target
		for _, a := range arr {
			if count[a.key] == 0 {
				order = append(order, a)
			}
			count[a.key]++
		}
		for _, tg := range order {
			remaining, err := t.tx.AddPending(t.ctx, t.run.ID, []string{tg.key}, -count[tg.key])
			if err != nil {
				return fmt.Errorf("error counting items of %s: %w", tg.key, err)
			}
			p, ok := remaining[tg.key]
			if !ok || p.Remaining != 0 || t.run.Status == RunPaused {
				continue // a paused run's Collector fires when it resumes
			}
			if err := t.fireReady(tg, p.Status, nil); err != nil {
				return err
			}
		}
	}
	return nil
}
