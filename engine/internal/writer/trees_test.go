package writer

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/stitchd/stitchd/engine/enginetype"
)

// treeWrites answers AddTreeNodes as a database holding one tree's count
// would (the row held, or another transaction holding it) and logs every
// statement the writer sends.
type treeWrites struct {
	enginetype.TxWrites
	count int64 // what the database has counted
	held  bool
	log   []string
}

func (r *treeWrites) AddTreeNodes(_ context.Context, runID string, n, limit int) (enginetype.TreeCount, error) {
	r.log = append(r.log, fmt.Sprintf("ask %s %d", runID, n))
	c := enginetype.TreeCount{Root: "root", Held: r.held}
	if r.count+int64(n) <= int64(limit) {
		r.count += int64(n)
		c.Added = true
	}
	if r.held {
		c.Room = int64(limit) - r.count
	}
	return c, nil
}

func (r *treeWrites) GrowTreeLater(_ context.Context, c enginetype.TreeCount, n int64) error {
	r.log = append(r.log, fmt.Sprintf("grow %s %d", c.Root, n))
	r.count += n
	return nil
}

// TestTreeCountsAskedOnce: an operation holding its tree's count row asks
// once and decides what follows within the room it learnt (asking again
// every refoldEvery decisions), writing it as one statement, and past the
// room refuses without asking; one not holding the row asks each time;
// runs of one tree share the room.
func TestTreeCountsAskedOnce(t *testing.T) {
	t.Parallel()
	const limit = 100
	t.Run("within the room: one ask, one write", func(t *testing.T) {
		t.Parallel()
		rec := &treeWrites{held: true}
		w := New(context.Background(), Params{Tx: rec})
		for range 9 {
			ok, err := w.AddTreeNodes("parent", 10, limit)
			require.NoError(t, err)
			require.True(t, ok)
		}
		ok, err := w.AddTreeNodes("parent", 11, limit)
		require.NoError(t, err)
		require.False(t, ok, "90 + 11 passes 100: refused without asking, the row held")
		require.Equal(t, 9, w.Writes())
		require.NoError(t, w.GrowTrees())
		require.NoError(t, w.GrowTrees(), "nothing more to write")
		require.Equal(t, []string{"ask parent 10", "grow root 80"}, rec.log)
		require.Equal(t, int64(90), rec.count)
	})
	t.Run("not the row's holder: asks each time", func(t *testing.T) {
		t.Parallel()
		rec := &treeWrites{}
		w := New(context.Background(), Params{Tx: rec})
		for _, n := range []int{60, 30, 20} {
			_, err := w.AddTreeNodes("parent", n, limit)
			require.NoError(t, err)
		}
		require.NoError(t, w.GrowTrees())
		require.Equal(t, []string{"ask parent 60", "ask parent 30", "ask parent 20"}, rec.log)
		require.Equal(t, int64(90), rec.count)
	})
	t.Run("the holder asks again every refoldEvery decisions", func(t *testing.T) {
		t.Parallel()
		rec := &treeWrites{held: true}
		w := New(context.Background(), Params{Tx: rec})
		for range 2*(refoldEvery+1) + 1 { // an ask, refoldEvery decisions, twice; an ask
			ok, err := w.AddTreeNodes("parent", 1, 10*refoldEvery)
			require.NoError(t, err)
			require.True(t, ok)
		}
		require.NoError(t, w.GrowTrees())
		require.Equal(t, []string{"ask parent 1", fmt.Sprintf("grow root %d", refoldEvery), "ask parent 1",
			fmt.Sprintf("grow root %d", refoldEvery), "ask parent 1"}, rec.log)
		require.Equal(t, int64(2*(refoldEvery+1)+1), rec.count)
	})
	t.Run("runs of one tree share the room", func(t *testing.T) {
		t.Parallel()
		rec := &treeWrites{held: true}
		w := New(context.Background(), Params{Tx: rec})
		_, err := w.AddTreeNodes("parent", 10, limit) // room 90
		require.NoError(t, err)
		_, err = w.AddTreeNodes("parent", 30, limit) // room 60, unwritten
		require.NoError(t, err)
		ok, err := w.AddTreeNodes("child", 50, limit) // asks, after writing the 30: room 10
		require.NoError(t, err)
		require.True(t, ok)
		ok, err = w.AddTreeNodes("parent", 20, limit)
		require.NoError(t, err)
		require.False(t, ok, "the child's count took the parent's room")
		ok, err = w.AddTreeNodes("parent", 10, limit)
		require.NoError(t, err)
		require.True(t, ok)
		require.NoError(t, w.GrowTrees())
		require.Equal(t, []string{"ask parent 10", "grow root 30", "ask child 50", "grow root 10"}, rec.log)
		require.Equal(t, int64(limit), rec.count)
	})
}
