package store_test

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/stitchd/stitchd/store"
	"github.com/stitchd/stitchd/store/storetest"
)

// TestNotifierReachesListener sends keys from many goroutines through one
// Notifier and checks a listener on another connection receives every one,
// split back out of the coalesced payloads (more keys than fit in one).
func TestNotifierReachesListener(t *testing.T) {
	t.Parallel()
	st, url := storetest.IsolatedDB(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	channel := "stitchd_test_" + uuid.NewString()[:8]

	var mu sync.Mutex
	got := map[string]int{}
	require.NoError(t, store.Listen(ctx, url, channel, nil, func(k string) {
		mu.Lock()
		got[k]++
		mu.Unlock()
	}))
	time.Sleep(100 * time.Millisecond) // the listener's LISTEN is in place

	n := st.NewNotifier(channel, 0, slog.New(slog.DiscardHandler))
	go n.Run(ctx)
	want := map[string]bool{}
	var wg sync.WaitGroup
	for g := range 8 {
		keys := make([]string, 100)
		for i := range keys {
			keys[i] = uuid.NewString()
			if i%10 == 0 {
				keys[i] = fmt.Sprintf("entity:%s", keys[i])
			}
			want[keys[i]] = true
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for _, k := range keys {
				n.Notify(k)
				if g%2 == 0 {
					n.Notify(k) // a repeated key is sent at most once per NOTIFY
				}
			}
		}()
	}
	wg.Wait()
	require.Eventually(t, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(got) == len(want)
	}, 10*time.Second, 10*time.Millisecond)
	mu.Lock()
	defer mu.Unlock()
	for k := range got {
		require.True(t, want[k], "unexpected key %q", k)
	}
}
