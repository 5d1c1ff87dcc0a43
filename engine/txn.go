package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/stitchd/stitchd/engine/internal/writer"
)

// txn is the state of one engine transaction over one run.
type txn struct {
	e   *Engine
	ctx context.Context
	// tx reads (and locks); every write goes through w.
	tx     TxReads
	w      *writer.Writer
	run    *Run
	graph  *ExecutionGraph
	events []NewEvent
	// spilled is what the events written before the commit
	// (spillEvents) did, for the commit hook; spilledEvents counts them.
	spilled       CommitInfo
	spilledEvents int
	failMsg       string
	// deliveredKeys and deliveredAttempts are (key, attempt) pairs a worker
	// called back for (or whose deadline passed): their dispatches arrived.
	deliveredKeys     []string
	deliveredAttempts []int
	// arrivals are items that reached their Collector in this transaction;
	// flush counts them down with one UPDATE … RETURNING per Collector.
	arrivals []target
	// completedInBulk holds nodes a batch's bulk compare-and-set
	// (loadAndBulkComplete) or a group's completion across runs
	// (completeTogether) completed, by key.
	completedInBulk map[string]*NodeState
	// outcome is the outcome a person chose at the UX node this
	// transaction completes ("" otherwise), for its entity movement;
	// actor is who decided it, for the journey.
	outcome, actor string
	// comment is the person's comment on that decision, for the journey.
	comment string
	// noSpeculation forbids speculating and assuming a count-down's
	// answer (the retry of a transaction whose assumption failed).
	noSpeculation bool
	// nested are transactions over other runs made in this one's database
	// transaction (a sub-flow's start, a parent told of its child's end).
	nested []*txn
	// starting: the transaction starts its run as a SubFlow node's child,
	// and the node learns at once if the run ends in it.
	starting bool
	// sharesWriter: a txn over another run, sharing its parent's writer
	// (nestedTxn); the parent's flush ends what they share.
	sharesWriter bool
	// collectedFirst is the key of the instance a fan-out is firing in
	// its collection of first fires: it fires at once, what it sets off
	// keeps the bounds (mayDefer).
	collectedFirst string
	// ended is the status the run finished in in this transaction.
	ended RunStatus
	// ends collects the sub-flow runs that end in the database
	// transaction, whose parents are told before it commits.
	ends *childEnds
	// firings counts the nodes fired in the transaction, deferred those
	// left for a later one past Config.MaxFirings (fireDelayed).
	firings, deferred int
	// work is what the database transaction created, shared with the
	// nested transactions of its sub-flow runs.
	work *txWork
	// notes are the notifications the transaction writes at flush.
	notes []Notification
	// comp is the run's compensation once read (compLoaded), nil when
	// none began (compensate.go).
	comp       *Compensation
	compLoaded bool
	// branchCancelled holds the nodes a join's first arrival cancelled or
	// skipped in this transaction (join.go); nil when none.
	branchCancelled map[string]bool
	// lastOutput is the output of the last terminal node completed in
	// the transaction, as its row holds it (nil when not read back).
	lastOutput struct {
		key string
		out json.RawMessage
	}
}

// newTxn starts the state of a transaction over one run, before its first
// statement.
func (e *Engine) newTxn(ctx context.Context, tx Tx, noSpeculation bool, ends *childEnds, room *writer.ClaimRoom) *txn {
	return &txn{e: e, ctx: ctx, tx: tx, w: e.newWriter(ctx, tx, room), noSpeculation: noSpeculation, ends: ends}
}

// txWork counts the node rows a database transaction created (runs
// started, fan-outs, loop iterations): past Config.MaxRows, sub-flow runs
// start in later transactions (fireDelayed), so that 400 items each
// starting a sub-flow of 400 items is many short transactions, not one.
type txWork struct{ rows int }

// addRows counts n node rows created (the count is made when first
// needed: a chain's step creates none).
func (t *txn) addRows(n int) {
	if t.work == nil {
		t.work = &txWork{}
	}
	t.work.rows += n
}

// rowsMade is how many node rows the database transaction created.
func (t *txn) rowsMade() int {
	if t.work == nil {
		return 0
	}
	return t.work.rows
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
	t.e.versions.put(r.ID, runVersion{id: r.FlowVersionID, reran: r.Reran})
}

// lockAndTransition is load followed by transition, in one round trip
// when the run is not locked yet: the lock is queued before the
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
	queued := t.queueCountDown(runID, tr)
	st, err := t.w.Transition(tr)
	if lerr := t.lockAnswered(runID, locked, err); lerr != nil {
		return nil, lerr
	}
	if err != nil {
		return nil, err // the transaction is rolled back, count-down included
	}
	if err := t.keepCountDown(queued, st); err != nil {
		return nil, err
	}
	t.transitioned(tr, st)
	return st, nil
}

// runInput returns the run's input, loading it on first use (LockRun
// leaves it out).
func (t *txn) runInput() (json.RawMessage, error) {
	if t.run.Input == nil {
		if in, ok := t.e.inputs.get(t.run.ID); ok {
			t.run.Input = in
			return in, nil
		}
		in, err := t.tx.RunInput(t.ctx, t.run.ID)
		if err != nil {
			return nil, fmt.Errorf("error loading the input of run %s: %w", t.run.ID, err)
		}
		t.run.Input = in
		t.e.inputs.put(t.run.ID, in)
	}
	return t.run.Input, nil
}

func (t *txn) event(typ, key string, payload any) {
	t.events = append(t.events, NewEvent{Type: typ, Key: key, Payload: payload})
}

// transition applies one compare-and-set and keeps the run's counters.
func (t *txn) transition(tr *NodeTransition) (*NodeState, error) {
	tr.RunID = t.run.ID
	if _, err := ValidatePath([]Status{tr.From}, tr.Steps); err != nil {
		return nil, fmt.Errorf("error moving node %s: %w", tr.Key, err)
	}
	st, err := t.w.Transition(tr)
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
	if err := t.w.TransitionLater(tr); err != nil {
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

func orNull(v json.RawMessage) json.RawMessage {
	if len(v) == 0 {
		return json.RawMessage("null")
	}
	return v
}

// newWriter is the writer of a database transaction, claiming at most
// what room has left (shared by the txns of one database transaction).
func (e *Engine) newWriter(ctx context.Context, tx TxWrites, room *writer.ClaimRoom) *writer.Writer {
	return writer.New(ctx, writer.Params{Tx: tx, Lease: e.cfg.ClaimLease, Room: room, Began: e.cfg.Clock.Now()})
}

// claimRoom asks for the dispatcher's room (Claims), before a transaction
// begins: nothing calls the dispatcher from inside one.
func (e *Engine) claimRoom() *writer.ClaimRoom {
	if e.cfg.ClaimLease > 0 && e.cfg.Claims != nil {
		return writer.NewClaimRoom(e.cfg.Claims.Room())
	}
	return writer.NewClaimRoom(0)
}
