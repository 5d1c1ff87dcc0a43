package web

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestHubPendingRunsAreBounded: a stream that does not take its
// notifications (its client is slow) notes at most maxPendingRuns runs;
// past them it is told to read the event log from where it is instead, so
// 100,000 runs changing hold no more memory than 256 would. Requeued runs
// are bounded the same way.
func TestHubPendingRunsAreBounded(t *testing.T) {
	t.Parallel()
	h := NewHub()
	sub := h.subscribe("")
	defer h.unsubscribe(sub)
	for i := 0; i < maxPendingRuns-1; i++ {
		h.Notify(fmt.Sprint("run-", i))
	}
	dirty, all := sub.take()
	require.Len(t, dirty, maxPendingRuns-1)
	require.False(t, all, "under the bound, the runs are named")

	for i := 0; i < 100_000; i++ {
		h.Notify(fmt.Sprint("run-", i))
		sub.mu.Lock()
		n := len(sub.dirty)
		sub.mu.Unlock()
		require.LessOrEqual(t, n, maxPendingRuns)
	}
	dirty, all = sub.take()
	require.True(t, all, "past the bound, the stream reads the log")
	require.Empty(t, dirty)
}
