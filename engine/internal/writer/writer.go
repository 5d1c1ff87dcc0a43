package writer

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/stitchd/stitchd/engine/enginetype"
)

// Writer is the one way a transaction's rules write: the engine reads
// through TxReads (txn.tx) and writes through its Writer (txn.w), which
// owns the transaction's TxWrites and its context and counts every write
// that succeeded, so that group commit knows whether an operation it
// rejected left anything behind (engine/internal/commit). A write the writer
// does not make cannot be made: the rules hold no TxWrites. It also owns
// what makes the writes fewer: count-downs queued with a completion
// (countdown.go), claimed outbox rows (claims.go), first
// fires collected in bulk (bulk.go) and a speculated step's save
// relative to its run's row (Speculate).
type Writer struct {
	ctx    context.Context
	tx     enginetype.TxWrites
	writes int
	// countedDown are the count-downs queued with a completion and kept,
	// not yet taken by the walk (countdown.go).
	countedDown []*CountDown
	// lease, room and began are what claims take (claims.go):
	// the lease of a claimed row, how many more rows the database
	// transaction may claim, and when the leases began; claimed are the
	// rows written claimed, for the commit.
	lease   time.Duration
	room    *ClaimRoom
	began   time.Time
	claimed []enginetype.ClaimedDispatch
	// bulks are the first fires being collected, by run
	// (bulk.go).
	bulks map[string]*Bulk
	// speculated is the run whose step was speculated (Speculate), "" when
	// none was.
	speculated string
	// assumed: a count-down's answer was assumed (CountDownUntakenLater,
	// AssumeCountDown).
	assumed bool
	// ready is a join assumed ready whose check waits for the join's
	// first fire to carry it (AssumeCountDown).
	ready *readyJoin
	// trees are what the operation learnt of its runs' trees' counts, by
	// run, with what it added since (trees.go).
	trees map[string]*treeGrowth
}

// Params are what a Writer is made of.
type Params struct {
	// Tx is the transaction's writes.
	Tx enginetype.TxWrites
	// Lease is how long a claimed outbox row is leased for; 0 claims none.
	Lease time.Duration
	// Room is how many rows the database transaction may still claim
	// (shared by its writers); nil claims none.
	Room *ClaimRoom
	// Began is when the leases of the rows claimed begin.
	Began time.Time
}

// New is the writer of a database transaction's operation.
func New(ctx context.Context, p Params) *Writer {
	return &Writer{ctx: ctx, tx: p.Tx, lease: p.Lease, room: p.Room, began: p.Began}
}

// Writes is how many writes succeeded: an operation that made none can be
// left out of a shared transaction.
func (w *Writer) Writes() int { return w.writes }

// Wrote counts a write made for the writer's operation outside it (the
// completion group commit made for it across runs).
func (w *Writer) Wrote() { w.writes++ }

// Mark is where a Writer stood (Mark), to leave what came after out
// (Restore): an operation rejected in a shared transaction.
type Mark struct {
	claimed int
	ready   *readyJoin
}

// Mark is where the writer stands now.
func (w *Writer) Mark() Mark { return Mark{claimed: len(w.claimed), ready: w.ready} }

// Restore forgets the claims and the assumed-ready join made since m.
func (w *Writer) Restore(m Mark) {
	w.claimed = w.claimed[:m.claimed]
	w.ready = m.ready
}

func (w *Writer) wrote(err error) error {
	if err == nil {
		w.writes++
	}
	return err
}

// SaveRunWithEvents saves the run and its events; a speculated run's row
// was never read, so its counters are saved as changes to the row's.
func (w *Writer) SaveRunWithEvents(s enginetype.RunSave) error {
	s.Relative = s.Run.ID == w.speculated
	return w.wrote(w.tx.SaveRunWithEvents(w.ctx, s))
}

// AdmitRun is TxWrites.AdmitRun, counted when it wrote.
func (w *Writer) AdmitRun(flowID string) {
	w.writes++
	w.tx.AdmitRun(w.ctx, flowID)
}

// InsertRun is TxWrites.InsertRun, counted when it wrote.
func (w *Writer) InsertRun(run *enginetype.Run) error {
	return w.wrote(w.tx.InsertRun(w.ctx, run))
}

// SaveRun is TxWrites.SaveRun, counted when it wrote.
func (w *Writer) SaveRun(run *enginetype.Run) error {
	return w.wrote(w.tx.SaveRun(w.ctx, run))
}

// InsertNodes is TxWrites.InsertNodes, counted when it wrote.
func (w *Writer) InsertNodes(runID string, nodes []enginetype.NodeState) error {
	return w.wrote(w.tx.InsertNodes(w.ctx, runID, nodes))
}

// InsertStartedNodes is TxWrites.InsertStartedNodes, counted when it wrote.
func (w *Writer) InsertStartedNodes(runID string, nodes []enginetype.NodeState, starts []enginetype.BulkStart) error {
	return w.wrote(w.tx.InsertStartedNodes(w.ctx, runID, nodes, starts))
}

// Transition is TxWrites.Transition, counted when it wrote.
func (w *Writer) Transition(t *enginetype.NodeTransition) (*enginetype.NodeState, error) {
	// The check before the row moves (an immediate transition's failure
	// would not read as a failed assumption).
	if err := w.readyBefore(t.RunID, []string{t.Key}); err != nil {
		return nil, err
	}
	r0, err := w.tx.Transition(w.ctx, t)
	return r0, w.wrote(err)
}

// Speculate queues the compare-and-set of a speculated step (speculate):
// it checks and locks the run, and the run is saved relative to its row.
func (w *Writer) Speculate(t *enginetype.NodeTransition) error {
	if w.speculated != "" && w.speculated != t.RunID {
		// Its save relative to its row would be taken for the other's.
		return fmt.Errorf("a step of run %s speculated in the transaction of run %s's", t.RunID, w.speculated)
	}
	if err := w.TransitionLater(t); err != nil {
		return err
	}
	w.speculated = t.RunID
	return nil
}

// Speculated reports whether run's step was speculated.
func (w *Writer) Speculated(runID string) bool { return runID != "" && runID == w.speculated }

// TransitionLater is TxWrites.TransitionLater, counted when it wrote.
func (w *Writer) TransitionLater(t *enginetype.NodeTransition) error {
	if !w.carryReady(t) {
		if err := w.readyBefore(t.RunID, []string{t.Key}); err != nil {
			return err
		}
	}
	return w.wrote(w.tx.TransitionLater(w.ctx, t))
}

// SkipLater queues the skip of keys and the count-downs then, whose
// answers the rules know (CountDownUntakenLater), in one statement.
func (w *Writer) SkipLater(runID string, keys []string, then []enginetype.UntakenCountDown) error {
	if err := w.readyBefore(runID, keys); err != nil {
		return err
	}
	if err := w.wrote(w.tx.SkipLater(w.ctx, runID, keys, then)); err != nil {
		return err
	}
	if len(then) > 0 {
		w.assumed = true
	}
	return nil
}

// ArchiveIteration is TxWrites.ArchiveIteration, counted when it wrote.
func (w *Writer) ArchiveIteration(runID string, keys []string) (map[string]int, error) {
	r0, err := w.tx.ArchiveIteration(w.ctx, runID, keys)
	return r0, w.wrote(err)
}

// InsertIteration is TxWrites.InsertIteration, counted when it wrote.
func (w *Writer) InsertIteration(runID string, nodes []enginetype.NodeState) error {
	return w.wrote(w.tx.InsertIteration(w.ctx, runID, nodes))
}

// HoldDispatches is TxWrites.HoldDispatches, counted when it wrote.
func (w *Writer) HoldDispatches(runID string, hold bool) (int, error) {
	r0, err := w.tx.HoldDispatches(w.ctx, runID, hold)
	return r0, w.wrote(err)
}

// TakeEvent is TxWrites.TakeEvent, counted when it wrote.
func (w *Writer) TakeEvent(runID string, wait enginetype.EventWait) (*enginetype.TakenEvent, error) {
	r0, err := w.tx.TakeEvent(w.ctx, runID, wait)
	return r0, w.wrote(err)
}

// EventDelivered is TxWrites.EventDelivered, counted when it wrote.
func (w *Writer) EventDelivered(eventID, runID, key string) error {
	return w.wrote(w.tx.EventDelivered(w.ctx, eventID, runID, key))
}

// FailActiveNodes is TxWrites.FailActiveNodes, counted when it wrote.
func (w *Writer) FailActiveNodes(runID, msg string) ([]string, error) {
	r0, err := w.tx.FailActiveNodes(w.ctx, runID, msg)
	return r0, w.wrote(err)
}

// WakeNodes is TxWrites.WakeNodes, counted when it wrote.
func (w *Writer) WakeNodes(runID string, due []enginetype.DueNode) ([]enginetype.NodeState, error) {
	r0, err := w.tx.WakeNodes(w.ctx, runID, due)
	return r0, w.wrote(err)
}

// DeferNode is TxWrites.DeferNode, counted when it wrote.
func (w *Writer) DeferNode(runID, key string, input json.RawMessage) error {
	if err := w.readyBefore(runID, []string{key}); err != nil {
		return err
	}
	return w.wrote(w.tx.DeferNode(w.ctx, runID, key, input))
}

// RedeferNodes is TxWrites.RedeferNodes, counted when it wrote.
func (w *Writer) RedeferNodes(runID string, keys []string) error {
	if err := w.readyBefore(runID, keys); err != nil {
		return err
	}
	return w.wrote(w.tx.RedeferNodes(w.ctx, runID, keys))
}

// SetTaken is TxWrites.SetTaken, counted when it wrote.
func (w *Writer) SetTaken(runID, key string, taken []string, output json.RawMessage) error {
	return w.wrote(w.tx.SetTaken(w.ctx, runID, key, taken, output))
}

// SetRunVariables is TxWrites.SetRunVariables, counted when it wrote.
func (w *Writer) SetRunVariables(runID string, vars json.RawMessage) error {
	return w.wrote(w.tx.SetRunVariables(w.ctx, runID, vars))
}

// AddPending is TxWrites.AddPending, counted when it wrote.
func (w *Writer) AddPending(runID string, keys []string, delta int) (map[string]enginetype.Pending, error) {
	r0, err := w.tx.AddPending(w.ctx, runID, keys, delta)
	return r0, w.wrote(err)
}

// AddPendingUntaken is TxWrites.AddPendingUntaken, counted when it wrote.
func (w *Writer) AddPendingUntaken(runID string, keys, untaken []string, delta int) (map[string]enginetype.Pending, error) {
	r0, err := w.tx.AddPendingUntaken(w.ctx, runID, keys, untaken, delta)
	return r0, w.wrote(err)
}

// AddPendingLater is TxWrites.AddPendingLater, counted when it wrote.
func (w *Writer) AddPendingLater(runID string, keys []string, delta int) func() (map[string]enginetype.Pending, error) {
	w.writes++
	return w.tx.AddPendingLater(w.ctx, runID, keys, delta)
}

// CountDownUntakenLater queues a count-down whose answer the rules know
// (TxWrites.CountDownUntakenLater): an assumption the database checks,
// so that a transaction failing it is applied again reading as it goes.
func (w *Writer) CountDownUntakenLater(runID string, keys []string, n int) error {
	if err := w.wrote(w.tx.CountDownUntakenLater(w.ctx, runID, keys, n)); err != nil {
		return err
	}
	w.assumed = true
	return nil
}

// Assumed reports whether the transaction queued a write on an assumption
// the database checks (a speculated step, a count-down's known answer):
// failing it, the operation is applied again without assuming.
func (w *Writer) Assumed() bool { return w.assumed || w.speculated != "" }

// ResetUntaken is TxWrites.ResetUntaken, counted when it wrote.
func (w *Writer) ResetUntaken(runID string) error {
	return w.wrote(w.tx.ResetUntaken(w.ctx, runID))
}

// SetPending is TxWrites.SetPending, counted when it wrote.
func (w *Writer) SetPending(runID, key string, n int) error {
	if err := w.readyBefore(runID, []string{key}); err != nil {
		return err
	}
	return w.wrote(w.tx.SetPending(w.ctx, runID, key, n))
}

// BulkStart is TxWrites.BulkStart, counted when it wrote.
func (w *Writer) BulkStart(runID string, starts []enginetype.BulkStart) (int, error) {
	if err := w.readyBefore(runID, nil); err != nil {
		return 0, err
	}
	r0, err := w.tx.BulkStart(w.ctx, runID, starts)
	return r0, w.wrote(err)
}

// BulkComplete is TxWrites.BulkComplete, counted when it wrote.
func (w *Writer) BulkComplete(runID string, cs []enginetype.BulkComplete) ([]enginetype.NodeState, error) {
	r0, err := w.tx.BulkComplete(w.ctx, runID, cs)
	return r0, w.wrote(err)
}

// CompleteAcrossRuns is TxWrites.CompleteAcrossRuns, counted when it wrote.
func (w *Writer) CompleteAcrossRuns(cs []enginetype.BulkComplete) ([]enginetype.NodeState, error) {
	r0, err := w.tx.CompleteAcrossRuns(w.ctx, cs)
	return r0, w.wrote(err)
}

// InsertDispatches is TxWrites.InsertDispatches, counted when it wrote.
func (w *Writer) InsertDispatches(ds []*enginetype.Dispatch) error {
	if err := w.wrote(w.tx.InsertDispatches(w.ctx, ds)); err != nil {
		return err
	}
	for _, d := range ds {
		w.noteClaim(d)
	}
	return nil
}

// InsertDispatch is TxWrites.InsertDispatch, counted when it wrote.
func (w *Writer) InsertDispatch(d *enginetype.Dispatch) error {
	if err := w.wrote(w.tx.InsertDispatch(w.ctx, d)); err != nil {
		return err
	}
	w.noteClaim(d)
	return nil
}

// UpdateDispatches is TxWrites.UpdateDispatches, counted when it wrote.
func (w *Writer) UpdateDispatches(us []enginetype.DispatchUpdate) (int, error) {
	n, err := w.tx.UpdateDispatches(w.ctx, us)
	if n == 0 {
		return n, err // nothing written
	}
	return n, w.wrote(err)
}

// ExtendDeadline is TxWrites.ExtendDeadline, counted when it wrote.
func (w *Writer) ExtendDeadline(runID, key string, attempt, seconds int) (bool, error) {
	r0, err := w.tx.ExtendDeadline(w.ctx, runID, key, attempt, seconds)
	return r0, w.wrote(err)
}

// CancelNodes is TxWrites.CancelNodes, counted when it wrote.
func (w *Writer) CancelNodes(runID string) ([]enginetype.CancelledNode, error) {
	r0, err := w.tx.CancelNodes(w.ctx, runID)
	return r0, w.wrote(err)
}

// CancelBranches is TxWrites.CancelBranches, counted when it wrote.
func (w *Writer) CancelBranches(runID string, nodeIDs []string, prefix []int) ([]enginetype.CancelledNode, error) {
	r0, err := w.tx.CancelBranches(w.ctx, runID, nodeIDs, prefix)
	return r0, w.wrote(err)
}

// SetRunCompensation is TxWrites.SetRunCompensation, counted when it wrote.
func (w *Writer) SetRunCompensation(runID string, c *enginetype.Compensation) error {
	return w.wrote(w.tx.SetRunCompensation(w.ctx, runID, c))
}

// SetRunResponse is TxWrites.SetRunResponse, counted when it wrote.
func (w *Writer) SetRunResponse(runID string, a *enginetype.CallerAnswer) (bool, error) {
	r0, err := w.tx.SetRunResponse(w.ctx, runID, a)
	return r0, w.wrote(err)
}

// DeletePendingNodes is TxWrites.DeletePendingNodes, counted when it wrote.
func (w *Writer) DeletePendingNodes(runID string, nodeIDs []string) error {
	return w.wrote(w.tx.DeletePendingNodes(w.ctx, runID, nodeIDs))
}

// SetRunVersion is TxWrites.SetRunVersion, counted when it wrote.
func (w *Writer) SetRunVersion(runID, versionID string) error {
	return w.wrote(w.tx.SetRunVersion(w.ctx, runID, versionID))
}

// ResetNodes is TxWrites.ResetNodes, counted when it wrote.
func (w *Writer) ResetNodes(runID string, nodes []enginetype.ResetNode) error {
	return w.wrote(w.tx.ResetNodes(w.ctx, runID, nodes))
}

// DeleteInstances is TxWrites.DeleteInstances, counted when it wrote.
func (w *Writer) DeleteInstances(runID string, nodeIDs []string, idx []int) (int, error) {
	r0, err := w.tx.DeleteInstances(w.ctx, runID, nodeIDs, idx)
	return r0, w.wrote(err)
}

// InsertNotifications is TxWrites.InsertNotifications, counted when it wrote.
func (w *Writer) InsertNotifications(ns []enginetype.Notification) error {
	return w.wrote(w.tx.InsertNotifications(w.ctx, ns))
}

// SetRemindAt is TxWrites.SetRemindAt, counted when it wrote.
func (w *Writer) SetRemindAt(runID, key string, seconds int) error {
	return w.wrote(w.tx.SetRemindAt(w.ctx, runID, key, seconds))
}

// UpsertEntity is TxWrites.UpsertEntity, counted when it wrote.
func (w *Writer) UpsertEntity(id string, e enginetype.EntityUpsert) (string, error) {
	r0, err := w.tx.UpsertEntity(w.ctx, id, e)
	return r0, w.wrote(err)
}

// MoveEntity is TxWrites.MoveEntity, counted when it wrote.
func (w *Writer) MoveEntity(m enginetype.EntityMove) (enginetype.EntityMoved, error) {
	r0, err := w.tx.MoveEntity(w.ctx, m)
	return r0, w.wrote(err)
}

// AppendEvents is TxWrites.AppendEvents, counted when it wrote.
func (w *Writer) AppendEvents(runID string, firstSeq int64, events []enginetype.NewEvent) error {
	return w.wrote(w.tx.AppendEvents(w.ctx, runID, firstSeq, events))
}

// AddDecision is TxWrites.AddDecision, counted when it wrote.
func (w *Writer) AddDecision(d enginetype.UXDecision) ([]enginetype.Vote, bool, error) {
	all, added, err := w.tx.AddDecision(w.ctx, d)
	if added { // a vote already cast writes nothing
		err = w.wrote(err)
	}
	return all, added, err
}

// SetClaim is TxWrites.SetClaim, counted when it wrote.
func (w *Writer) SetClaim(runID, key string, attempt int, c *enginetype.Claim) error {
	return w.wrote(w.tx.SetClaim(w.ctx, runID, key, attempt, c))
}

// Reassign is TxWrites.Reassign, counted when it wrote.
func (w *Writer) Reassign(runID, key string, attempt int, a *enginetype.Assignees) error {
	return w.wrote(w.tx.Reassign(w.ctx, runID, key, attempt, a))
}

// SetEscalation is TxWrites.SetEscalation, counted when it wrote.
func (w *Writer) SetEscalation(runID, key string, step, seconds int) error {
	return w.wrote(w.tx.SetEscalation(w.ctx, runID, key, step, seconds))
}
