package web_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stitchd/stitchd/internal/testkit"
	"github.com/stitchd/stitchd/store/storetest"
	"github.com/stitchd/stitchd/web"
)

// TestStalledReplaysKeepMemoryBounded: 100 clients replay every event from
// 0 (40 MB of them) and never read. Each stream holds one bounded page of
// events (64 KiB and one event) while its write waits, not a thousand
// events: the heap grows by well under 512 KiB a client, and once the write
// timeout drops them it returns to where it was.
func TestStalledReplaysKeepMemoryBounded(t *testing.T) {
	st, _ := storetest.IsolatedDB(t)
	hub := web.NewHub()
	// The write timeout outlasts opening all the streams on a loaded
	// machine: the first ones must not be dropped before the last opens.
	srv := newServer(t, st, func(c *web.Config) { c.Hub = hub; c.StreamWriteTimeout = 10 * time.Second })
	ts := httptest.NewUnstartedServer(srv.Handler())
	ts.Config.ConnState = smallSendBuffers(nil) // each stalls after a page, not 4 MB
	ts.Start()
	t.Cleanup(ts.Close)
	h := srv.Handler()
	f := createFlow(t, h, graphUX)
	run := decode[struct {
		ID string `json:"id"`
	}](t, call(t, h, http.StatusCreated, req{method: "POST", path: "/api/v1/flows/" + f.ID + "/runs", body: `{}`}))
	const events, pad = 20_000, 2000
	require.NoError(t, st.Gorm().Exec(`INSERT INTO run_events (run_id, seq, type, payload)
		SELECT ?, 1000 + g, 'test.filler', jsonb_build_object('pad', repeat('x', ?)) FROM generate_series(1, ?) g`,
		run.ID, pad, events).Error)

	heap := func() uint64 {
		runtime.GC()
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return m.HeapAlloc
	}
	// Warm up the database connections' buffers with one replay that reads.
	warm, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	hr, _ := http.NewRequestWithContext(warm, http.MethodGet, ts.URL+"/api/v1/events?last_event_id=0", nil)
	hr.Header.Set("Authorization", "Bearer "+token)
	resp, err := ts.Client().Do(hr)
	require.NoError(t, err)
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for n := 0; n < events && sc.Scan(); {
		if strings.HasPrefix(sc.Text(), "id: ") {
			n++
		}
	}
	cancel()
	resp.Body.Close()
	testkit.Eventually(t, 20*time.Second, func() bool { return hub.Subscribers() == 0 }, "the warm-up stream to end")
	heap0 := heap()

	const clients = 100
	for i := 0; i < clients; i++ {
		c, err := (&net.Dialer{}).DialContext(t.Context(), "tcp", strings.TrimPrefix(ts.URL, "http://"))
		require.NoError(t, err)
		tc, ok := c.(*net.TCPConn)
		require.True(t, ok, "a TCP dial gives a %T", c)
		require.NoError(t, tc.SetReadBuffer(4096))
		t.Cleanup(func() { c.Close() })
		_, err = fmt.Fprintf(c, "GET /api/v1/events?last_event_id=0 HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\n\r\n", token)
		require.NoError(t, err)
	}
	testkit.Eventually(t, 20*time.Second, func() bool { return hub.Subscribers() == clients }, "%d streams open", clients)
	// Each has read a page and waits on its write: real time, the stall
	// is the kernel's (full TCP buffers), which nothing signals.
	time.Sleep(time.Second)
	heapPeak := heap()
	// Each fills its socket buffers (about 72 KB) first.
	testkit.Eventually(t, 2*time.Minute, func() bool { return hub.Subscribers() == 0 }, "the stalled streams to end")
	heap1 := heap()
	mib := func(b uint64) string { return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20)) }
	perClient := (int64(heapPeak) - int64(heap0)) / clients
	t.Logf("%d stalled replays of %d events (%.0f MB): heap %s before, %s while stalled (%.0f KiB a client), %s after",
		clients, events, events*pad/1e6, mib(heap0), mib(heapPeak), float64(perClient)/1024, mib(heap1))
	require.Less(t, perClient, int64(512<<10), "a stalled stream holds one bounded page")
	require.Less(t, int64(heap1)-int64(heap0), int64(8<<20), "the heap returns to its size once they are dropped")
}

// TestEventStreamEndsPastItsRunsAndResumes: GET /api/v1/events follows at
// most StreamMaxRuns runs for a client; past them it ends with an event
// stream.end that names the id to resume from, and a client reconnecting
// with Last-Event-ID gets every event exactly once, each run's in order.
func TestEventStreamEndsPastItsRunsAndResumes(t *testing.T) {
	t.Parallel()
	st, _ := storetest.IsolatedDB(t)
	srv := newServer(t, st, func(c *web.Config) { c.StreamMaxRuns = 10 })
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(ts.Close)
	h := srv.Handler()
	f := createFlow(t, h, graphUX)
	base := decode[struct {
		ID string `json:"id"`
	}](t, call(t, h, http.StatusCreated, req{method: "POST", path: "/api/v1/flows/" + f.ID + "/runs", body: `{}`}))
	// 44 more runs (copies of the first), 3 events each.
	const runs = 44
	require.NoError(t, st.Gorm().Exec(`INSERT INTO runs (id, flow_id, flow_version_id, status, input, trigger)
		SELECT gen_random_uuid(), flow_id, flow_version_id, status, input, trigger FROM runs r, generate_series(1, ?) WHERE r.id = ?`,
		runs, base.ID).Error)
	require.NoError(t, st.Gorm().Exec(`INSERT INTO run_events (run_id, seq, type, payload)
		SELECT r.id, 100 + g, 'test.e', jsonb_build_object('g', g) FROM runs r, generate_series(1, 3) g WHERE r.id <> ?
		ORDER BY g, r.id`, base.ID).Error)
	var total int
	require.NoError(t, st.Gorm().Raw(`SELECT count(*) FROM run_events`).Row().Scan(&total))

	type ev struct {
		ID  int64  `json:"id"`
		Run string `json:"run_id"`
		Seq int64  `json:"seq"`
	}
	seen := map[int64]bool{}
	lastSeq := map[string]int64{}
	last := "0"
	ends := 0
	for len(seen) < total {
		require.Less(t, ends, 20, "the stream makes progress")
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		hr, _ := http.NewRequestWithContext(ctx, http.MethodGet, ts.URL+"/api/v1/events", nil)
		hr.Header.Set("Authorization", "Bearer "+token)
		hr.Header.Set("Last-Event-ID", last)
		resp, err := ts.Client().Do(hr)
		require.NoError(t, err)
		sc := bufio.NewScanner(resp.Body)
		event := ""
		ended := false
		for !ended && len(seen) < total && sc.Scan() {
			line := sc.Text()
			switch {
			case strings.HasPrefix(line, "event: "):
				event = strings.TrimPrefix(line, "event: ")
			case strings.HasPrefix(line, "data: ") && event == "stream.end":
				var end struct {
					Message     string `json:"message"`
					LastEventID int64  `json:"last_event_id"`
				}
				require.NoError(t, json.Unmarshal([]byte(strings.TrimPrefix(line, "data: ")), &end))
				require.Contains(t, end.Message, "reconnect with Last-Event-ID")
				require.Equal(t, last, fmt.Sprint(end.LastEventID), "it names the last event sent")
				ended = true
			case strings.HasPrefix(line, "data: "):
				var e ev
				require.NoError(t, json.Unmarshal([]byte(strings.TrimPrefix(line, "data: ")), &e))
				require.False(t, seen[e.ID], "event %d sent twice", e.ID)
				require.Greater(t, e.Seq, lastSeq[e.Run], "run %s in order", e.Run)
				seen[e.ID], lastSeq[e.Run] = true, e.Seq
			case strings.HasPrefix(line, "id: "):
				last = strings.TrimPrefix(line, "id: ")
			}
		}
		if ended {
			ends++
			// The server closes the stream after its last word.
			for sc.Scan() {
			}
		}
		cancel()
		resp.Body.Close()
	}
	require.Len(t, seen, total)
	require.GreaterOrEqual(t, ends, 3, "%d runs in streams of at most 10 runs", runs+1)
}
