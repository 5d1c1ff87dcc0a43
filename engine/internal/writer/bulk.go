package writer

import (
	"errors"
	"fmt"
	"slices"

	"github.com/stitchd/stitchd/engine/enginetype"
)

// Bulk fires: while a Splitter fans out or a run starts, the first fires
// of its Worker, UX and SubFlow instances are collected and written
// with one statement each (WriteBulk) instead of a round trip each. The
// writer keeps a collection per run: a sub-flow's child run, started in
// the same database transaction, collects its own while its parent's
// waits.

// Bulk is one run's collection of first fires.
type Bulk struct {
	Starts     []enginetype.BulkStart
	Dispatches []*enginetype.Dispatch
	// NodeIDs are the graph nodes of Starts, in order.
	NodeIDs []string
	// Unwritten: the fired instances' rows do not exist yet — they are
	// created already started — so an action other than a plain start
	// (ErrNeedsRow) is taken again once they exist.
	Unwritten bool
}

// ErrNeedsRow answers a fire, made before its instance's row exists, that
// took an action needing the row (not a plain dispatch or a wait for a
// person): the fire is taken again once the row exists.
var ErrNeedsRow = errors.New("the instance's row does not exist yet")

// CollectBulk starts collecting run's first fires (unwritten: their rows
// do not exist yet) and returns end, which stops collecting — the
// collection before this one, if any, is collected into again — and
// returns what was collected, for WriteBulk.
func (w *Writer) CollectBulk(runID string, unwritten bool) (end func() *Bulk) {
	if w.bulks == nil {
		w.bulks = map[string]*Bulk{}
	}
	outer, b := w.bulks[runID], &Bulk{Unwritten: unwritten}
	w.bulks[runID] = b
	return func() *Bulk {
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
func (w *Writer) Collecting(runID string) (on, unwritten bool) {
	b := w.bulks[runID]
	return b != nil, b != nil && b.Unwritten
}

// StartInBulk adds a first fire to run's collection (Collecting must say
// one is under way): its node's start and its dispatch, if any, already
// claimed (Claim).
func (w *Writer) StartInBulk(runID, nodeID string, s enginetype.BulkStart, d *enginetype.Dispatch) {
	b := w.bulks[runID]
	b.Starts = append(b.Starts, s)
	b.NodeIDs = append(b.NodeIDs, nodeID)
	if d != nil {
		b.Dispatches = append(b.Dispatches, d)
	}
}

// DropFromBulk removes the starts (and their outbox rows) of keys from
// run's collection, if any: their nodes were skipped meanwhile.
func (w *Writer) DropFromBulk(runID string, keys map[string]bool) {
	b := w.bulks[runID]
	if b == nil {
		return
	}
	kept := 0
	for i, s := range b.Starts {
		if keys[s.Key] {
			continue
		}
		b.Starts[kept], b.NodeIDs[kept] = s, b.NodeIDs[i]
		kept++
	}
	b.Starts, b.NodeIDs = b.Starts[:kept], b.NodeIDs[:kept]
	b.Dispatches = slices.DeleteFunc(b.Dispatches, func(d *enginetype.Dispatch) bool { return keys[d.Key] })
}

// WriteBulk writes a collection of run's first fires: one UPDATE for the
// node states (unless they were created started), one INSERT for the
// outbox rows.
func (w *Writer) WriteBulk(runID string, b *Bulk) error {
	if len(b.Starts) == 0 {
		return nil
	}
	if !b.Unwritten {
		n, err := w.BulkStart(runID, b.Starts)
		if err != nil {
			return fmt.Errorf("error starting %d instances: %w", len(b.Starts), err)
		}
		if n != len(b.Starts) {
			return fmt.Errorf("%w: started %d of %d instances", enginetype.ErrConflict, n, len(b.Starts))
		}
	}
	if err := w.InsertDispatches(b.Dispatches); err != nil {
		return fmt.Errorf("error writing %d dispatches: %w", len(b.Dispatches), err)
	}
	return nil
}
