package app_test

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

type sseEvent struct {
	id  int64
	typ string
	ev  struct {
		ID      int64  `json:"id"`
		Seq     int64  `json:"seq"`
		Type    string `json:"type"`
		Key     string `json:"key"`
		Payload struct {
			Kind      string  `json:"kind"`
			To        *string `json:"to_section_id"`
			EntitySeq int64   `json:"entity_seq"`
		} `json:"payload"`
	}
	kind, to string
}

// readSSE streams events from path into a channel until ctx ends.
func (h *harness) readSSE(ctx context.Context, path, lastID string) <-chan sseEvent {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, h.app.URL+path, nil)
	require.NoError(h.t, err)
	req.Header.Set("Authorization", "Bearer "+token)
	if lastID != "" {
		req.Header.Set("Last-Event-ID", lastID)
	}
	resp, err := http.DefaultClient.Do(req) //nolint:bodyclose // the reading goroutine closes it
	require.NoError(h.t, err)
	require.Equal(h.t, 200, resp.StatusCode)
	require.Equal(h.t, "text/event-stream", resp.Header.Get("Content-Type"))
	out := make(chan sseEvent, 1024)
	go func() {
		defer resp.Body.Close()
		defer close(out)
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		var cur sseEvent
		for sc.Scan() {
			line := sc.Text()
			switch {
			case strings.HasPrefix(line, "id: "):
				cur.id, _ = strconv.ParseInt(line[4:], 10, 64)
			case strings.HasPrefix(line, "event: "):
				cur.typ = line[7:]
			case strings.HasPrefix(line, "data: "):
				_ = json.Unmarshal([]byte(line[6:]), &cur.ev)
			case line == "" && cur.typ != "":
				cur.kind = cur.ev.Payload.Kind
				if cur.ev.Payload.To != nil {
					cur.to = *cur.ev.Payload.To
				}
				out <- cur
				cur = sseEvent{}
			}
		}
	}()
	return out
}

func TestRunEventsSSEInOrderWithReplay(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	flow := h.createFlow([]map[string]any{wnode(h, "a"), wnode(h, "b"), wnode(h, "c")},
		[]map[string]any{edge("a", "b", nil), edge("b", "c", nil)})
	r := h.startRun(flow, map[string]any{})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	stream := h.readSSE(ctx, "/api/v1/runs/"+r.ID+"/events", "")
	all := h.readSSE(ctx, "/api/v1/events", "0")
	for _, k := range []string{"a", "b", "c"} {
		h.complete(h.waitDispatch(r.ID, k, 1), `{}`)
	}
	h.waitRun(r.ID, "completed")
	var total int
	require.NoError(t, h.app.Store.Gorm().Raw(`SELECT count(*) FROM run_events WHERE run_id = ?`, r.ID).Row().Scan(&total))

	var got []sseEvent
	for len(got) < total {
		select {
		case e := <-stream:
			got = append(got, e)
		case <-ctx.Done():
			t.Fatalf("got %d of %d events", len(got), total)
		}
	}
	for i, e := range got {
		require.Equal(t, int64(i+1), e.id, "SSE ids are the run's sequence numbers, in order")
		require.Equal(t, e.id, e.ev.Seq)
	}
	require.Equal(t, "run.started", got[0].typ)
	require.Equal(t, "run.completed", got[len(got)-1].typ)

	// Replay from Last-Event-ID: exactly the events after it.
	replay := h.readSSE(ctx, "/api/v1/runs/"+r.ID+"/events", strconv.Itoa(total-3))
	for i := 0; i < 3; i++ {
		e := <-replay
		require.Equal(t, int64(total-2+i), e.id)
	}

	// The global stream carries the same events, in per-run order.
	var seqs []int64
	for len(seqs) < total {
		select {
		case e := <-all:
			if e.ev.Seq > 0 {
				seqs = append(seqs, e.ev.Seq)
			}
		case <-ctx.Done():
			t.Fatalf("global stream: got %d of %d events", len(seqs), total)
		}
	}
	for i, s := range seqs {
		require.Equal(t, int64(i+1), s)
	}
}
