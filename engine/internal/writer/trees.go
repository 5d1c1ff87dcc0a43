package writer

import (
	"fmt"
	"maps"
	"slices"

	"github.com/stitchd/stitchd/engine/enginetype"
)

// Run trees' counts. Every sub-flow run a fan-out starts adds its graph's
// nodes to its tree's count (--max-run-nodes), and asking the database
// each time took five statements a child: a 10,000-item fan-out of
// sub-flows spent most of its time there. An operation whose ask found it
// holds the count's row (no other transaction changes it until this one
// ends) decides what follows within the room it learnt, asking again every
// refoldEvery decisions so that what others counted beside the row is
// folded in as often as before in effect; and writes what it added once,
// when the operation's run is flushed (GrowTrees). One that does not hold
// the row asks each time, as it always did.

// refoldEvery bounds the decisions an operation makes on the room it
// learnt before it asks again: the counts other transactions committed
// beside the row meanwhile are then folded in.
const refoldEvery = 256

// treeGrowth is a tree as the operation knows it, shared by the runs of
// the tree it counted for.
type treeGrowth struct {
	count enginetype.TreeCount
	// added is what the operation added within count.Room, not yet
	// written; decided, how many decisions it made on that room.
	added   int64
	decided int
}

// AddTreeNodes adds n node instances to run runID's tree's count unless
// that would pass limit (TxWrites.AddTreeNodes), and reports whether it
// did. Holding the count's row, it decides within the room it learnt
// without asking (up to refoldEvery times); GrowTrees writes what it added
// so.
func (w *Writer) AddTreeNodes(runID string, n, limit int) (bool, error) {
	if g := w.trees[runID]; g != nil && g.decided < refoldEvery {
		if int64(n) > g.count.Room {
			// Past the room of the count's holder: asking again could
			// only find less (counts grow).
			return false, nil
		}
		g.count.Room -= int64(n)
		g.added += int64(n)
		g.decided++
		w.writes++
		return true, nil
	}
	// The database must see what was added without asking first.
	if err := w.GrowTrees(); err != nil {
		return false, err
	}
	c, err := w.tx.AddTreeNodes(w.ctx, runID, n, limit)
	if err != nil {
		return false, err
	}
	w.learnTree(runID, c)
	if c.Added {
		w.writes++
	}
	return c.Added, nil
}

// learnTree keeps count c of run runID's tree when the transaction holds
// its row, which replaces what the operation knew of that tree for each of
// its runs; one not held is forgotten (the next count asks).
func (w *Writer) learnTree(runID string, c enginetype.TreeCount) {
	if !c.Held {
		for id, g := range w.trees {
			if g.count.Root == c.Root {
				delete(w.trees, id)
			}
		}
		return
	}
	if w.trees == nil {
		w.trees = map[string]*treeGrowth{}
	}
	for _, g := range w.trees {
		if g.count.Root == c.Root {
			g.count, g.decided = c, 0 // nothing added is unwritten: GrowTrees ran
			w.trees[runID] = g
			return
		}
	}
	w.trees[runID] = &treeGrowth{count: c}
}

// GrowTrees writes what AddTreeNodes added without asking: one statement a
// tree (which, like any statement, writes the rows the transaction held
// back before it: the runs started since the last).
func (w *Writer) GrowTrees() error {
	seen := map[*treeGrowth]bool{}
	for _, runID := range slices.Sorted(maps.Keys(w.trees)) {
		g := w.trees[runID]
		if g.added == 0 || seen[g] {
			continue
		}
		seen[g] = true
		if err := w.tx.GrowTreeLater(w.ctx, g.count, g.added); err != nil {
			return fmt.Errorf("error counting %d node instances of run %s's tree: %w", g.added, g.count.Root, err)
		}
		g.added = 0
	}
	return nil
}
