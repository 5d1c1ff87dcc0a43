package app_test

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stitchd/stitchd/callbacks"
)

// entityFlow makes a flow on board with one Worker w and, unless mode is
// "", settings.entityConcurrency mode.
func (h *harness) entityFlow(board, mode string) string {
	h.t.Helper()
	graph := map[string]any{"nodes": []map[string]any{wnode(h, "w")}, "edges": []any{}}
	if mode != "" {
		graph["settings"] = map[string]any{"entityConcurrency": mode}
	}
	var raw map[string]any
	require.Equal(h.t, 201, h.do("POST", "/api/v1/flows", map[string]any{"name": "entity " + mode, "board_id": board,
		"graph": graph}, &raw), "%v", raw)
	return as[string](h.t, raw["id"])
}

func (h *harness) newEntity(board, name string) string {
	h.t.Helper()
	var e entityJSON
	require.Equal(h.t, 201, h.do("POST", "/api/v1/entities", map[string]any{"board_id": board, "type": "lead", "name": name}, &e))
	return e.ID
}

// startFor starts a run of flow for entity; it returns the answer's code
// and run.
func (h *harness) startFor(flow, entity string) (int, runJSON) {
	h.t.Helper()
	var r runJSON
	code := h.do("POST", "/api/v1/flows/"+flow+"/runs", map[string]any{"input": map[string]any{"who": entity}, "entity_id": entity}, &r)
	return code, r
}

func (h *harness) runsOf(flow, status string) int {
	h.t.Helper()
	var n int
	require.NoError(h.t, h.app.Store.Gorm().Raw(`SELECT count(*) FROM runs WHERE flow_id = ? AND status = ?`, flow, status).Row().Scan(&n))
	return n
}

// TestEntityRunsQueueByDefault: a second run of a flow for an entity whose
// run of it is still going waits queued — no node, no dispatch, the card
// not taken — and begins, in order, in the transaction that ends the one
// before; another entity's run is not held; a queued run can be
// cancelled, and the queue goes on.
func TestEntityRunsQueueByDefault(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	board := h.createBoard("new", "done")
	flow := h.entityFlow(board, "")
	ada, bob := h.newEntity(board, "Ada"), h.newEntity(board, "Bob")

	code, r1 := h.startFor(flow, ada)
	require.Equal(t, 201, code)
	require.Equal(t, "running", r1.Status)
	code, r2 := h.startFor(flow, ada)
	require.Equal(t, 201, code)
	require.Equal(t, "queued", r2.Status)
	_, r3 := h.startFor(flow, ada)
	require.Equal(t, "queued", r3.Status)
	_, rb := h.startFor(flow, bob)
	require.Equal(t, "running", rb.Status, "another entity's run is not held")
	h.waitDispatch(rb.ID, "w", 1)

	got := h.run(r2.ID)
	require.Equal(t, "queued", got.Status)
	require.Empty(t, got.Nodes, "nothing of a queued run has fired")
	require.Zero(t, h.dispatchCount(r2.ID, "w"))
	require.Equal(t, r1.ID, *h.entity(ada).CurrentRunID, "the card stays with the run going")
	var queuedEvents int
	require.NoError(t, h.app.Store.Gorm().Raw(`SELECT count(*) FROM run_events WHERE run_id = ? AND type = 'run.queued'
		AND payload->>'behind' = ?`, r2.ID, r1.ID).Row().Scan(&queuedEvents))
	require.Equal(t, 1, queuedEvents)
	var listed struct {
		Runs []runJSON `json:"runs"`
	}
	require.Equal(t, 200, h.do("GET", "/api/v1/runs?status=queued&flow_id="+flow, nil, &listed))
	require.Len(t, listed.Runs, 2)

	// r1 ends: r2 begins in that transaction; r3 still waits.
	h.complete(h.waitDispatch(r1.ID, "w", 1), `{"n": 1}`)
	h.waitRun(r1.ID, "completed")
	require.Equal(t, "running", h.run(r2.ID).Status)
	d := h.waitDispatch(r2.ID, "w", 1)
	require.JSONEq(t, `{"who": "`+ada+`"}`, string(d.Payload.Input), "it begins with its own input")
	require.Equal(t, "queued", h.run(r3.ID).Status)
	require.Equal(t, r2.ID, *h.entity(ada).CurrentRunID)

	// A queued run cancelled: the one going is not touched; the next
	// queued one waits for it.
	require.Equal(t, 200, h.do("POST", "/api/v1/runs/"+r3.ID+"/cancel", nil, nil))
	require.Equal(t, "cancelled", h.run(r3.ID).Status)
	_, r4 := h.startFor(flow, ada)
	require.Equal(t, "queued", r4.Status)
	require.Equal(t, "running", h.run(r2.ID).Status)
	// A run cancelled while going ends its turn too.
	require.Equal(t, 200, h.do("POST", "/api/v1/runs/"+r2.ID+"/cancel", nil, nil))
	h.waitDispatch(r4.ID, "w", 1)
	require.Equal(t, "running", h.run(r4.ID).Status)
}

// TestEntityRunsSkip: with entityConcurrency skip, a start for an entity
// with a run going is refused — 409 entity_busy naming that run from the
// API, a 200 that says skipped from a hook (its sender must not retry) —
// and nothing is written.
func TestEntityRunsSkip(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	board := h.createBoard("new", "done")
	flow := h.entityFlow(board, "skip")
	ada := h.newEntity(board, "Ada")
	_, r1 := h.startFor(flow, ada)
	require.Equal(t, "running", r1.Status)
	var e struct {
		Error struct {
			Code, Message string
		} `json:"error"`
	}
	require.Equal(t, http.StatusConflict, h.do("POST", "/api/v1/flows/"+flow+"/runs", map[string]any{"entity_id": ada}, &e))
	require.Equal(t, "entity_busy", e.Error.Code)
	require.Contains(t, e.Error.Message, r1.ID, "it names the run going")
	require.Equal(t, 1, h.runsOf(flow, "running"))
	require.Zero(t, h.runsOf(flow, "queued"))

	// Through a hook: the first lead starts, the second for the same
	// email is skipped.
	require.Equal(t, 201, h.do("POST", "/api/v1/flows/"+flow+"/triggers", map[string]any{"slug": "skip-hook",
		"secret": "skip-secret-signing", "entity": map[string]any{"board_id": board, "type": "lead", "name_path": "name", "email_path": "email"}}, nil))
	const secret = "skip-secret-signing"
	hook := func(id string) (int, string) {
		body := []byte(`{"name":"Cy","email":"cy@example.com"}`)
		req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, h.app.URL+"/hooks/skip-hook", bytes.NewReader(body))
		require.NoError(t, err)
		now := time.Now().Unix()
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("webhook-id", id)
		req.Header.Set("webhook-timestamp", strconv.FormatInt(now, 10))
		req.Header.Set("webhook-signature", callbacks.SignWebhook([]byte(secret), id, now, body))
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	code, body := hook("msg-1")
	require.Equal(t, 202, code, body)
	code, body = hook("msg-2")
	require.Equal(t, 200, code, body)
	require.Contains(t, body, `"skipped":true`)
	require.Equal(t, 2, h.runsOf(flow, "running"), "Ada's and Cy's first")

	// Once the run ends, a start goes through.
	h.complete(h.waitDispatch(r1.ID, "w", 1), `{}`)
	h.waitRun(r1.ID, "completed")
	code, r2 := h.startFor(flow, ada)
	require.Equal(t, 201, code)
	require.Equal(t, "running", r2.Status)
}

// TestEntityRunsAllow: entityConcurrency allow starts every run at once.
func TestEntityRunsAllow(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	board := h.createBoard("new", "done")
	flow := h.entityFlow(board, "allow")
	ada := h.newEntity(board, "Ada")
	for range 3 {
		_, r := h.startFor(flow, ada)
		require.Equal(t, "running", r.Status)
		h.waitDispatch(r.ID, "w", 1)
	}
	require.Equal(t, 3, h.runsOf(flow, "running"))
}

// TestEntityQueueUnderConcurrency: twelve starts at once for one entity
// make one run going and eleven queued; as each ends exactly one more
// begins, the queued ones in the order they were made, never two at once,
// and all end.
func TestEntityQueueUnderConcurrency(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	board := h.createBoard("new", "done")
	flow := h.entityFlow(board, "queue")
	ada := h.newEntity(board, "Ada")
	const n = 12
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if code := h.do("POST", "/api/v1/flows/"+flow+"/runs", map[string]any{"entity_id": ada}, nil); code != 201 {
				errs <- fmt.Errorf("start answered %d", code)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	require.Equal(t, 1, h.runsOf(flow, "running"))
	require.Equal(t, n-1, h.runsOf(flow, "queued"))

	// The run going is whichever start took the entity's lock first (a
	// start's created_at is read before it waits for the lock, so it need
	// not be the oldest); the queued ones then begin oldest first.
	var order []string
	require.NoError(t, h.app.Store.Gorm().Raw(`SELECT id::text FROM runs WHERE flow_id = ?
		ORDER BY status = 'queued', created_at, id`, flow).Scan(&order).Error)
	for i, id := range order {
		require.Equal(t, "running", h.run(id).Status, "run %d of %d begins in its turn", i+1, n)
		require.Equal(t, 1, h.runsOf(flow, "running"), "never two at once")
		h.complete(h.waitDispatch(id, "w", 1), fmt.Sprintf(`{"i": %d}`, i))
		h.waitRun(id, "completed")
	}
	require.Equal(t, n, h.runsOf(flow, "completed"))
}

// TestEntityConcurrencyIsChecked: an unknown mode is refused at save.
func TestEntityConcurrencyIsChecked(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	code, problems := h.refused(422, "POST", "/api/v1/flows", map[string]any{"name": "bad mode", "graph": map[string]any{
		"nodes": []map[string]any{node("u", "UX", nil)}, "edges": []any{}, "settings": map[string]any{"entityConcurrency": "sometimes"}}})
	require.Equal(t, "invalid_graph", code)
	require.Len(t, problems, 1)
	require.Equal(t, "settings.entityConcurrency", problems[0].Path)
	require.Contains(t, problems[0].Message, "must be one of allow, skip, queue")
}
