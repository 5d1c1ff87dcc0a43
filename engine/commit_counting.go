package engine

import (
	"context"
	"encoding/json"
)

// Leaving an operation out of a shared transaction. A batch or group
// (commit_grouped.go) applies many operations in one transaction; one
// rejected before it wrote anything (a stale callback failing its
// compare-and-set) is left out: its txn is restored to the snapshot taken
// before it, and countingTx tells whether it wrote.

type txnSnapshot struct {
	run       Run
	events    int
	claimed   int
	arrivals  int
	delivered int
	nested    int
	notes     int
	failMsg   string
	firings   int
	deferred  int
}

func (t *txn) snapshot() txnSnapshot {
	return txnSnapshot{run: *t.run, events: len(t.events), claimed: len(t.claimed), arrivals: len(t.arrivals), delivered: len(t.deliveredKeys),
		nested: len(t.nested), notes: len(t.notes), failMsg: t.failMsg, firings: t.firings, deferred: t.deferred}
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
	t.firings, t.deferred = s.firings, s.deferred
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
func (c *countingTx) SetRunResponse(ctx context.Context, runID string, a *CallerAnswer) (bool, error) {
	ok, err := c.Tx.SetRunResponse(ctx, runID, a)
	return ok, c.wrote(err)
}
func (c *countingTx) AddDecision(ctx context.Context, d UXDecision) ([]Vote, bool, error) {
	all, added, err := c.Tx.AddDecision(ctx, d)
	if added {
		err = c.wrote(err)
	}
	return all, added, err
}
func (c *countingTx) SetClaim(ctx context.Context, runID, key string, attempt int, cl *Claim) error {
	return c.wrote(c.Tx.SetClaim(ctx, runID, key, attempt, cl))
}
func (c *countingTx) Reassign(ctx context.Context, runID, key string, attempt int, a *Assignees) error {
	return c.wrote(c.Tx.Reassign(ctx, runID, key, attempt, a))
}
func (c *countingTx) SetEscalation(ctx context.Context, runID, key string, step, secs int) error {
	return c.wrote(c.Tx.SetEscalation(ctx, runID, key, step, secs))
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
func (c *countingTx) SkipLater(ctx context.Context, runID string, keys []string) error {
	return c.wrote(c.Tx.SkipLater(ctx, runID, keys))
}

func (c *countingTx) TransitionLater(ctx context.Context, t *NodeTransition) error {
	return c.wrote(c.Tx.TransitionLater(ctx, t))
}
func (c *countingTx) AddPending(ctx context.Context, runID string, keys []string, d int) (map[string]Pending, error) {
	p, err := c.Tx.AddPending(ctx, runID, keys, d)
	return p, c.wrote(err)
}
func (c *countingTx) AddPendingUntaken(ctx context.Context, runID string, keys []string, d int) (map[string]Pending, error) {
	p, err := c.Tx.AddPendingUntaken(ctx, runID, keys, d)
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

func (c *countingTx) TakeEvent(ctx context.Context, runID string, w EventWait) (*TakenEvent, error) {
	ev, err := c.Tx.TakeEvent(ctx, runID, w)
	return ev, c.wrote(err)
}

func (c *countingTx) EventDelivered(ctx context.Context, eventID, runID, key string) error {
	return c.wrote(c.Tx.EventDelivered(ctx, eventID, runID, key))
}

func (c *countingTx) FailActiveNodes(ctx context.Context, runID, msg string) ([]string, error) {
	k, err := c.Tx.FailActiveNodes(ctx, runID, msg)
	return k, c.wrote(err)
}

func (c *countingTx) AddTreeNodes(ctx context.Context, runID string, n, limit int) (bool, error) {
	added, err := c.Tx.AddTreeNodes(ctx, runID, n, limit)
	if added {
		err = c.wrote(err)
	}
	return added, err
}
func (c *countingTx) RedeferNodes(ctx context.Context, runID string, keys []string) error {
	return c.wrote(c.Tx.RedeferNodes(ctx, runID, keys))
}
func (c *countingTx) DeferNode(ctx context.Context, runID, key string, input json.RawMessage) error {
	return c.wrote(c.Tx.DeferNode(ctx, runID, key, input))
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
func (c *countingTx) SetRunVariables(ctx context.Context, runID string, vars json.RawMessage) error {
	return c.wrote(c.Tx.SetRunVariables(ctx, runID, vars))
}

func (c *countingTx) AppendEvents(ctx context.Context, runID string, seq int64, ev []NewEvent) error {
	return c.wrote(c.Tx.AppendEvents(ctx, runID, seq, ev))
}

func (c *countingTx) BulkComplete(ctx context.Context, runID string, cs []BulkComplete) ([]NodeState, error) {
	st, err := c.Tx.BulkComplete(ctx, runID, cs)
	return st, c.wrote(err)
}
