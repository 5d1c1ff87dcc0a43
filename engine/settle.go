package engine

import (
	"encoding/json"
	"fmt"
	"slices"
)

// Settling the run: at the end of each transaction the run's status is
// derived from its counters (completed, failed, running again), its
// output gathered, and the run row and events written.

// flush settles the run status and writes events and the run row.
func (t *txn) flush() error {
	if err := t.flushRun(); err != nil {
		return err
	}
	if t.sharesWriter {
		return nil
	}
	// The run trees' counts decided without asking (a fan-out's sub-flow
	// starts) are written once, after everything the operation did: a
	// statement between two children's starts would write each child's
	// rows on their own, not with the others'.
	return t.w.GrowTrees()
}

// flushRun is flush of the txn's run alone.
func (t *txn) flushRun() error {
	if t.run == nil {
		return nil
	}
	if err := t.countArrivals(); err != nil {
		return err
	}
	// Deliveries the callbacks proved are logged after the events so far
	// and before the run's settlement.
	deliveredAt := len(t.events)
	if t.w.Speculated(t.run.ID) {
		if err := t.checkSpeculation(); err != nil {
			return err
		}
	} else if err := t.settleRun(); err != nil {
		return err
	}
	if len(t.notes) > 0 {
		if err := t.w.InsertNotifications(t.notes); err != nil {
			return fmt.Errorf("error writing %d notifications of run %s: %w", len(t.notes), t.run.ID, err)
		}
	}
	if t.run.Status == RunPaused {
		// What work in flight dispatched meanwhile (a retry, a loop's
		// next iteration) waits for the resume too.
		if _, err := t.w.HoldDispatches(t.run.ID, true); err != nil {
			return fmt.Errorf("error holding the dispatches of run %s: %w", t.run.ID, err)
		}
	}
	first := t.run.EventSeq + 1
	t.run.EventSeq += int64(len(t.events))
	if err := t.w.SaveRunWithEvents(RunSave{Run: t.run, FirstSeq: first, Events: t.events,
		DeliveredKeys: t.deliveredKeys, DeliveredAttempts: t.deliveredAttempts, DeliveredAt: deliveredAt}); err != nil {
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
		if len(t.graph.Compensation) > 0 {
			// The undo nodes run first (compensate.go).
			if settled, err := t.settleFailure(msg); err != nil || settled {
				return err
			}
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
