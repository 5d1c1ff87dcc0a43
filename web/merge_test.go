package web

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stitchd/stitchd/engine"
)

// TestMergeByTime: sequences merge by creation time, each keeping its own
// order even where its times go backwards (a transaction that began
// earlier may commit later), ties going to the earlier sequence.
func TestMergeByTime(t *testing.T) {
	t.Parallel()
	at := func(ms int) time.Time { return time.UnixMilli(int64(ms)) }
	ev := func(run string, seq int64, ms int) engine.Event {
		return engine.Event{RunID: run, Seq: seq, CreatedAt: at(ms)}
	}
	seqs := [][]engine.Event{
		{ev("a", 1, 10), ev("a", 2, 30), ev("a", 3, 20)},
		{ev("", 0, 25)}, // a manual move
		{ev("b", 1, 10), ev("b", 2, 40)},
		nil,
	}
	got := mergeByTime(seqs)
	var order []string
	for _, e := range got {
		order = append(order, e.RunID+string(rune('0'+e.Seq)))
	}
	require.Equal(t, []string{"a1", "b1", "0", "a2", "a3", "b2"}, order)
	require.Empty(t, mergeByTime(nil))
}
