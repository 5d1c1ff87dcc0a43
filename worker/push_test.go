package worker_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stitchd/stitchd/callbacks"
	"github.com/stitchd/stitchd/internal/testkit"
	"github.com/stitchd/stitchd/internal/testkit/instance"
	"github.com/stitchd/stitchd/store/storetest"
	"github.com/stitchd/stitchd/worker"
)

func TestMain(m *testing.M) { storetest.Main(m) }

// serve serves h on a loopback port until the test ends and returns its
// URL.
func serve(t *testing.T, h http.Handler) string {
	t.Helper()
	l, err := (&net.ListenConfig{}).Listen(t.Context(), "tcp", "127.0.0.1:0")
	require.NoError(t, err)
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(func() { _ = srv.Close() })
	return "http://" + l.Addr().String()
}

// greet is the tests' job: greet input.name, fail on input.fail (for good
// when input.permanent), panic on input.panic, take input.sleepMs.
func greet(ctx context.Context, t *worker.Task) (any, error) {
	var in struct {
		Name      string `json:"name"`
		Fail      string `json:"fail"`
		FailUntil int    `json:"failUntil"`
		Permanent bool   `json:"permanent"`
		Panic     bool   `json:"panic"`
		SleepMs   int    `json:"sleepMs"`
	}
	if err := json.Unmarshal(t.Input, &in); err != nil {
		return nil, worker.NonRetryable(fmt.Errorf("bad input: %w", err))
	}
	if in.SleepMs > 0 {
		select {
		case <-time.After(time.Duration(in.SleepMs) * time.Millisecond):
		case <-ctx.Done():
			return nil, context.Cause(ctx)
		}
	}
	switch {
	case in.Panic:
		panic("the job broke")
	case in.Fail != "" && in.Permanent:
		return nil, worker.NonRetryable(errors.New(in.Fail))
	case in.Fail != "" && t.Attempt <= in.FailUntil:
		return nil, errors.New(in.Fail)
	}
	return map[string]any{"greeting": "Hello, " + in.Name + "!", "node": t.NodeID, "attempt": t.Attempt}, nil
}

// testPushHandler: a Worker node pushing to a PushHandler completes its
// run with the handler's output; a handler's error is a retryable failure
// (the next attempt completes), a NonRetryable one or a panic fails the
// node at once; unsigned, wrongly signed, stale and non-POST requests are
// refused.
func testPushHandler(t *testing.T, s *instance.Stitchd) {
	h, err := worker.NewPushHandler(worker.PushParams{Secret: s.WebhookSecret, Handler: greet})
	require.NoError(t, err)
	url := serve(t, h)
	flow := s.Flow("push", map[string]any{"webhookUrl": url + "/greet", "timeoutSeconds": 30,
		"retry": map[string]any{"maxAttempts": 3, "initialDelayMs": 10}})

	r := s.WaitRun(s.StartRun(flow, map[string]any{"name": "Ada"}))
	require.Equal(t, "completed", string(r.Status))
	require.JSONEq(t, `{"greeting": "Hello, Ada!", "node": "work", "attempt": 1}`, instance.JSON(t, r.Output))

	r = s.WaitRun(s.StartRun(flow, map[string]any{"name": "Grace", "fail": "flaky", "failUntil": 1}))
	require.Equal(t, "completed", string(r.Status), "a handler's error is retried")
	require.JSONEq(t, `{"greeting": "Hello, Grace!", "node": "work", "attempt": 2}`, instance.JSON(t, r.Output))

	r = s.WaitRun(s.StartRun(flow, map[string]any{"fail": "invalid card", "permanent": true}))
	require.Equal(t, "failed", string(r.Status))
	require.Equal(t, 1, (*r.Nodes)["work"].Attempt, "NonRetryable: no retry")
	require.Contains(t, *(*r.Nodes)["work"].Error, "invalid card")

	r = s.WaitRun(s.StartRun(flow, map[string]any{"panic": true}))
	require.Equal(t, "failed", string(r.Status))
	require.Equal(t, 3, (*r.Nodes)["work"].Attempt, "a panic is an ordinary (retryable) failure")
	require.Contains(t, *(*r.Nodes)["work"].Error, "the handler panicked: the job broke")

	key, err := worker.SecretKey(s.WebhookSecret)
	require.NoError(t, err)
	now := time.Now().Unix()
	for name, c := range map[string]struct {
		method, ts, sig string
		code            int
	}{
		"unsigned":      {"POST", strconv.FormatInt(now, 10), "", 401},
		"another key":   {"POST", strconv.FormatInt(now, 10), callbacks.SignWebhook([]byte("another key, 16+ bytes"), "msg_x", now, []byte(`{}`)), 401},
		"stale":         {"POST", strconv.FormatInt(now-600, 10), callbacks.SignWebhook(key, "msg_x", now-600, []byte(`{}`)), 401},
		"signed, empty": {"POST", strconv.FormatInt(now, 10), callbacks.SignWebhook(key, "msg_x", now, []byte(`{}`)), 400},
		"GET":           {"GET", "", "", 405},
	} {
		req, err := http.NewRequestWithContext(t.Context(), c.method, url+"/greet", strings.NewReader(`{}`))
		require.NoError(t, err)
		req.Header.Set("webhook-id", "msg_x")
		req.Header.Set("webhook-timestamp", c.ts)
		if c.sig != "" {
			req.Header.Set("webhook-signature", c.sig)
		}
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		require.Equal(t, c.code, resp.StatusCode, name)
	}
}

// TestPushDuplicateDelivery: a dispatch delivered twice (the same
// webhook-id: delivery is at least once) is answered 202 both times and
// worked once; the callback arrives once.
func TestPushDuplicateDelivery(t *testing.T) {
	t.Parallel()
	var calls atomic.Int32
	var mu sync.Mutex
	var bodies []string
	cb := serve(t, http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		bodies = append(bodies, string(b))
		mu.Unlock()
	}))
	const secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	h, err := worker.NewPushHandler(worker.PushParams{Secret: secret, Handler: func(context.Context, *worker.Task) (any, error) {
		calls.Add(1)
		return map[string]int{"n": 1}, nil
	}})
	require.NoError(t, err)
	key, err := worker.SecretKey(secret)
	require.NoError(t, err)
	body := []byte(`{"runId":"r1","nodeId":"n","attempt":1,"config":{},"input":{},"callbackUrl":"` + cb + `/cb"}`)
	for range 2 {
		now := time.Now().Unix()
		req := httptest.NewRequestWithContext(t.Context(), http.MethodPost, "/w", strings.NewReader(string(body)))
		req.Header.Set("webhook-id", "msg_dup")
		req.Header.Set("webhook-timestamp", strconv.FormatInt(now, 10))
		req.Header.Set("webhook-signature", callbacks.SignWebhook(key, "msg_dup", now, body))
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		require.Equal(t, http.StatusAccepted, rec.Code)
	}
	testkit.Eventually(t, 10*time.Second, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(bodies) == 1
	}, "the callback")
	require.NoError(t, h.Shutdown(t.Context()))
	require.Equal(t, int32(1), calls.Load(), "worked once")
	require.JSONEq(t, `{"status":"completed","output":{"n":1}}`, bodies[0])
}

// TestVerifySignature: the documented test vector (docs/workers.md), a
// second signature beside it (rotation), and the refusals.
func TestVerifySignature(t *testing.T) {
	t.Parallel()
	key, err := worker.SecretKey("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw")
	require.NoError(t, err)
	body := []byte(`{"test": 2432232314}`)
	at := time.Unix(1614265330, 0)
	hdr := func(sig string) http.Header {
		return http.Header{"Webhook-Id": {"msg_p5jXN8AQM9LWM0D4loKWxJek"}, "Webhook-Timestamp": {"1614265330"},
			"Webhook-Signature": {sig}}
	}
	const good = "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="
	require.NoError(t, worker.VerifySignature(key, hdr(good), body, at, worker.DefaultTolerance))
	require.NoError(t, worker.VerifySignature(key, hdr("v1,bm90IHRoaXMgb25l "+good), body, at, worker.DefaultTolerance))
	for name, err := range map[string]error{
		"another body": worker.VerifySignature(key, hdr(good), []byte(`{"test": 2432232315}`), at, worker.DefaultTolerance),
		"too late":     worker.VerifySignature(key, hdr(good), body, at.Add(6*time.Minute), worker.DefaultTolerance),
		"too early":    worker.VerifySignature(key, hdr(good), body, at.Add(-6*time.Minute), worker.DefaultTolerance),
		"no signature": worker.VerifySignature(key, hdr(""), body, at, worker.DefaultTolerance),
	} {
		require.ErrorIs(t, err, worker.ErrSignature, name)
	}
	_, err = worker.SecretKey("MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw")
	require.Error(t, err, "a secret without whsec_")
}

// testPushHeartbeats: a pushed handler taking 9 s beside the node's
// timeoutSeconds 6 keeps its attempt alive with heartbeats (a third of the
// timeout: 2 s of room for a loaded machine to deliver each, not the 1 s a
// 3 s timeout left); with heartbeats off the same job times out.
func testPushHeartbeats(t *testing.T, s *instance.Stitchd) {
	for _, c := range []struct {
		name  string
		every time.Duration
		want  string
	}{{"heartbeats", 0, "completed"}, {"none", -1, "failed"}} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			h, err := worker.NewPushHandler(worker.PushParams{Secret: s.WebhookSecret, Handler: greet, HeartbeatInterval: c.every})
			require.NoError(t, err)
			url := serve(t, h)
			flow := s.Flow("push heartbeats "+c.name, map[string]any{"webhookUrl": url, "timeoutSeconds": 6,
				"retry": map[string]any{"maxAttempts": 1}})
			r := s.WaitRun(s.StartRun(flow, map[string]any{"name": "Ada", "sleepMs": 9000}))
			require.Equal(t, c.want, string(r.Status))
			require.Equal(t, 1, (*r.Nodes)["work"].Attempt)
			if c.want == "failed" {
				require.Contains(t, *(*r.Nodes)["work"].Error, "deadline exceeded")
			}
		})
	}
}

// testPushShutdown: Shutdown lets a handler that finishes within the
// grace period report; one still running after it has its context
// cancelled (ErrShuttingDown) and is failed retryably — its node runs a
// second attempt; a dispatch after Shutdown is answered 503, which stitchd
// retries.
func testPushShutdown(t *testing.T, s *instance.Stitchd) {
	started := make(chan string, 2)
	release := make(chan struct{})
	causes := make(chan error, 2)
	h, err := worker.NewPushHandler(worker.PushParams{Secret: s.WebhookSecret, Handler: func(ctx context.Context, t *worker.Task) (any, error) {
		var in struct {
			Mode string `json:"mode"`
		}
		_ = json.Unmarshal(t.Input, &in)
		if t.Attempt > 1 {
			return map[string]any{"attempt": t.Attempt}, nil
		}
		started <- in.Mode
		if in.Mode == "quick" {
			<-release
			return map[string]any{"mode": "quick"}, nil
		}
		<-ctx.Done()
		causes <- context.Cause(ctx)
		return nil, ctx.Err()
	}})
	require.NoError(t, err)
	url := serve(t, h)
	flow := s.Flow("push shutdown", map[string]any{"webhookUrl": url, "timeoutSeconds": 60,
		"retry": map[string]any{"maxAttempts": 2, "initialDelayMs": 10}, "delivery": map[string]any{"maxTries": 1}})
	quick := s.StartRun(flow, map[string]any{"mode": "quick"})
	stuck := s.StartRun(flow, map[string]any{"mode": "stuck"})
	<-started
	<-started
	require.Equal(t, 2, h.InFlight())

	ctx, cancel := context.WithTimeout(t.Context(), time.Second)
	defer cancel()
	go func() {
		time.Sleep(200 * time.Millisecond)
		close(release)
	}()
	began := time.Now()
	err = h.Shutdown(ctx)
	took := time.Since(began)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.ErrorContains(t, err, "1 task(s)")
	require.Less(t, took, 5*time.Second)
	require.ErrorIs(t, <-causes, worker.ErrShuttingDown)
	require.Equal(t, 0, h.InFlight())

	r := s.WaitRun(quick)
	require.Equal(t, "completed", string(r.Status), "finished within the grace period")
	require.JSONEq(t, `{"mode":"quick"}`, instance.JSON(t, r.Output))
	// The stuck one failed as "worker shutting down", retryably: its second
	// attempt's dispatch met the shut handler (503) and, with one delivery
	// try, failed the node.
	r = s.WaitRun(stuck)
	require.Equal(t, "failed", string(r.Status))
	require.Equal(t, 2, (*r.Nodes)["work"].Attempt, "the shutdown's failure was retried")
	require.Contains(t, *(*r.Nodes)["work"].Error, "503")
	var all []string
	for _, e := range s.Events(stuck) {
		all = append(all, e.Type+" "+instance.JSON(t, e.Payload))
	}
	require.Contains(t, strings.Join(all, "\n"), "worker shutting down", "attempt 1's failure")
}

// TestWorkerLibrary runs the cases that need stitchd against one real
// stitchd, in parallel, each on flows and queues of its own: one process
// and database for all, as Postgres's connections are the whole suite's.
func TestWorkerLibrary(t *testing.T) {
	t.Parallel()
	s := instance.Start(t)
	for name, test := range map[string]func(*testing.T, *instance.Stitchd){
		"PushHandler": testPushHandler, "PushHeartbeats": testPushHeartbeats, "PushShutdown": testPushShutdown,
		"PullCompletes": testPullCompletes, "PullConcurrencyLimit": testPullConcurrencyLimit,
		"PullHeartbeatKeepsLease": testPullHeartbeatKeepsLease, "PullStaleCancelsHandler": testPullStaleCancelsHandler,
		"PullGracefulShutdown": testPullGracefulShutdown, "PullStopIdle": testPullStopIdle, "PullBackoff": testPullBackoff,
		"PullRefusedOutput": testPullRefusedOutput,
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			test(t, s)
		})
	}
}
