package engine

import (
	"fmt"
	"slices"
	"strconv"
)

// Loops (docs/state_machine.md): an edge marked data.loop leads back from
// a loop's source to its head. Taking it starts a new iteration of the
// nodes on the loop (the body, head to source): one new pending row each,
// keyed <key>@<iteration>; the head fires at once with the source's
// output. The source's other edges leave the loop and are decided only in
// the iteration that does not take the back edge. Only the source's edges
// leave the body (the compiler checks), so an iteration's nodes are found
// from the node that completes: a node on the loop at iteration k reaches
// the body's other nodes at k, and anything else at 0.

// Loop is one loop of an execution graph.
type Loop struct {
	// EdgeID is the back edge's id, Source its source, Head its target.
	EdgeID string `json:"edgeId"`
	Source string `json:"source"`
	Head   string `json:"head"`
	// MaxIterations bounds the iterations (the first pass included).
	MaxIterations int `json:"maxIterations"`
	// Body lists the nodes on the loop, the head first.
	Body []string `json:"body"`
	// Inner is, for each body node, how many of its inbound edges come
	// from body nodes: its pending parents in a new iteration.
	Inner map[string]int `json:"inner"`
}

// IterationKey is the key of a node-state row in loop iteration iter.
func IterationKey(key string, iter int) string {
	if iter == 0 {
		return key
	}
	return key + "@" + strconv.Itoa(iter)
}

// loopOf returns the loop node id is on, or nil.
func (g *ExecutionGraph) loopOf(id string) *Loop {
	if len(g.Loops) == 0 {
		return nil
	}
	i, ok := g.LoopOf[id]
	if !ok {
		return nil
	}
	return &g.Loops[i]
}

// loopTaken returns the loop whose back edge node id took (taken: its
// decision), or nil.
func (g *ExecutionGraph) loopTaken(id string, taken []string) *Loop {
	l := g.loopOf(id)
	if l == nil || l.Source != id || !slices.Contains(taken, l.Head) {
		return nil
	}
	return l
}

// errLoopLimit: a loop's source chose to go round again past its
// maxIterations; it fails instead.
type errLoopLimit struct {
	loop *Loop
}

func (e *errLoopLimit) Error() string {
	return fmt.Sprintf("the loop back to %s (edge %s) ran its %d iterations", e.loop.Head, e.loop.EdgeID, e.loop.MaxIterations)
}

// checkLoop refuses a decision of node n (key) that takes its loop's back
// edge past the loop's maxIterations; iter is the row's iteration (< 0:
// not known, read it).
func (t *txn) checkLoop(n *Node, key string, iter int, taken []string) error {
	l := t.graph.loopTaken(n.ID, taken)
	if l == nil {
		return nil
	}
	if iter < 0 {
		cur, err := t.tx.Node(t.ctx, t.run.ID, key)
		if err != nil {
			return err
		}
		iter = cur.Iteration
	}
	return l.limit(iter)
}

// limit refuses going round loop l again from iteration iter when that
// would pass its maxIterations (a run's decision, and a try's: TryNode).
func (l *Loop) limit(iter int) error {
	if iter+1 >= l.MaxIterations {
		return &errLoopLimit{loop: l}
	}
	return nil
}

// nextIteration starts the next iteration of loop l, whose source
// completed as st taking the back edge. The body's rows of the iteration
// that ends are kept as its history under <key>@<iteration>; new pending
// rows take their keys, so that everything outside the loop reads the
// latest iteration under the key it always used. Attempts go on counting
// from the old rows', so a late callback for the old iteration is stale.
func (t *txn) nextIteration(l *Loop, st *NodeState) error {
	iter := st.Iteration + 1
	keys := make([]string, len(l.Body))
	for i, id := range l.Body {
		keys[i] = InstanceKey(id, st.Index)
	}
	attempts, err := t.w.ArchiveIteration(t.run.ID, keys)
	if err != nil {
		return fmt.Errorf("error keeping iteration %d of the loop back to %s: %w", st.Iteration, l.Head, err)
	}
	rows := make([]NodeState, len(l.Body))
	for i, id := range l.Body {
		rows[i] = NodeState{Key: keys[i], NodeID: id, Type: t.graph.Nodes[id].Type, Index: st.Index, Iteration: iter,
			Status: StatusPending, PendingParents: l.Inner[id], Attempt: attempts[keys[i]]}
	}
	t.addRows(len(rows))
	if err := t.w.InsertIteration(t.run.ID, rows); err != nil {
		return fmt.Errorf("error starting iteration %d of the loop back to %s: %w", iter, l.Head, err)
	}
	t.event(EventLoopIteration, st.Key, map[string]any{"loop": l.EdgeID, "head": l.Head, "iteration": iter})
	return t.fire(t.graph.Nodes[l.Head], st.Index, orNull(st.Output), StatusPending, attempts[keys[0]])
}

// attemptKnown reports whether pending node tg's row is at attempt 0
// (any attempt does, for its compare-and-set) without reading it: its row
// is being made in a bulk start (not written yet), or it is in no loop
// and its run was never rerun — in a collection of first fires too,
// whose rows may be a rerun run's, reset keeping their attempts.
func (t *txn) attemptKnown(tg target) bool {
	if _, unwritten := t.w.Collecting(t.run.ID); unwritten {
		return true
	}
	return t.graph.loopOf(tg.node.ID) == nil && !t.run.Reran
}

// pendingAttempt is the attempt of the pending row of target tg: 0, but
// for a node on a loop, whose rows of a later iteration go on counting
// from the earlier ones' (nextIteration), and in a run re-run by hand
// (RerunNode resets rows keeping their attempts). A fan-out's first fires
// (bulk) are of new rows.
func (t *txn) pendingAttempt(tg target) (int, error) {
	if t.attemptKnown(tg) {
		return 0, nil
	}
	cur, err := t.tx.Node(t.ctx, t.run.ID, tg.key)
	if err != nil {
		return 0, fmt.Errorf("error loading node %s: %w", tg.key, err)
	}
	return cur.Attempt, nil
}
