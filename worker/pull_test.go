package worker_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stitchd/stitchd/internal/client"
	"github.com/stitchd/stitchd/internal/testkit"
	"github.com/stitchd/stitchd/internal/testkit/instance"
	"github.com/stitchd/stitchd/store"
	"github.com/stitchd/stitchd/worker"
)

// startPuller starts a puller of p (URL and Token from s when unset) and
// stops it at the test's end.
func startPuller(t *testing.T, s *instance.Stitchd, p worker.PullParams) *worker.Puller {
	t.Helper()
	if p.URL == "" {
		p.URL = s.URL
	}
	if p.Token == "" {
		p.Token = s.WorkerToken("puller")
	}
	pl, err := worker.NewPuller(p)
	require.NoError(t, err)
	require.NoError(t, pl.Start(context.Background()))
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = pl.Stop(ctx)
	})
	return pl
}

// testPullCompletes: runs whose Worker node waits in a queue are completed
// by a Puller with the handler's output, each attempt named with the
// worker; a failure is retried, a NonRetryable one is not; the handler
// sees the task's lease.
func testPullCompletes(t *testing.T, s *instance.Stitchd) {
	flow := s.Flow("pull", map[string]any{"queue": "greet", "retry": map[string]any{"maxAttempts": 3, "initialDelayMs": 10}})
	var leases sync.Map
	startPuller(t, s, worker.PullParams{Queue: "greet", Worker: "test-host/1", Concurrency: 2,
		Handler: func(ctx context.Context, tk *worker.Task) (any, error) {
			leases.Store(tk.RunID, tk.LeaseExpiresAt)
			return greet(ctx, tk)
		}})
	ada := s.StartRun(flow, map[string]any{"name": "Ada"})
	grace := s.StartRun(flow, map[string]any{"name": "Grace", "fail": "flaky", "failUntil": 2})
	card := s.StartRun(flow, map[string]any{"fail": "invalid card", "permanent": true})

	r := s.WaitRun(ada)
	require.Equal(t, "completed", string(r.Status))
	require.JSONEq(t, `{"greeting": "Hello, Ada!", "node": "work", "attempt": 1}`, instance.JSON(t, r.Output))
	lease, ok := leases.Load(ada)
	require.True(t, ok)
	at, ok := lease.(time.Time)
	require.True(t, ok)
	require.WithinDuration(t, time.Now().Add(300*time.Second), at, time.Minute, "the default lease")
	var raw json.RawMessage
	require.NoError(t, s.Client.Do(t.Context(), "GET", "/api/v1/runs/"+ada, nil, &raw))
	require.Contains(t, string(raw), `"worker":"test-host/1"`, "the attempt names its worker")

	r = s.WaitRun(grace)
	require.Equal(t, "completed", string(r.Status))
	require.JSONEq(t, `{"greeting": "Hello, Grace!", "node": "work", "attempt": 3}`, instance.JSON(t, r.Output))

	r = s.WaitRun(card)
	require.Equal(t, "failed", string(r.Status))
	require.Equal(t, 1, (*r.Nodes)["work"].Attempt)
	require.Contains(t, *(*r.Nodes)["work"].Error, "invalid card")
}

// testPullConcurrencyLimit: a Puller of concurrency 3 never runs more
// than 3 handlers at once and stitchd never sees it hold more than 3
// leases, yet it reaches 3; 15 tasks all complete.
func testPullConcurrencyLimit(t *testing.T, s *instance.Stitchd) {
	const limit, n = 3, 15
	flow := s.Flow("limit", map[string]any{"queue": "limited"})
	var running, most atomic.Int32
	for i := range n {
		s.StartRun(flow, map[string]any{"i": i})
	}
	// stitchd's view, sampled while the tasks are worked: the leases this
	// worker holds.
	var mostLeased atomic.Int32
	stop := make(chan struct{})
	sampled := make(chan error, 1)
	go func() {
		for {
			select {
			case <-stop:
				sampled <- nil
				return
			case <-time.After(20 * time.Millisecond):
			}
			var qs []store.QueueStats
			if err := s.Client.Do(context.Background(), "GET", "/api/v1/queues", nil, &qs); err != nil {
				sampled <- err
				return
			}
			for _, q := range qs {
				for _, w := range q.Workers {
					if w.ID == "limited-1" {
						raise(&mostLeased, int32(w.Leased))
					}
				}
			}
		}
	}()
	startPuller(t, s, worker.PullParams{Queue: "limited", Worker: "limited-1", Concurrency: limit,
		Handler: func(ctx context.Context, _ *worker.Task) (any, error) {
			now := running.Add(1)
			defer running.Add(-1)
			raise(&most, now)
			select {
			case <-time.After(250 * time.Millisecond):
			case <-ctx.Done():
				return nil, ctx.Err()
			}
			return map[string]any{"done": true}, nil
		}})
	testkit.Eventually(t, time.Minute, func() bool {
		runs, err := s.Client.ListRuns(t.Context(), client.ListRunsParams{FlowID: flow, Limit: 100})
		require.NoError(t, err)
		done := 0
		for _, r := range runs {
			if r.Status == "completed" {
				done++
			}
		}
		return done == n
	}, "%d runs to complete", n)
	close(stop)
	require.NoError(t, <-sampled)
	require.Equal(t, int32(limit), most.Load(), "handlers at once: up to the limit, never beyond")
	require.LessOrEqual(t, mostLeased.Load(), int32(limit), "leases held at once, as stitchd saw them")
	require.Positive(t, mostLeased.Load())
}

// testPullHeartbeatKeepsLease: with leaseSeconds 6 and a handler taking
// 9 s, the Puller's heartbeats (every lease/3) keep the attempt alive
// and it completes; without heartbeats the same job's lease runs out and
// the attempt fails as a timeout. (With a 3 s lease, a loaded make test
// once held the task's way to the worker and its first heartbeat past
// the 2 s a lease/3 beat leaves: the attempt failed at 4.4 s.)
func testPullHeartbeatKeepsLease(t *testing.T, s *instance.Stitchd) {
	for _, c := range []struct {
		name  string
		every time.Duration
		want  string
	}{{"heartbeats", 0, "completed"}, {"none", -1, "failed"}} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			queue := "lease-" + c.name
			flow := s.Flow("lease "+c.name, map[string]any{"queue": queue, "leaseSeconds": 6,
				"retry": map[string]any{"maxAttempts": 1}})
			startPuller(t, s, worker.PullParams{Queue: queue, HeartbeatInterval: c.every, Handler: greet})
			r := s.WaitRun(s.StartRun(flow, map[string]any{"name": "Ada", "sleepMs": 9000}))
			require.Equal(t, c.want, string(r.Status))
			require.Equal(t, 1, (*r.Nodes)["work"].Attempt)
			if c.want == "failed" {
				require.Contains(t, *(*r.Nodes)["work"].Error, "deadline exceeded")
			}
		})
	}
}

// testPullStaleCancelsHandler: when stitchd answers a heartbeat 409 (the
// run was cancelled), the handler's context is cancelled with ErrStale.
func testPullStaleCancelsHandler(t *testing.T, s *instance.Stitchd) {
	flow := s.Flow("stale", map[string]any{"queue": "stale", "leaseSeconds": 3})
	started := make(chan struct{})
	cause := make(chan error, 1)
	startPuller(t, s, worker.PullParams{Queue: "stale", Handler: func(ctx context.Context, _ *worker.Task) (any, error) {
		close(started)
		select {
		case <-ctx.Done():
			cause <- context.Cause(ctx)
		case <-time.After(20 * time.Second):
			cause <- nil
		}
		return nil, ctx.Err()
	}})
	run := s.StartRun(flow, map[string]any{})
	<-started
	_, err := s.Client.CancelRun(t.Context(), run)
	require.NoError(t, err)
	select {
	case err := <-cause:
		require.ErrorIs(t, err, worker.ErrStale)
	case <-time.After(10 * time.Second):
		t.Fatal("the handler's context was not cancelled")
	}
}

// testPullGracefulShutdown: Stop stops polling at once, lets a handler
// that finishes within the grace period report, and fails the one still
// running after it as "worker shutting down" (its context cancelled with
// ErrShuttingDown): the retry policy queues its next attempt, which
// another Puller completes. A run started after Stop waits in the queue.
func testPullGracefulShutdown(t *testing.T, s *instance.Stitchd) {
	flow := s.Flow("shutdown", map[string]any{"queue": "stop", "retry": map[string]any{"maxAttempts": 2, "initialDelayMs": 10}})
	started := make(chan string, 2)
	release := make(chan struct{})
	causes := make(chan error, 1)
	token := s.WorkerToken("stopper")
	p, err := worker.NewPuller(worker.PullParams{URL: s.URL, Token: token, Queue: "stop", Worker: "first", Concurrency: 2,
		Handler: func(ctx context.Context, tk *worker.Task) (any, error) {
			var in struct {
				Mode string `json:"mode"`
			}
			_ = json.Unmarshal(tk.Input, &in)
			started <- in.Mode
			if in.Mode == "quick" {
				<-release
				return map[string]any{"by": "first"}, nil
			}
			<-ctx.Done()
			causes <- context.Cause(ctx)
			return nil, ctx.Err()
		}})
	require.NoError(t, err)
	require.NoError(t, p.Start(context.Background()))
	quick := s.StartRun(flow, map[string]any{"mode": "quick"})
	stuck := s.StartRun(flow, map[string]any{"mode": "stuck"})
	<-started
	<-started

	ctx, cancel := context.WithTimeout(context.Background(), 1500*time.Millisecond)
	defer cancel()
	go func() {
		time.Sleep(300 * time.Millisecond)
		close(release)
	}()
	began := time.Now()
	err = p.Stop(ctx)
	took := time.Since(began)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.ErrorContains(t, err, "1 task(s)")
	require.Less(t, took, 5*time.Second, "Stop ends with the grace period")
	require.ErrorIs(t, <-causes, worker.ErrShuttingDown)
	require.Equal(t, 0, p.InFlight())

	r := s.WaitRun(quick)
	require.Equal(t, "completed", string(r.Status), "finished within the grace period")
	require.JSONEq(t, `{"by":"first"}`, instance.JSON(t, r.Output))

	// Polling stopped: the stuck run's attempt 2 and a new run wait.
	later := s.StartRun(flow, map[string]any{"mode": "later"})
	testkit.Eventually(t, 30*time.Second, func() bool {
		q := s.Queue("stop")
		return q.Pending == 2 && q.Leased == 0
	}, "attempt 2 of the stuck run and the later run to wait in the queue")
	time.Sleep(300 * time.Millisecond)
	require.Equal(t, 2, s.Queue("stop").Pending, "nobody polls")

	startPuller(t, s, worker.PullParams{Queue: "stop", Worker: "second", Handler: func(_ context.Context, tk *worker.Task) (any, error) {
		return map[string]any{"by": "second", "attempt": tk.Attempt}, nil
	}})
	r = s.WaitRun(stuck)
	require.Equal(t, "completed", string(r.Status))
	require.JSONEq(t, `{"by":"second","attempt":2}`, instance.JSON(t, r.Output), "the shutdown's failure was retried")
	var events []string
	for _, e := range s.Events(stuck) {
		events = append(events, e.Type+" "+instance.JSON(t, e.Payload))
	}
	require.Contains(t, strings.Join(events, "\n"), "worker shutting down", "attempt 1's failure")
	require.Equal(t, "completed", string(s.WaitRun(later).Status))
}

// testPullStopIdle: Stop of an idle Puller (its long poll waiting) ends
// the poll at once rather than after its wait.
func testPullStopIdle(t *testing.T, s *instance.Stitchd) {
	p, err := worker.NewPuller(worker.PullParams{URL: s.URL, Token: s.WorkerToken("idle"), Queue: "idle", Worker: "idle-1",
		WaitSeconds: 30, Handler: greet})
	require.NoError(t, err)
	require.NoError(t, p.Start(context.Background()))
	testkit.Eventually(t, 10*time.Second, func() bool { return len(s.Queue("idle").Workers) == 1 }, "the poll")
	began := time.Now()
	require.NoError(t, p.Stop(context.Background()))
	require.Less(t, time.Since(began), 2*time.Second)
	require.NoError(t, p.Stop(context.Background()), "a second Stop")
}

// countingTransport records when each request was sent and its answer's
// status code.
type countingTransport struct {
	mu    sync.Mutex
	sent  []time.Time
	codes []int
}

func (c *countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	sent := time.Now()
	resp, err := http.DefaultTransport.RoundTrip(r)
	if err == nil {
		c.mu.Lock()
		c.sent = append(c.sent, sent)
		c.codes = append(c.codes, resp.StatusCode)
		c.mu.Unlock()
	}
	return resp, err
}

// testPullBackoff: polls that fail (a revoked or wrong token: 401) are
// repeated after a doubling backoff, not in a tight loop.
func testPullBackoff(t *testing.T, s *instance.Stitchd) {
	ct := &countingTransport{}
	p, err := worker.NewPuller(worker.PullParams{URL: s.URL, Token: "stp_not-a-token", Queue: "nobody", Worker: "w",
		ErrorBackoff: 500 * time.Millisecond, Client: &http.Client{Transport: ct}, Handler: greet})
	require.NoError(t, err)
	require.NoError(t, p.Start(context.Background()))
	time.Sleep(2500 * time.Millisecond)
	require.NoError(t, p.Stop(context.Background()))
	ct.mu.Lock()
	defer ct.mu.Unlock()
	// Waits of 0.25–0.5 s, 0.5–1 s, 1–2 s, 2–4 s: at most 4 polls in
	// 2.5 s (fewer when answers are slow), each wait at least half the
	// doubled backoff.
	require.GreaterOrEqual(t, len(ct.codes), 2, "%v", ct.codes)
	require.LessOrEqual(t, len(ct.codes), 4, "%v", ct.codes)
	for i, c := range ct.codes {
		require.Equal(t, http.StatusUnauthorized, c)
		if i > 0 {
			least := (250 * time.Millisecond) << (i - 1)
			require.GreaterOrEqual(t, ct.sent[i].Sub(ct.sent[i-1]), least, "the wait before poll %d", i+1)
		}
	}
}

// TestNewPullerParams: what a Puller needs.
func TestNewPullerParams(t *testing.T) {
	t.Parallel()
	_, err := worker.NewPuller(worker.PullParams{})
	require.ErrorContains(t, err, "Handler")
	for _, name := range []string{"URL", "Token", "Queue"} {
		require.ErrorContains(t, err, name)
	}
	_, err = worker.NewPuller(worker.PullParams{URL: "http://x", Token: "t", Queue: "q", Handler: greet, WaitSeconds: 61})
	require.ErrorContains(t, err, "1 to 60")
	_, err = worker.NewPushHandler(worker.PushParams{Secret: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"})
	require.ErrorContains(t, err, "Handler")
}

// raise sets a to v if v is more.
func raise(a *atomic.Int32, v int32) {
	for m := a.Load(); v > m; m = a.Load() {
		if a.CompareAndSwap(m, v) {
			return
		}
	}
}

// testPullRefusedOutput: an output stitchd refuses — over its body limit
// (413), or a number too long to store (400) — fails the node at once,
// saying why, instead of leaving it running until its lease ends and
// working it again on every attempt.
func testPullRefusedOutput(t *testing.T, s *instance.Stitchd) {
	flow := s.Flow("pull refused", map[string]any{"queue": "refused", "leaseSeconds": 120,
		"retry": map[string]any{"maxAttempts": 3, "initialDelayMs": 10}})
	var calls atomic.Int32
	startPuller(t, s, worker.PullParams{Queue: "refused", Concurrency: 2,
		Handler: func(_ context.Context, tk *worker.Task) (any, error) {
			calls.Add(1)
			var in struct {
				Big bool `json:"big"`
			}
			_ = json.Unmarshal(tk.Input, &in)
			if in.Big {
				return map[string]any{"blob": strings.Repeat("x", 2<<20)}, nil
			}
			return json.RawMessage(`{"n": 1` + strings.Repeat("0", 100) + `}`), nil
		}})
	for input, code := range map[string]string{`{"big": true}`: "413", `{"big": false}`: "400"} {
		began := time.Now()
		r := s.WaitRun(s.StartRun(flow, json.RawMessage(input)))
		require.Equal(t, "failed", string(r.Status), input)
		require.Less(t, time.Since(began), 30*time.Second, "failed at once, not at the lease's end")
		require.Equal(t, 1, (*r.Nodes)["work"].Attempt, "not retried: every attempt would be refused")
		require.Contains(t, *(*r.Nodes)["work"].Error, "the output was refused")
		require.Contains(t, *(*r.Nodes)["work"].Error, "answered "+code)
	}
	require.Equal(t, int32(2), calls.Load())
}
