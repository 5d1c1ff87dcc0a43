// Package startstoptest is the shared stress test of startstop services.
package startstoptest

import (
	"context"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/stitchd/stitchd/internal/startstop"
)

// Stress starts and stops svc from 64 goroutines at once, rounds times
// each, then stops it; the caller checks what svc did (run it under
// -race).
func Stress(t *testing.T, svc startstop.Service, rounds int) {
	t.Helper()
	var wg sync.WaitGroup
	for range 64 {
		wg.Go(func() {
			for range rounds {
				if rand.IntN(2) == 0 { //nolint:gosec // G404: a random interleaving of a test, no secret
					require.NoError(t, svc.Start(context.Background()))
				} else {
					svc.Stop()
				}
			}
		})
	}
	wg.Wait()
	svc.Stop()
}
