package app_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/tidwall/gjson"

	"github.com/stitchd/stitchd/callbacks"
	"github.com/stitchd/stitchd/store/localpg"
)

// statusCounts counts HTTP answers by status code (0: no answer).
type statusCounts struct {
	mu sync.Mutex
	m  map[int]int
}

func (s *statusCounts) add(code int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.m[code]++
}

func (s *statusCounts) get() map[int]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[int]int, len(s.m))
	for k, v := range s.m {
		out[k] = v
	}
	return out
}

// autoWorker answers every dispatch with 202 and calls back with
// {"v": input}, retrying connection errors and 503 until it gets 200 or
// 409; dispatches to /hold are only recorded.
type autoWorker struct {
	srv     *httptest.Server
	answers statusCounts
	held    chan string // callback URLs of /hold dispatches
	wg      sync.WaitGroup
	ctx     context.Context
}

func newAutoWorker(t *testing.T) *autoWorker {
	ctx, cancel := context.WithCancel(context.Background())
	w := &autoWorker{answers: statusCounts{m: map[int]int{}}, held: make(chan string, 16), ctx: ctx}
	w.srv = httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			return
		}
		cb := gjson.GetBytes(body, "callbackUrl").String()
		rw.WriteHeader(http.StatusAccepted)
		if r.URL.Path == "/hold" {
			w.held <- cb
			return
		}
		out := fmt.Sprintf(`{"status":"completed","output":{"v":%s}}`, gjson.GetBytes(body, "input").Raw)
		w.wg.Add(1)
		go func() {
			defer w.wg.Done()
			for w.ctx.Err() == nil {
				code := postJSON(w.ctx, cb, out)
				w.answers.add(code)
				if code == http.StatusOK || code == http.StatusConflict {
					return
				}
				time.Sleep(20 * time.Millisecond) // the worker's retry backoff
			}
		}()
	}))
	t.Cleanup(func() {
		cancel()
		w.wg.Wait()
		w.srv.Close()
	})
	return w
}

// postJSON posts body and returns the status (0 when nothing answered).
func postJSON(ctx context.Context, url, body string) int {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		return 0
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode
}

// TestPostgresOutageMidTraffic stops Postgres (a throwaway cluster of the
// test's own) while runs are being started and callbacks flow — cleanly,
// and as a crash (immediate stop: the restart replays the write-ahead
// log) — and starts it again, without restarting stitchd:
//   - while it is down, /readyz and every API route answer 503 in the
//     contract's error shape, and callbacks get 503 (so workers retry);
//     /healthz stays 200;
//   - a callback refused with 503 changed nothing, and succeeds once resent;
//   - afterwards every run completes (in-flight ones included), with its
//     collector's items in order, each node completed once; nobody ever saw
//     a 500; the event stream is live again (the listener reconnected).
func TestPostgresOutageMidTraffic(t *testing.T) {
	t.Parallel()
	for _, stop := range []struct {
		name string
		stop func(*localpg.Cluster) error
	}{
		{"clean stop", (*localpg.Cluster).Stop},
		{"crash", (*localpg.Cluster).Crash},
	} {
		t.Run(stop.name, func(t *testing.T) {
			t.Parallel()
			postgresOutage(t, stop.stop)
		})
	}
}

func postgresOutage(t *testing.T, stop func(*localpg.Cluster) error) {
	ctx := context.Background()
	pg, err := localpg.StartCluster(ctx, filepath.Join(t.TempDir(), "pg"))
	require.NoError(t, err)
	t.Cleanup(func() { _ = pg.Stop() })
	dbURL, err := localpg.EnsureDatabase(ctx, pg.URL("postgres"), "stitchd")
	require.NoError(t, err)
	h := newHarnessOn(t, dbURL)
	w := newAutoWorker(t)

	wn := func(id, path string) map[string]any {
		return node(id, "Worker", map[string]any{"webhookUrl": w.srv.URL + path, "retry": map[string]any{"maxAttempts": 5}})
	}
	flow := h.createFlow([]map[string]any{splitter("s", "xs"), wn("w", "/w"), node("c", "Collector", nil), wn("j", "/j")},
		[]map[string]any{edge("s", "w", nil), edge("w", "c", nil), edge("c", "j", map[string]string{"items": "@this"})})
	holdFlow := h.createFlow([]map[string]any{wn("hold", "/hold")}, nil)
	held := h.startRun(holdFlow, map[string]any{})
	var heldCallback string
	select {
	case heldCallback = <-w.held:
	case <-time.After(20 * time.Second):
		t.Fatal("no dispatch of the held node")
	}

	// Traffic: runs started one after another (retried on 503 with the
	// same Idempotency-Key), their workers calling back meanwhile.
	const runs = 30
	starts := statusCounts{m: map[int]int{}}
	ids := make([]string, runs)
	tenth := make(chan struct{})
	loadDone := make(chan struct{})
	go func() {
		defer close(loadDone)
		for i := 0; i < runs; i++ {
			if i == 10 {
				close(tenth)
			}
			body := fmt.Sprintf(`{"input":{"xs":[%d,%d,%d,%d,%d]}}`, 10*i, 10*i+1, 10*i+2, 10*i+3, 10*i+4)
			for {
				req, _ := http.NewRequest(http.MethodPost, h.app.URL+"/api/v1/flows/"+flow+"/runs", strings.NewReader(body))
				req.Header.Set("Authorization", "Bearer "+token)
				req.Header.Set("Idempotency-Key", fmt.Sprint("outage-", i))
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					starts.add(0)
					time.Sleep(20 * time.Millisecond)
					continue
				}
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				starts.add(resp.StatusCode)
				if resp.StatusCode == http.StatusCreated {
					ids[i] = gjson.GetBytes(b, "id").String()
					break
				}
				time.Sleep(20 * time.Millisecond) // back off before retrying a 503
			}
		}
	}()

	<-tenth
	require.NoError(t, stop(pg))
	down := time.Now()

	// While Postgres is down.
	minted := h.app.URL + "/callbacks/" + h.app.Keys.Mint(callbacks.Claims{RunID: held.ID, Key: "hold", Attempt: 1,
		Expiry: time.Now().Add(time.Hour)})
	requests := []struct {
		name, method, path, body string
		auth                     bool
	}{
		{"readyz", "GET", "/readyz", "", false},
		{"list flows", "GET", "/api/v1/flows", "", true},
		{"get flow", "GET", "/api/v1/flows/" + flow, "", true},
		{"start run", "POST", "/api/v1/flows/" + flow + "/runs", `{"input":{"xs":[1]}}`, true},
		{"get run", "GET", "/api/v1/runs/" + held.ID, "", true},
		{"list runs", "GET", "/api/v1/runs", "", true},
		{"cancel run", "POST", "/api/v1/runs/" + held.ID + "/cancel", "", true},
		{"retry node", "POST", "/api/v1/runs/" + held.ID + "/nodes/hold/retry", "", true},
		{"approvals", "GET", "/api/v1/approvals", "", true},
		{"create flow", "POST", "/api/v1/flows", `{"name":"x","graph":{"nodes":[{"id":"u","type":"UX","data":{}}],"edges":[]}}`, true},
		{"callback", "POST", strings.TrimPrefix(heldCallback, h.app.URL), `{"status":"completed","output":{"done":true}}`, false},
		{"callback, other token", "POST", strings.TrimPrefix(minted, h.app.URL), `{"status":"running"}`, false},
	}
	for _, rq := range requests {
		req, err := http.NewRequest(rq.method, h.app.URL+rq.path, strings.NewReader(rq.body))
		require.NoError(t, err)
		if rq.auth {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := h.client.Do(req)
		require.NoError(t, err, rq.name)
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		require.Equal(t, http.StatusServiceUnavailable, resp.StatusCode, "%s: %s", rq.name, b)
		require.Contains(t, resp.Header.Get("Content-Type"), "application/json", rq.name)
		var e map[string]map[string]any
		require.NoError(t, json.Unmarshal(b, &e), "%s: %s", rq.name, b)
		require.Len(t, e, 1, "%s: only the error object: %s", rq.name, b)
		require.Equal(t, "unavailable", e["error"]["code"], "%s: %s", rq.name, b)
		require.NotEmpty(t, e["error"]["message"], rq.name)
	}
	require.Equal(t, http.StatusOK, h.do("GET", "/healthz", nil, nil))
	time.Sleep(time.Until(down.Add(2 * time.Second))) // keep it down while traffic retries

	require.NoError(t, pg.Start(ctx))
	h.eventually(func() bool {
		resp, err := h.client.Get(h.app.URL + "/readyz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	}, "readyz to answer 200 again")

	// The refused callback changed nothing, and is accepted when resent.
	r := h.run(held.ID)
	require.Equal(t, "running", r.Nodes["hold"].Status)
	require.Equal(t, 1, r.Nodes["hold"].Attempt)
	code, body := h.post(heldCallback, `{"status":"completed","output":{"done":true}}`)
	require.Equal(t, http.StatusOK, code, body)
	h.waitRun(held.ID, "completed")

	// Every run completes.
	select {
	case <-loadDone:
	case <-time.After(2 * time.Minute):
		t.Fatal("runs were not all started")
	}
	for i, id := range ids {
		r := h.waitRun(id, "completed")
		want := make([]map[string]int, 5)
		for k := range want {
			want[k] = map[string]int{"v": 10*i + k}
		}
		wb, _ := json.Marshal(want)
		require.JSONEq(t, string(wb), string(r.Nodes["c"].Output), "run %d: the collector's items in order", i)
	}
	var twice int
	require.NoError(t, h.app.Store.Gorm().Raw(`SELECT count(*) FROM (SELECT run_id, key FROM run_events WHERE type = 'node.status'
		AND payload->>'status' = 'completed' GROUP BY run_id, key HAVING count(*) > 1) d`).Row().Scan(&twice))
	require.Zero(t, twice, "no node completed twice")

	// Nobody saw anything but success, a conflict or 503.
	for _, counts := range []map[int]int{starts.get(), w.answers.get()} {
		for code := range counts {
			require.Contains(t, []int{0, http.StatusOK, http.StatusCreated, http.StatusConflict, http.StatusServiceUnavailable}, code,
				"answers: %v", counts)
		}
	}
	require.Positive(t, starts.get()[http.StatusServiceUnavailable], "run starts met the outage")
	t.Logf("outage %s; run starts answered %v; callbacks answered %v", time.Since(down).Round(100*time.Millisecond),
		starts.get(), w.answers.get())

	// The event stream is live again: the listener reconnected.
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	req, err := http.NewRequestWithContext(sctx, http.MethodGet, h.app.URL+"/api/v1/events", nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := h.client.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	after := h.startRun(flow, map[string]any{"xs": []int{1}})
	completed := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			if bytes.Contains(sc.Bytes(), []byte(after.ID)) && bytes.Contains(sc.Bytes(), []byte("run.completed")) {
				close(completed)
				return
			}
		}
	}()
	select {
	case <-completed:
	case <-time.After(20 * time.Second):
		t.Fatal("the event stream did not carry the new run's completion")
	}
}
