package web_test

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stitchd/stitchd/internal/testkit"
	"github.com/stitchd/stitchd/store/storetest"
	"github.com/stitchd/stitchd/web"
)

// TestSlowReadersOfJSONAnswersAreCutOff: 20 clients ask for a 6 MB flow
// (an ordinary JSON answer, written whole by c.JSON) and never read. Each
// write waits at most the write timeout: the server closes every
// connection and the heap returns to its size before them, instead of
// holding 20 answers for as long as the clients keep their connections.
// A client that reads still gets the whole answer.
func TestSlowReadersOfJSONAnswersAreCutOff(t *testing.T) {
	st, _ := storetest.IsolatedDB(t)
	srv := newServer(t, st, func(c *web.Config) { c.WriteTimeout = 500 * time.Millisecond; c.BodyLimit = 16 << 20 })
	open := &connSet{m: map[net.Conn]bool{}}
	ts := httptest.NewUnstartedServer(srv.Handler())
	ts.Config.ConnState = open.track
	ts.Start()
	t.Cleanup(ts.Close)
	h := srv.Handler()

	pad := strings.Repeat("x", 6<<20) // more than the kernel buffers of both ends hold (4 MB + 4 KB)
	graph := `{"nodes":[{"id":"approve","type":"UX","data":{"label":"Approve","prompt":"ok?","notes":"` + pad + `"}}],"edges":[]}`
	f := createFlow(t, h, graph)
	path := "/api/v1/flows/" + f.ID

	heap := func() uint64 {
		runtime.GC()
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return m.HeapAlloc
	}
	// 20 held answers would be 120 MB; the heap is allowed a third of that,
	// above the 16–32 MiB it swings by between runs of the package.
	const stalled = 20
	// Warm up: as many reads at once by clients that read, so the
	// database connections' read buffers (grown to the row's size, and
	// kept by pgx) are in the baseline.
	var wg sync.WaitGroup
	for range stalled {
		wg.Add(1)
		go func() {
			defer wg.Done()
			do(t, h, req{method: "GET", path: path})
		}()
	}
	wg.Wait()
	heap0 := heap()
	began := time.Now()
	for i := 0; i < stalled; i++ {
		c, err := (&net.Dialer{}).DialContext(t.Context(), "tcp", strings.TrimPrefix(ts.URL, "http://"))
		require.NoError(t, err)
		tc, ok := c.(*net.TCPConn)
		require.True(t, ok, "a TCP dial gives a %T", c)
		require.NoError(t, tc.SetReadBuffer(4096))
		t.Cleanup(func() { c.Close() })
		_, err = fmt.Fprintf(c, "GET %s HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\n\r\n", path, token)
		require.NoError(t, err)
	}
	// The clients never read and keep their connections: the server
	// closes every one of them (its side), its writes having waited the
	// write timeout — once it has taken them all (on a loaded machine it
	// may not have taken any yet).
	testkit.Eventually(t, 60*time.Second, func() bool { return open.accepted() >= stalled }, "the server to accept %d connections", stalled)
	testkit.Eventually(t, 60*time.Second, func() bool { return open.count() == 0 }, "the server to close the %d connections", stalled)
	cut := time.Since(began)
	heap1 := heap()

	t.Logf("%d stalled readers of a %.1f MB answer: all cut off after %s; heap %.1f MiB before, %.1f MiB after",
		stalled, float64(len(pad))/1e6, cut.Round(100*time.Millisecond), float64(heap0)/(1<<20), float64(heap1)/(1<<20))
	require.Less(t, int64(heap1)-int64(heap0), int64(stalled*len(pad)/3), "no stalled answer is held")

	// A reader gets it all.
	resp, err := ts.Client().Do(func() *http.Request {
		r, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, ts.URL+path, nil)
		r.Header.Set("Authorization", "Bearer "+token)
		return r
	}())
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Contains(t, string(b), pad)
}
