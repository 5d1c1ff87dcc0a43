package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
)

// Compensation (saga; docs/state_machine.md, Compensation): a step may have
// an undo node (an edge marked data.on "compensate"). When a run of such
// a graph would fail — a node failed for good, nothing else under way —
// or an operator cancels it with compensation, the undo nodes of the
// completed steps that have one run first, one at a time, in reverse
// order of the steps' completion, each with {"output", "input", "error"}
// of its step; then the run ends failed (or cancelled) with its
// compensation "compensated", or "failed" naming the undo node that
// failed. The run stays running meanwhile: its compensation's state is
// "compensating". A graph without undo nodes never reaches this file.

// Compensation events.
const (
	// EventRunCompensating: the run's compensation began; its payload
	// lists the steps in the order they are undone.
	EventRunCompensating = "run.compensating"
	// EventNodeCompensated: a step's undo node completed (keyed by the
	// step).
	EventNodeCompensated = "node.compensated"
)

// Compensation states.
const (
	CompensationRunning     = "compensating"
	CompensationDone        = "compensated"
	CompensationFailed      = "failed"
	CompensationInterrupted = "interrupted"
)

// Compensation reasons.
const (
	CompensateOnFailure = "failed"
	CompensateOnCancel  = "cancelled"
)

// compensation is the run's compensation (nil when none began), read once
// a transaction; only for a graph with undo nodes.
func (t *txn) compensation() (*Compensation, error) {
	if t.compLoaded {
		return t.comp, nil
	}
	c, err := t.tx.RunCompensation(t.ctx, t.run.ID)
	if err != nil {
		return nil, fmt.Errorf("error loading the compensation of run %s: %w", t.run.ID, err)
	}
	t.comp, t.compLoaded = c, true
	return c, nil
}

// saveCompensation writes the run's compensation.
func (t *txn) saveCompensation(c *Compensation) error {
	t.comp, t.compLoaded = c, true
	t.run.Compensation = c
	if err := t.w.SetRunCompensation(t.run.ID, c); err != nil {
		return fmt.Errorf("error saving the compensation of run %s: %w", t.run.ID, err)
	}
	return nil
}

// settleFailure is settleRun's step for a run of a graph with undo nodes
// that would fail now (msg: its failure): the first time, its
// compensation begins instead; after an undo node failed, the run fails
// saying so. It reports whether it settled the run.
func (t *txn) settleFailure(msg string) (bool, error) {
	c, err := t.compensation()
	if err != nil {
		return false, err
	}
	switch {
	case c == nil:
		if err := t.compensate(CompensateOnFailure, msg); err != nil {
			return true, err
		}
		if t.comp.State == CompensationFailed && t.run.Status == RunRunning {
			t.endCompensated(t.comp) // an undo node failed as it fired
		}
		return true, nil
	case c.State == CompensationFailed:
		t.endCompensated(c)
		return true, nil
	}
	return false, nil
}

// compensate begins the run's compensation: the undo nodes of the
// completed steps that have one get their rows, pending, and the first
// fires; with none to run, the run ends at once.
func (t *txn) compensate(reason, msg string) error {
	g := t.graph
	steps := make([]string, 0, len(g.Compensation))
	for s := range g.Compensation {
		steps = append(steps, s)
	}
	sort.Strings(steps)
	states, err := t.tx.NodeStates(t.ctx, t.run.ID, steps)
	if err != nil {
		return fmt.Errorf("error loading the steps of run %s: %w", t.run.ID, err)
	}
	steps = slices.DeleteFunc(steps, func(s string) bool { return states[s] == nil || states[s].Status != StatusCompleted })
	order, err := t.completionOrder(steps)
	if err != nil {
		return err
	}
	sort.SliceStable(steps, func(i, j int) bool { return order[steps[i]] > order[steps[j]] })
	c := &Compensation{Reason: reason, Error: msg, State: CompensationRunning, Steps: make([]CompensationStep, len(steps))}
	rows := make([]NodeState, len(steps))
	for i, s := range steps {
		u := g.Compensation[s]
		c.Steps[i] = CompensationStep{Step: s, Undo: u}
		rows[i] = NodeState{Key: u, NodeID: u, Type: g.Nodes[u].Type, Index: []int{}, Status: StatusPending,
			// Never counted down: an undo node fires when its turn comes
			// (nextUndo), not when a count reaches zero (ReadyNodes).
			PendingParents: 1}
	}
	if len(rows) > 0 {
		if err := t.w.InsertNodes(t.run.ID, rows); err != nil {
			return fmt.Errorf("error creating the undo nodes of run %s: %w", t.run.ID, err)
		}
		t.addRows(len(rows))
	}
	t.event(EventRunCompensating, "", map[string]any{"reason": reason, "error": msg, "steps": c.Steps})
	if err := t.saveCompensation(c); err != nil {
		return err
	}
	return t.nextUndo(c, 0)
}

// completionOrder numbers the last completion of each step: the sequence
// number of its node.status event, those of this transaction (not written
// yet) after the others.
func (t *txn) completionOrder(steps []string) (map[string]int64, error) {
	order := map[string]int64{}
	if len(steps) == 0 {
		return order, nil
	}
	written, err := t.tx.CompletionOrder(t.ctx, t.run.ID, steps)
	if err != nil {
		return nil, fmt.Errorf("error reading the order of completion of run %s's steps: %w", t.run.ID, err)
	}
	for k, seq := range written {
		order[k] = seq
	}
	for i, ev := range t.events {
		if ev.Type == EventNodeStatus && slices.Contains(steps, ev.Key) && transitionOf(ev, t.graph).To == StatusCompleted {
			order[ev.Key] = t.run.EventSeq + 1 + int64(i)
		}
	}
	return order, nil
}

// nextUndo fires the undo node of step i of the compensation, or, past
// the last, ends the run compensated.
func (t *txn) nextUndo(c *Compensation, i int) error {
	if i >= len(c.Steps) {
		c.State, c.FailedNode = CompensationDone, ""
		if err := t.saveCompensation(c); err != nil {
			return err
		}
		t.endCompensated(c)
		return nil
	}
	s := c.Steps[i]
	st, err := t.tx.Node(t.ctx, t.run.ID, s.Step)
	if err != nil {
		return fmt.Errorf("error loading step %s: %w", s.Step, err)
	}
	input, err := json.Marshal(map[string]json.RawMessage{"output": orNull(st.Output), "input": orNull(st.Input),
		"error": mustJSON(c.Error)})
	if err != nil {
		return fmt.Errorf("error encoding the input of undo node %s: %w", s.Undo, err)
	}
	n := t.graph.Nodes[s.Undo]
	if n == nil {
		return fmt.Errorf("undo node %s is not in the run's graph: %w", s.Undo, ErrNotFound)
	}
	return t.fire(n, nil, input, StatusPending, 0)
}

func mustJSON(s string) json.RawMessage {
	b, _ := json.Marshal(s) // a string always encodes
	return b
}

// endCompensated ends the run after its compensation: failed (or
// cancelled, when a cancel asked for it), saying whether every undo node
// completed or which one failed.
func (t *txn) endCompensated(c *Compensation) {
	r := t.run
	r.Compensation = c
	p := map[string]any{}
	if c.State == CompensationDone {
		p["compensated"] = true
	} else {
		p["compensation_failed"] = c.FailedNode
	}
	if c.Reason == CompensateOnCancel {
		r.Status = RunCancelled
		r.ActiveNodes, r.FailedNodes = 0, 0
		t.finishRun(nil, "cancelled")
		t.event(EventRunCancelled, "", p)
		return
	}
	r.Status = RunFailed
	t.finishRun(nil, c.Error)
	p["error"] = c.Error
	t.event(EventRunFailed, "", p)
}

// undoCompleted goes on with the compensation once undo node st (of step)
// completed: the next undo node fires, or the run ends.
func (t *txn) undoCompleted(st *NodeState, step string) error {
	c, err := t.compensation()
	if err != nil {
		return err
	}
	if c == nil {
		return fmt.Errorf("%w: undo node %s completed in run %s, which is not compensating", ErrConflict, st.Key, t.run.ID)
	}
	t.event(EventNodeCompensated, step, map[string]any{"node_id": step, "undo": st.Key})
	i := slices.IndexFunc(c.Steps, func(s CompensationStep) bool { return s.Undo == st.Key })
	if i < 0 {
		return fmt.Errorf("undo node %s is not in run %s's compensation", st.Key, t.run.ID)
	}
	if c.State != CompensationRunning {
		// An undo node that failed was retried or completed by hand:
		// the compensation goes on.
		c.State, c.FailedNode = CompensationRunning, ""
		if err := t.saveCompensation(c); err != nil {
			return err
		}
	}
	return t.nextUndo(c, i+1)
}

// undoFailed records that undo node st failed for good: the compensation
// stops there, and the run fails (settleRun, settleFailure) naming it.
func (t *txn) undoFailed(st *NodeState) error {
	c, err := t.compensation()
	if err != nil {
		return err
	}
	if c == nil {
		return fmt.Errorf("%w: undo node %s failed in run %s, which is not compensating", ErrConflict, st.Key, t.run.ID)
	}
	c.State, c.FailedNode = CompensationFailed, st.Key
	return t.saveCompensation(c)
}

// refuseCompensated refuses an operator's step on node id (retry, skip,
// rerun, migration: id "") of a run whose compensation began: its steps
// were undone, or are being undone. An undo node may be retried or
// completed by hand (the compensation goes on).
func (t *txn) refuseCompensated(id, doing string) error {
	if len(t.graph.Compensation) == 0 || (id != "" && t.graph.UndoStep(id) != "") {
		return nil
	}
	c, err := t.compensation()
	if err != nil || c == nil {
		return err
	}
	return fmt.Errorf("%w: run %s %s: it cannot be %s", ErrConflict, t.run.ID, compensationWords(c), doing)
}

// compensationWords says where a run's compensation stands.
func compensationWords(c *Compensation) string {
	switch c.State {
	case CompensationRunning:
		return "is compensating (undoing its completed steps)"
	case CompensationDone:
		return "was compensated (its completed steps were undone)"
	case CompensationFailed:
		return "is compensated in part: an undo step failed (retry it or skip it)"
	default:
		return "is compensated in part: its compensation was " + c.State
	}
}

// resumeCompensation marks a failed compensation under way again when
// its undo node id is retried.
func (t *txn) resumeCompensation(id string) error {
	if len(t.graph.Compensation) == 0 || t.graph.UndoStep(id) == "" {
		return nil
	}
	c, err := t.compensation()
	if err != nil || c == nil || c.State != CompensationFailed {
		return err
	}
	c.State, c.FailedNode = CompensationRunning, ""
	return t.saveCompensation(c)
}

// interruptCompensation marks a compensation under way interrupted (the
// run was cancelled, or passed its deadline).
func (t *txn) interruptCompensation() error {
	if len(t.graph.Compensation) == 0 {
		return nil
	}
	c, err := t.compensation()
	if err != nil || c == nil || c.State != CompensationRunning {
		return err
	}
	c.State = CompensationInterrupted
	return t.saveCompensation(c)
}

// CancelRunParams cancel a run.
type CancelRunParams struct {
	RunID string
	// Compensate runs the undo nodes of the run's completed steps (in
	// reverse order of completion) before the run ends cancelled.
	Compensate bool
}

// CancelRunWith cancels a run as CancelRun does; with p.Compensate, its
// undo nodes run first (the run answers running, its compensation
// compensating, and ends cancelled).
func (e *Engine) CancelRunWith(ctx context.Context, p CancelRunParams) (*Run, error) {
	return e.cancelRun(ctx, p.RunID, p.Compensate)
}
