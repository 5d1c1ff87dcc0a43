package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"time"
)

// writer is the one way a transaction's rules write: the engine reads
// through TxReads (txn.tx) and writes through its writer (txn.w), which
// owns the transaction's TxWrites and its context and counts every write
// that succeeded, so that group commit knows whether an operation it
// rejected left anything behind (commit_grouped.go). A write the writer
// does not make cannot be made: the rules hold no TxWrites. It also owns
// what makes the writes fewer: count-downs queued with a completion
// (writer_countdown.go), claimed outbox rows (writer_claims.go), first
// fires collected in bulk (writer_bulk.go) and a speculated step's save
// relative to its run's row (Speculate).
type writer struct {
	ctx    context.Context
	tx     TxWrites
	writes int
	// countedDown are the count-downs queued with a completion and kept,
	// not yet taken by the walk (writer_countdown.go).
	countedDown []*countDown
	// lease, room and began are what claims take (writer_claims.go):
	// the lease of a claimed row, how many more rows the database
	// transaction may claim, and when the leases began; claimed are the
	// rows written claimed, for the commit.
	lease   time.Duration
	room    *claimRoom
	began   time.Time
	claimed []ClaimedDispatch
	// bulks are the first fires being collected, by run
	// (writer_bulk.go).
	bulks map[string]*bulkFires
	// speculated is the run whose step was speculated (Speculate), "" when
	// none was.
	speculated string
	// assumed: a count-down's answer was assumed (CountDownUntakenLater,
	// AssumeCountDown).
	assumed bool
	// ready is a join assumed ready whose check waits for the join's
	// first fire to carry it (AssumeCountDown).
	ready *readyJoin
}

func (w *writer) wrote(err error) error {
	if err == nil {
		w.writes++
	}
	return err
}

// SaveRunWithEvents saves the run and its events; a speculated run's row
// was never read, so its counters are saved as changes to the row's.
func (w *writer) SaveRunWithEvents(s RunSave) error {
	s.Relative = s.Run.ID == w.speculated
	return w.wrote(w.tx.SaveRunWithEvents(w.ctx, s))
}

func (w *writer) AdmitRun(flowID string) {
	w.writes++
	w.tx.AdmitRun(w.ctx, flowID)
}

func (w *writer) InsertRun(run *Run) error {
	return w.wrote(w.tx.InsertRun(w.ctx, run))
}

func (w *writer) SaveRun(run *Run) error {
	return w.wrote(w.tx.SaveRun(w.ctx, run))
}

func (w *writer) InsertNodes(runID string, nodes []NodeState) error {
	return w.wrote(w.tx.InsertNodes(w.ctx, runID, nodes))
}

func (w *writer) InsertStartedNodes(runID string, nodes []NodeState, starts []BulkStart) error {
	return w.wrote(w.tx.InsertStartedNodes(w.ctx, runID, nodes, starts))
}

func (w *writer) Transition(t *NodeTransition) (*NodeState, error) {
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
func (w *writer) Speculate(t *NodeTransition) error {
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
func (w *writer) Speculated(runID string) bool { return runID != "" && runID == w.speculated }

func (w *writer) TransitionLater(t *NodeTransition) error {
	if !w.carryReady(t) {
		if err := w.readyBefore(t.RunID, []string{t.Key}); err != nil {
			return err
		}
	}
	return w.wrote(w.tx.TransitionLater(w.ctx, t))
}

// SkipLater queues the skip of keys and the count-downs then, whose
// answers the rules know (CountDownUntakenLater), in one statement.
func (w *writer) SkipLater(runID string, keys []string, then []UntakenCountDown) error {
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

func (w *writer) ArchiveIteration(runID string, keys []string) (map[string]int, error) {
	r0, err := w.tx.ArchiveIteration(w.ctx, runID, keys)
	return r0, w.wrote(err)
}

func (w *writer) InsertIteration(runID string, nodes []NodeState) error {
	return w.wrote(w.tx.InsertIteration(w.ctx, runID, nodes))
}

func (w *writer) HoldDispatches(runID string, hold bool) (int, error) {
	r0, err := w.tx.HoldDispatches(w.ctx, runID, hold)
	return r0, w.wrote(err)
}

func (w *writer) TakeEvent(runID string, wait EventWait) (*TakenEvent, error) {
	r0, err := w.tx.TakeEvent(w.ctx, runID, wait)
	return r0, w.wrote(err)
}

func (w *writer) EventDelivered(eventID, runID, key string) error {
	return w.wrote(w.tx.EventDelivered(w.ctx, eventID, runID, key))
}

func (w *writer) FailActiveNodes(runID, msg string) ([]string, error) {
	r0, err := w.tx.FailActiveNodes(w.ctx, runID, msg)
	return r0, w.wrote(err)
}

func (w *writer) WakeNodes(runID string, due []DueNode) ([]NodeState, error) {
	r0, err := w.tx.WakeNodes(w.ctx, runID, due)
	return r0, w.wrote(err)
}

func (w *writer) DeferNode(runID, key string, input json.RawMessage) error {
	if err := w.readyBefore(runID, []string{key}); err != nil {
		return err
	}
	return w.wrote(w.tx.DeferNode(w.ctx, runID, key, input))
}

func (w *writer) AddTreeNodes(runID string, n, limit int) (bool, error) {
	added, err := w.tx.AddTreeNodes(w.ctx, runID, n, limit)
	if added {
		err = w.wrote(err)
	}
	return added, err
}

func (w *writer) RedeferNodes(runID string, keys []string) error {
	if err := w.readyBefore(runID, keys); err != nil {
		return err
	}
	return w.wrote(w.tx.RedeferNodes(w.ctx, runID, keys))
}

func (w *writer) SetTaken(runID, key string, taken []string, output json.RawMessage) error {
	return w.wrote(w.tx.SetTaken(w.ctx, runID, key, taken, output))
}

func (w *writer) SetRunVariables(runID string, vars json.RawMessage) error {
	return w.wrote(w.tx.SetRunVariables(w.ctx, runID, vars))
}

func (w *writer) AddPending(runID string, keys []string, delta int) (map[string]Pending, error) {
	r0, err := w.tx.AddPending(w.ctx, runID, keys, delta)
	return r0, w.wrote(err)
}

func (w *writer) AddPendingUntaken(runID string, keys, untaken []string, delta int) (map[string]Pending, error) {
	r0, err := w.tx.AddPendingUntaken(w.ctx, runID, keys, untaken, delta)
	return r0, w.wrote(err)
}

func (w *writer) AddPendingLater(runID string, keys []string, delta int) func() (map[string]Pending, error) {
	w.writes++
	return w.tx.AddPendingLater(w.ctx, runID, keys, delta)
}

// CountDownUntakenLater queues a count-down whose answer the rules know
// (TxWrites.CountDownUntakenLater): an assumption the database checks,
// so that a transaction failing it is applied again reading as it goes.
func (w *writer) CountDownUntakenLater(runID string, keys []string, n int) error {
	if err := w.wrote(w.tx.CountDownUntakenLater(w.ctx, runID, keys, n)); err != nil {
		return err
	}
	w.assumed = true
	return nil
}

// Assumed reports whether the transaction queued a write on an assumption
// the database checks (a speculated step, a count-down's known answer):
// failing it, the operation is applied again without assuming.
func (w *writer) Assumed() bool { return w.assumed || w.speculated != "" }

func (w *writer) ResetUntaken(runID string) error {
	return w.wrote(w.tx.ResetUntaken(w.ctx, runID))
}

func (w *writer) SetPending(runID, key string, n int) error {
	if err := w.readyBefore(runID, []string{key}); err != nil {
		return err
	}
	return w.wrote(w.tx.SetPending(w.ctx, runID, key, n))
}

func (w *writer) BulkStart(runID string, starts []BulkStart) (int, error) {
	if err := w.readyBefore(runID, nil); err != nil {
		return 0, err
	}
	r0, err := w.tx.BulkStart(w.ctx, runID, starts)
	return r0, w.wrote(err)
}

func (w *writer) BulkComplete(runID string, cs []BulkComplete) ([]NodeState, error) {
	r0, err := w.tx.BulkComplete(w.ctx, runID, cs)
	return r0, w.wrote(err)
}

func (w *writer) CompleteAcrossRuns(cs []BulkComplete) ([]NodeState, error) {
	r0, err := w.tx.CompleteAcrossRuns(w.ctx, cs)
	return r0, w.wrote(err)
}

func (w *writer) InsertDispatches(ds []*Dispatch) error {
	if err := w.wrote(w.tx.InsertDispatches(w.ctx, ds)); err != nil {
		return err
	}
	for _, d := range ds {
		w.noteClaim(d)
	}
	return nil
}

func (w *writer) InsertDispatch(d *Dispatch) error {
	if err := w.wrote(w.tx.InsertDispatch(w.ctx, d)); err != nil {
		return err
	}
	w.noteClaim(d)
	return nil
}

func (w *writer) UpdateDispatches(us []DispatchUpdate) (int, error) {
	n, err := w.tx.UpdateDispatches(w.ctx, us)
	if n == 0 {
		return n, err // nothing written
	}
	return n, w.wrote(err)
}

func (w *writer) ExtendDeadline(runID, key string, attempt, seconds int) (bool, error) {
	r0, err := w.tx.ExtendDeadline(w.ctx, runID, key, attempt, seconds)
	return r0, w.wrote(err)
}

func (w *writer) CancelNodes(runID string) ([]CancelledNode, error) {
	r0, err := w.tx.CancelNodes(w.ctx, runID)
	return r0, w.wrote(err)
}

func (w *writer) CancelBranches(runID string, nodeIDs []string, prefix []int) ([]CancelledNode, error) {
	r0, err := w.tx.CancelBranches(w.ctx, runID, nodeIDs, prefix)
	return r0, w.wrote(err)
}

func (w *writer) SetRunCompensation(runID string, c *Compensation) error {
	return w.wrote(w.tx.SetRunCompensation(w.ctx, runID, c))
}

func (w *writer) SetRunResponse(runID string, a *CallerAnswer) (bool, error) {
	r0, err := w.tx.SetRunResponse(w.ctx, runID, a)
	return r0, w.wrote(err)
}

func (w *writer) DeletePendingNodes(runID string, nodeIDs []string) error {
	return w.wrote(w.tx.DeletePendingNodes(w.ctx, runID, nodeIDs))
}

func (w *writer) SetRunVersion(runID, versionID string) error {
	return w.wrote(w.tx.SetRunVersion(w.ctx, runID, versionID))
}

func (w *writer) ResetNodes(runID string, nodes []ResetNode) error {
	return w.wrote(w.tx.ResetNodes(w.ctx, runID, nodes))
}

func (w *writer) DeleteInstances(runID string, nodeIDs []string, idx []int) (int, error) {
	r0, err := w.tx.DeleteInstances(w.ctx, runID, nodeIDs, idx)
	return r0, w.wrote(err)
}

func (w *writer) InsertNotifications(ns []Notification) error {
	return w.wrote(w.tx.InsertNotifications(w.ctx, ns))
}

func (w *writer) SetRemindAt(runID, key string, seconds int) error {
	return w.wrote(w.tx.SetRemindAt(w.ctx, runID, key, seconds))
}

func (w *writer) UpsertEntity(id string, e EntityUpsert) (string, error) {
	r0, err := w.tx.UpsertEntity(w.ctx, id, e)
	return r0, w.wrote(err)
}

func (w *writer) MoveEntity(m EntityMove) (EntityMoved, error) {
	r0, err := w.tx.MoveEntity(w.ctx, m)
	return r0, w.wrote(err)
}

func (w *writer) AppendEvents(runID string, firstSeq int64, events []NewEvent) error {
	return w.wrote(w.tx.AppendEvents(w.ctx, runID, firstSeq, events))
}

func (w *writer) AddDecision(d UXDecision) ([]Vote, bool, error) {
	all, added, err := w.tx.AddDecision(w.ctx, d)
	if added { // a vote already cast writes nothing
		err = w.wrote(err)
	}
	return all, added, err
}

func (w *writer) SetClaim(runID, key string, attempt int, c *Claim) error {
	return w.wrote(w.tx.SetClaim(w.ctx, runID, key, attempt, c))
}

func (w *writer) Reassign(runID, key string, attempt int, a *Assignees) error {
	return w.wrote(w.tx.Reassign(w.ctx, runID, key, attempt, a))
}

func (w *writer) SetEscalation(runID, key string, step, seconds int) error {
	return w.wrote(w.tx.SetEscalation(w.ctx, runID, key, step, seconds))
}
