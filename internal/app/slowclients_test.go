package app_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stitchd/stitchd/internal/app"
	"github.com/stitchd/stitchd/internal/syncbuf"
	"github.com/stitchd/stitchd/internal/testkit"
)

// slowTimeouts are short server timeouts for the slow-client tests (the
// defaults are 10 s for headers and 30 s for the whole request).
func slowTimeouts(c *app.Config) {
	c.ReadHeaderTimeout, c.ReadTimeout = 500*time.Millisecond, time.Second
}

// slowClient sends head at once, then dribbles drip one byte every gap,
// and reports how the server ended the conversation.
type slowClient struct {
	head, drip string
	gap        time.Duration
	// giveUp bounds how long the client dribbles.
	giveUp time.Duration
}

type slowResult struct {
	closed  bool          // the server closed the connection before the client gave up
	after   time.Duration // when
	answer  string        // the status line the server sent, if any
	written int           // bytes of drip the client managed to send
}

func (s slowClient) run(ctx context.Context, addr string) (slowResult, error) {
	c, err := (&net.Dialer{}).DialContext(ctx, "tcp", addr)
	if err != nil {
		return slowResult{}, err
	}
	defer c.Close()
	began := time.Now()
	answered := make(chan string, 1)
	go func() { // the server's side of the conversation: an answer, or EOF
		line, _ := bufio.NewReader(c).ReadString('\n')
		_, _ = io.Copy(io.Discard, c)
		answered <- strings.TrimSpace(line)
	}()
	if _, err := io.WriteString(c, s.head); err != nil {
		return slowResult{}, err
	}
	msg := s.drip
	var res slowResult
	for res.written < len(msg) && time.Since(began) < s.giveUp {
		select {
		case line := <-answered:
			return slowResult{closed: true, after: time.Since(began), answer: line, written: res.written}, nil
		case <-time.After(s.gap): // the client is slow on purpose
		}
		if _, err := c.Write([]byte{msg[res.written]}); err != nil {
			break
		}
		res.written++
	}
	select {
	case line := <-answered:
		return slowResult{closed: true, after: time.Since(began), answer: line, written: res.written}, nil
	case <-time.After(5 * time.Second):
		return res, nil
	}
}

// TestSlowClientsAreCutOff: a slowloris (headers dribbled) is dropped after
// the header timeout without an answer; a client dribbling its body gets a
// 400 once the request timeout passes, and the connection is closed. Both
// would take minutes to finish at their pace.
func TestSlowClientsAreCutOff(t *testing.T) {
	t.Parallel()
	h := newHarness(t, slowTimeouts)
	addr := strings.TrimPrefix(h.app.URL, "http://")
	body := `{"name":"slow","graph":{"nodes":[],"edges":[]}}` + strings.Repeat(" ", 2000)
	cases := []struct {
		name    string
		client  slowClient
		answers []string // what the server may answer before closing
	}{
		// Go's server closes a connection whose headers time out, answering
		// 400 when the deadline cut a header line in two, nothing otherwise.
		{"slowloris", slowClient{head: "POST /api/v1/flows HTTP/1.1\r\nHost: x\r\n", drip: "X-Slow: " + strings.Repeat("a", 2000),
			gap: 50 * time.Millisecond, giveUp: 20 * time.Second}, []string{"", "HTTP/1.1 400 Bad Request"}},
		{"slow body", slowClient{head: fmt.Sprintf("POST /api/v1/flows HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\n"+
			"Content-Type: application/json\r\nContent-Length: %d\r\n\r\n", token, len(body)), drip: body,
			gap: 5 * time.Millisecond, giveUp: 20 * time.Second}, []string{"HTTP/1.1 400 Bad Request"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			res, err := tc.client.run(t.Context(), addr)
			require.NoError(t, err)
			require.True(t, res.closed, "the server cut the client off (it sent %d bytes)", res.written)
			require.Contains(t, tc.answers, res.answer)
			require.Less(t, res.written, len(tc.client.drip), "before the request was complete")
			t.Logf("%s: cut off after %s, %d of %d bytes sent", tc.name, res.after.Round(10*time.Millisecond), res.written,
				len(tc.client.drip))
		})
	}
	var flows struct {
		Flows []any `json:"flows"`
	}
	require.Equal(t, http.StatusOK, h.do("GET", "/api/v1/flows", nil, &flows))
	require.Empty(t, flows.Flows, "no slow request was applied")
}

// TestManySlowClientsKeepMemoryBounded holds 300 slowloris and 100 slow-body
// connections open at once, until the server cuts them all off, and checks
// that the heap and the goroutines return to where they were: nothing a
// slow client made the server allocate outlives it. Not parallel, so the
// figures are this test's.
func TestManySlowClientsKeepMemoryBounded(t *testing.T) {
	h := newHarness(t, slowTimeouts)
	addr := strings.TrimPrefix(h.app.URL, "http://")
	heap := func() uint64 {
		runtime.GC() // twice: sync.Pool keeps a victim cache for one cycle
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return m.HeapAlloc
	}
	// Warm up: one request of each kind, so lazily built state is counted
	// in the baseline.
	require.Equal(t, http.StatusOK, h.do("GET", "/api/v1/flows", nil, nil))
	goroutines0, heap0 := runtime.NumGoroutine(), heap()

	const slowloris, slowBodies = 300, 100
	body := `{"name":"slow","graph":{"nodes":[],"edges":[]}}` + strings.Repeat(" ", 4000)
	clients := make([]slowClient, 0, slowloris+slowBodies)
	for i := 0; i < slowloris; i++ {
		clients = append(clients, slowClient{head: "GET /api/v1/flows HTTP/1.1\r\nHost: x\r\n", drip: "X-Slow: " + strings.Repeat("a", 4000),
			gap: 100 * time.Millisecond, giveUp: 20 * time.Second})
	}
	for i := 0; i < slowBodies; i++ {
		clients = append(clients, slowClient{head: fmt.Sprintf("POST /api/v1/flows HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\n"+
			"Content-Length: %d\r\n\r\n", token, len(body)), drip: body, gap: 20 * time.Millisecond, giveUp: 20 * time.Second})
	}
	results := make([]slowResult, len(clients))
	errs := make([]error, len(clients))
	var done sync.WaitGroup
	done.Add(len(clients))
	for i, c := range clients {
		go func() {
			defer done.Done()
			results[i], errs[i] = c.run(t.Context(), addr)
		}()
	}
	// Measure the peak once every client is connected: a serving goroutine
	// on the server and two on the client side each.
	testkit.Poll(10*time.Second, func() bool { return runtime.NumGoroutine() >= goroutines0+3*len(clients) })
	goroutinesPeak, heapPeak := runtime.NumGoroutine(), heap()
	done.Wait()
	for i, r := range results {
		require.NoError(t, errs[i])
		require.True(t, r.closed, "client %d was cut off", i)
	}

	// The server's per-connection goroutines end; poll until they are gone.
	testkit.Eventually(t, 10*time.Second, func() bool { return runtime.NumGoroutine() <= goroutines0+5 },
		"the goroutines to end: %d before", goroutines0)
	heap1 := heap()
	mib := func(b uint64) string { return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20)) }
	t.Logf("%d slow clients: heap %s before, %s with all connected (%.1f KiB per client, client side included), %s after; goroutines %d, %d, %d",
		len(clients), mib(heap0), mib(heapPeak), float64(int64(heapPeak)-int64(heap0))/1024/float64(len(clients)), mib(heap1),
		goroutines0, goroutinesPeak, runtime.NumGoroutine())
	require.Less(t, int64(heap1)-int64(heap0), int64(4<<20), "the heap returns to its size before the slow clients")
	require.Less(t, int64(heapPeak)-int64(heap0), int64(len(clients))*64<<10, "at most 64 KiB per slow client while connected")
}

// TestStalledReaderOfARunIsCutOff: a run's answer is streamed from the
// database as it is written; a client that asks for a big run and stops
// reading is cut off once a write has waited the stream write timeout, so
// it does not hold the database connection the answer is read on.
func TestStalledReaderOfARunIsCutOff(t *testing.T) {
	t.Parallel()
	var logs syncbuf.Buffer
	h := newHarness(t, func(c *app.Config) {
		c.StreamWriteTimeout = 300 * time.Millisecond
		c.Logger = slog.New(slog.NewTextHandler(&logs, nil))
	})
	cutOff := func() int { return strings.Count(logs.String(), `"error streaming a run"`) }
	flow := h.createFlow(
		[]map[string]any{splitter("split", "items"), node("ask", "UX", nil), node("merge", "Collector", nil)},
		[]map[string]any{edge("split", "ask", nil), edge("ask", "merge", nil)})
	// ≈12 MB of answer: well past the server's send buffer (4 MB at most)
	// and what loopback takes in besides (with 20,000 items, 5.8 MB, one
	// run got the whole answer through).
	const items = 40000
	var r struct{ ID string }
	in := map[string]any{"items": make([]int, items)}
	// Started without its nodes in the answer (Prefer: return=minimal):
	// the whole answer, streamed under the 300 ms write timeout, could cut
	// the harness's own reader off as well on a loaded machine.
	require.Equal(t, 201, h.send(token, http.Header{"Prefer": {"return=minimal"}}, "POST", "/api/v1/flows/"+flow+"/runs",
		map[string]any{"input": in}, &r))

	// A reader that reads gets the whole run (and the run's rows are then
	// in Postgres's buffers, so the stalled reader's answer is written
	// fast enough to fill the connection's buffers while it sleeps, even
	// on a loaded machine).
	// It must keep up, though: a reader slower than the write timeout
	// between two writes is cut off too — with the whole suite on two
	// cores, under the race detector, this test's own reader sometimes
	// was. It tries again, a few times.
	var full struct {
		Nodes map[string]any `json:"nodes"`
	}
	for try := 1; ; try++ {
		b, err := h.rawGet("/api/v1/runs/" + r.ID)
		if err == nil {
			if err = json.Unmarshal(b, &full); err == nil {
				break
			}
		}
		require.Less(t, try, 5, "a reader that reads gets the whole run: %v", err)
	}
	require.Len(t, full.Nodes, items+2)
	before := cutOff()

	c, err := (&net.Dialer{}).DialContext(t.Context(), "tcp", strings.TrimPrefix(h.app.URL, "http://"))
	require.NoError(t, err)
	defer c.Close()
	// A small receive window: the kernel may otherwise grow it to 32 MB
	// (tcp_rmem), hold the whole answer and the server never stall. With
	// it, at most the server's send buffer (4 MB at most) is taken in.
	tc, ok := c.(*net.TCPConn)
	require.True(t, ok, "a TCP dial gives a %T", c)
	require.NoError(t, tc.SetReadBuffer(64<<10))
	// Connection: close, so that an answer written whole ends in EOF too
	// (and fails the cut-off assertion below) instead of hanging.
	_, err = fmt.Fprintf(c, "GET /api/v1/runs/%s HTTP/1.1\r\nHost: x\r\nConnection: close\r\nAuthorization: Bearer %s\r\n\r\n",
		r.ID, token)
	require.NoError(t, err)
	// Not reading until the server says it cut the answer off: the stall
	// is the kernel's (full TCP buffers) and the cut-off a real write
	// deadline, which nothing the client sees tells apart before it
	// reads; a fixed wait (6 s) was too short once the whole suite loaded
	// the machine and the answer took longer to read from Postgres.
	h.eventually(func() bool { return cutOff() > before }, "the server cut the stalled reader off")
	require.NoError(t, c.SetReadDeadline(time.Now().Add(10*time.Second)))
	got, err := io.ReadAll(c)
	require.NoError(t, err, "the server closed the connection (EOF), it did not leave it hanging")
	resp, err := http.ReadResponse(bufio.NewReader(bytes.NewReader(got)), nil)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	body, err := io.ReadAll(resp.Body)
	// Chunked: an answer cut off lacks its last (empty) chunk.
	require.ErrorIs(t, err, io.ErrUnexpectedEOF, "the answer was cut off, after %d bytes of %d", len(body), len(got))
}
