package engine

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"

	"github.com/tidwall/gjson"
)

// Walking edges and readiness: a finished node's successors are counted
// down, and each whose upstream nodes are all done fires with the merge of
// their outputs as input.

type target struct {
	node *Node
	idx  []int
	key  string
}

// walk reads the outbound edges of a node that finished (taken: the
// targets of the edges it took, nil for all) and fires every downstream
// node whose upstream count reached zero in this transaction, or skips it
// when none of its inbound edges was taken.
func (t *txn) walk(n *Node, key string, idx []int, output json.RawMessage, taken []string) error {
	targets, arrivals := successors(t.graph, n, idx)
	// Items arriving at the Collector closing n's region: counted down with
	// the other arrivals of this transaction at flush.
	t.arrivals = append(t.arrivals, arrivals...)
	if len(arrivals) > 0 {
		if err := t.itemFinished(n, idx); err != nil {
			return err
		}
	}
	if len(targets) == 0 {
		return nil
	}
	if t.run.Status == RunPaused {
		return t.countWhilePaused(key, targets, taken)
	}
	remaining, err := t.countDownDecided(key, counted(t.graph, targets), taken)
	if err != nil {
		return fmt.Errorf("error counting down successors of %s: %w", key, err)
	}
	outputs := map[string]json.RawMessage{key: output}
	joins := len(t.graph.JoinAny) > 0
	var notTaken []target // branches skipped together after the loop
	for _, tg := range targets {
		if joins {
			if t.cancelledByJoin(tg.key) {
				continue // a join fired by this walk cancelled its branch
			}
			if t.graph.joinAny(tg.node) {
				p, ok := remaining[tg.key]
				if soleParent(t.graph, tg.node) {
					p, ok = Pending{Status: StatusPending}, true
				}
				if ok {
					if err := t.joinArrival(tg, p, n, key, taken, outputs); err != nil {
						return err
					}
				}
				continue
			}
		}
		p, ok := remaining[tg.key]
		if soleParent(t.graph, tg.node) {
			// n was its only upstream node, and completed now: a first
			// completion, so the target is still pending (a cancelled run's
			// nodes cannot complete), and its start's compare-and-set from
			// pending would fail the transaction if it were not.
			p, ok = Pending{Status: StatusPending}, true
		}
		if !ok || p.Remaining != 0 {
			continue
		}
		if t.graph.MaySkip[tg.node.ID] {
			if !joins && taken != nil && soleParent(t.graph, tg.node) && !slices.Contains(taken, tg.node.ID) {
				notTaken = append(notTaken, tg) // n alone decides it: skipped
				continue
			}
			if err := t.readyDecided(tg, p, key, taken, outputs); err != nil {
				return err
			}
			continue
		}
		if err := t.fireReady(tg, p.Status, outputs); err != nil {
			return err
		}
	}
	return t.skipAll(notTaken, n, taken)
}

// soleParent reports whether node n fires as soon as its one upstream node
// completes, without counting its pending parents down: a node other than
// a Collector (whose count is of items) with one inbound edge — and that
// no join's first arrival may have skipped meanwhile (its count tells).
func soleParent(g *ExecutionGraph, n *Node) bool {
	return !n.Caps.Collects && !n.joinBranch && len(g.Upstream[n.ID]) == 1
}

// counted returns the keys of the targets whose pending parents are
// counted down (not soleParent), in order.
func counted(g *ExecutionGraph, targets []target) []string {
	var keys []string
	for _, tg := range targets {
		if !soleParent(g, tg.node) {
			keys = append(keys, tg.key)
		}
	}
	return keys
}

// successors returns the targets of node n's outbound edges at index idx
// that are at n's depth or deeper, and the Collectors closing n's region
// (an item's arrival, at the enclosing index).
func successors(g *ExecutionGraph, n *Node, idx []int) (targets, arrivals []target) {
	for _, id := range g.Adjacency[n.ID] {
		tn := g.Nodes[id]
		if tn.Depth < n.Depth {
			cidx := idx[:len(idx)-1]
			arrivals = append(arrivals, target{node: tn, idx: cidx, key: InstanceKey(id, cidx)})
			continue
		}
		targets = append(targets, target{node: tn, idx: idx, key: InstanceKey(id, idx)})
	}
	return targets, arrivals
}

// fireReady fires a node whose upstream count reached zero.
func (t *txn) fireReady(tg target, status Status, outputs map[string]json.RawMessage) error {
	if tg.node.Caps.Collects {
		return t.fireCollector(tg.node, tg.idx, status, 0)
	}
	if status != StatusPending {
		return nil // cancelled, or already fired
	}
	input, err := t.inputFor(tg.node, tg.idx, outputs)
	if err != nil {
		return err
	}
	return t.firePending(tg, input)
}

// firePending fires pending node tg with input, as the attempt after the
// one its row holds (pendingAttempt).
func (t *txn) firePending(tg target, input json.RawMessage) error {
	prev, err := t.pendingAttempt(tg)
	if err != nil {
		return err
	}
	return t.fire(tg.node, tg.idx, input, StatusPending, prev)
}

// inputFor merges the upstream outputs of node n at index idx.
func (t *txn) inputFor(n *Node, idx []int, outputs map[string]json.RawMessage) (json.RawMessage, error) {
	return t.inputFrom(n, idx, outputs, nil)
}

// inputFrom merges the outputs of the upstream nodes of n at index idx
// whose edge to n was taken (taken nil: all of them).
func (t *txn) inputFrom(n *Node, idx []int, outputs map[string]json.RawMessage, taken map[string]bool) (json.RawMessage, error) {
	ups := t.graph.Upstream[n.ID]
	if len(ups) == 0 {
		return t.runInput()
	}
	if taken != nil {
		ups = slices.DeleteFunc(slices.Clone(ups), func(u string) bool { return !taken[u] })
	}
	keys := make([]string, len(ups))
	var missing []string
	for i, u := range ups {
		un := t.graph.Nodes[u]
		k := InstanceKey(u, idx[:un.Depth])
		if un.Caps.FansOut && n.Region == u {
			k = itemKey(k, idx[len(idx)-1])
			if _, ok := outputs[k]; !ok {
				missing = append(missing, InstanceKey(u, idx[:un.Depth]))
			}
		} else if _, ok := outputs[k]; !ok {
			missing = append(missing, k)
		}
		keys[i] = k
	}
	if len(missing) > 0 {
		outs, err := t.tx.Outputs(t.ctx, t.run.ID, missing)
		if err != nil {
			return nil, fmt.Errorf("error loading upstream outputs of %s: %w", InstanceKey(n.ID, idx), err)
		}
		for k, v := range outs {
			outputs[k] = v
		}
	}
	merge := make([]Upstream, len(ups))
	for i, u := range ups {
		out, ok := outputs[keys[i]]
		if !ok && t.graph.Nodes[u].Caps.FansOut && n.Region == u {
			sk := InstanceKey(u, idx[:t.graph.Nodes[u].Depth])
			out = json.RawMessage(gjson.GetBytes(outputs[sk], strconv.Itoa(idx[len(idx)-1])).Raw)
		}
		merge[i] = Upstream{NodeID: u, Output: out, Mapping: t.graph.EdgeData[EdgeKey(u, n.ID)]}
	}
	if len(merge) == 1 && len(merge[0].Mapping) == 0 && t.graph.Nodes[ups[0]].Caps.FansOut {
		return merge[0].Output, nil // a region's first node gets its item as is
	}
	return MergeInputs(merge)
}

func itemKey(splitterKey string, i int) string { return splitterKey + "#" + strconv.Itoa(i) }
