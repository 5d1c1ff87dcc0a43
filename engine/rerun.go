package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
)

// EventNodeRerun is recorded when an operator re-ran a node and what follows it.
const EventNodeRerun = "node.rerun"

// RerunParams re-runs a node and everything downstream of it.
type RerunParams struct {
	RunID, Key string
	// Input, when set, replaces the node's input.
	Input json.RawMessage
	// By is who asked.
	By string
}

// RerunNode resets node key of a run and every node instance downstream
// of it — a fan-out item's downstream being its own instances, then the
// Collector at the enclosing index and what follows — to pending, and
// fires the node again as a new attempt (with p.Input, or the input it
// had). Downstream instances keep their attempt numbers and fire again,
// each as a new attempt, as the node's new result walks the edges; the
// earlier attempts' history stays in the run's events. A Splitter among
// them fans out anew (its earlier instances are removed). A finished run
// runs again. Refused (ErrConflict, with the state): a cancelled run, a
// node (or one downstream of it) that is still running or waiting, a node
// on a loop; ErrNotFound: no such node.
func (e *Engine) RerunNode(ctx context.Context, p RerunParams) error {
	return e.submitAlone(ctx, p.RunID, func(t *txn) error {
		if err := t.load(p.RunID); err != nil {
			return err
		}
		if t.run.Status == RunCancelled {
			return fmt.Errorf("%w: run %s is cancelled", ErrConflict, p.RunID)
		}
		if err := t.refuseWhileDeferred("rerun"); err != nil {
			return err
		}
		if err := t.refuseCompensated("", "rerun"); err != nil {
			return err
		}
		n, idx, ok := t.graph.parseKey(p.Key)
		if !ok {
			return fmt.Errorf("node %s: %w", p.Key, ErrNotFound)
		}
		cur, err := t.tx.Node(t.ctx, p.RunID, p.Key)
		if err != nil {
			return err
		}
		if cur.Status.Active() || cur.Status == StatusPending {
			return fmt.Errorf("%w: node %s is %s; only a finished node is re-run", ErrConflict, p.Key, cur.Status)
		}
		down, regions := t.downstreamOf(n, idx)
		keys := []string{p.Key}
		for _, d := range down {
			keys = append(keys, d.key)
		}
		states, err := t.tx.NodeStates(t.ctx, p.RunID, keys)
		if err != nil {
			return fmt.Errorf("error loading the nodes after %s: %w", p.Key, err)
		}
		for _, k := range keys {
			nd, _, _ := t.graph.parseKey(k)
			if t.graph.loopOf(nd.ID) != nil {
				return fmt.Errorf("%w: node %s is on a loop; a loop's nodes are not re-run", ErrConflict, k)
			}
			if st := states[k]; st != nil && st.Status.Active() {
				return fmt.Errorf("%w: node %s after %s is %s; wait for it, or cancel the run", ErrConflict, k, p.Key, st.Status)
			}
		}
		// Each reset instance that had counted down its successors
		// (completed, skipped, or failed with its failure handed on) counts
		// them up again; the run's counters forget what the reset undid.
		pending := map[string]int{}
		for _, d := range down {
			if st := states[d.key]; st != nil && st.Status == StatusPending {
				pending[d.key] = st.PendingParents
			}
		}
		resetSet := map[string]bool{}
		for _, k := range keys {
			resetSet[k] = true
		}
		for _, k := range keys {
			st := states[k]
			if st == nil {
				continue // not instantiated: inside a region fanned out anew
			}
			nd, nidx, _ := t.graph.parseKey(k)
			counted := st.Status == StatusCompleted || st.Status == StatusSkipped || (st.Status == StatusFailed && st.Taken != nil)
			if counted {
				targets, arrivals := successors(t.graph, nd, nidx)
				for _, tg := range append(targets, arrivals...) {
					if resetSet[tg.key] {
						pending[tg.key]++
					}
				}
				if nd.Depth == 0 && len(t.graph.Adjacency[nd.ID]) == 0 {
					t.run.TerminalsLeft++
				}
			}
			if st.Status == StatusFailed && st.Taken == nil {
				t.run.FailedNodes--
			}
			if st.Status == StatusFailed && st.PendingParents < 0 && nd.Region != "" && len(nidx) > 0 {
				// A tolerated failure counted its item down from the
				// Collector by that much (tolerate): it counts it up again.
				if r := t.graph.Regions[nd.Region]; r != nil {
					if ck := InstanceKey(r.Collector, nidx[:len(nidx)-1]); resetSet[ck] {
						pending[ck] -= st.PendingParents
					}
				}
			}
		}
		for _, r := range regions {
			failed, err := t.w.DeleteInstances(p.RunID, r.members, r.idx)
			if err != nil {
				return fmt.Errorf("error removing the instances of %s: %w", r.splitter, err)
			}
			t.run.FailedNodes -= failed
		}
		resets := make([]ResetNode, 0, len(keys))
		for _, k := range keys {
			if states[k] != nil {
				resets = append(resets, ResetNode{Key: k, PendingParents: pending[k]})
			}
		}
		if err := t.w.ResetNodes(p.RunID, resets); err != nil {
			return fmt.Errorf("error resetting the nodes after %s: %w", p.Key, err)
		}
		t.run.Reran = true // the reset rows fire as later attempts
		// Its steps are no longer speculated (speculationOf); kept even
		// if this transaction rolls back, which costs only speculation
		// until the run is next locked.
		t.e.versions.put(t.run.ID, runVersion{id: t.run.FlowVersionID, reran: true})
		if t.run.Status != RunPaused {
			if t.run.Status != RunRunning {
				t.event(EventRunResumed, "", nil)
			}
			t.run.Status, t.run.Error, t.run.Output, t.run.FinishedAt = RunRunning, nil, nil, nil
		}
		input := cur.Input
		if len(p.Input) > 0 {
			input = p.Input
		}
		t.event(EventNodeRerun, p.Key, map[string]any{"by": p.By, "attempt": cur.Attempt + 1, "reset": len(resets)})
		if n.Caps.Collects {
			return t.fireCollector(n, idx, StatusPending, cur.Attempt)
		}
		return t.fire(n, idx, input, StatusPending, cur.Attempt)
	})
}

// regionReset is a fanned-out region a rerun removes: its members'
// instances under index idx (its Splitter's).
type regionReset struct {
	splitter string
	members  []string
	idx      []int
}

// downstreamOf lists the node instances downstream of node n at index idx
// — through Collectors to the enclosing level — and the regions of the
// Splitters among them (their instances are removed: the Splitter fans
// out anew; its Collector is listed).
func (t *txn) downstreamOf(n *Node, idx []int) ([]target, []regionReset) {
	g := t.graph
	seen := map[string]bool{InstanceKey(n.ID, idx): true}
	var out []target
	var regions []regionReset
	var visit func(n *Node, idx []int)
	add := func(tg target) {
		if !seen[tg.key] {
			seen[tg.key] = true
			out = append(out, tg)
			visit(tg.node, tg.idx)
		}
	}
	visit = func(n *Node, idx []int) {
		if n.Caps.FansOut {
			if r := g.Regions[n.ID]; r != nil {
				regions = append(regions, regionReset{splitter: n.ID, members: r.Members, idx: slices.Clone(idx)})
				c := g.Nodes[r.Collector]
				add(target{node: c, idx: idx, key: InstanceKey(c.ID, idx)})
			}
			return
		}
		targets, arrivals := successors(g, n, idx)
		for _, tg := range append(targets, arrivals...) {
			add(tg)
		}
	}
	visit(n, idx)
	slices.SortFunc(out, func(a, b target) int { return strings.Compare(a.key, b.key) })
	return out, regions
}
