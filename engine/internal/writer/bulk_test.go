package writer

import (
	"testing"

	"github.com/stitchd/stitchd/engine/enginetype"
	"github.com/stretchr/testify/require"
)

// TestBulkCollectionsByRun: the writer collects first fires by run. A
// child run started while its parent's fan-out collects (a SubFlow
// instance) collects its own, and the parent's collection is the one
// fires join again once the child's ends; a collection inside another of
// the same run (a nested Splitter) gives the outer one back when it ends;
// dropped keys leave a collection with their outbox rows.
func TestBulkCollectionsByRun(t *testing.T) {
	t.Parallel()
	w := &Writer{}
	on, unwritten := w.Collecting("parent")
	require.False(t, on)
	require.False(t, unwritten)

	endParent := w.CollectBulk("parent", false)
	w.StartInBulk("parent", "sub", enginetype.BulkStart{Key: "sub[0]", ChildRunID: "child"}, nil)

	endChild := w.CollectBulk("child", true)
	on, unwritten = w.Collecting("child")
	require.True(t, on)
	require.True(t, unwritten, "the child's rows are created started")
	on, unwritten = w.Collecting("parent")
	require.True(t, on)
	require.False(t, unwritten, "the parent's collection is its own")
	w.StartInBulk("child", "work", enginetype.BulkStart{Key: "work"}, &enginetype.Dispatch{Key: "work"})
	child := endChild()
	on, _ = w.Collecting("child")
	require.False(t, on, "a child's collection ended is gone")
	require.Equal(t, []string{"work"}, child.NodeIDs)
	require.Len(t, child.Dispatches, 1)

	endNested := w.CollectBulk("parent", true)
	_, unwritten = w.Collecting("parent")
	require.True(t, unwritten)
	w.StartInBulk("parent", "inner", enginetype.BulkStart{Key: "inner[0,0]"}, &enginetype.Dispatch{Key: "inner[0,0]"})
	require.Len(t, endNested().Starts, 1)
	_, unwritten = w.Collecting("parent")
	require.False(t, unwritten, "the outer collection is back")

	w.StartInBulk("parent", "a", enginetype.BulkStart{Key: "a[1]"}, &enginetype.Dispatch{Key: "a[1]"})
	w.StartInBulk("parent", "a", enginetype.BulkStart{Key: "a[2]"}, &enginetype.Dispatch{Key: "a[2]"})
	w.DropFromBulk("parent", map[string]bool{"a[1]": true})
	w.DropFromBulk("nobody", map[string]bool{"a[2]": true}) // no collection: nothing
	parent := endParent()
	var keys []string
	for _, s := range parent.Starts {
		keys = append(keys, s.Key)
	}
	require.Equal(t, []string{"sub[0]", "a[2]"}, keys)
	require.Equal(t, []string{"sub", "a"}, parent.NodeIDs)
	require.Len(t, parent.Dispatches, 1)
	require.Equal(t, "a[2]", parent.Dispatches[0].Key)
	require.Empty(t, w.bulks, "every collection ended")
}
