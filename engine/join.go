package engine

import (
	"encoding/json"
	"fmt"
	"slices"
)

// First-wins joins (docs/state_machine.md, Joins): a node with data.join
// "any" fires on the first of its inbound edges taken, with that
// upstream node's output as input, and the same transaction cancels the
// other branches leading to it (ExecutionGraph.JoinAny): their running
// and waiting nodes become cancelled (a Worker with a cancelUrl is told,
// as on a run's cancel), their pending nodes skipped. A graph without
// such a node never reaches this file: walk looks the node up only when
// the graph has one.

// EventJoined is recorded when a node with data.join "any" fired on its
// first arrival; its payload names the arrival and the nodes the other
// branches lost.
const EventJoined = "node.joined"

// joinAny reports whether node n fires on its first arrival.
func (g *ExecutionGraph) joinAny(n *Node) bool {
	if len(g.JoinAny) == 0 {
		return false
	}
	_, ok := g.JoinAny[n.ID]
	return ok
}

// joinArrival settles join-any target tg after node from (key fromKey)
// decided its edge to it (taken: from's edges taken, nil for all); p is
// tg's count after the count-down. The first edge taken fires it; once
// every edge was counted and none was taken (the upstream rows tell), it
// is skipped.
func (t *txn) joinArrival(tg target, p Pending, from *Node, fromKey string, taken []string, outputs map[string]json.RawMessage) error {
	if p.Status != StatusPending {
		return nil // fired already (or skipped, cancelled)
	}
	if taken == nil || slices.Contains(taken, tg.node.ID) {
		return t.fireJoin(tg, map[string]bool{from.ID: true}, fromKey, outputs)
	}
	if p.Remaining > 0 {
		return nil
	}
	return t.joinDecided(tg, outputs)
}

// joinDecided settles join-any node tg from its upstream rows: it fires
// with the outputs of those whose edge to it was taken (a resume's, after
// arrivals while paused), is skipped when every one decided without
// taking it, and waits otherwise.
func (t *txn) joinDecided(tg target, outputs map[string]json.RawMessage) error {
	ups := t.graph.Upstream[tg.node.ID]
	keys := make([]string, len(ups))
	for i, u := range ups {
		keys[i] = InstanceKey(u, tg.idx[:t.graph.Nodes[u].Depth])
	}
	states, err := t.tx.NodeStates(t.ctx, t.run.ID, keys)
	if err != nil {
		return fmt.Errorf("error loading the upstream nodes of %s: %w", tg.key, err)
	}
	takenFrom := map[string]bool{}
	first, decided := "", true
	for i, u := range ups {
		st := states[keys[i]]
		switch {
		case st == nil:
			decided = false
		case edgeTaken(st, tg.node.ID):
			takenFrom[u] = true
			outputs[st.Key] = st.Output
			if first == "" {
				first = st.Key
			}
		case !settled(st):
			decided = false
		}
	}
	switch {
	case len(takenFrom) > 0:
		return t.fireJoin(tg, takenFrom, first, outputs)
	case decided:
		return t.skip(tg)
	}
	return nil
}

// settled reports whether node state st decided its edges for good:
// completed, skipped, cancelled, or failed with its failure handed on.
func settled(st *NodeState) bool {
	switch st.Status {
	case StatusCompleted, StatusSkipped, StatusCancelled:
		return true
	case StatusFailed:
		return st.Taken != nil
	default:
		return false
	}
}

// fireJoin cancels the other branches of join-any node tg, then fires it
// with the outputs of the upstream nodes in takenFrom (arrival: the first
// of them).
func (t *txn) fireJoin(tg target, takenFrom map[string]bool, arrival string, outputs map[string]json.RawMessage) error {
	input, err := t.inputFrom(tg.node, tg.idx, outputs, takenFrom)
	if err != nil {
		return err
	}
	if err := t.cancelBranches(tg, arrival); err != nil {
		return err
	}
	return t.firePending(tg, input)
}

// cancelBranches cancels, at join-any node j's index, the nodes of the
// branches its firing makes pointless (ExecutionGraph.JoinAny): running,
// waiting, sleeping and (unhandled) failed ones become cancelled, pending
// ones skipped — without walking their edges, which lead only to other
// such nodes or to j. Their outbox rows not yet delivered are dropped, a
// Worker with a cancelUrl is told; a late callback finds its node
// cancelled (409).
func (t *txn) cancelBranches(j target, arrival string) error {
	ids := t.graph.JoinAny[j.node.ID]
	if len(ids) == 0 {
		return nil
	}
	prefix := j.idx
	if prefix == nil {
		prefix = []int{}
	}
	cs, err := t.w.CancelBranches(t.run.ID, ids, prefix)
	if err != nil {
		return fmt.Errorf("error cancelling the other branches of %s: %w", j.key, err)
	}
	cancelled, skipped := []string{}, []string{}
	reason := "another branch reached " + j.key + " first"
	for _, c := range cs {
		to := StatusCancelled
		switch {
		case c.Was == StatusPending:
			to = StatusSkipped
			if c.Deferred {
				t.run.ActiveNodes-- // a fire left for later, counted active
			}
			skipped = append(skipped, c.Key)
		case c.Was.Active():
			t.run.ActiveNodes--
			cancelled = append(cancelled, c.Key)
		case c.Was == StatusFailed:
			t.run.FailedNodes--
			cancelled = append(cancelled, c.Key)
		}
		t.event(EventNodeStatus, c.Key, map[string]any{"status": to, "node_id": c.NodeID, "attempt": c.Attempt, "join": j.key})
		if to == StatusCancelled {
			t.tellWorkerCancelled(c, reason)
		}
		if t.branchCancelled == nil {
			t.branchCancelled = map[string]bool{}
		}
		t.branchCancelled[c.Key] = true
	}
	if len(cs) > 0 {
		// What this transaction started of them does not go out.
		t.w.DropClaims(t.run.ID, t.branchCancelled)
		t.w.DropFromBulk(t.run.ID, t.branchCancelled)
	}
	t.event(EventJoined, j.key, map[string]any{"node_id": j.node.ID, "arrival": arrival, "cancelled": cancelled, "skipped": skipped})
	return nil
}

// cancelledByJoin reports whether this transaction cancelled or skipped
// node key as a branch a join's first arrival made pointless: what it had
// read of the node before (a count-down's status) no longer holds.
func (t *txn) cancelledByJoin(key string) bool {
	return t.branchCancelled != nil && t.branchCancelled[key]
}
