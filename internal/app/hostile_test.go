package app_test

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
)

// TestHostileCallbacksWithValidTokens complements web's forged-token test:
// callbacks whose tokens are genuine but aimed wrong — an unknown run, an
// unknown node, a pending node, a stale or future attempt, a conflicting,
// failed or heartbeat replay of a completed node, a malformed or oversized
// body — 2,600 of them, eight at a time, on a real database. Each gets its
// 4xx (an identical replay its original 200) and the database is exactly
// as before: node states, events and outbox rows.
func TestHostileCallbacksWithValidTokens(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	flow := h.createFlow([]map[string]any{wnode(h, "a"), wnode(h, "b")}, []map[string]any{edge("a", "b", nil)})
	done := h.startRun(flow, map[string]any{})
	h.complete(h.waitDispatch(done.ID, "a", 1), `{"v":1}`)
	// b's first attempt fails and is retried: attempt 1 is stale.
	code, body := h.post(h.waitDispatch(done.ID, "b", 1).Payload.CallbackURL, `{"status":"failed","error":"no"}`)
	require.Equal(t, 200, code, body)
	h.waitRun(done.ID, "failed")
	require.Equal(t, 200, h.do("POST", "/api/v1/runs/"+done.ID+"/nodes/b/retry", nil, nil))
	h.waitDispatch(done.ID, "b", 2)
	open := h.startRun(flow, map[string]any{})
	h.waitDispatch(open.ID, "a", 1)
	snapshot := func() string {
		var s string
		require.NoError(t, h.app.Store.Gorm().Raw(`SELECT
			(SELECT string_agg(run_id || key || status || attempt || coalesce(output::text, '') || coalesce(error, ''), ','
				ORDER BY run_id, key) FROM node_states) || '|' ||
			(SELECT count(*) || ':' || max(id) FROM run_events) || '|' ||
			(SELECT string_agg(id || status || tries, ',' ORDER BY id) FROM dispatches) || '|' ||
			(SELECT string_agg(id || status || active_nodes || failed_nodes || event_seq, ',' ORDER BY id) FROM runs)`).Row().Scan(&s))
		return s
	}
	// Deliveries are recorded after the worker's 202: wait for them.
	h.eventually(func() bool {
		var n int
		require.NoError(t, h.app.Store.Gorm().Raw(`SELECT count(*) FROM dispatches WHERE status <> 'delivered'`).Row().Scan(&n))
		return n == 0
	}, "dispatches delivered")
	before := snapshot()

	later := time.Now().Add(time.Hour)
	kinds := []struct {
		name, url, body string
		want            int
	}{
		{"unknown run", h.mint(uuid.NewString(), "a", 1, later), `{"status":"completed","output":{}}`, 404},
		{"unknown node", h.mint(done.ID, "nope", 1, later), `{"status":"completed","output":{}}`, 409},
		{"pending node", h.mint(open.ID, "b", 1, later), `{"status":"completed","output":{}}`, 409},
		{"future attempt", h.mint(open.ID, "a", 2, later), `{"status":"completed","output":{}}`, 409},
		{"stale attempt", h.mint(done.ID, "b", 1, later), `{"status":"completed","output":{}}`, 409},
		{"stale failure", h.mint(done.ID, "b", 1, later), `{"status":"failed","error":"no"}`, 409},
		{"conflicting replay", h.mint(done.ID, "a", 1, later), `{"status":"completed","output":{"v":2}}`, 409},
		{"identical replay", h.mint(done.ID, "a", 1, later), `{"status":"completed","output":{"v":1}}`, 200},
		{"failed replay", h.mint(done.ID, "a", 1, later), `{"status":"failed","error":"late"}`, 409},
		{"heartbeat after completion", h.mint(done.ID, "a", 1, later), `{"status":"running"}`, 409},
		{"malformed body", h.mint(open.ID, "a", 1, later), `{"status":"done"}`, 400},
		{"nested too deep", h.mint(open.ID, "a", 1, later), `{"status":"completed","output":` + strings.Repeat("[", 100) +
			strings.Repeat("]", 100) + `}`, 400},
		{"oversized body", h.mint(open.ID, "a", 1, later), `{"status":"completed","output":"` + strings.Repeat("x", 2<<20) + `"}`, 413},
	}
	const each, concurrency = 200, 8
	jobs := make(chan int)
	var mu sync.Mutex
	wrong := map[string]int{}
	var wg sync.WaitGroup
	for g := 0; g < concurrency; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range jobs {
				k := kinds[i%len(kinds)]
				code, body := 0, ""
				resp, err := clientPost(t.Context(), h.client, k.url, "application/json", strings.NewReader(k.body))
				if err == nil {
					b, _ := io.ReadAll(resp.Body)
					resp.Body.Close()
					code, body = resp.StatusCode, string(b)
				}
				if code != k.want {
					mu.Lock()
					wrong[fmt.Sprintf("%s: %d %s %v", k.name, code, body, err)]++
					mu.Unlock()
				}
			}
		}()
	}
	for i := 0; i < each*len(kinds); i++ {
		jobs <- i
	}
	close(jobs)
	wg.Wait()
	require.Empty(t, wrong, "callbacks answered otherwise")
	require.Equal(t, before, snapshot(), "no hostile callback changed the database")

	// The genuine callback still works.
	h.complete(h.waitDispatch(open.ID, "a", 1), `{"v":3}`)
	h.waitNode(open.ID, "b", "running")
}
