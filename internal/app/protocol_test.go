package app_test

import (
	"context"
	"encoding/json"
	"net"
	"net/netip"
	"strings"

	"github.com/stitchd/stitchd/callbacks"
	"github.com/stitchd/stitchd/engine"
	"github.com/stitchd/stitchd/internal/app"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// scriptedWorker answers dispatches from a script of status codes (then
// 202), recording each delivery's webhook-id and arrival time.
type scriptedWorker struct {
	mu     sync.Mutex
	script []int
	header map[string]string
	body   string // written with every answer but 2xx
	ids    []string
	at     []time.Time
	cbURL  string
	n      atomic.Int32
}

func (h *harness) scripted(t *testing.T, s *scriptedWorker) string {
	mux := http.NewServeMux()
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		var p struct {
			CallbackURL string `json:"callbackUrl"`
		}
		_ = json.NewDecoder(r.Body).Decode(&p)
		s.mu.Lock()
		s.cbURL = p.CallbackURL
		s.ids = append(s.ids, r.Header.Get("webhook-id"))
		s.at = append(s.at, time.Now())
		code := 202
		if len(s.script) > 0 {
			code, s.script = s.script[0], s.script[1:]
		}
		for k, v := range s.header {
			w.Header().Set(k, v)
		}
		s.mu.Unlock()
		s.n.Add(1)
		if code == http.StatusFound {
			w.Header().Set("Location", "http://127.0.0.1:1/elsewhere")
		}
		w.WriteHeader(code)
		if code >= 300 {
			_, _ = w.Write([]byte(s.body))
		}
	})
	srv := newServer(t, mux)
	return srv
}

// TestDeliveryDefaultsOutlastARestart: a worker that answers 503 for its
// first four tries (a restart) gets the dispatch on the fifth with the
// default delivery policy (3 tries gave up before), and each failed try's
// event carries what the worker said.
func TestDeliveryDefaultsOutlastARestart(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	s := &scriptedWorker{script: []int{503, 503, 503, 503}, body: "{\"error\":\n \"restarting\"}"}
	url := h.scripted(t, s)
	flow := h.createFlow([]map[string]any{node("a", "Worker", map[string]any{"webhookUrl": url})}, nil)
	r := h.startRun(flow, map[string]any{})
	h.eventually(func() bool {
		var st string
		var tries int
		_ = h.app.Store.Gorm().Raw(`SELECT status, tries FROM dispatches WHERE run_id = ?`, r.ID).Row().Scan(&st, &tries)
		return st == "delivered" && tries == 5
	}, "the outbox row delivered on try 5")
	var errs []string
	require.NoError(t, h.app.Store.Gorm().Raw(`SELECT payload->>'error' FROM run_events
		WHERE run_id = ? AND type = 'dispatch.attempt' AND NOT (payload->>'delivered')::bool ORDER BY seq`, r.ID).Scan(&errs).Error)
	require.Equal(t, []string{`worker answered 503: {"error": "restarting"}`, `worker answered 503: {"error": "restarting"}`,
		`worker answered 503: {"error": "restarting"}`, `worker answered 503: {"error": "restarting"}`}, errs)
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := 1; i < len(s.at); i++ {
		// The schedule's least wait before try i+1: half of 0.5 s × 2^(i−1).
		least := 250 * time.Millisecond << (i - 1)
		require.GreaterOrEqual(t, s.at[i].Sub(s.at[i-1]), least-20*time.Millisecond, "the wait before try %d", i+1)
	}
	require.Equal(t, "running", h.run(r.ID).Nodes["a"].Status)
}

func TestDeliveryRetriesKeepWebhookID(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	s := &scriptedWorker{script: []int{503, 500}}
	url := h.scripted(t, s)
	flow := h.createFlow([]map[string]any{node("a", "Worker", map[string]any{"webhookUrl": url,
		"retry": map[string]any{"maxAttempts": 3, "initialDelayMs": 10, "maxDelayMs": 50}})}, nil)
	r := h.startRun(flow, map[string]any{})
	h.eventually(func() bool { return s.n.Load() == 3 }, "3 delivery tries")
	s.mu.Lock()
	require.Equal(t, s.ids[0], s.ids[1], "webhook-id is stable across retries")
	require.Equal(t, s.ids[0], s.ids[2])
	s.mu.Unlock()
	h.eventually(func() bool {
		var n int
		_ = h.app.Store.Gorm().Raw(`SELECT count(*) FROM run_events WHERE run_id = ? AND type = 'dispatch.attempt'`, r.ID).Row().Scan(&n)
		return n == 2
	}, "a dispatch.attempt event for each failed try")
	h.eventually(func() bool {
		var st string
		var tries int
		_ = h.app.Store.Gorm().Raw(`SELECT status, tries FROM dispatches WHERE run_id = ?`, r.ID).Row().Scan(&st, &tries)
		return st == "delivered" && tries == 3
	}, "the outbox row records the delivery on try 3")
	s.mu.Lock()
	cb := s.cbURL
	s.mu.Unlock()
	code, _ := h.post(cb, `{"status":"completed","output":{}}`)
	require.Equal(t, 200, code)
	h.waitRun(r.ID, "completed")
	var tries string
	require.NoError(t, h.app.Store.Gorm().Raw(`SELECT string_agg((payload->>'try') || ':' || (payload->>'delivered'), ',' ORDER BY seq)
		FROM run_events WHERE run_id = ? AND type = 'dispatch.attempt'`, r.ID).Row().Scan(&tries))
	require.Equal(t, "1:false,2:false,3:true", tries, "every try is an event: two failures, then the delivery (logged with the callback)")
}

func TestDeliveryGivesUpWithLastReason(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	s := &scriptedWorker{script: []int{503, 502, 504}}
	url := h.scripted(t, s)
	flow := h.createFlow([]map[string]any{node("a", "Worker", map[string]any{"webhookUrl": url,
		"retry": map[string]any{"maxAttempts": 3, "initialDelayMs": 10, "maxDelayMs": 20}, "delivery": map[string]any{"maxTries": 3}})}, nil)
	r := h.startRun(flow, map[string]any{})
	fin := h.waitRun(r.ID, "failed")
	require.Contains(t, *fin.Nodes["a"].Error, "worker answered 504")
	require.EqualValues(t, 3, s.n.Load())
}

func TestDeliveryHonoursRetryAfter(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	s := &scriptedWorker{script: []int{429}, header: map[string]string{"Retry-After": "1"}}
	url := h.scripted(t, s)
	flow := h.createFlow([]map[string]any{node("a", "Worker", map[string]any{"webhookUrl": url,
		"retry": map[string]any{"maxAttempts": 2, "initialDelayMs": 1, "maxDelayMs": 5}})}, nil)
	h.startRun(flow, map[string]any{})
	h.eventually(func() bool { return s.n.Load() == 2 }, "second try")
	s.mu.Lock()
	defer s.mu.Unlock()
	require.GreaterOrEqual(t, s.at[1].Sub(s.at[0]), 900*time.Millisecond, "Retry-After: 1 waited for")
}

func TestDeliveryRedirectIsAFailure(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	s := &scriptedWorker{script: []int{http.StatusFound}}
	url := h.scripted(t, s)
	flow := h.createFlow([]map[string]any{node("a", "Worker", map[string]any{"webhookUrl": url,
		"retry": map[string]any{"maxAttempts": 1}})}, nil)
	r := h.startRun(flow, map[string]any{})
	fin := h.waitRun(r.ID, "failed")
	require.Contains(t, *fin.Nodes["a"].Error, "redirects are not followed")
	require.EqualValues(t, 1, s.n.Load())
}

func TestDeadlineRetriesThenFails(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	n := wnode(h, "a")
	as[map[string]any](t, n["data"])["timeoutSeconds"] = 1
	as[map[string]any](t, n["data"])["retry"] = map[string]any{"maxAttempts": 2, "initialDelayMs": 1, "maxDelayMs": 2}
	flow := h.createFlow([]map[string]any{n}, nil)
	r := h.startRun(flow, map[string]any{})
	d1 := h.waitDispatch(r.ID, "a", 1)
	// Attempt 1 never calls back: once its second passed the sweeper
	// expires it and dispatches attempt 2 (after the 1 ms retry delay).
	h.advance(time.Second)
	d2 := h.waitDispatch(r.ID, "a", 2)
	code, _ := h.post(d1.Payload.CallbackURL, `{"status":"completed","output":{}}`)
	require.Equal(t, 409, code, "a late callback for the expired attempt is stale")
	h.advance(time.Second)
	fin := h.waitRun(r.ID, "failed")
	require.Contains(t, *fin.Nodes["a"].Error, "deadline exceeded on attempt 2")
	code, _ = h.post(d2.Payload.CallbackURL, `{"status":"completed","output":{}}`)
	require.Equal(t, 409, code)
}

func TestHeartbeatExtendsDeadline(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	n := wnode(h, "a")
	as[map[string]any](t, n["data"])["timeoutSeconds"] = 60
	flow := h.createFlow([]map[string]any{n}, nil)
	r := h.startRun(flow, map[string]any{})
	d := h.waitDispatch(r.ID, "a", 1)
	// A heartbeat every 30 s (of the clock moved) for 120 s: twice the 60 s
	// timeout. The sweeps after each step expire the node if its deadline
	// passed. Real time passes too, and each step leaves it 30 s: with a
	// 4 s timeout and 2 s steps, a loaded make test (load 14 on two
	// cores) once took longer than the 2 s left between a heartbeat and
	// its sweeps. Without the heartbeats the node expires at the second.
	for step := range 4 {
		code, _ := h.post(d.Payload.CallbackURL, `{"status":"running","progress":{"t":`+strconv.Itoa(30000*step)+`}}`)
		require.Equal(t, 200, code)
		h.advance(30 * time.Second)
		h.sweeps(2)
		require.Equal(t, "running", h.run(r.ID).Nodes["a"].Status, "step %d", step)
	}
	h.complete(d, `{"ok":true}`)
	h.waitRun(r.ID, "completed")
}

func TestKeyRotation(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(c *app.Config) { c.KeyRefresh = 50 * time.Millisecond })
	ctx := context.Background()
	flow := h.createFlow([]map[string]any{wnode(h, "a")}, nil)
	r1 := h.startRun(flow, map[string]any{})
	d1 := h.waitDispatch(r1.ID, "a", 1)
	oldKID := strings.Split(d1.Payload.CallbackURL[strings.LastIndex(d1.Payload.CallbackURL, "/")+1:], ".")[1]

	_, err := h.app.Store.RotateCallbackKey(ctx, "cb-rotated")
	require.NoError(t, err)
	h.eventually(func() bool { return h.app.Keys.CurrentID() == "cb-rotated" }, "keys reloaded")
	r2 := h.startRun(flow, map[string]any{})
	d2 := h.waitDispatch(r2.ID, "a", 1)
	require.Contains(t, d2.Payload.CallbackURL, "/v1.cb-rotated.", "new dispatches are signed with the new key")

	// The current key cannot be retired; an old one can, after which its
	// tokens are refused before any database work.
	require.ErrorIs(t, h.app.Store.RetireCallbackKey(ctx, "cb-rotated"), engine.ErrConflict)
	require.NoError(t, h.app.Store.RetireCallbackKey(ctx, oldKID))
	h.eventually(func() bool {
		_, err := h.app.Keys.Verify(d1.Payload.CallbackURL[strings.LastIndex(d1.Payload.CallbackURL, "/")+1:], time.Now())
		return err != nil
	}, "old key retired")
	code, _ := h.post(d1.Payload.CallbackURL, `{"status":"completed","output":{}}`)
	require.Equal(t, 401, code)
	require.Equal(t, "running", h.run(r1.ID).Nodes["a"].Status)
	h.complete(d2, `{}`)
	h.waitRun(r2.ID, "completed")
}

func TestPrivateWorkerAddressesDenied(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(c *app.Config) { c.WorkerGuard = &callbacks.AddressGuard{DenyPrivate: true} })
	flow := h.createFlow([]map[string]any{node("a", "Worker", map[string]any{"webhookUrl": h.worker.URL,
		"retry": map[string]any{"maxAttempts": 3}})}, nil)
	r := h.startRun(flow, map[string]any{})
	fin := h.waitRun(r.ID, "failed")
	require.Contains(t, *fin.Nodes["a"].Error, "worker address refused")
	require.Empty(t, h.worker.All(), "nothing reached the worker")

	allowed := newHarness(t, func(c *app.Config) {
		c.WorkerGuard = &callbacks.AddressGuard{DenyPrivate: true, Allow: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}}
	})
	flow = allowed.createFlow([]map[string]any{wnode(allowed, "a")}, nil)
	r = allowed.startRun(flow, map[string]any{})
	allowed.complete(allowed.waitDispatch(r.ID, "a", 1), `{}`)
	allowed.waitRun(r.ID, "completed")
}

// TestDenyModeRefusesMachineAddresses: in deny mode a Worker or HTTP node
// cannot reach a service listening on 0.0.0.0 through one of the
// machine's own interface addresses — not even when an allowed range
// holds it; listing the address exactly opens it.
func TestDenyModeRefusesMachineAddresses(t *testing.T) {
	t.Parallel()
	var own netip.Addr
	addrs, err := net.InterfaceAddrs()
	require.NoError(t, err)
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok {
			if ip, ok := netip.AddrFromSlice(n.IP); ok && ip.Unmap().Is4() && !ip.IsLoopback() && !ip.IsLinkLocalUnicast() {
				own = ip.Unmap()
				break
			}
		}
	}
	require.True(t, own.IsValid(), "the machine needs an IPv4 address besides loopback: %v", addrs)
	var mu sync.Mutex
	var paths []string
	// Every interface: the worker is reached at the machine's own address.
	l, err := (&net.ListenConfig{}).Listen(t.Context(), "tcp", "0.0.0.0:0")
	require.NoError(t, err)
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		paths = append(paths, r.URL.Path)
		mu.Unlock()
		w.WriteHeader(http.StatusAccepted)
	}))
	srv.Listener = l
	srv.Start()
	t.Cleanup(srv.Close)
	addr, ok := l.Addr().(*net.TCPAddr)
	require.True(t, ok, "a TCP listener's address: %T", l.Addr())
	base := "http://" + netip.AddrPortFrom(own, addr.AddrPort().Port()).String()
	flowOf := func(h *harness) string {
		return h.createFlow([]map[string]any{
			node("w", "Worker", map[string]any{"webhookUrl": base + "/worker", "retry": map[string]any{"maxAttempts": 1}}),
			node("h", "HTTP", map[string]any{"url": base + "/internal-admin", "retry": map[string]any{"maxAttempts": 1}}),
		}, nil)
	}
	wide := []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8"), netip.PrefixFrom(own, 8).Masked()}
	h := newHarness(t, func(c *app.Config) { c.WorkerGuard = &callbacks.AddressGuard{DenyPrivate: true, Allow: wide} })
	r := h.startRun(flowOf(h), map[string]any{})
	fin := h.waitRun(r.ID, "failed")
	for _, key := range []string{"w", "h"} {
		require.Equal(t, "failed", fin.Nodes[key].Status, key)
		require.Contains(t, *fin.Nodes[key].Error, "an address of this machine", key)
	}
	mu.Lock()
	require.Empty(t, paths, "nothing reached the service")
	mu.Unlock()

	exact := newHarness(t, func(c *app.Config) {
		c.WorkerGuard = &callbacks.AddressGuard{DenyPrivate: true, Allow: []netip.Prefix{netip.PrefixFrom(own, 32)}}
	})
	r = exact.startRun(flowOf(exact), map[string]any{})
	exact.waitNode(r.ID, "h", "completed")
	exact.eventually(func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(paths) == 2
	}, "both requests reach the service once its address is listed")
}
