package engine

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/stitchd/stitchd/engine/internal/writer"
)

// Fan-out: a Splitter's region is instantiated once per item, in bulk
// statements a chunk of items at a time, and the instances that depend on
// the Splitter alone fire.

// fanOut instantiates a Splitter's region once per item, in bulk
// statements, and fires the instances that depend on the Splitter alone.
func (t *txn) fanOut(s *Node, sidx []int, skey string, items []json.RawMessage) error {
	region := t.graph.Regions[s.ID]
	if region == nil {
		return fmt.Errorf("splitter %s has no region in the graph", s.ID)
	}
	coll := t.graph.Nodes[region.Collector]
	t.event(EventItemsSpawned, skey, map[string]any{"items": len(items)})
	if len(items) == 0 {
		return t.fireCollector(coll, sidx, StatusPending, 0)
	}
	collKey := InstanceKey(coll.ID, sidx)
	if err := t.w.SetPending(t.run.ID, collKey, len(items)*len(t.graph.Upstream[coll.ID])); err != nil {
		return fmt.Errorf("error arming collector %s: %w", collKey, err)
	}
	pending := make(map[string]int, len(region.Direct))
	for _, m := range region.Direct {
		c := 0
		for _, u := range t.graph.Upstream[m] {
			if u != s.ID {
				c++
			}
		}
		pending[m] = c
	}
	// The instances that depend on the Splitter alone fire first, into
	// starts, so that their rows are created already started: one INSERT
	// instead of an INSERT and an UPDATE of every instance. A fire that
	// needs its row (a nested Splitter, a delayed dispatch) is taken again
	// once the rows exist. Items go a chunk (Config.FanOutChunk) at a
	// time, so that a big fan-out does not hold every instance's row and
	// outbox payload in memory at once.
	// Under maxConcurrency, the items from limit on are created queued
	// (concurrency.go) and the Splitter's row points at the first of them.
	limit := maxConcurrencyOf(s)
	if limit >= len(items) {
		limit = 0
	} else if limit > 0 {
		if err := t.w.SetPending(t.run.ID, skey, limit); err != nil {
			return fmt.Errorf("error queueing the items of %s: %w", skey, err)
		}
	}
	var needRows []target
	listed := len(t.events) // the transaction's own, before the fan-out's
	chunk := t.e.fanOutChunk()
	for off := 0; off < len(items); off += chunk {
		more, err := t.instantiate(region, pending, sidx, skey, items[off:min(off+chunk, len(items))], off, limit)
		if err != nil {
			return fmt.Errorf("error creating instances of %s: %w", s.ID, err)
		}
		needRows = append(needRows, more...)
		if spilled, err := t.spillEvents(listed); err != nil {
			return err
		} else if spilled {
			listed = 0
		}
	}
	outputs := map[string]json.RawMessage{}
	for _, tg := range needRows {
		i := tg.idx[len(tg.idx)-1]
		outputs[itemKey(skey, i)] = items[i]
	}
	end := t.w.CollectBulk(t.run.ID, false)
	for _, tg := range needRows {
		if t.cancelledByJoin(tg.key) {
			continue // a join "any" of its region fired first and skipped it
		}
		t.collectedFirst = tg.key
		err := t.fireReady(tg, StatusPending, outputs)
		t.collectedFirst = ""
		if err != nil {
			end()
			return err
		}
	}
	return t.flushBulk(end())
}

// instantiate creates the region's instances for items (at offset off of
// the fan-out), those that depend on the Splitter alone already started —
// or, from item limit on when limit > 0, queued — and returns the fires
// that need their row first.
func (t *txn) instantiate(region *Region, pending map[string]int, sidx []int, skey string,
	items []json.RawMessage, off, limit int) ([]target, error) {
	outputs := make(map[string]json.RawMessage, len(items))
	for i, it := range items {
		outputs[itemKey(skey, off+i)] = it
	}
	end := t.w.CollectBulk(t.run.ID, true)
	var needRows []target
	for i := range items {
		if limit > 0 && off+i >= limit {
			break // queued
		}
		idx := childIndex(sidx, off+i)
		for _, m := range region.Direct {
			if pending[m] != 0 {
				continue
			}
			tg := target{node: t.graph.Nodes[m], idx: idx, key: InstanceKey(m, idx)}
			if err := t.fireReady(tg, StatusPending, outputs); errors.Is(err, writer.ErrNeedsRow) {
				needRows = append(needRows, tg)
			} else if err != nil {
				end()
				return nil, err
			}
		}
	}
	first := end()
	started := make(map[string]BulkStart, len(first.Starts))
	for _, st := range first.Starts {
		started[st.Key] = st
	}
	rows := make([]NodeState, 0, len(items)*len(region.Direct))
	starts := make([]BulkStart, 0, cap(rows))
	for i := range items {
		idx := childIndex(sidx, off+i)
		queued := limit > 0 && off+i >= limit
		for _, m := range region.Direct {
			k := InstanceKey(m, idx)
			p := pending[m]
			if queued && p == 0 {
				p = 1 // the slot it waits for
			}
			rows = append(rows, NodeState{Key: k, NodeID: m, Type: t.graph.Nodes[m].Type,
				Index: idx, Status: StatusPending, PendingParents: p})
			starts = append(starts, started[k])
		}
	}
	t.addRows(len(rows))
	if err := t.w.InsertStartedNodes(t.run.ID, rows, starts); err != nil {
		return nil, err
	}
	return needRows, t.flushBulk(first)
}

func childIndex(parent []int, i int) []int {
	idx := make([]int, len(parent)+1)
	copy(idx, parent)
	idx[len(parent)] = i
	return idx
}
