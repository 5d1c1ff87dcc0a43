package engine

import (
	"errors"
	"fmt"
	"slices"
)

// Bulk fires: while a Splitter fans out or a run starts, the first fires
// of its Worker, UX and SubFlow instances are collected and written
// with one statement each (WriteBulk) instead of a round trip each. The
// writer keeps a collection per run: a sub-flow's child run, started in
// the same database transaction, collects its own while its parent's
// waits.

// bulkFires is one run's collection of first fires.
type bulkFires struct {
	starts     []BulkStart
	dispatches []*Dispatch
	nodeIDs    []string
	// unwritten: the fired instances' rows do not exist yet — they are
	// created already started — so an action other than a plain start
	// (errNeedsRow) is taken again once they exist.
	unwritten bool
}

// errNeedsRow: a fire before its instance's row exists took an action that
// needs the row (not a plain dispatch or a wait for a person).
var errNeedsRow = errors.New("the instance's row does not exist yet")

// CollectBulk starts collecting run's first fires (unwritten: their rows
// do not exist yet) and returns end, which stops collecting — the
// collection before this one, if any, is collected into again — and
// returns what was collected, for WriteBulk.
func (w *writer) CollectBulk(runID string, unwritten bool) (end func() *bulkFires) {
	if w.bulks == nil {
		w.bulks = map[string]*bulkFires{}
	}
	outer, b := w.bulks[runID], &bulkFires{unwritten: unwritten}
	w.bulks[runID] = b
	return func() *bulkFires {
		if outer == nil {
			delete(w.bulks, runID)
		} else {
			w.bulks[runID] = outer
		}
		return b
	}
}

// Collecting reports whether run's first fires are being collected, and
// whether their rows do not exist yet.
func (w *writer) Collecting(runID string) (on, unwritten bool) {
	b := w.bulks[runID]
	return b != nil, b != nil && b.unwritten
}

// StartInBulk adds a first fire to run's collection (Collecting must say
// one is under way): its node's start and its dispatch, if any, already
// claimed (Claim).
func (w *writer) StartInBulk(runID, nodeID string, s BulkStart, d *Dispatch) {
	b := w.bulks[runID]
	b.starts = append(b.starts, s)
	b.nodeIDs = append(b.nodeIDs, nodeID)
	if d != nil {
		b.dispatches = append(b.dispatches, d)
	}
}

// DropFromBulk removes the starts (and their outbox rows) of keys from
// run's collection, if any: their nodes were skipped meanwhile.
func (w *writer) DropFromBulk(runID string, keys map[string]bool) {
	b := w.bulks[runID]
	if b == nil {
		return
	}
	kept := 0
	for i, s := range b.starts {
		if keys[s.Key] {
			continue
		}
		b.starts[kept], b.nodeIDs[kept] = s, b.nodeIDs[i]
		kept++
	}
	b.starts, b.nodeIDs = b.starts[:kept], b.nodeIDs[:kept]
	b.dispatches = slices.DeleteFunc(b.dispatches, func(d *Dispatch) bool { return keys[d.Key] })
}

// WriteBulk writes a collection of run's first fires: one UPDATE for the
// node states (unless they were created started), one INSERT for the
// outbox rows.
func (w *writer) WriteBulk(runID string, b *bulkFires) error {
	if len(b.starts) == 0 {
		return nil
	}
	if !b.unwritten {
		n, err := w.BulkStart(runID, b.starts)
		if err != nil {
			return fmt.Errorf("error starting %d instances: %w", len(b.starts), err)
		}
		if n != len(b.starts) {
			return fmt.Errorf("%w: started %d of %d instances", ErrConflict, n, len(b.starts))
		}
	}
	if err := w.InsertDispatches(b.dispatches); err != nil {
		return fmt.Errorf("error writing %d dispatches: %w", len(b.dispatches), err)
	}
	return nil
}
