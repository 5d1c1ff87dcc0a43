package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
)

// Run control (docs/state_machine.md): an operator pauses a run, resumes
// it, or completes a stuck node by hand. Each is one transaction under the
// run's lock, like every engine operation.

// PauseRun pauses a running run: nothing new fires until ResumeRun (work
// in flight goes on: its callbacks, answers and timers are recorded, and
// what they make ready waits); its undelivered dispatches are held.
func (e *Engine) PauseRun(ctx context.Context, runID string) (*Run, error) {
	var out *Run
	var children []string
	err := e.submitAlone(ctx, runID, func(t *txn) error {
		if err := t.load(runID); err != nil {
			return err
		}
		if t.run.Status != RunRunning {
			return fmt.Errorf("%w: run %s is %s, not running", ErrConflict, runID, t.run.Status)
		}
		if err := t.refuseCompensated("", "paused"); err != nil {
			return err
		}
		held, err := t.w.HoldDispatches(runID, true)
		if err != nil {
			return fmt.Errorf("error holding the dispatches of run %s: %w", runID, err)
		}
		t.run.Status = RunPaused
		t.event(EventRunPaused, "", map[string]any{"held_dispatches": held})
		out = t.run
		children, err = t.tx.ChildRuns(t.ctx, runID, RunRunning)
		return err
	})
	if err != nil {
		return nil, err
	}
	e.cascade(ctx, children, e.PauseRun)
	return out, nil
}

// cascade applies op (pause, resume, cancel) to the sub-flow runs of a
// run it was applied to, after that commit; a child that moved on meanwhile
// (finished, or was paused by hand) is left as it is. A child the process
// did not get to (it stopped) is found by the sweeper (OrphanedChildren).
func (e *Engine) cascade(ctx context.Context, children []string, op func(context.Context, string) (*Run, error)) {
	for _, id := range children {
		if _, err := op(ctx, id); err != nil && !errors.Is(err, ErrConflict) {
			e.cfg.Logger.Warn("error passing a run's pause, resume or cancel on to its sub-flow run", "child_run_id", id, "error", err)
		}
	}
}

// ResumeRun resumes a paused run: its held dispatches go out, and every
// node that became ready while it was paused fires (or is skipped).
func (e *Engine) ResumeRun(ctx context.Context, runID string) (*Run, error) {
	var out *Run
	var children []string
	err := e.submitAlone(ctx, runID, func(t *txn) error {
		if err := t.load(runID); err != nil {
			return err
		}
		if t.run.Status != RunPaused {
			return fmt.Errorf("%w: run %s is %s, not paused", ErrConflict, runID, t.run.Status)
		}
		t.run.Status = RunRunning
		released, err := t.w.HoldDispatches(runID, false)
		if err != nil {
			return fmt.Errorf("error releasing the dispatches of run %s: %w", runID, err)
		}
		t.event(EventRunResumedByHand, "", map[string]any{"released_dispatches": released})
		if err := t.fireReadyNodes(); err != nil {
			return err
		}
		out = t.run
		children, err = t.tx.ChildRuns(t.ctx, runID, RunPaused)
		return err
	})
	if err != nil {
		return nil, err
	}
	e.cascade(ctx, children, e.ResumeRun)
	return out, nil
}

// SkipNodeParams completes a node by hand.
type SkipNodeParams struct {
	RunID, Key string
	// Output is the node's output (null when empty).
	Output json.RawMessage
	// By is who skipped it.
	By string
}

// SkipNode completes a failed, waiting (for a person or an event),
// sleeping or running node by hand
// with the given output and walks its edges (a running worker's late
// callback is then stale). A failure a failure edge handled is final.
func (e *Engine) SkipNode(ctx context.Context, p SkipNodeParams) error {
	return e.submit(ctx, p.RunID, func(t *txn) error {
		if err := t.load(p.RunID); err != nil {
			return err
		}
		if t.run.Status == RunCancelled || t.run.Status == RunCompleted {
			return fmt.Errorf("%w: run %s is %s", ErrConflict, p.RunID, t.run.Status)
		}
		cur, err := t.tx.Node(t.ctx, p.RunID, p.Key)
		if err != nil {
			return err
		}
		n := t.graph.Nodes[cur.NodeID]
		if n == nil {
			return fmt.Errorf("node %s is not in the run's graph: %w", cur.NodeID, ErrNotFound)
		}
		if cur.Status == StatusFailed && cur.Taken != nil {
			return fmt.Errorf("%w: node %s's failure was handed on by its failure edge, which makes it final", ErrConflict, p.Key)
		}
		if err := t.refuseCompensated(cur.NodeID, "completed by hand"); err != nil {
			return err
		}
		tr := &NodeTransition{Key: p.Key, From: cur.Status, Attempt: cur.Attempt, Output: orNull(p.Output)}
		switch cur.Status {
		case StatusRunning:
			tr.Steps = []Status{StatusCompleted}
		case StatusFailed, StatusWaitingForUser, StatusSleeping, StatusWaitingForEvent:
			tr.Steps = []Status{StatusRunning, StatusCompleted}
		default:
			return fmt.Errorf("%w: node %s is %s; only a running, failed, waiting or sleeping node can be skipped", ErrConflict,
				p.Key, cur.Status)
		}
		if n.Caps.FansOut {
			return fmt.Errorf("%w: a Splitter cannot be skipped (its region would have no items); retry it", ErrConflict)
		}
		if t.graph.hasBranches(n.ID) {
			taken, err := t.decide(n, cur.Key, cur.Iteration, cur.Input, tr.Output, "")
			var ce *errCondition
			var le *errLoopLimit
			if errors.As(err, &ce) || errors.As(err, &le) {
				return fmt.Errorf("%w: %v", ErrInvalidRequest, err)
			} else if err != nil {
				return err
			}
			tr.Taken = taken
		}
		if cur.Status == StatusFailed {
			if err := t.untolerate(cur); err != nil { // its Collector counted it arrived
				return err
			}
		}
		st, err := t.transition(tr)
		if err != nil {
			return err
		}
		t.event(EventNodeSkippedByHand, p.Key, map[string]any{"by": p.By, "from": cur.Status})
		return t.completed(st)
	})
}

// countWhilePaused counts down the successors of node key of a paused run
// without firing any — every one, those with one inbound edge too, so that
// ResumeRun finds what became ready by its count (ReadyNodes).
func (t *txn) countWhilePaused(key string, targets []target, taken []string) error {
	var sole []string
	for _, tg := range targets {
		if soleParent(t.graph, tg.node) {
			sole = append(sole, tg.key)
		}
	}
	remaining, err := t.countDownSuccessors(key, counted(t.graph, targets))
	if err != nil {
		return fmt.Errorf("error counting down successors of %s: %w", key, err)
	}
	if len(sole) > 0 {
		if _, err := t.w.AddPending(t.run.ID, sole, -1); err != nil {
			return fmt.Errorf("error counting down successors of %s: %w", key, err)
		}
	}
	if len(t.graph.JoinAny) > 0 {
		return t.armJoins(targets, remaining, taken)
	}
	return nil
}

// armJoins makes the join-any nodes among targets that an edge taken
// reached while the run is paused ready for its resume (a count of
// zero, ReadyNodes), and keeps a count passed below zero at zero.
func (t *txn) armJoins(targets []target, remaining map[string]Pending, taken []string) error {
	for _, tg := range targets {
		if !t.graph.joinAny(tg.node) || soleParent(t.graph, tg.node) {
			continue
		}
		p, ok := remaining[tg.key]
		if !ok || p.Status != StatusPending || p.Remaining == 0 {
			continue
		}
		if p.Remaining < 0 || taken == nil || slices.Contains(taken, tg.node.ID) {
			if err := t.w.SetPending(t.run.ID, tg.key, 0); err != nil {
				return fmt.Errorf("error arming join %s: %w", tg.key, err)
			}
		}
	}
	return nil
}

// RunDeadlineMessage is the error of a run that passed its deadline.
const RunDeadlineMessage = "deadline"

// FailRunPastDeadline fails a running or paused run whose deadline passed:
// its running and waiting nodes fail with "the run's deadline passed",
// their undelivered dispatches are cancelled, and the run fails with the
// reason "deadline". A run that finished meanwhile is left alone.
func (e *Engine) FailRunPastDeadline(ctx context.Context, runID string) error {
	err := e.submitAlone(ctx, runID, func(t *txn) error {
		if err := t.load(runID); err != nil {
			return err
		}
		if t.run.Status != RunRunning && t.run.Status != RunPaused {
			return errNoChange
		}
		if err := t.interruptCompensation(); err != nil {
			return err
		}
		const msg = "the run's deadline passed"
		keys, err := t.w.FailActiveNodes(runID, msg)
		if err != nil {
			return fmt.Errorf("error failing the nodes of run %s: %w", runID, err)
		}
		for _, k := range keys {
			m := msg
			t.event(EventNodeStatus, k, &nodeStatus{Status: StatusFailed, Error: &m})
		}
		t.run.FailedNodes += len(keys)
		t.run.ActiveNodes = 0
		t.run.Status = RunFailed
		t.finishRun(nil, RunDeadlineMessage)
		t.event(EventRunFailed, "", map[string]any{"error": RunDeadlineMessage})
		return nil
	})
	if errorsIsConflict(err) {
		return nil
	}
	return err
}
