package web

import (
	"container/heap"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/stitchd/stitchd/engine"
	"github.com/stitchd/stitchd/store"
)

// Hub fans database notifications (the id of a run with new events) out
// to SSE subscribers. Feed it from store.Listen.
type Hub struct {
	mu        sync.Mutex
	subs      map[*subscriber]struct{}
	done      chan struct{}
	closeOnce sync.Once
}

type subscriber struct {
	runID string // "" = every run
	wake  chan struct{}
	mu    sync.Mutex
	dirty map[string]struct{}
	all   bool // a reconnect, or too many runs noted: anything may have changed
}

// Bounds on what one event stream holds, whatever its client does.
const (
	// maxPendingRuns bounds the runs noted as changed for a stream between
	// two of its reads: past it the stream reads the event log from where
	// it is instead (nothing is lost; the set is dropped).
	maxPendingRuns = 256
	// streamPageBytes bounds the event payloads a stream reads at once
	// (beyond its first event): a page is written out before the next is
	// read, so a client that does not read holds one page, until the write
	// timeout drops it.
	streamPageBytes = 64 << 10
	// DefaultStreamMaxRuns is how many runs the stream of every run's
	// events (GET /api/v1/events) follows before it asks its client to
	// reconnect (Config.StreamMaxRuns).
	DefaultStreamMaxRuns = 2000
)

// NewHub returns an empty hub.
func NewHub() *Hub { return &Hub{subs: map[*subscriber]struct{}{}, done: make(chan struct{})} }

// Close ends every open stream (graceful shutdown: http.Server.Shutdown
// waits for handlers, and a stream never ends on its own).
func (h *Hub) Close() { h.closeOnce.Do(func() { close(h.done) }) }

// Notify tells subscribers that runID has new events ("" = unknown, after
// a listener reconnect).
func (h *Hub) Notify(runID string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for s := range h.subs {
		if runID != "" && s.runID != "" && s.runID != runID {
			continue
		}
		s.mu.Lock()
		switch {
		case runID == "" || len(s.dirty) >= maxPendingRuns:
			s.all, s.dirty = true, map[string]struct{}{}
		case !s.all:
			s.dirty[runID] = struct{}{}
		}
		s.mu.Unlock()
		select {
		case s.wake <- struct{}{}:
		default:
		}
	}
}

func (h *Hub) subscribe(runID string) *subscriber {
	s := &subscriber{runID: runID, wake: make(chan struct{}, 1), dirty: map[string]struct{}{}}
	h.mu.Lock()
	h.subs[s] = struct{}{}
	h.mu.Unlock()
	return s
}

func (h *Hub) unsubscribe(s *subscriber) {
	h.mu.Lock()
	delete(h.subs, s)
	h.mu.Unlock()
}

// Subscribers is the number of open event streams.
func (h *Hub) Subscribers() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.subs)
}

func (s *subscriber) take() (map[string]struct{}, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	d, all := s.dirty, s.all
	s.dirty, s.all = map[string]struct{}{}, false
	return d, all
}

// arm gives the writes that follow until the stream write timeout to
// reach the client. Notifying a stream never blocks the hub, but a client
// that stops reading would block its handler's writes for ever, holding the
// connection, the goroutine and its buffers: instead the writes fail and
// the stream ends.
func (s *Server) arm(c echo.Context) {
	_ = http.NewResponseController(c.Response().Writer).SetWriteDeadline(time.Now().Add(s.cfg.StreamWriteTimeout))
}

// flush sends what was written; an error means the client is gone or too
// slow.
func flush(c echo.Context) error {
	return http.NewResponseController(c.Response().Writer).Flush()
}

// keepaliveEvery is how often an idle stream says it is alive (a comment
// line), so proxies and clients do not drop it.
const keepaliveEvery = 15 * time.Second

// keepalive writes a stream's keepalive comment; an error means the client
// is gone or too slow.
func (s *Server) keepalive(c echo.Context) error {
	s.arm(c)
	if _, err := fmt.Fprint(c.Response(), ": keepalive\n\n"); err != nil {
		return err
	}
	return flush(c)
}

func (s *Server) sseStart(c echo.Context) error {
	h := c.Response().Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	h.Set("Connection", "keep-alive")
	h.Set("X-Accel-Buffering", "no")
	c.Response().WriteHeader(http.StatusOK) // sets WriteTimeout's deadline (writeDeadline)
	s.arm(c)
	return flush(c)
}

func writeEvent(c echo.Context, id int64, e engine.Event) error {
	b, err := json.Marshal(e)
	if err != nil {
		return err
	}
	if _, err := fmt.Fprintf(c.Response(), "id: %d\nevent: %s\ndata: %s\n\n", id, e.Type, b); err != nil {
		return err
	}
	return nil
}

// lastEventID is where a stream resumes: the Last-Event-ID header, else
// the last_event_id query parameter (an EventSource cannot set headers on
// its first connection). given is false when neither is set. Anything but
// a whole number ≥ 0 is refused: read as 0 it would replay every event.
func lastEventID(c echo.Context) (n int64, given bool, err error) {
	what, v := "Last-Event-ID", c.Request().Header.Get("Last-Event-ID")
	if v == "" {
		what, v = "last_event_id", c.QueryParam("last_event_id")
	}
	if v == "" {
		return 0, false, nil
	}
	n, err = strconv.ParseInt(strings.TrimSpace(v), 10, 64)
	if err != nil || n < 0 {
		return 0, false, errorf(http.StatusBadRequest, "invalid_request",
			fmt.Sprintf("%s must be an event id, a whole number of 0 or more (got %.40q)", what, v))
	}
	return n, true, nil
}

// runEvents streams one run's events in order; the SSE id is the event's
// sequence number within the run, so Last-Event-ID resumes exactly.
func (s *Server) runEvents(c echo.Context) error {
	id, err := s.pathUUID(c, "id", "run")
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	if _, _, err := s.cfg.Store.GetRun(ctx, id, false); err != nil {
		return err
	}
	sub := s.cfg.Hub.subscribe(id)
	defer s.cfg.Hub.unsubscribe(sub)
	after, _, err := lastEventID(c)
	if err != nil {
		return err
	}
	if s.sseStart(c) != nil {
		return nil
	}
	keepalive := time.NewTicker(keepaliveEvery)
	defer keepalive.Stop()
	poll := time.NewTicker(5 * time.Second) // safety net if a notification is lost
	defer poll.Stop()
	for {
		for {
			evs, err := s.cfg.Store.RunEventsBounded(ctx, id, after, 1000, streamPageBytes)
			if err == nil && len(evs) > 0 {
				err = s.cfg.Store.WaitReplicated(ctx) // only what survives a failover
			}
			if err != nil {
				return nil
			}
			s.arm(c)
			for _, e := range evs {
				if err := writeEvent(c, e.Seq, e); err != nil {
					return nil
				}
				after = e.Seq
			}
			if flush(c) != nil {
				return nil
			}
			if !store.PageFull(evs, 1000, streamPageBytes) {
				break
			}
		}
		select {
		case <-ctx.Done():
			return nil
		case <-s.cfg.Hub.done:
			return nil
		case <-sub.wake:
			sub.take()
		case <-poll.C:
		case <-keepalive.C:
			if s.keepalive(c) != nil {
				return nil
			}
		}
	}
}

// allEvents streams every run's events (boards, dashboards). The SSE id is
// the global event id, and the stream delivers events in id order without
// ever passing an id that may still commit (eventCursor), so resuming with
// Last-Event-ID repeats and loses nothing; each run's events take ids in
// their own order.
func (s *Server) allEvents(c echo.Context) error {
	ctx := c.Request().Context()
	start, given, err := lastEventID(c)
	if err != nil {
		return err
	}
	sub := s.cfg.Hub.subscribe("")
	defer s.cfg.Hub.unsubscribe(sub)
	// Read before the stream's 200: a database that is away is a 503, not
	// a stream that ends empty.
	last, err := s.cfg.Store.LastEventID(ctx)
	if err != nil {
		return err
	}
	if !given {
		start = last
	}
	if s.sseStart(c) != nil {
		return nil
	}
	cur := &eventCursor{store: s.cfg.Store, after: start, final: start}
	runs := map[string]struct{}{} // the runs this stream has followed
	// lastID is the SSE id of the last event written: where a client
	// resumes from (Last-Event-ID).
	lastID := start
	here := s.workspaceFilter(c)
	send := func(evs []engine.Event) error {
		s.arm(c)
		for _, e := range evs {
			if ok, err := here(ctx, e); err != nil {
				return err
			} else if !ok {
				continue // another workspace's
			}
			if e.RunID == "" { // a manual move: no run, no id
				if err := writeManualMove(c, e); err != nil {
					return err
				}
				continue
			}
			if _, seen := runs[e.RunID]; !seen && len(runs) >= s.cfg.StreamMaxRuns {
				// The runs it follows are bounded: the stream ends with a
				// word to its client, which resumes from its last event.
				_ = flush(c)
				return s.endStream(c, lastID, "this stream has followed "+strconv.Itoa(len(runs))+
					" runs, its most; reconnect with Last-Event-ID "+strconv.FormatInt(lastID, 10)+
					" to go on from the last event received")
			}
			if err := writeEvent(c, e.ID, e); err != nil {
				return err
			}
			runs[e.RunID] = struct{}{}
			lastID = e.ID
		}
		return flush(c)
	}
	// held wakes the stream again while an id it must not pass may still
	// commit: soon at first, then less often (a long transaction).
	held := time.NewTimer(time.Hour)
	held.Stop()
	defer held.Stop()
	heldFor := time.Duration(0)
	// catchUp sends what the cursor can give, with the manual moves of
	// this wake-up (one notification may carry many, coalesced) merged in
	// by time, each run's events in their own order: a card moved by a run
	// and then by hand must end where the hand put it.
	catchUp := func(moves []engine.Event) error {
		for {
			evs, state, err := cur.next(ctx)
			if err != nil {
				return err
			}
			if err := send(mergeByTime([][]engine.Event{evs, moves})); err != nil {
				return err
			}
			moves = nil
			switch state {
			case cursorMore:
				continue
			case cursorHeld:
				heldFor = min(max(2*heldFor, 10*time.Millisecond), 500*time.Millisecond)
				held.Reset(heldFor)
			default:
				heldFor = 0
			}
			return nil
		}
	}
	if err := catchUp(nil); err != nil {
		return nil
	}
	keepalive := time.NewTicker(keepaliveEvery)
	defer keepalive.Stop()
	poll := time.NewTicker(5 * time.Second) // safety net if a notification is lost
	defer poll.Stop()
	for {
		var moves []engine.Event
		select {
		case <-ctx.Done():
			return nil
		case <-s.cfg.Hub.done:
			return nil
		case <-keepalive.C:
			if s.keepalive(c) != nil {
				return nil
			}
			continue
		case <-held.C:
		case <-poll.C:
		case <-sub.wake:
			dirty, _ := sub.take()
			for key := range dirty {
				if entityID, ok := strings.CutPrefix(key, "entity:"); ok {
					if ev, ok := s.manualMove(ctx, entityID); ok {
						moves = append(moves, ev)
					}
				}
			}
		}
		if catchUp(moves) != nil {
			return nil
		}
	}
}

// cursorState says what an eventCursor read left.
type cursorState int

const (
	cursorDone cursorState = iota // caught up
	cursorMore                    // a page was full: read again now
	cursorHeld                    // an id it must not pass may still commit: read again soon
)

// eventCursor reads every run's events in id order from after, never
// passing an id that may still commit. Ids are taken at insert, not at
// commit, so a lower id can commit after a higher one (or never, rolled
// back): the cursor passes a missing id only once it is proven final
// (store.EventIDBound).
type eventCursor struct {
	store *store.Store
	after int64 // every id ≤ after was read, or is final and missing
	final int64 // every id ≤ final is final: it is stored, or never will be
	bound *store.EventBound
}

// next reads the next page of events.
func (cur *eventCursor) next(ctx context.Context) ([]engine.Event, cursorState, error) {
	for proofs := 0; ; proofs++ {
		page, err := cur.store.EventsAfterBounded(ctx, cur.after, 1000, streamPageBytes)
		if err != nil {
			return nil, cursorDone, err
		}
		if len(page) > 0 {
			// Only what survives a failover (store.WaitReplicated).
			if err := cur.store.WaitReplicated(ctx); err != nil {
				return nil, cursorDone, err
			}
		}
		n := 0
		for _, e := range page {
			if e.ID != cur.after+1 && e.ID > cur.final {
				break // a missing id below e's may still commit
			}
			cur.after = e.ID
			n++
		}
		switch {
		case n == len(page) && store.PageFull(page, 1000, streamPageBytes):
			return page, cursorMore, nil
		case n == len(page):
			return page, cursorDone, nil
		case n > 0:
			return page[:n], cursorMore, nil
		case proofs == 2:
			return nil, cursorHeld, nil
		}
		// Stopped before a missing id: prove ids final, and read again
		// (after the proof, so the page holds whatever committed).
		proved, err := cur.prove(ctx)
		if err != nil {
			return nil, cursorDone, err
		}
		if !proved {
			return nil, cursorHeld, nil
		}
	}
}

// prove moves final up when every transaction that could hold an id up to
// a bound has ended (store.EventIDBound).
func (cur *eventCursor) prove(ctx context.Context) (bool, error) {
	if cur.bound == nil {
		b, err := cur.store.EventIDBound(ctx)
		if err != nil {
			return false, err
		}
		cur.bound = &b
	}
	xmin, err := cur.store.SnapshotXmin(ctx)
	if err != nil {
		return false, err
	}
	if xmin <= cur.bound.Xid {
		return false, nil
	}
	cur.final = max(cur.final, cur.bound.ID)
	cur.bound = nil
	return true, nil
}

// errStreamEnded ends a stream the server closed on purpose.
var errStreamEnded = errors.New("stream ended by the server")

// endStream writes a stream's last message, event stream.end with the
// reason and the id to resume from (and a short retry, so an EventSource
// reconnects at once), and ends the stream.
func (s *Server) endStream(c echo.Context, lastID int64, reason string) error {
	b, err := json.Marshal(map[string]any{"type": "stream.end", "message": reason, "last_event_id": lastID})
	if err != nil {
		return err
	}
	s.arm(c)
	if _, err := fmt.Fprintf(c.Response(), "retry: 500\nevent: stream.end\ndata: %s\n\n", b); err == nil {
		_ = flush(c)
	}
	return errStreamEnded
}

// manualMove reads an entity's latest manual move (which belongs to no
// run) as an event; ok is false when the entity is gone.
func (s *Server) manualMove(ctx context.Context, entityID string) (ev engine.Event, ok bool) {
	j, err := s.cfg.Store.LatestJourney(ctx, entityID)
	if err != nil {
		return ev, false
	}
	e, err := s.cfg.Store.GetEntity(ctx, entityID)
	if err != nil {
		return ev, false
	}
	payload, err := json.Marshal(map[string]any{"entity_id": entityID, "board_id": e.BoardID, "kind": j.Kind,
		"from_section_id": j.FromSectionID, "to_section_id": j.ToSectionID, "entity_seq": j.EntitySeq})
	if err != nil {
		return ev, false
	}
	return engine.Event{Type: engine.EventEntityMoved, Payload: payload, CreatedAt: j.CreatedAt}, true
}

// writeManualMove writes a manual move, without an SSE id (it is no run
// event).
func writeManualMove(c echo.Context, ev engine.Event) error {
	b, err := json.Marshal(ev)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(c.Response(), "event: %s\ndata: %s\n\n", ev.Type, b)
	return err
}

// mergeByTime merges sequences of events, each already in order, into one
// ordered by creation time; each sequence keeps its own order, and of
// events made at the same moment the earlier sequence's go first.
func mergeByTime(seqs [][]engine.Event) []engine.Event {
	h := eventHeads{}
	n := 0
	for i, q := range seqs {
		if len(q) > 0 {
			h = append(h, eventHead{seq: i, q: q})
			n += len(q)
		}
	}
	heap.Init(&h)
	out := make([]engine.Event, 0, n)
	for h.Len() > 0 {
		top := &h[0]
		out = append(out, top.q[0])
		if top.q = top.q[1:]; len(top.q) == 0 {
			heap.Pop(&h)
		} else {
			heap.Fix(&h, 0)
		}
	}
	return out
}

// eventHeads is a heap of event sequences by their first event's time.
type eventHeads []eventHead

type eventHead struct {
	seq int
	q   []engine.Event
}

func (h eventHeads) Len() int { return len(h) }
func (h eventHeads) Less(i, j int) bool {
	a, b := h[i].q[0].CreatedAt, h[j].q[0].CreatedAt
	return a.Before(b) || a.Equal(b) && h[i].seq < h[j].seq
}
func (h eventHeads) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *eventHeads) Push(x any)   { *h = append(*h, x.(eventHead)) } //nolint:forcetypeassert // container/heap's Push: only eventHeads are pushed
func (h *eventHeads) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}
