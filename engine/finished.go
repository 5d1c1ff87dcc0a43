package engine

import (
	"fmt"
)

// A node that finished: completed, it moves the run's entity and walks
// on (or goes round its loop); failed, it is retried, handed to its
// failure edges, or fails the Collector of its region.

// completed runs the consequences of a node reaching completed.
func (t *txn) completed(st *NodeState) error {
	n := t.graph.Nodes[st.NodeID]
	if n == nil {
		return fmt.Errorf("node %s is not in the run's graph: %w", st.NodeID, ErrNotFound)
	}
	if err := t.applyMovement(n, st, true); err != nil {
		return err
	}
	if sets := t.graph.SetVariables[n.ID]; sets != nil {
		if err := t.setVariables(n, st, sets); err != nil {
			return err
		}
	}
	if len(t.graph.Compensation) > 0 {
		if step := t.graph.UndoStep(n.ID); step != "" {
			return t.undoCompleted(st, step) // an undo node hands nothing on
		}
	}
	if l := t.graph.loopTaken(n.ID, st.Taken); l != nil {
		return t.nextIteration(l, st) // its exit edges wait for the last iteration
	}
	if n.Depth == 0 && len(t.graph.Adjacency[n.ID]) == 0 {
		t.run.TerminalsLeft--
		t.lastOutput.key, t.lastOutput.out = st.Key, st.Output
	}
	if n.Caps.FansOut {
		return nil // FanOut instantiates the region instead of walking.
	}
	if st.Taken == nil && t.graph.hasBranches(n.ID) {
		return fmt.Errorf("node %s completed without deciding its edges", st.Key)
	}
	if st.Taken != nil && t.graph.hasBranches(n.ID) {
		t.e.decisions.put(t.run.ID, st.Key, st.Taken)
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
		if r, ok := t.e.handlers[n.Type].(Retrier); ok {
			if delay, retry := r.RetryDelayMs(RetryParams{Node: n, RunID: t.run.ID, Key: st.Key,
				Attempt: st.Attempt, Error: msg}); retry {
				return t.fireDelayed(n, st.Index, st.Input, StatusFailed, st.Attempt, delay)
			}
		}
	}
	if err := t.applyMovement(n, st, false); err != nil {
		return err
	}
	if len(t.graph.Compensation) > 0 && t.graph.UndoStep(n.ID) != "" {
		return t.undoFailed(st) // the compensation stops; the run fails (settleFailure)
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
