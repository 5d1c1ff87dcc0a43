package chaos

import (
	"bufio"
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/stitchd/stitchd/internal/contracttest"
)

// streamEvent is one event an event stream delivered (engine.Event's JSON),
// with the SSE id it came under.
type streamEvent struct {
	sseID   string
	conn    int             // the follower's connection it came on
	ID      int64           `json:"id"`
	RunID   string          `json:"run_id"`
	Seq     int64           `json:"seq"`
	Type    string          `json:"type"`
	Key     string          `json:"key"`
	Payload json.RawMessage `json:"payload"`
}

// follower follows an event stream — every run's (GET /api/v1/events) or
// one run's (GET /api/v1/runs/{id}/events) — as a browser's EventSource
// does, across process kills and the database restart: when the stream
// ends or breaks it connects again, to its preferred instance when that is
// live (else the other), with the id of the last complete event it got as
// Last-Event-ID. An event cut off mid-way by a kill does not count.
type follower struct {
	name   string
	cl     *cluster
	prefer int
	path   string
	runID  string // a run's stream; "" for every run's
	client *http.Client

	mu       sync.Mutex
	got      []streamEvent
	lastID   string
	problems []string

	connects, cuts, refused, ends atomic.Int64
	conns                         []streamConn // under mu
}

// streamConn is one connection of a follower, for the failure messages.
type streamConn struct {
	at       time.Time
	instance string
	lastID   string // the Last-Event-ID sent
	events   int    // complete events received
}

// newFollower's streams are checked against openapi.yaml, failing tb
// (internal/contracttest): their status and content type.
func newFollower(tb testing.TB, cl *cluster, prefer int, runID string) *follower {
	f := &follower{cl: cl, prefer: prefer, runID: runID, lastID: "0",
		client: contracttest.Client(tb, &http.Client{Transport: &http.Transport{ResponseHeaderTimeout: 20 * time.Second}})}
	if runID == "" {
		f.name, f.path = fmt.Sprintf("every run's events (instance %d first)", prefer), "/api/v1/events"
	} else {
		f.name, f.path = "run "+runID+"'s events", "/api/v1/runs/"+runID+"/events"
	}
	return f
}

func (f *follower) fail(format string, args ...any) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.problems) < 20 {
		f.problems = append(f.problems, fmt.Sprintf(format, args...))
	}
}

// run follows the stream until ctx ends.
func (f *follower) run(ctx context.Context) {
	for ctx.Err() == nil {
		in := f.cl.instances[f.prefer]
		if !in.live.Load() {
			in = f.cl.pick()
		}
		if in == nil {
			time.Sleep(50 * time.Millisecond) // every instance is down
			continue
		}
		f.follow(ctx, in)
		time.Sleep(50 * time.Millisecond) // an EventSource's reconnection delay
	}
}

func (f *follower) follow(ctx context.Context, in *instance) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, in.url()+f.path, nil)
	if err != nil {
		f.fail("%v", err)
		return
	}
	f.mu.Lock()
	last := f.lastID
	f.mu.Unlock()
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Last-Event-ID", last)
	resp, err := f.client.Do(req)
	if err != nil {
		f.refused.Add(1)
		return
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		f.refused.Add(1)
		if resp.StatusCode != http.StatusServiceUnavailable || !bytes.Contains(b, []byte(`"unavailable"`)) {
			f.fail("%s answered %d: %s", f.path, resp.StatusCode, b)
		}
		return
	}
	f.connects.Add(1)
	f.mu.Lock()
	f.conns = append(f.conns, streamConn{at: time.Now(), instance: in.name, lastID: last})
	f.mu.Unlock()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 8<<20)
	sc.Split(completeLines)
	var id, typ string
	var data []byte
	for sc.Scan() {
		line := sc.Text()
		name, value, _ := strings.Cut(line, ":")
		value = strings.TrimPrefix(value, " ")
		switch {
		case line == "":
			if data != nil && f.deliver(id, typ, data) {
				return
			}
			id, typ, data = "", "", nil
		case name == "": // a comment (keepalive)
		case name == "id":
			id = value
		case name == "event":
			typ = value
		case name == "data":
			data = append(data, value...)
		case name == "retry":
		default:
			f.fail("unknown SSE field in %q", line)
		}
	}
	f.cuts.Add(1) // the process was killed, the database restarted, or the server ended the stream
}

// completeLines splits a stream into lines that ended: a last line a kill
// cut off (no newline before the end) is dropped, not read as a field.
func completeLines(data []byte, atEOF bool) (int, []byte, error) {
	if i := bytes.IndexByte(data, '\n'); i >= 0 {
		return i + 1, bytes.TrimSuffix(data[:i], []byte("\r")), nil
	}
	if atEOF {
		return len(data), nil, nil
	}
	return 0, nil, nil
}

// deliver takes one complete event; it reports whether the stream ended
// (stream.end).
func (f *follower) deliver(id, typ string, data []byte) bool {
	if typ == "stream.end" {
		var end struct {
			LastEventID int64 `json:"last_event_id"`
		}
		_ = json.Unmarshal(data, &end)
		f.mu.Lock()
		last := f.lastID
		f.mu.Unlock()
		if strconv.FormatInt(end.LastEventID, 10) != last {
			f.fail("stream.end names %d as the last event; the last received was %s", end.LastEventID, last)
		}
		f.ends.Add(1)
		return true
	}
	var e streamEvent
	if err := json.Unmarshal(data, &e); err != nil || id == "" {
		f.fail("undecodable event (id %q, %s): %s", id, typ, data)
		return false
	}
	e.sseID = id
	if e.Type != typ {
		f.fail("event %s is %q under the SSE event %q", id, e.Type, typ)
	}
	want := strconv.FormatInt(e.ID, 10) // every run's stream: the event's id
	if f.runID != "" {
		want = strconv.FormatInt(e.Seq, 10) // a run's stream: its number in the run
		if e.RunID != f.runID {
			f.fail("event %d of run %s in %s", e.Seq, e.RunID, f.name)
		}
	}
	if id != want {
		f.fail("event %d of run %s has the SSE id %s, not %s", e.Seq, e.RunID, id, want)
	}
	f.mu.Lock()
	e.conn = len(f.conns) - 1
	f.got = append(f.got, e)
	f.lastID = id
	f.conns[len(f.conns)-1].events++
	f.mu.Unlock()
	return false
}

func (f *follower) received() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.got)
}

// storedEvent is a run_events row.
type storedEvent struct {
	id      int64
	seq     int64
	typ     string
	key     string
	payload []byte // canonical
	at      time.Time
}

// storedEvents reads every run's events, in order.
func storedEvents(ctx context.Context, t *testing.T, db *sql.DB) (map[string][]storedEvent, int) {
	t.Helper()
	rows, err := db.QueryContext(ctx, `SELECT id, run_id::text, seq, type, coalesce(key, ''), payload::text, created_at
		FROM run_events ORDER BY run_id, seq`)
	require.NoError(t, err)
	defer rows.Close()
	out := map[string][]storedEvent{}
	n := 0
	for rows.Next() {
		var e storedEvent
		var run string
		var payload []byte
		require.NoError(t, rows.Scan(&e.id, &run, &e.seq, &e.typ, &e.key, &payload, &e.at))
		e.payload = canonical(t, payload)
		out[run] = append(out[run], e)
		n++
	}
	require.NoError(t, rows.Err())
	return out, n
}

// canonical writes JSON one way, whatever wrote it: keys sorted, numbers
// as written, no HTML escapes (Postgres prints "->" where Go's encoder
// writes "-\u003e"), so a stored payload and a streamed one compare as
// bytes.
func canonical(t *testing.T, b []byte) []byte {
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var v any
	require.NoError(t, d.Decode(&v), "%s", b)
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	require.NoError(t, enc.Encode(v))
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
}

// checkStream checks what f received against the stored events: every
// event of the stream's runs exactly once, each run's in order, as stored,
// whatever kills, database restarts and reconnections happened. A run's
// stream keeps its place by the event's number in the run; the stream of
// every run's events by the global event id, which it never passes while a
// lower id may still commit (web's eventCursor), so resuming from the last
// id received repeats and loses nothing.
func checkStream(t *testing.T, f *follower, stored map[string][]storedEvent) {
	t.Helper()
	f.mu.Lock()
	require.Empty(t, f.problems, "%s: the stream answered as the contract says", f.name)
	got := append([]streamEvent(nil), f.got...)
	conns := append([]streamConn(nil), f.conns...)
	f.mu.Unlock()
	global := f.runID == ""
	runs := map[string][]storedEvent{f.runID: stored[f.runID]}
	if global {
		runs = stored
	}
	var bad []string
	note := func(format string, args ...any) {
		if len(bad) < 8 {
			bad = append(bad, fmt.Sprintf(format, args...))
		}
	}
	type receipt struct {
		conn int
		seq  int64
	}
	first := map[[2]any]receipt{}    // (run, seq) → its first receipt
	lastOnConn := map[[2]any]int64{} // (run, connection) → the last seq received on it
	lastFirst := map[string]int64{}  // run → the last seq first received
	for _, e := range got {
		want, ok := runs[e.RunID]
		require.True(t, ok, "%s: an event of run %s, which has no events stored", f.name, e.RunID)
		require.True(t, e.Seq >= 1 && e.Seq <= int64(len(want)), "%s: event %d of run %s is not stored", f.name, e.Seq, e.RunID)
		w := want[e.Seq-1]
		require.Equal(t, w.id, e.ID, "%s: run %s event %d: id", f.name, e.RunID, w.seq)
		require.Equal(t, w.typ, e.Type, "%s: run %s event %d: type", f.name, e.RunID, w.seq)
		require.Equal(t, w.key, e.Key, "%s: run %s event %d: key", f.name, e.RunID, w.seq)
		require.Equal(t, string(w.payload), string(canonical(t, e.Payload)), "%s: run %s event %d: payload", f.name, e.RunID, w.seq)
		ck := [2]any{e.RunID, e.conn}
		require.Greater(t, e.Seq, lastOnConn[ck], "%s: run %s's events in order on connection %d", f.name, e.RunID, e.conn)
		lastOnConn[ck] = e.Seq
		k := [2]any{e.RunID, e.Seq}
		if r, seen := first[k]; seen {
			note("event %d of run %s (id %d) came again on connection %d (first on %d)", e.Seq, e.RunID, e.ID, e.conn, r.conn)
			continue
		}
		first[k] = receipt{e.conn, e.Seq}
		if e.Seq < lastFirst[e.RunID] {
			note("event %d of run %s came after its event %d", e.Seq, e.RunID, lastFirst[e.RunID])
		}
		lastFirst[e.RunID] = e.Seq
	}
	for run, want := range runs {
		for _, w := range want {
			if _, ok := first[[2]any{run, w.seq}]; ok {
				continue
			}
			note("event %d of %d of run %s (%s, id %d, made %s) never came", w.seq, len(want), run, w.typ, w.id,
				w.at.Format("15:04:05.000"))
		}
	}
	if len(bad) > 0 {
		var cs []string
		for i, c := range conns {
			if len(cs) < 40 && (c.events > 0 || i+1 == len(conns)) {
				cs = append(cs, fmt.Sprintf("#%d %s to %s with Last-Event-ID %s: %d events", i, c.at.Format("15:04:05.000"),
					c.instance, c.lastID, c.events))
			}
		}
		assert.Fail(t, f.name+": every event exactly once, each run's in order", "%s\nconnections:\n  %s",
			strings.Join(bad, "\n  "), strings.Join(cs, "\n  "))
	}
}
