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
// sub-flows spent most of its time there. The first count of an operation
// asks (TxWrites.AddTreeNodes) and learns the room left; what follows
// within that room is decided here and written once, as one statement, when
// the operation's run is flushed (GrowTrees).

// treeGrowth is a tree as the operation knows it, shared by the runs of
// the tree it counted for.
type treeGrowth struct {
	count enginetype.TreeCount
	// added is what the operation added within count.Room, not yet
	// written.
	added int64
}

// AddTreeNodes adds n node instances to run runID's tree's count unless
// that would pass limit (TxWrites.AddTreeNodes), and reports whether it
// did. Within the room the operation's last count of the tree learnt it
// decides without asking; GrowTrees writes what it added so.
func (w *Writer) AddTreeNodes(runID string, n, limit int) (bool, error) {
	if g := w.trees[runID]; g != nil {
		if int64(n) <= g.count.Room {
			g.count.Room -= int64(n)
			g.added += int64(n)
			w.writes++
			return true, nil
		}
		if g.count.Held {
			// Past the room of the count's holder: asking again could
			// only find less (counts grow).
			return false, nil
		}
	}
	// The database must see what was added without asking first.
	if err := w.GrowTrees(); err != nil {
		return false, err
	}
	c, err := w.tx.AddTreeNodes(w.ctx, runID, n, limit)
	if err != nil {
		return false, err
	}
	if c.Root != "" {
		w.learnTree(runID, c)
	}
	if c.Added {
		w.writes++
	}
	return c.Added, nil
}

// learnTree keeps count c of run runID's tree, which replaces what the
// operation knew of that tree for each of its runs.
func (w *Writer) learnTree(runID string, c enginetype.TreeCount) {
	if w.trees == nil {
		w.trees = map[string]*treeGrowth{}
	}
	for _, g := range w.trees {
		if g.count.Root == c.Root {
			g.count = c // nothing added is unwritten: GrowTrees ran
			w.trees[runID] = g
			return
		}
	}
	w.trees[runID] = &treeGrowth{count: c}
}

// GrowTrees writes what AddTreeNodes added without asking: one statement a
// tree.
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
