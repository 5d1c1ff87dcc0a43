package engine

import (
	"errors"
	"fmt"
)

// Entity concurrency (settings.entityConcurrency): what starting a run of a
// flow for an entity does while another run of that flow for the entity is
// still active (running or paused, or queued) — two hooks for one email must
// not start two runs moving one card.
const (
	// EntityAllow starts the run anyway.
	EntityAllow = "allow"
	// EntitySkip starts nothing: the start is refused with the active run
	// (EntityBusyError).
	EntitySkip = "skip"
	// EntityQueue (the default) starts the run queued: it begins, in
	// order, in the transaction that ends the last active run of the flow
	// for the entity.
	EntityQueue = "queue"
)

// EntityModes are the values of settings.entityConcurrency.
var EntityModes = []string{EntityAllow, EntitySkip, EntityQueue}

// EventRunQueued is recorded when the run waits for the entity's active run (behind).
const EventRunQueued = "run.queued"

// EntityBusyError refuses a run of a flow whose entityConcurrency is skip:
// RunID is the entity's active run of the flow.
type EntityBusyError struct {
	EntityID, RunID string
}

func (e *EntityBusyError) Error() string {
	return fmt.Sprintf("entity %s already has an active run of this flow (%s) and the flow's entityConcurrency is skip",
		e.EntityID, e.RunID)
}

// IsEntityBusy returns the EntityBusyError in err's chain, if any.
func IsEntityBusy(err error) (*EntityBusyError, bool) {
	var eb *EntityBusyError
	ok := errors.As(err, &eb)
	return eb, ok
}

func entityMode(g *ExecutionGraph) string {
	if g.EntityConcurrency == "" {
		return EntityQueue
	}
	return g.EntityConcurrency
}

// entityTurn decides whether new run r (not inserted yet) may begin now:
// queued reports that it was inserted queued behind the entity's active
// run, to begin when that ends; an EntityBusyError refuses it (skip). The
// entity's lock for the flow (Tx.LockEntityRuns) orders it against the
// transaction that ends the active run.
func (t *txn) entityTurn(r *Run, g *ExecutionGraph) (queued bool, err error) {
	mode := entityMode(g)
	if mode == EntityAllow {
		return false, nil
	}
	if err := t.tx.LockEntityRuns(t.ctx, r.FlowID, *r.EntityID); err != nil {
		return false, fmt.Errorf("error locking the runs of entity %s: %w", *r.EntityID, err)
	}
	active, err := t.tx.ActiveEntityRun(t.ctx, r.FlowID, *r.EntityID)
	if err != nil || active == "" {
		return false, err
	}
	if mode == EntitySkip {
		return false, &EntityBusyError{EntityID: *r.EntityID, RunID: active}
	}
	r.Status = RunQueued
	if err := t.w.InsertRun(r); err != nil {
		return false, err
	}
	t.setRun(r, g)
	t.event(EventRunQueued, "", map[string]any{"flow_version_id": r.FlowVersionID, "input": r.Input, "behind": active})
	return true, nil
}

// beginQueued begins the entity's next queued run of the flow when the
// transaction's run, which had an entity, ended and left no run of the flow
// for the entity active: in this transaction, so a queue never waits on a
// sweeper and never begins two.
func (t *txn) beginQueued() error {
	r := t.run
	if r.EntityID == nil || r.ParentRunID != nil || entityMode(t.graph) != EntityQueue {
		return nil
	}
	if err := t.tx.LockEntityRuns(t.ctx, r.FlowID, *r.EntityID); err != nil {
		return fmt.Errorf("error locking the runs of entity %s: %w", *r.EntityID, err)
	}
	next, err := t.tx.NextQueuedRun(t.ctx, r.FlowID, *r.EntityID, r.ID)
	if err != nil || next == "" {
		return err
	}
	n := t.nestedTxn()
	if err := n.load(next); err != nil {
		return err
	}
	if n.run.Status != RunQueued {
		return nil
	}
	if n.run.Input, err = n.tx.RunInput(n.ctx, next); err != nil {
		return fmt.Errorf("error loading the input of queued run %s: %w", next, err)
	}
	n.run.Status = RunRunning
	if err := n.beginRun(n.run, n.graph, nil); err != nil {
		return err
	}
	return n.flush()
}
