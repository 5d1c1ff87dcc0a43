package app_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"math"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/tidwall/gjson"

	"github.com/stitchd/stitchd/callbacks"
	"github.com/stitchd/stitchd/internal/testkit"
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
	return maps.Clone(s.m)
}

// autoWorker answers every dispatch with 202 and calls back with
// {"v": input}, retrying connection errors and 503 until it gets 200 or
// 409; dispatches to /hold are only recorded.
type autoWorker struct {
	*testkit.Worker
	held chan string // callback URLs of /hold dispatches
}

// delivered returns how many times each outbox row was delivered.
func (w *autoWorker) delivered() map[string]int {
	out := map[string]int{}
	for _, d := range w.All() {
		out[d.Header.Get("webhook-id")]++ // the outbox row's id
	}
	return out
}

func newAutoWorker(t *testing.T) *autoWorker {
	w := &autoWorker{held: make(chan string, 16)}
	w.Worker = testkit.NewWorker(t, testkit.WorkerOptions{Tries: math.MaxInt, RetryWait: 20 * time.Millisecond,
		Client: http.DefaultClient, CallBack: func(d testkit.Dispatch) (string, bool) {
			if d.Path == "/hold" {
				w.held <- d.Payload.CallbackURL
				return "", false
			}
			return fmt.Sprintf(`{"status":"completed","output":{"v":%s}}`, d.Payload.Input), true
		}})
	return w
}

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
	// With a secret key: POST /api/v1/secrets then needs the database
	// (without one it answers 503 before any query).
	h := newHarnessOn(t, dbURL, withSecretKey(t))
	w := newAutoWorker(t)

	wn := func(id, path string) map[string]any {
		return node(id, "Worker", map[string]any{"webhookUrl": w.URL + path, "retry": map[string]any{"maxAttempts": 5}})
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

	fx := makeOutageFixtures(t, h, flow, held.ID, heldCallback)

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
				req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, h.app.URL+"/api/v1/flows/"+flow+"/runs", strings.NewReader(body))
				req.Header.Set("Authorization", "Bearer "+token)
				req.Header.Set("Idempotency-Key", fmt.Sprint("outage-", i))
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					starts.add(0)
					time.Sleep(20 * time.Millisecond) // a real client's pacing, as below
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

	// While Postgres is down: every route.
	walkRoutesDuringOutage(t, h, fx)
	// A real outage: Postgres stays down two seconds of wall time while
	// traffic retries against it.
	time.Sleep(time.Until(down.Add(2 * time.Second)))

	require.NoError(t, pg.Start(ctx))
	h.eventually(func() bool {
		resp, err := clientGet(t.Context(), h.client, h.app.URL+"/readyz")
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

	// The hook and the run start the outage refused, sent again with their
	// Idempotency-Key (twice), start one run each; so did every traffic
	// start, however many 503s it met.
	hookRun := func() string {
		code, out := h.postHook("outage", []byte(`{"xs":[7]}`), map[string]string{"Idempotency-Key": "outage-hook"})
		require.Equal(t, http.StatusAccepted, code, "%v", out)
		return as[string](t, out["run_id"])
	}
	hooked := hookRun()
	require.Equal(t, hooked, hookRun(), "the hook sent again answers its run")
	started := startWithKey(t, h, flow, `{"input":{"xs":[1]}}`, "outage-start")
	require.Equal(t, started, startWithKey(t, h, flow, `{"input":{"xs":[1]}}`, "outage-start"), "the start sent again answers its run")
	var dupKeys, flowRuns int
	require.NoError(t, h.app.Store.Gorm().Raw(`SELECT count(*) FROM (SELECT flow_id, idempotency_key FROM runs
		WHERE idempotency_key IS NOT NULL GROUP BY 1, 2 HAVING count(*) > 1) d`).Row().Scan(&dupKeys))
	require.Zero(t, dupKeys, "no Idempotency-Key started two runs")
	for i, id := range ids {
		var got string
		require.NoError(t, h.app.Store.Gorm().Raw(`SELECT id::text FROM runs WHERE flow_id = ? AND idempotency_key = ?`, flow,
			fmt.Sprint("outage-", i)).Row().Scan(&got))
		require.Equal(t, id, got, "start %d: its key's run is the one answered", i)
	}
	require.NoError(t, h.app.Store.Gorm().Raw(`SELECT count(*) FROM runs WHERE flow_id = ?`, flow).Row().Scan(&flowRuns))
	require.Equal(t, runs+2, flowRuns, "one run per start, the hook's and the refused start's")
	h.waitRun(hooked, "completed")
	h.waitRun(started, "completed")

	// The outbox: one row per worker attempt, every one delivered to the
	// worker (none lost); a row's redeliveries (its answer was lost to the
	// outage) are the same webhook-id, which a worker de-duplicates.
	h.eventually(func() bool {
		var n int
		return h.app.Store.Gorm().Raw(`SELECT count(*) FROM dispatches WHERE status IN ('pending', 'sending')`).Row().Scan(&n) == nil && n == 0
	}, "every outbox row to be settled")
	var rowsTwice, attemptsWithout, rowsWithout, retried int
	require.NoError(t, h.app.Store.Gorm().Raw(`SELECT count(*) FROM (SELECT run_id, key, attempt FROM dispatches
		GROUP BY 1, 2, 3 HAVING count(*) > 1) d`).Row().Scan(&rowsTwice))
	require.Zero(t, rowsTwice, "one outbox row per worker attempt")
	require.NoError(t, h.app.Store.Gorm().Raw(`SELECT count(*) FROM node_states n WHERE n.type = 'Worker' AND NOT EXISTS
		(SELECT 1 FROM dispatches d WHERE d.run_id = n.run_id AND d.key = n.key AND d.attempt = n.attempt AND d.status = 'delivered')`).
		Row().Scan(&attemptsWithout))
	require.Zero(t, attemptsWithout, "every worker node's attempt has its outbox row, delivered")
	require.NoError(t, h.app.Store.Gorm().Raw(`SELECT count(*) FROM dispatches d WHERE NOT EXISTS (SELECT 1 FROM node_states n
		WHERE n.run_id = d.run_id AND n.key = d.key AND n.type = 'Worker' AND n.attempt >= d.attempt)`).Row().Scan(&rowsWithout))
	require.Zero(t, rowsWithout, "no outbox row without its worker attempt")
	require.NoError(t, h.app.Store.Gorm().Raw(`SELECT count(*) FROM node_states WHERE type = 'Worker' AND attempt <> 1`).Row().Scan(&retried))
	require.Zero(t, retried, "no worker attempt failed (nothing was retried)")
	rowIDs, err := h.app.Store.Gorm().Raw(`SELECT id::text FROM dispatches`).Rows()
	require.NoError(t, err)
	delivered := w.delivered()
	var outboxRows, redelivered int
	for rowIDs.Next() {
		var id string
		require.NoError(t, rowIDs.Scan(&id))
		outboxRows++
		require.Positive(t, delivered[id], "outbox row %s reached the worker", id)
		redelivered += delivered[id] - 1
		delete(delivered, id)
	}
	require.NoError(t, rowIDs.Err())
	rowIDs.Close()
	require.Empty(t, delivered, "the worker got nothing but the outbox's rows")

	// Nobody saw anything but success, a conflict or 503.
	for _, counts := range []map[int]int{starts.get(), w.Answers()} {
		for code := range counts {
			require.Contains(t, []int{0, http.StatusOK, http.StatusCreated, http.StatusConflict, http.StatusServiceUnavailable}, code,
				"answers: %v", counts)
		}
	}
	require.Positive(t, starts.get()[http.StatusServiceUnavailable], "run starts met the outage")
	t.Logf("outage %s; run starts answered %v; callbacks answered %v; %d outbox rows, %d redeliveries",
		time.Since(down).Round(100*time.Millisecond), starts.get(), w.Answers(), outboxRows, redelivered)

	// The event stream is live again: the listener reconnected.
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	req, err := http.NewRequestWithContext(sctx, http.MethodGet, h.app.URL+"/api/v1/events", nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := h.client.Do(req) //nolint:bodyclose // closed by the defer below (bodyclose misses it: a goroutine reads it too)
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

// outageFixtures are what the routes walked during the outage name: real
// flows, runs, a board, an entity, a trigger, a user and their token.
type outageFixtures struct {
	flow, heldRun, heldCallback, minted string
	uxRun, approveLink                  string
	board, entity, trigger, user        string
	personal                            string // a personal API token (authenticating it needs the database)
	session                             string // a signed-in browser's Cookie header (likewise)
}

func makeOutageFixtures(t *testing.T, h *harness, flow, heldRun, heldCallback string) outageFixtures {
	fx := outageFixtures{flow: flow, heldRun: heldRun, heldCallback: strings.TrimPrefix(heldCallback, h.app.URL)}
	fx.minted = "/callbacks/" + h.app.Keys.Mint(callbacks.Claims{RunID: heldRun, Key: "hold", Attempt: 1,
		Expiry: time.Now().Add(time.Hour)})
	ux := h.createFlow([]map[string]any{node("ask", "UX", nil)}, nil)
	fx.uxRun = h.startRun(ux, map[string]any{}).ID
	h.waitNode(fx.uxRun, "ask", "waiting_for_user")
	fx.board = h.createBoard("new", "done")
	var id struct {
		ID string `json:"id"`
	}
	require.Equal(t, http.StatusCreated, h.do("POST", "/api/v1/entities", map[string]any{"board_id": fx.board, "type": "lead",
		"name": "Ada", "email": "ada@example.com"}, &id))
	fx.entity = id.ID
	require.Equal(t, http.StatusCreated, h.do("POST", "/api/v1/flows/"+flow+"/triggers", map[string]any{"slug": "outage"}, &id))
	fx.trigger = id.ID
	require.Equal(t, http.StatusCreated, h.do("POST", "/api/v1/users", map[string]any{"email": "eve@example.com", "name": "Eve",
		"role": "approver", "password": "a long enough password"}, &id))
	fx.user = id.ID
	// A link bound to Eve's account: deciding with it reads the account.
	link, err := h.app.Keys.MintAction(callbacks.ActionClaims{RunID: fx.uxRun, Key: "ask", Attempt: 1, Email: "eve@example.com",
		UserID: fx.user, Outcome: "approve", Nonce: "outage", Expiry: time.Now().Add(time.Hour)})
	require.NoError(t, err)
	fx.approveLink = "/approve/" + link
	fx.personal = h.tokenFor("pat@example.com", "admin")
	resp, err := clientPost(t.Context(), h.client, h.app.URL+"/api/v1/auth/login", "application/json",
		strings.NewReader(`{"email":"eve@example.com","password":"a long enough password"}`))
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	for _, c := range resp.Cookies() {
		fx.session += c.Name + "=" + c.Value + "; "
	}
	require.NotEmpty(t, fx.session)
	return fx
}

// outageRequest is a request sent while the database is down.
type outageRequest struct {
	path, body string
	header     map[string]string
	auth       string // the bearer token ("" = none)
}

// outageRequests gives every route of the server a request a client would
// send, naming the fixtures; walkRoutesDuringOutage fails on a route
// missing here, so a route added later is walked too.
func outageRequests(fx outageFixtures) map[string]outageRequest {
	graph := `{"nodes":[{"id":"u","type":"UX","position":{"x":0,"y":0},"data":{}}],"edges":[]}`
	api := func(path, body string) outageRequest { return outageRequest{path: path, body: body, auth: token} }
	run, flow := "/api/v1/runs/"+fx.heldRun, "/api/v1/flows/"+fx.flow
	return map[string]outageRequest{
		"GET /healthz":                                   {path: "/healthz"},
		"GET /readyz":                                    {path: "/readyz"},
		"POST /callbacks/:token":                         {path: fx.heldCallback, body: `{"status":"completed","output":{"done":true}}`},
		"POST /hooks/:slug":                              {path: "/hooks/outage", body: `{"xs":[7]}`, header: map[string]string{"Idempotency-Key": "outage-hook"}},
		"GET /approve/:token":                            {path: fx.approveLink},
		"POST /approve/:token":                           {path: fx.approveLink, body: "comment=ok", header: map[string]string{"Content-Type": "application/x-www-form-urlencoded"}},
		"POST /api/v1/auth/login":                        {path: "/api/v1/auth/login", body: `{"email":"eve@example.com","password":"a long enough password"}`},
		"GET /api/v1/auth/providers":                     {path: "/api/v1/auth/providers"},
		"GET /api/v1/auth/oidc/login":                    {path: "/api/v1/auth/oidc/login"},
		"GET /api/v1/auth/oidc/callback":                 {path: "/api/v1/auth/oidc/callback?code=c&state=s"},
		"POST /api/v1/auth/logout":                       api("/api/v1/auth/logout", ""),
		"GET /api/v1/me":                                 api("/api/v1/me", ""),
		"POST /api/v1/tokens":                            {path: "/api/v1/tokens", body: `{"name":"t"}`, auth: fx.personal}, // the admin token has no user
		"GET /api/v1/tokens":                             api("/api/v1/tokens", ""),
		"DELETE /api/v1/tokens/:id":                      api("/api/v1/tokens/"+fx.user, ""),
		"POST /api/v1/users":                             api("/api/v1/users", `{"email":"new@example.com","name":"New","role":"viewer","password":"a long enough password"}`),
		"GET /api/v1/users":                              api("/api/v1/users", ""),
		"GET /api/v1/users/:id":                          api("/api/v1/users/"+fx.user, ""),
		"PATCH /api/v1/users/:id":                        api("/api/v1/users/"+fx.user, `{"name":"Eve B"}`),
		"DELETE /api/v1/users/:id":                       api("/api/v1/users/"+fx.user, ""),
		"GET /api/v1/audit":                              api("/api/v1/audit", ""),
		"GET /api/v1/workspaces":                         api("/api/v1/workspaces", ""),
		"POST /api/v1/workspaces":                        api("/api/v1/workspaces", `{"slug":"outage","name":"Outage"}`),
		"GET /api/v1/workspaces/:slug":                   api("/api/v1/workspaces/default", ""),
		"PATCH /api/v1/workspaces/:slug":                 api("/api/v1/workspaces/default", `{"name":"Default"}`),
		"GET /api/v1/workspaces/:slug/members":           api("/api/v1/workspaces/default/members", ""),
		"PUT /api/v1/workspaces/:slug/members/:email":    api("/api/v1/workspaces/default/members/eve@example.com", `{"role":"viewer"}`),
		"DELETE /api/v1/workspaces/:slug/members/:email": api("/api/v1/workspaces/default/members/eve@example.com", ""),
		"POST /api/v1/flows":                             api("/api/v1/flows", `{"name":"x","graph":`+graph+`}`),
		"GET /api/v1/flows":                              api("/api/v1/flows", ""),
		"GET /api/v1/flows/:id":                          api(flow, ""),
		"GET /api/v1/flows/:id/analytics":                api(flow+"/analytics", ""),
		"PUT /api/v1/flows/:id":                          api(flow, `{"graph":`+graph+`}`),
		"DELETE /api/v1/flows/:id":                       api(flow, ""),
		"GET /api/v1/flows/:id/versions":                 api(flow+"/versions", ""),
		"GET /api/v1/flows/:id/versions/:number":         api(flow+"/versions/1", ""),
		"POST /api/v1/flows/:id/nodes/:key/test":         api(flow+"/nodes/u/test", `{"input":{}}`),
		"POST /api/v1/nodes/:key/test": api("/api/v1/nodes/t/test",
			`{"input":{"n":2},"graph":{"nodes":[{"id":"t","type":"Transform","position":{"x":0,"y":0},"data":{"expression":"input.n"}}],"edges":[]}}`),
		"POST /api/v1/flows/:id/runs": {path: flow + "/runs", body: `{"input":{"xs":[1]}}`, auth: token,
			header: map[string]string{"Idempotency-Key": "outage-start"}},
		"GET /api/v1/runs":                             api("/api/v1/runs", ""),
		"GET /api/v1/runs/:id":                         api(run, ""),
		"POST /api/v1/events":                          api("/api/v1/events", `{"name":"outage","key":"k","id":"outage-event"}`),
		"POST /api/v1/runs/:id/cancel":                 api(run+"/cancel", ""),
		"POST /api/v1/runs/bulk":                       api("/api/v1/runs/bulk", `{"action":"cancel","filter":{"flow_id":"`+fx.flow+`"},"dry_run":true}`),
		"POST /api/v1/runs/:id/pause":                  api(run+"/pause", ""),
		"POST /api/v1/runs/:id/resume":                 api(run+"/resume", ""),
		"POST /api/v1/runs/:id/nodes/:key/skip":        api(run+"/nodes/hold/skip", ""),
		"POST /api/v1/runs/:id/nodes/:key/rerun":       api(run+"/nodes/hold/rerun", ""),
		"POST /api/v1/runs/:id/migrate":                api(run+"/migrate", `{"version":1}`),
		"POST /api/v1/runs/:id/nodes/:key/retry":       api(run+"/nodes/hold/retry", ""),
		"POST /api/v1/runs/:id/nodes/:key/complete":    api("/api/v1/runs/"+fx.uxRun+"/nodes/ask/complete", `{"outcome":"approve"}`),
		"POST /api/v1/runs/:id/nodes/:key/claim":       api("/api/v1/runs/"+fx.uxRun+"/nodes/ask/claim", `{}`),
		"POST /api/v1/runs/:id/nodes/:key/unclaim":     api("/api/v1/runs/"+fx.uxRun+"/nodes/ask/unclaim", `{}`),
		"POST /api/v1/runs/:id/nodes/:key/reassign":    api("/api/v1/runs/"+fx.uxRun+"/nodes/ask/reassign", `{"users":["ann@example.com"]}`),
		"POST /api/v1/runs/:id/nodes/:key/delegate":    api("/api/v1/runs/"+fx.uxRun+"/nodes/ask/delegate", `{"user":"ann@example.com"}`),
		"GET /api/v1/runs/:id/nodes/:key/task":         api("/api/v1/runs/"+fx.uxRun+"/nodes/ask/task", ""),
		"GET /api/v1/runs/:id/events":                  api(run+"/events", ""),
		"GET /api/v1/events":                           api("/api/v1/events", ""),
		"GET /api/v1/approvals":                        api("/api/v1/approvals", ""),
		"GET /api/v1/approvals/stream":                 api("/api/v1/approvals/stream", ""),
		"POST /api/v1/boards":                          api("/api/v1/boards", `{"name":"B","sections":[{"id":"a","name":"A"}]}`),
		"GET /api/v1/boards":                           api("/api/v1/boards", ""),
		"GET /api/v1/webhook-secret":                   api("/api/v1/webhook-secret", ""),
		"POST /api/v1/webhook-secret/rotate":           api("/api/v1/webhook-secret/rotate", `{}`),
		"GET /api/v1/flows/:id/webhook-secret":         api(flow+"/webhook-secret", ""),
		"POST /api/v1/flows/:id/webhook-secret/rotate": api(flow+"/webhook-secret/rotate", `{}`),
		"DELETE /api/v1/flows/:id/webhook-secret":      api(flow+"/webhook-secret", ""),
		"GET /api/v1/openapi.yaml":                     {path: "/api/v1/openapi.yaml"},
		"GET /openapi.yaml":                            {path: "/openapi.yaml"},
		"GET /api/v1/node-types":                       api("/api/v1/node-types", ""),
		"POST /api/v1/secrets":                         api("/api/v1/secrets", `{"name":"OUTAGE","value":"v"}`),
		"GET /api/v1/secrets":                          api("/api/v1/secrets", ""),
		"PUT /api/v1/secrets/:name":                    api("/api/v1/secrets/OUTAGE", `{"allowed_hosts":["api.example.com"]}`),
		"DELETE /api/v1/secrets/:name":                 api("/api/v1/secrets/OUTAGE", ""),
		"POST /api/v1/tasks/poll":                      api("/api/v1/tasks/poll", `{"queue":"outage","worker":"w1"}`),
		"GET /api/v1/queues":                           api("/api/v1/queues", ""),
		"POST /api/v1/credentials":                     api("/api/v1/credentials", `{"name":"OUTAGE","type":"bearer","data":{"token":"t"},"allowed_hosts":["api.example.com"]}`),
		"GET /api/v1/credentials":                      api("/api/v1/credentials", ""),
		"GET /api/v1/credentials/:name":                api("/api/v1/credentials/OUTAGE", ""),
		"PUT /api/v1/credentials/:name":                api("/api/v1/credentials/OUTAGE", `{"type":"bearer","data":{"token":"t"},"allowed_hosts":["api.example.com"]}`),
		"DELETE /api/v1/credentials/:name":             api("/api/v1/credentials/OUTAGE", ""),
		"GET /api/v1/boards/:id":                       api("/api/v1/boards/"+fx.board, ""),
		"GET /api/v1/boards/:id/analytics":             api("/api/v1/boards/"+fx.board+"/analytics", ""),
		"POST /api/v1/entities":                        api("/api/v1/entities", `{"board_id":"`+fx.board+`","type":"lead","name":"Bob"}`),
		"GET /api/v1/entities/:id":                     api("/api/v1/entities/"+fx.entity, ""),
		"POST /api/v1/entities/:id/move":               api("/api/v1/entities/"+fx.entity+"/move", `{"section_id":"done"}`),
		"PATCH /api/v1/boards/:id":                     api("/api/v1/boards/"+fx.board, `{"name":"Renamed"}`),
		"DELETE /api/v1/boards/:id":                    api("/api/v1/boards/"+fx.board, ""),
		"POST /api/v1/boards/:id/sections":             api("/api/v1/boards/"+fx.board+"/sections", `{"id":"later"}`),
		"PATCH /api/v1/boards/:id/sections/:section":   api("/api/v1/boards/"+fx.board+"/sections/done", `{"name":"Done!"}`),
		"DELETE /api/v1/boards/:id/sections/:section":  api("/api/v1/boards/"+fx.board+"/sections/done?move_to=new", ""),
		"PATCH /api/v1/entities/:id":                   api("/api/v1/entities/"+fx.entity, `{"name":"Ann B"}`),
		"DELETE /api/v1/entities/:id":                  api("/api/v1/entities/"+fx.entity, ""),
		"POST /api/v1/flows/:id/triggers":              api(flow+"/triggers", `{"slug":"another"}`),
		"GET /api/v1/flows/:id/triggers":               api(flow+"/triggers", ""),
		"GET /api/v1/triggers/:id":                     api("/api/v1/triggers/"+fx.trigger, ""),
		"PATCH /api/v1/triggers/:id":                   api("/api/v1/triggers/"+fx.trigger, `{"enabled":false}`),
		"DELETE /api/v1/triggers/:id":                  api("/api/v1/triggers/"+fx.trigger, ""),
		"POST /api/v1/triggers/:id/rotate-secret":      api("/api/v1/triggers/"+fx.trigger+"/rotate-secret", `{}`),
		"GET /*": {path: "/runs", header: map[string]string{"Accept": "text/html"}},
	}
}

// withoutDatabase are the routes that answer without the database, and
// what: liveness, the server's own settings and files, and a signed-in
// principal known from the static token alone.
var withoutDatabase = map[string]int{
	"GET /healthz":                   http.StatusOK,
	"GET /api/v1/auth/providers":     http.StatusOK,
	"GET /api/v1/auth/oidc/login":    http.StatusNotFound, // single sign-on is not set up
	"GET /api/v1/auth/oidc/callback": http.StatusNotFound,
	"GET /api/v1/me":                 http.StatusOK,        // the static token's principal
	"GET /api/v1/tokens":             http.StatusOK,        // the static token's principal has no personal tokens
	"POST /api/v1/auth/logout":       http.StatusNoContent, // nor a session to end
	"GET /api/v1/openapi.yaml":       http.StatusOK,
	"GET /openapi.yaml":              http.StatusOK,
	"GET /api/v1/node-types":         http.StatusOK, // the server's own registrations
	"POST /api/v1/nodes/:key/test":   http.StatusOK, // a draft's Transform: the graph in the body is all it reads
	"GET /*":                         http.StatusOK, // the UI's files are embedded
}

// walkRoutesDuringOutage sends every route of the server its request while
// the database is down: each answers 503 in the error shape (or, for a
// route that needs no database, what withoutDatabase says) within
// outageAnswerWithin — never a 500, never a hang. So do requests
// authenticated by a personal token, and a stream resumed with
// Last-Event-ID.
func walkRoutesDuringOutage(t *testing.T, h *harness, fx outageFixtures) {
	reqs := outageRequests(fx)
	type sent struct {
		name string
		outageRequest
		method string
	}
	var all []sent
	for _, r := range h.app.Server.Routes() {
		name := r.Method + " " + r.Path
		switch r.Method {
		case http.MethodGet, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete:
		default:
			continue // the router's catch-all for unknown paths: a 404 without the database
		}
		rq, ok := reqs[name]
		require.True(t, ok, "route %s is not walked during the outage: add it to outageRequests", name)
		all = append(all, sent{name, rq, r.Method})
	}
	// A personal token is looked up in the database.
	all = append(all, sent{"GET /api/v1/flows as a personal token", outageRequest{path: "/api/v1/flows", auth: fx.personal}, "GET"},
		sent{"GET /api/v1/flows signed in", outageRequest{path: "/api/v1/flows", header: map[string]string{"Cookie": fx.session}}, "GET"},
		sent{"GET /api/v1/runs/:id/events with Last-Event-ID", outageRequest{path: "/api/v1/runs/" + fx.heldRun + "/events", auth: token,
			header: map[string]string{"Last-Event-ID": "1"}}, "GET"},
		sent{"GET /api/v1/events with Last-Event-ID", outageRequest{path: "/api/v1/events", auth: token,
			header: map[string]string{"Last-Event-ID": "1"}}, "GET"},
		sent{"callback, another token", outageRequest{path: fx.minted, body: `{"status":"running"}`}, "POST"})
	client := &http.Client{Timeout: 2 * outageAnswerWithin}
	var problems []string
	for _, rq := range all {
		if p := sendDuringOutage(t, client, h.app.URL, rq.name, rq.method, rq.outageRequest); p != "" {
			problems = append(problems, rq.name+": "+p)
		}
	}
	require.Empty(t, problems, "while the database is down")
}

// sendDuringOutage sends the request and says what is wrong with its
// answer ("": nothing).
func sendDuringOutage(t *testing.T, client *http.Client, base, name, method string, rq outageRequest) string {
	var body io.Reader
	if rq.body != "" {
		body = strings.NewReader(rq.body)
	}
	req, err := http.NewRequestWithContext(t.Context(), method, base+rq.path, body)
	require.NoError(t, err)
	if rq.body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if rq.auth != "" {
		req.Header.Set("Authorization", "Bearer "+rq.auth)
	}
	for k, v := range rq.header {
		req.Header.Set(k, v)
	}
	began := time.Now()
	resp, err := client.Do(req)
	if err != nil {
		return err.Error()
	}
	b, err := io.ReadAll(resp.Body) // a stream must end too
	resp.Body.Close()
	if took := time.Since(began); err != nil || took > outageAnswerWithin {
		return fmt.Sprintf("no whole answer within %s (%s, %v)", outageAnswerWithin, took.Round(time.Millisecond), err)
	}
	if d, ok := knownOutageDefects[name]; ok {
		if resp.StatusCode != d.status {
			return fmt.Sprintf("answered %d, not the known defect's %d (%s): fixed? Then remove it from knownOutageDefects: %s",
				resp.StatusCode, d.status, d.why, b)
		}
		t.Logf("known defect: %s answers %d during the outage (%s)", name, d.status, d.why)
		return ""
	}
	if want, ok := withoutDatabase[name]; ok {
		if resp.StatusCode != want {
			return fmt.Sprintf("answered %d, not %d (it needs no database): %s", resp.StatusCode, want, b)
		}
		return ""
	}
	var e map[string]map[string]any
	switch {
	case resp.StatusCode != http.StatusServiceUnavailable:
		return fmt.Sprintf("answered %d: %s", resp.StatusCode, b)
	case !strings.Contains(resp.Header.Get("Content-Type"), "application/json"):
		return "answered " + resp.Header.Get("Content-Type")
	case json.Unmarshal(b, &e) != nil || len(e) != 1 || e["error"]["code"] != "unavailable" || e["error"]["message"] == "":
		return fmt.Sprintf("503 not in the error shape: %s", b)
	}
	return ""
}

// knownOutageDefects are wrong answers the walk found, not fixed here (the
// code is not this test's): each is asserted as it is, so that its fix
// fails here until it is removed from the list, and reported.
var knownOutageDefects = map[string]struct {
	status int
	why    string
}{
	// None left: the three the walk found (sign-in and PATCH /users 500
	// from store.inGormTx's uninterpreted BEGIN error; /events with
	// Last-Event-ID answering 200 before its first read) are fixed.
}

// outageAnswerWithin bounds how long any request waits while the database
// is down.
const outageAnswerWithin = 5 * time.Second

// startWithKey starts a run of flow with an Idempotency-Key and returns its
// id (201, a repeat too).
func startWithKey(t *testing.T, h *harness, flow, body, key string) string {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, h.app.URL+"/api/v1/flows/"+flow+"/runs", strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Idempotency-Key", key)
	resp, err := h.client.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	require.Equal(t, http.StatusCreated, resp.StatusCode, "%s", b)
	return gjson.GetBytes(b, "id").String()
}
