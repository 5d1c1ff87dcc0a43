package engine

import (
	"encoding/json"
	"fmt"
	"sort"
)

// Collectors: the items that reach a Collector are counted down once per
// transaction, and the Collector fires once, when every item has arrived,
// with the items' outputs in index order.

// countArrivals counts down each Collector by the items that reached it in
// this transaction, in one UPDATE … RETURNING per Collector, and fires the
// Collectors that reached zero — exactly one transaction sees zero. Firing
// a Collector may complete further items (nested regions), so it repeats
// until nothing arrives.
func (t *txn) countArrivals() error {
	for len(t.arrivals) > 0 {
		arr := t.arrivals
		t.arrivals = nil
		count := map[string]int{}
		var order []target
		for _, a := range arr {
			if count[a.key] == 0 {
				order = append(order, a)
			}
			count[a.key]++
		}
		for _, tg := range order {
			remaining, err := t.w.AddPending(t.run.ID, []string{tg.key}, -count[tg.key])
			if err != nil {
				return fmt.Errorf("error counting items of %s: %w", tg.key, err)
			}
			p, ok := remaining[tg.key]
			if !ok || p.Remaining != 0 || t.run.Status == RunPaused {
				continue // a paused run's Collector fires when it resumes
			}
			if err := t.fireReady(tg, p.Status, nil); err != nil {
				return err
			}
		}
	}
	return nil
}

// fireCollector gathers a Collector's items in index order and fires it.
func (t *txn) fireCollector(c *Node, idx []int, from Status, prevAttempt int) error {
	if from != StatusPending && from != StatusFailed {
		return nil
	}
	if from == StatusFailed && t.graph.hasBranches(c.ID) {
		// A failure its failure edges handed on is final.
		cur, err := t.tx.Node(t.ctx, t.run.ID, InstanceKey(c.ID, idx))
		if err != nil {
			return err
		}
		if cur.Taken != nil {
			return nil
		}
		prevAttempt = cur.Attempt
	}
	ups := t.graph.Upstream[c.ID]
	if len(ups) == 1 && len(t.graph.EdgeData[EdgeKey(ups[0], c.ID)]) == 0 {
		// Each item's output as is: the array is built by the database,
		// not from every instance loaded (100,000 of them at the end of a
		// 100,000-item fan-out).
		arr, err := t.tx.ItemOutputs(t.ctx, t.run.ID, ups[0], c.ID, idx)
		if err != nil {
			return fmt.Errorf("error gathering items of %s: %w", InstanceKey(c.ID, idx), err)
		}
		return t.fireCollected(c, idx, arr, from, prevAttempt)
	}
	states, err := t.tx.ItemStates(t.ctx, t.run.ID, ups, idx)
	if err != nil {
		return fmt.Errorf("error gathering items of %s: %w", InstanceKey(c.ID, idx), err)
	}
	byItem := make(map[int]map[string]json.RawMessage)
	var order []int
	for _, s := range states {
		i := s.Index[len(s.Index)-1]
		m, ok := byItem[i]
		if !ok {
			m = make(map[string]json.RawMessage, len(ups))
			byItem[i] = m
			order = append(order, i)
		}
		if edgeTaken(&s, c.ID) {
			m[s.NodeID] = s.Output
		}
	}
	sort.Ints(order)
	items := make([]json.RawMessage, 0, len(order))
	for _, i := range order {
		m := byItem[i]
		merge := make([]Upstream, len(ups))
		for j, u := range ups {
			merge[j] = Upstream{NodeID: u, Output: m[u], Mapping: t.graph.EdgeData[EdgeKey(u, c.ID)]}
		}
		v, err := MergeInputs(merge)
		if err != nil {
			return err
		}
		items = append(items, v)
	}
	arr, err := json.Marshal(items)
	if err != nil {
		return fmt.Errorf("error encoding collector output: %w", err)
	}
	return t.fireCollected(c, idx, arr, from, prevAttempt)
}

// fireCollected fires Collector c with its items' array — or, under
// toleratedFailures, with {items, errors}, or fails it when more items
// failed than it tolerates.
func (t *txn) fireCollected(c *Node, idx []int, arr json.RawMessage, from Status, prevAttempt int) error {
	tl, ok := toleranceOf(c)
	if !ok {
		return t.fire(c, idx, arr, from, prevAttempt)
	}
	out, msg, ok, err := t.toleratedOutput(c, idx, arr, tl)
	if err != nil {
		return err
	}
	if ok {
		return t.fire(c, idx, out, from, prevAttempt)
	}
	cst, err := t.transition(&NodeTransition{Key: InstanceKey(c.ID, idx), From: from,
		Steps: []Status{StatusRunning, StatusFailed}, Attempt: prevAttempt, NewAttempt: true, Error: &msg})
	if err != nil {
		return err
	}
	return t.failed(cst, msg, false)
}

func (t *txn) refireCollector(c *Node, cur *NodeState) error {
	if cur.PendingParents > 0 {
		return fmt.Errorf("%w: collector %s still waits for %d item(s); retry the failed items instead", ErrConflict, cur.Key, cur.PendingParents)
	}
	return t.fireCollector(c, cur.Index, StatusFailed, cur.Attempt)
}
