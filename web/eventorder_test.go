package web_test

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stitchd/stitchd/store/storetest"
	"github.com/stitchd/stitchd/web"
)

// streamReader reads an SSE stream's events on a goroutine.
type streamReader struct {
	events chan sseEvent
	cancel context.CancelFunc
}

type sseEvent struct {
	id  int64
	seq int64
}

func openAllEvents(t *testing.T, url, lastID string) *streamReader {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	hr, _ := http.NewRequestWithContext(ctx, http.MethodGet, url+"/api/v1/events", nil)
	hr.Header.Set("Authorization", "Bearer "+token)
	hr.Header.Set("Last-Event-ID", lastID)
	resp, err := http.DefaultClient.Do(hr)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	r := &streamReader{events: make(chan sseEvent, 100), cancel: cancel}
	t.Cleanup(func() { cancel(); resp.Body.Close() })
	go func() {
		sc := bufio.NewScanner(resp.Body)
		var id int64
		for sc.Scan() {
			line := sc.Text()
			switch {
			case strings.HasPrefix(line, "id: "):
				id, _ = strconv.ParseInt(strings.TrimPrefix(line, "id: "), 10, 64)
			case strings.HasPrefix(line, "data: "):
				var e struct {
					Seq int64 `json:"seq"`
				}
				_ = json.Unmarshal([]byte(strings.TrimPrefix(line, "data: ")), &e)
				r.events <- sseEvent{id: id, seq: e.Seq}
			}
		}
		close(r.events)
	}()
	return r
}

// next is the stream's next event, failing after 10 s.
func (r *streamReader) next(t *testing.T) sseEvent {
	t.Helper()
	select {
	case e, ok := <-r.events:
		require.True(t, ok, "the stream ended")
		return e
	case <-time.After(10 * time.Second):
		t.Fatal("no event within 10 s")
		return sseEvent{}
	}
}

// TestEventStreamNeverPassesAnIDThatMayCommit: event ids are taken at
// insert, not at commit. A transaction holding a lower id commits after one
// holding a higher id: the stream of every run's events holds the higher
// one back until the lower commits, and sends both in order (sending the
// higher first would lose the lower for a client resuming from its id). A
// rolled-back id is a hole the stream passes. Resuming from any id sent
// repeats nothing.
func TestEventStreamNeverPassesAnIDThatMayCommit(t *testing.T) {
	t.Parallel()
	st, _ := storetest.IsolatedDB(t)
	hub := web.NewHub()
	srv := newServer(t, st, func(c *web.Config) { c.Hub = hub })
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(ts.Close)
	h := srv.Handler()
	f := createFlow(t, h, graphUX)
	run := decode[struct {
		ID string `json:"id"`
	}](t, call(t, h, http.StatusCreated, req{method: "POST", path: "/api/v1/flows/" + f.ID + "/runs", body: `{}`}))
	var start int64
	require.NoError(t, st.Gorm().Raw(`SELECT max(id) FROM run_events`).Row().Scan(&start))
	stream := openAllEvents(t, ts.URL, strconv.FormatInt(start, 10))

	ctx := context.Background()
	db, err := st.Gorm().DB()
	require.NoError(t, err)
	insert := `INSERT INTO run_events (run_id, seq, type) VALUES ($1, $2, 'test.e') RETURNING id`

	// T1 takes its transaction id (as the engine's, which locks the run
	// first), then the lower event id; the higher commits first.
	t1, err := db.BeginTx(ctx, nil)
	require.NoError(t, err)
	defer func() { _ = t1.Rollback() }()
	_, err = t1.ExecContext(ctx, `SELECT pg_current_xact_id()`)
	require.NoError(t, err)
	var low, high int64
	require.NoError(t, t1.QueryRowContext(ctx, insert, run.ID, 1001).Scan(&low))
	require.NoError(t, db.QueryRowContext(ctx, insert, run.ID, 1002).Scan(&high))
	require.Equal(t, low+1, high)
	hub.Notify(run.ID)
	select {
	case e := <-stream.events:
		t.Fatalf("event id %d (seq %d) sent while id %d may still commit", e.id, e.seq, low)
	case <-time.After(1500 * time.Millisecond): // the stream's held reads retry meanwhile
	}
	require.NoError(t, t1.Commit())
	hub.Notify(run.ID)
	require.Equal(t, sseEvent{low, 1001}, stream.next(t))
	require.Equal(t, sseEvent{high, 1002}, stream.next(t))

	// A rolled-back id is passed, with no notification of its own.
	t2, err := db.BeginTx(ctx, nil)
	require.NoError(t, err)
	_, err = t2.ExecContext(ctx, `SELECT pg_current_xact_id()`)
	require.NoError(t, err)
	var hole, after int64
	require.NoError(t, t2.QueryRowContext(ctx, insert, run.ID, 1003).Scan(&hole))
	require.NoError(t, db.QueryRowContext(ctx, insert, run.ID, 1004).Scan(&after))
	hub.Notify(run.ID)
	require.NoError(t, t2.Rollback())
	require.Equal(t, sseEvent{after, 1004}, stream.next(t))

	// The higher id from a transaction older than the lower's: when it
	// ends, the newest transaction to end is older than the one still
	// holding the lower id (a snapshot's xmax is then no bound).
	t0, err := db.BeginTx(ctx, nil)
	require.NoError(t, err)
	defer func() { _ = t0.Rollback() }()
	_, err = t0.ExecContext(ctx, `SELECT pg_current_xact_id()`)
	require.NoError(t, err)
	t3, err := db.BeginTx(ctx, nil)
	require.NoError(t, err)
	defer func() { _ = t3.Rollback() }()
	_, err = t3.ExecContext(ctx, `SELECT pg_current_xact_id()`)
	require.NoError(t, err)
	var low3, high3 int64
	require.NoError(t, t3.QueryRowContext(ctx, insert, run.ID, 1005).Scan(&low3))
	require.NoError(t, t0.QueryRowContext(ctx, insert, run.ID, 1006).Scan(&high3))
	require.NoError(t, t0.Commit())
	hub.Notify(run.ID)
	select {
	case e := <-stream.events:
		t.Fatalf("event id %d (seq %d) sent while id %d may still commit", e.id, e.seq, low3)
	case <-time.After(1500 * time.Millisecond):
	}
	require.NoError(t, t3.Commit())
	hub.Notify(run.ID)
	require.Equal(t, sseEvent{low3, 1005}, stream.next(t))
	require.Equal(t, sseEvent{high3, 1006}, stream.next(t))

	// Resuming after the lower id gives the rest once, in order.
	again := openAllEvents(t, ts.URL, strconv.FormatInt(low, 10))
	require.Equal(t, sseEvent{high, 1002}, again.next(t))
	require.Equal(t, sseEvent{after, 1004}, again.next(t))
	require.Equal(t, sseEvent{low3, 1005}, again.next(t))
	require.Equal(t, sseEvent{high3, 1006}, again.next(t))
	select {
	case e := <-again.events:
		t.Fatalf("an event after the last: %+v", e)
	case <-time.After(300 * time.Millisecond):
	}
}

// TestEventStreamsRefuseABadLastEventID: a resume point that is not an
// event id is a 400 before the stream starts; read as 0 it would replay
// every event there is. A good one, in the header or the query, streams.
func TestEventStreamsRefuseABadLastEventID(t *testing.T) {
	t.Parallel()
	st, _ := storetest.IsolatedDB(t)
	srv := newServer(t, st)
	h := srv.Handler()
	f := createFlow(t, h, graphUX)
	run := decode[struct {
		ID string `json:"id"`
	}](t, call(t, h, http.StatusCreated, req{method: "POST", path: "/api/v1/flows/" + f.ID + "/runs", body: `{}`}))
	for _, path := range []string{"/api/v1/events", "/api/v1/runs/" + run.ID + "/events"} {
		for _, bad := range []string{"abc", "-1", "1.5", "99999999999999999999", "0x10"} {
			e := requireError(t, http.StatusBadRequest, "invalid_request",
				do(t, h, req{method: "GET", path: path, header: map[string]string{"Last-Event-ID": bad}}))
			require.Contains(t, e.Error.Message, "Last-Event-ID must be an event id", path)
			require.Contains(t, e.Error.Message, strconv.Quote(bad), path)
			e = requireError(t, http.StatusBadRequest, "invalid_request",
				do(t, h, req{method: "GET", path: path + "?last_event_id=" + bad}))
			require.Contains(t, e.Error.Message, "last_event_id must be an event id", path)
		}
	}
	ts := httptest.NewServer(h)
	t.Cleanup(ts.Close)
	stream := openAllEvents(t, ts.URL, "0") // from the first event
	require.Equal(t, int64(1), stream.next(t).seq)
}
