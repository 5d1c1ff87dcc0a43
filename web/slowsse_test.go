package web_test

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stitchd/stitchd/internal/testkit"
	"github.com/stitchd/stitchd/store/storetest"
	"github.com/stitchd/stitchd/web"
)

// TestStalledEventStreamsAreDropped opens event streams whose clients never
// read, on a run with 20 MB of events (far more than socket buffers hold):
// their handlers' writes block, hit the stream write timeout and the
// streams end — unsubscribed from the hub, connections closed by the server
// — while the hub keeps notifying and a client that reads still gets new
// events.
func TestStalledEventStreamsAreDropped(t *testing.T) {
	t.Parallel()
	st, _ := storetest.IsolatedDB(t)
	hub := web.NewHub()
	srv := newServer(t, st, func(c *web.Config) { c.Hub = hub; c.StreamWriteTimeout = 300 * time.Millisecond })
	// The server's connections, to see that it closes the stalled ones.
	open := &connSet{m: map[net.Conn]bool{}}
	ts := httptest.NewUnstartedServer(srv.Handler())
	ts.Config.ConnState = open.track
	ts.Start()
	t.Cleanup(ts.Close)
	h := srv.Handler()

	f := createFlow(t, h, graphUX)
	run := decode[struct {
		ID string `json:"id"`
	}](t, call(t, h, http.StatusCreated, req{method: "POST", path: "/api/v1/flows/" + f.ID + "/runs", body: `{}`}))
	const filler, pad = 20_000, 1000
	require.NoError(t, st.Gorm().Exec(`INSERT INTO run_events (run_id, seq, type, payload)
		SELECT ?, 1000 + g, 'test.filler', jsonb_build_object('pad', repeat('x', ?)) FROM generate_series(1, ?) g`,
		run.ID, pad, filler).Error)

	// Stalled clients: a tiny receive buffer, and they never read.
	const stalled = 20
	conns := make([]net.Conn, stalled)
	for i := range conns {
		c, err := (&net.Dialer{}).DialContext(t.Context(), "tcp", strings.TrimPrefix(ts.URL, "http://"))
		require.NoError(t, err)
		tc, ok := c.(*net.TCPConn)
		require.True(t, ok, "a TCP dial gives a %T", c)
		require.NoError(t, tc.SetReadBuffer(4096))
		t.Cleanup(func() { c.Close() })
		path := "/api/v1/runs/" + run.ID + "/events"
		if i%2 == 1 {
			path = "/api/v1/events?last_event_id=0"
		}
		_, err = fmt.Fprintf(c, "GET %s HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\n\r\n", path, token)
		require.NoError(t, err)
		conns[i] = c
	}

	// A client that reads, waiting for new events only.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	hr, err := http.NewRequestWithContext(ctx, http.MethodGet, ts.URL+"/api/v1/runs/"+run.ID+"/events", nil)
	require.NoError(t, err)
	hr.Header.Set("Authorization", "Bearer "+token)
	hr.Header.Set("Last-Event-ID", fmt.Sprint(1000+filler))
	resp, err := ts.Client().Do(hr) //nolint:bodyclose // closed by the defer below (bodyclose misses it: a goroutine reads it too)
	require.NoError(t, err)
	defer resp.Body.Close()
	ids := make(chan string, 16)
	go func() {
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			if id, ok := strings.CutPrefix(sc.Text(), "id: "); ok {
				ids <- id
			}
		}
	}()

	// Every stalled stream ends and its connection is closed; the
	// reader's stays.
	testkit.Eventually(t, 30*time.Second, func() bool {
		hub.Notify(run.ID) // never blocks, whatever the streams do
		return hub.Subscribers() == 1
	}, "the stalled streams to end")
	testkit.Eventually(t, 30*time.Second, func() bool { return open.count() == 1 }, "the stalled connections to close")

	// The reading client still gets a new event.
	require.NoError(t, st.Gorm().Exec(`INSERT INTO run_events (run_id, seq, type, payload) VALUES (?, ?, 'test.new', '{}')`,
		run.ID, 1001+filler).Error)
	hub.Notify(run.ID)
	select {
	case id := <-ids:
		require.Equal(t, fmt.Sprint(1001+filler), id)
	case <-time.After(10 * time.Second):
		t.Fatal("the reading client got no new event")
	}
}

// smallSendBuffers is a ConnState hook that gives each accepted
// connection a 64 KB send buffer (32 KB, doubled by the kernel) before
// passing the state on to then (nil: nothing): a client that stops
// reading stalls the server's writes after kilobytes rather than the
// kernel's autotuned megabytes (up to 4 MB a connection), which the
// stalled-reader tests otherwise had to fill under the race detector.
func smallSendBuffers(then func(net.Conn, http.ConnState)) func(net.Conn, http.ConnState) {
	return func(c net.Conn, st http.ConnState) {
		if tc, ok := c.(*net.TCPConn); ok && st == http.StateNew {
			_ = tc.SetWriteBuffer(32 << 10)
		}
		if then != nil {
			then(c, st)
		}
	}
}

type connSet struct {
	mu sync.Mutex
	m  map[net.Conn]bool
	// seen counts the connections ever accepted.
	seen int
}

func (s *connSet) track(c net.Conn, st http.ConnState) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch st {
	case http.StateNew:
		s.m[c] = true
		s.seen++
	case http.StateClosed, http.StateHijacked:
		delete(s.m, c)
	default: // StateActive, StateIdle: still open, tracked already
	}
}

// accepted is how many connections the server has accepted so far.
func (s *connSet) accepted() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.seen
}

func (s *connSet) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.m)
}
