package app_test

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/stitchd/stitchd/internal/app"
	"github.com/stitchd/stitchd/store"
)

// polled is a task as POST /api/v1/tasks/poll hands it out.
type polled struct {
	RunID          string          `json:"run_id"`
	NodeID         string          `json:"node_id"`
	Attempt        int             `json:"attempt"`
	Input          json.RawMessage `json:"input"`
	Config         json.RawMessage `json:"config"`
	CallbackURL    string          `json:"callback_url"`
	LeaseExpiresAt time.Time       `json:"lease_expires_at"`
}

func (h *harness) poll(tok, queue, worker string, limit, wait int) []polled {
	h.t.Helper()
	var out struct {
		Tasks []polled `json:"tasks"`
	}
	require.Equal(h.t, 200, h.doAs(tok, "POST", "/api/v1/tasks/poll", map[string]any{"queue": queue, "worker": worker,
		"max": limit, "wait_seconds": wait}, &out))
	return out.Tasks
}

// workerToken is a token of role worker (POST /api/v1/tokens {"role":
// "worker"}), of a new admin: it may poll, nothing else.
func (h *harness) workerToken(email string) string {
	h.t.Helper()
	ctx := context.Background()
	u, err := h.app.Store.CreateUser(ctx, store.CreateUserParams{ID: uuid.NewString(), Email: email, Name: email, Role: store.RoleAdmin,
		Now: time.Now()})
	require.NoError(h.t, err)
	tok := "stp_" + strings.ReplaceAll(uuid.NewString(), "-", "")
	sum := sha256.Sum256([]byte(tok))
	role := store.RoleWorker
	require.NoError(h.t, h.app.Store.CreateToken(ctx, store.APIToken{ID: uuid.NewString(), UserID: u.ID, Name: "worker",
		CreatedAt: time.Now(), Role: &role}, sum[:]))
	return tok
}

func pullFlow(h *harness, data map[string]any) string {
	d := map[string]any{"queue": "billing"}
	for k, v := range data {
		d[k] = v
	}
	return h.createFlow([]map[string]any{node("bill", "Worker", d)}, nil)
}

// TestPullWorker: a Worker with a queue waits there; a worker polling on
// another process takes it (the push contract's payload and callback URL,
// a lease), completes the run, and is named on the attempt; an empty poll
// answers after its wait; the queue lists what waits and who polls; a
// worker token may poll and do nothing else; bad polls are 400.
func TestPullWorker(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	other := newHarnessOn(t, h.dbURL)
	wt := h.workerToken("billing-bot@example.com")
	flow := pullFlow(h, nil)

	require.Empty(t, other.poll(wt, "billing", "host-1/v2.3", 10, 0), "nothing queued yet")
	r := h.startRun(flow, map[string]any{"invoice": 17})
	var q []store.QueueStats
	require.Equal(t, 200, h.do("GET", "/api/v1/queues", nil, &q))
	require.Len(t, q, 2-1)
	require.Equal(t, "billing", q[0].Name)
	require.Equal(t, 1, q[0].Pending)

	_, _, metrics := h.metricsRequest("GET", "/metrics", "")
	require.Contains(t, metrics, `stitchd_queue_pending{queue="billing",workspace="default"} 1`, "the queue's gauge")

	tasks := other.poll(wt, "billing", "host-1/v2.3", 10, 0)
	require.Len(t, tasks, 1)
	tk := tasks[0]
	require.Equal(t, r.ID, tk.RunID)
	require.Equal(t, "bill", tk.NodeID)
	require.Equal(t, 1, tk.Attempt)
	require.JSONEq(t, `{"invoice": 17}`, string(tk.Input))
	require.Contains(t, string(tk.Config), `"queue":"billing"`)
	require.WithinDuration(t, time.Now().Add(300*time.Second), tk.LeaseExpiresAt, time.Minute, "the default lease: 300 s")
	require.Empty(t, other.poll(wt, "billing", "host-2", 10, 0), "handed out once")
	require.Equal(t, 200, h.do("GET", "/api/v1/queues", nil, &q))
	require.Equal(t, 0, q[0].Pending)
	require.Equal(t, 1, q[0].Leased)
	require.Len(t, q[0].Workers, 2)
	leased := map[string]int{}
	for _, w := range q[0].Workers {
		leased[w.ID] = w.Leased
	}
	require.Equal(t, map[string]int{"host-1/v2.3": 1, "host-2": 0}, leased)

	code, body := other.post(tk.CallbackURL, `{"status":"completed","output":{"paid":true}}`)
	require.Equal(t, 200, code, body)
	done := h.waitRun(r.ID, "completed")
	require.JSONEq(t, `{"paid":true}`, string(done.Output))
	_, raw := h.raw("GET", "/api/v1/runs/"+r.ID)
	require.Contains(t, raw, `"worker":"host-1/v2.3"`, "the attempt names its worker")

	// The worker token polls and does nothing else.
	require.Equal(t, 403, h.doAs(wt, "GET", "/api/v1/flows", nil, nil))
	require.Equal(t, 403, h.doAs(wt, "POST", "/api/v1/flows/"+flow+"/runs", map[string]any{"input": map[string]any{}}, nil))
	require.Equal(t, 403, h.doAs(wt, "GET", "/api/v1/runs/"+r.ID, nil, nil))
	require.Equal(t, 403, h.doAs(wt, "GET", "/api/v1/queues", nil, nil))

	// Bad polls: every problem, 400.
	var bad struct {
		Error struct {
			Details []struct {
				Path string `json:"path"`
			} `json:"details"`
		} `json:"error"`
	}
	require.Equal(t, 400, h.doAs(wt, "POST", "/api/v1/tasks/poll", map[string]any{"queue": "no spaces", "worker": "",
		"max": 101, "wait_seconds": 61}, &bad))
	var paths []string
	for _, d := range bad.Error.Details {
		paths = append(paths, d.Path)
	}
	require.ElementsMatch(t, []string{"queue", "worker", "max", "wait_seconds"}, paths)

	// One of webhookUrl and queue: both, or neither, is 422.
	for _, data := range []map[string]any{{"queue": "billing", "webhookUrl": "http://x.example/w"}, {"leaseSeconds": 10}} {
		require.Equal(t, 422, h.do("POST", "/api/v1/flows", map[string]any{"name": "bad " + fmt.Sprint(len(data)),
			"graph": map[string]any{"nodes": []map[string]any{node("w", "Worker", data)}, "edges": []any{}}}, nil))
	}
}

// TestPullLongPollWakes: a long poll waiting on one process answers when
// a run started on another queues a task — woken by the database's
// NOTIFY: the poll's own look again is set past its 50 s wait (the
// harness's client waits a minute), so without the notification it would
// answer only as the wait ends (a last look), not half a minute before.
func TestPullLongPollWakes(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	other := newHarnessOn(t, h.dbURL, func(c *app.Config) { c.PollRecheck = time.Hour })
	wt := h.workerToken("waker@example.com")
	flow := pullFlow(h, map[string]any{"queue": "wake"})
	for i := range 5 {
		got := make(chan []polled, 1)
		asked := time.Now()
		go func() { got <- other.poll(wt, "wake", "waiter", 1, 50) }()
		// The poll subscribes before its first look, which records the
		// worker's poll: once that shows, the poll is waiting.
		h.eventually(func() bool {
			var q []store.QueueStats
			h.do("GET", "/api/v1/queues", nil, &q)
			return len(q) == 1 && len(q[0].Workers) == 1 && !q[0].Workers[0].LastPollAt.Before(asked.Add(-time.Millisecond))
		}, "the poll to wait")
		started := time.Now()
		r := h.startRun(flow, map[string]any{"n": i})
		tasks := <-got
		woke := time.Since(started)
		t.Logf("long poll %d answered %v after the start returned", i, woke)
		require.Len(t, tasks, 1)
		require.Equal(t, r.ID, tasks[0].RunID)
		// Not a speed: unwoken, it answers at the wait's end (50 s).
		require.Less(t, woke, 25*time.Second, "woken by the notification, not by its wait ending")
	}
}

// TestPullConcurrentPollers: 300 tasks, 12 pollers on two processes
// polling at once: every attempt is handed out exactly once.
func TestPullConcurrentPollers(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	other := newHarnessOn(t, h.dbURL)
	wt := h.workerToken("many@example.com")
	flow := pullFlow(h, map[string]any{"queue": "many"})
	const n = 300
	for i := range n {
		h.startRun(flow, map[string]any{"i": i})
	}
	var mu sync.Mutex
	seen := map[string]int{}
	var wg sync.WaitGroup
	for p := range 12 {
		hh := h
		if p%2 == 1 {
			hh = other
		}
		wg.Go(func() {
			for {
				tasks := hh.poll(wt, "many", fmt.Sprintf("poller-%d", p), 7, 0)
				if len(tasks) == 0 {
					return
				}
				mu.Lock()
				for _, tk := range tasks {
					seen[tk.RunID+"/"+tk.NodeID+"/"+fmt.Sprint(tk.Attempt)]++
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	require.Len(t, seen, n, "every task handed out")
	for k, c := range seen {
		require.Equal(t, 1, c, "%s handed out once", k)
	}
}

// TestPullLease: a lease that runs out (the clock moved past it) times the
// attempt out; the retry policy queues the next attempt, which is polled
// again, and the old attempt's callback is 409. A heartbeat extends a
// lease by leaseSeconds; a cancelled run's waiting task is never handed
// out.
func TestPullLease(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	wt := h.workerToken("lease@example.com")
	flow := pullFlow(h, map[string]any{"queue": "lease", "leaseSeconds": 30,
		"retry": map[string]any{"maxAttempts": 3, "initialDelayMs": 10}})
	r := h.startRun(flow, map[string]any{})
	first := h.poll(wt, "lease", "w1", 1, 0)
	require.Len(t, first, 1)
	h.advance(31 * time.Second)
	h.sweeps(1)
	var second []polled
	h.eventually(func() bool { second = h.poll(wt, "lease", "w2", 1, 0); return len(second) == 1 }, "attempt 2 to be queued")
	require.Equal(t, 2, second[0].Attempt)
	code, _ := h.post(first[0].CallbackURL, `{"status":"completed","output":{}}`)
	require.Equal(t, 409, code, "the expired lease's callback")

	// A heartbeat keeps the lease: 20 s, a heartbeat, 20 s more.
	h.advance(20 * time.Second)
	code, body := h.post(second[0].CallbackURL, `{"status":"running"}`)
	require.Equal(t, 200, code, body)
	h.advance(20 * time.Second)
	h.sweeps(1)
	require.Equal(t, "running", h.run(r.ID).Nodes["bill"].Status)
	require.Equal(t, 2, h.run(r.ID).Nodes["bill"].Attempt)
	code, body = h.post(second[0].CallbackURL, `{"status":"completed","output":{"ok":1}}`)
	require.Equal(t, 200, code, body)
	h.waitRun(r.ID, "completed")

	// Leased by a poll whose worker went away before reading the answer:
	// released, they wait again and the next poll takes them.
	again := h.startRun(flow, map[string]any{})
	lost, _, err := h.app.Store.PollTasks(t.Context(), store.PollTasksParams{Queue: "lease", Worker: "gone", Max: 5})
	require.NoError(t, err)
	require.Len(t, lost, 1)
	require.Empty(t, h.poll(wt, "lease", "w4", 5, 0), "leased")
	require.NoError(t, h.app.Store.ReleaseTasks(t.Context(), "gone", lost))
	back := h.poll(wt, "lease", "w4", 5, 0)
	require.Len(t, back, 1)
	require.Equal(t, again.ID, back[0].RunID)
	require.Equal(t, 1, back[0].Attempt, "the same attempt: nothing failed")

	// Cancelled while waiting: dropped, never handed out.
	gone := h.startRun(flow, map[string]any{})
	require.Equal(t, 200, h.do("POST", "/api/v1/runs/"+gone.ID+"/cancel", map[string]any{}, nil))
	h.waitRun(gone.ID, "cancelled")
	require.Empty(t, h.poll(wt, "lease", "w3", 5, 0))
}

// TestPullPausedRunHoldsItsTasks: a paused run's waiting task is held, as
// its pushed dispatches are: polls pass it (a later run's task is handed
// out first) and the pause counts it; the resume hands it out again and
// wakes a long poll waiting on its queue (on another process, its own
// look again set past the wait).
func TestPullPausedRunHoldsItsTasks(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	other := newHarnessOn(t, h.dbURL, func(c *app.Config) { c.PollRecheck = time.Hour })
	wt := h.workerToken("pauser@example.com")
	flow := pullFlow(h, map[string]any{"queue": "held"})
	paused := h.startRun(flow, map[string]any{"n": 1})
	var run struct {
		Status string `json:"status"`
	}
	require.Equal(t, 200, h.do("POST", "/api/v1/runs/"+paused.ID+"/pause", nil, &run))
	require.Equal(t, "paused", run.Status)
	var held int
	require.NoError(t, h.app.Store.Gorm().Raw(`SELECT (payload->>'held_dispatches')::int FROM run_events
		WHERE run_id = ? AND type = 'run.paused'`, paused.ID).Row().Scan(&held))
	require.Equal(t, 1, held, "the pause holds the waiting task")
	later := h.startRun(flow, map[string]any{"n": 2})
	tasks := other.poll(wt, "held", "w", 10, 0)
	require.Len(t, tasks, 1, "the paused run's task is not handed out")
	require.Equal(t, later.ID, tasks[0].RunID)
	require.Empty(t, other.poll(wt, "held", "w", 10, 0))

	got := make(chan []polled, 1)
	asked := time.Now()
	go func() { got <- other.poll(wt, "held", "waiter", 1, 50) }()
	h.eventually(func() bool {
		var q []store.QueueStats
		h.do("GET", "/api/v1/queues", nil, &q)
		for _, w := range q[0].Workers {
			if w.ID == "waiter" && !w.LastPollAt.Before(asked.Add(-time.Millisecond)) {
				return true
			}
		}
		return false
	}, "the long poll to wait")
	resumed := time.Now()
	require.Equal(t, 200, h.do("POST", "/api/v1/runs/"+paused.ID+"/resume", nil, nil))
	tasks = <-got
	require.Len(t, tasks, 1)
	require.Equal(t, paused.ID, tasks[0].RunID)
	// Not a speed: unwoken, it answers at the wait's end (50 s).
	require.Less(t, time.Since(resumed), 25*time.Second, "woken by the resume")
}
