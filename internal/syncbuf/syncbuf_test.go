package syncbuf_test

import (
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/stitchd/stitchd/internal/syncbuf"
)

func TestConcurrentWrites(t *testing.T) {
	t.Parallel()
	var b syncbuf.Buffer
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 100 {
				_, _ = b.Write([]byte("ab"))
			}
		}()
	}
	wg.Wait()
	require.Equal(t, strings.Repeat("ab", 800), b.String())
}
