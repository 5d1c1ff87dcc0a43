package engine

import (
	"context"
	"fmt"

	"github.com/stitchd/stitchd/engine/internal/commit"
)

// Completions across runs. A group (applier.Group) of worker callbacks that
// each complete a node of a different run — the ends of a fan-out's
// sub-flow runs, each the last step of its run — would lock each run and
// compare-and-set each node with statements of its own: two statements a
// run. Instead the group locks its runs with one statement (in id order,
// as the group would) and completes their nodes with another; each
// callback's operation then finds its run loaded and its node completed
// (takeCompletedInBulk), as a batch's bulk completion leaves them, and runs only
// the consequences. Steps that speculate (a chain's) are left to
// speculation, which needs no lock of its own.

// together is what completeTogether did for each run of a group.
type together struct {
	runs map[string]togetherRun
	done int
}

type togetherRun struct {
	run   *Run
	graph *ExecutionGraph
	// node is the node the group's compare-and-set completed (nil: it did
	// not match — a repeated or stale callback, judged by its operation).
	node *NodeState
}

// completeTogether locks the runs of group ms (sorted by run id) and
// completes their callbacks' nodes, when every member is one completion
// callback of a run whose graph this process knows, of a node that decides
// no edges and would not be speculated; else it does nothing (nil).
func (e *Engine) completeTogether(ctx context.Context, tx Tx, ms []*commit.Member[opFn]) (*together, error) {
	if len(ms) < 2 {
		return nil, nil
	}
	ids := make([]string, len(ms))
	cs := make([]BulkComplete, len(ms))
	versions := make(map[string]string, len(ms))
	for i, m := range ms {
		if m.Version == "" {
			return nil, nil
		}
		p := m.Callback
		ids[i], versions[p.RunID] = p.RunID, m.Version
		cs[i] = BulkComplete{RunID: p.RunID, Key: p.Key, Attempt: p.Attempt, Output: orNull(p.Output)}
	}
	runs, err := tx.LockRuns(ctx, ids)
	if err != nil {
		return nil, fmt.Errorf("error locking %d runs: %w", len(ids), err)
	}
	c := &together{runs: make(map[string]togetherRun, len(runs))}
	moved := false
	for _, r := range runs {
		graph, err := e.Graph(ctx, r.FlowVersionID)
		if err != nil {
			return nil, err
		}
		c.runs[r.ID] = togetherRun{run: r, graph: graph}
		// A run moved to another version (Engine.Migrate) since this
		// process learnt it: what was judged above may not hold.
		moved = moved || r.FlowVersionID != versions[r.ID]
	}
	if moved {
		// Each operation finds its run locked (setRun learns the version)
		// and applies its own compare-and-set.
		return c, nil
	}
	done, err := tx.CompleteAcrossRuns(ctx, cs)
	if err != nil {
		return nil, fmt.Errorf("error completing nodes of %d runs: %w", len(cs), err)
	}
	c.done = len(done)
	for i := range done {
		if tr, ok := c.runs[done[i].RunID]; ok {
			tr.node = &done[i]
			c.runs[done[i].RunID] = tr
		}
	}
	return c, nil
}

// completed is how many nodes the group's compare-and-set completed.
func (c *together) completed() int {
	if c == nil {
		return 0
	}
	return c.done
}

// mayCompleteTogether returns the run's flow version when callback p (nil:
// not a callback) is a completion of a run whose graph this process knows,
// of a node that decides no edges and would not be speculated: one that
// completeTogether may apply; "" otherwise.
func (e *Engine) mayCompleteTogether(p *CallbackParams) string {
	if p == nil || p.Status != StatusCompleted || p.Attempt <= 0 {
		return ""
	}
	v, graph, ok := e.cachedGraph(p.RunID)
	if !ok {
		return ""
	}
	n, idx, ok := graph.parseKey(p.Key)
	if !ok || graph.hasBranches(n.ID) {
		return ""
	}
	if join, _ := e.knownJoin(p.RunID, graph, n, idx); speculable(graph, n, idx, p.Output, join) {
		return ""
	}
	return v
}

// give hands run runID's part to its operation's transaction: the run,
// locked, and the node completed for it — a write, so the operation can
// no longer be left out of the group.
func (c *together) give(t *txn, runID string) {
	if c == nil {
		return
	}
	tr, ok := c.runs[runID]
	if !ok {
		return
	}
	t.setRun(tr.run, tr.graph)
	if tr.node != nil {
		t.completedInBulk = map[string]*NodeState{tr.node.Key: tr.node}
		t.w.Wrote()
	}
}
