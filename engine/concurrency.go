package engine

import (
	"encoding/json"
	"fmt"
	"math"

	"github.com/tidwall/gjson"
)

// Splitter maxConcurrency: at most N items of the region in flight at once.
//
// The state lives in the run's rows, so that every process sees it and
// changes it under the run's lock:
//   - the items beyond the first N are created queued: the instances that
//     depend on the Splitter alone wait for one more parent than they have
//     (pending_parents 1, a slot), so that nothing — a resume's walk of
//     what became ready included — fires them;
//   - the Splitter instance's row, completed when it fans out, keeps in its
//     pending_parents the index of the next item to let in (N at first);
//   - when an item finishes (no instance of it at the item's depth is
//     active any more: it arrived at the Collector, or failed for good), the
//     transaction moves that cursor on by one and counts the slot of the
//     item it pointed at down, firing its instances.

// maxConcurrencyOf returns a Splitter's maxConcurrency (0: no limit).
func maxConcurrencyOf(s *Node) int {
	if s == nil || !s.Caps.FansOut {
		return 0
	}
	r := gjson.GetBytes(s.Config, "maxConcurrency")
	if r.Type != gjson.Number || r.Num < 1 || r.Num != math.Trunc(r.Num) || r.Num > math.MaxInt32 {
		return 0
	}
	return int(r.Num)
}

// limitedRegion returns the region of node n, its Splitter and its
// maxConcurrency, when n is an item's node at the region's own depth and
// the Splitter limits its items in flight.
func (t *txn) limitedRegion(n *Node) (*Region, *Node, int) {
	if n.Depth == 0 || n.Region == "" {
		return nil, nil, 0
	}
	region := t.graph.Regions[n.Region]
	if region == nil {
		return nil, nil, 0
	}
	s := t.graph.Nodes[region.Splitter]
	limit := maxConcurrencyOf(s)
	if limit == 0 {
		return nil, nil, 0
	}
	return region, s, limit
}

// itemFinished lets the next queued item of a limited region in when the
// item of node n at idx (which just arrived at the Collector or failed for
// good) has no instance left active.
func (t *txn) itemFinished(n *Node, idx []int) error {
	region, s, _ := t.limitedRegion(n)
	if region == nil || len(idx) == 0 {
		return nil
	}
	if len(region.Direct) > 1 {
		keys := make([]string, len(region.Direct))
		for i, m := range region.Direct {
			keys[i] = InstanceKey(m, idx)
		}
		states, err := t.tx.NodeStates(t.ctx, t.run.ID, keys)
		if err != nil {
			return fmt.Errorf("error loading item %s: %w", InstanceKey(n.ID, idx), err)
		}
		for _, st := range states {
			if st.Status.Active() {
				return nil // still in flight
			}
		}
	}
	return t.releaseNext(region, s, idx[:len(idx)-1])
}

// releaseNext lets the next queued item of Splitter s (at sidx) in.
func (t *txn) releaseNext(region *Region, s *Node, sidx []int) error {
	skey := InstanceKey(s.ID, sidx)
	cur, err := t.w.AddPending(t.run.ID, []string{skey}, 1)
	if err != nil {
		return fmt.Errorf("error moving the queue of %s on: %w", skey, err)
	}
	c, ok := cur[skey]
	if !ok {
		return nil
	}
	next := c.Remaining - 1
	idx := childIndex(sidx, next)
	var slots []target
	for _, m := range region.Direct {
		if t.slotted(s, m) {
			slots = append(slots, target{node: t.graph.Nodes[m], idx: idx, key: InstanceKey(m, idx)})
		}
	}
	if len(slots) == 0 {
		return nil
	}
	keys := make([]string, len(slots))
	for i, tg := range slots {
		keys[i] = tg.key
	}
	remaining, err := t.w.AddPending(t.run.ID, keys, -1)
	if err != nil {
		return fmt.Errorf("error letting item %d of %s in: %w", next, skey, err)
	}
	if len(remaining) == 0 || t.run.Status == RunPaused {
		return nil // no such item (the queue is empty); or fired by the resume
	}
	item, err := t.tx.ItemAt(t.ctx, t.run.ID, skey, next)
	if err != nil {
		return err
	}
	outputs := map[string]json.RawMessage{itemKey(skey, next): item}
	for _, tg := range slots {
		p, ok := remaining[tg.key]
		if !ok || p.Remaining != 0 || p.Status != StatusPending {
			continue
		}
		if err := t.fireReady(tg, p.Status, outputs); err != nil {
			return err
		}
	}
	return nil
}

// slotted reports whether region member m holds a queued item's slot:
// Splitter s is its only upstream node.
func (t *txn) slotted(s *Node, m string) bool {
	ups := t.graph.Upstream[m]
	return len(ups) == 1 && ups[0] == s.ID
}
