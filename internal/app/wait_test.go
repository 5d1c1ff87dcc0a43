package app_test

import (
	"context"
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/stitchd/stitchd/store/storetest"
)

func TestWaitDuration(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	flow := h.createFlow(
		[]map[string]any{node("pause", "Wait", map[string]any{"duration": "PT1M"}), node("after", "Condition", nil)},
		[]map[string]any{edge("pause", "after", nil)})
	before := time.Now()
	r := h.startRun(flow, map[string]any{"lead": "ada"})
	require.Equal(t, "sleeping", r.Nodes["pause"].Status)
	var raw struct {
		Nodes map[string]struct {
			WakeAt *time.Time `json:"wake_at"`
		} `json:"nodes"`
	}
	require.Equal(t, 200, h.do("GET", "/api/v1/runs/"+r.ID, nil, &raw))
	wake := raw.Nodes["pause"].WakeAt
	require.NotNil(t, wake)
	require.WithinDuration(t, before.Add(time.Minute), *wake, 2*time.Second)
	h.sweeps(1)
	require.Equal(t, "sleeping", h.run(r.ID).Nodes["pause"].Status, "not woken before its time")
	h.advance(time.Minute)
	fin := h.waitRun(r.ID, "completed")
	require.JSONEq(t, `{"lead": "ada"}`, string(fin.Nodes["pause"].Output), "a Wait passes its input on")
	require.JSONEq(t, `{"lead": "ada"}`, string(fin.Output))
}

func TestWaitUntil(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	paris, err := time.LoadLocation("Europe/Paris")
	require.NoError(t, err)
	flow := h.createFlow(
		[]map[string]any{node("pause", "Wait", map[string]any{"until": "input.due", "timezone": "Europe/Paris"}), node("after", "Condition", nil)},
		[]map[string]any{edge("pause", "after", nil)})
	// A local Paris time without an offset, two seconds ahead.
	due := time.Now().Add(2 * time.Second).In(paris).Truncate(time.Second)
	r := h.startRun(flow, map[string]any{"due": due.Format("2006-01-02T15:04:05")})
	require.Equal(t, "sleeping", r.Nodes["pause"].Status)
	var raw struct {
		Nodes map[string]struct {
			WakeAt *time.Time `json:"wake_at"`
		} `json:"nodes"`
	}
	require.Equal(t, 200, h.do("GET", "/api/v1/runs/"+r.ID, nil, &raw))
	require.True(t, due.Equal(*raw.Nodes["pause"].WakeAt), "wake_at %v, want %v", raw.Nodes["pause"].WakeAt, due)
	h.advance(2 * time.Second)
	h.waitRun(r.ID, "completed")

	// A time in the past (a literal with an offset) fires at once.
	past := h.createFlow([]map[string]any{node("pause", "Wait", map[string]any{"until": "2020-01-01T09:00:00+01:00"})}, nil)
	r = h.startRun(past, map[string]any{"x": 1})
	require.Equal(t, "completed", r.Status)

	// An expression that gives no time fails the node with the reason.
	r = h.startRun(flow, map[string]any{"due": "soon"})
	fin := h.waitRun(r.ID, "failed")
	require.Contains(t, *fin.Nodes["pause"].Error, `until gave "soon", not a time`)
}

func TestWaitCancelWhileSleeping(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	flow := h.createFlow(
		[]map[string]any{node("pause", "Wait", map[string]any{"duration": "1s"}), node("after", "Condition", nil)},
		[]map[string]any{edge("pause", "after", nil)})
	r := h.startRun(flow, map[string]any{})
	require.Equal(t, 200, h.do("POST", "/api/v1/runs/"+r.ID+"/cancel", nil, nil))
	got := h.run(r.ID)
	require.Equal(t, "cancelled", got.Status)
	require.Equal(t, "cancelled", got.Nodes["pause"].Status)
	h.advance(time.Minute) // past the wake time: it must not wake
	h.sweeps(2)
	got = h.run(r.ID)
	require.Equal(t, "cancelled", got.Nodes["pause"].Status)
	require.Equal(t, "cancelled", got.Nodes["after"].Status)
}

// TestWaitTimersAcrossProcesses: two stitchd processes on one database race
// over 1,000 due timers; each wakes once. A third process started after the
// first two stopped wakes what was left.
func TestWaitTimersAcrossProcesses(t *testing.T) {
	t.Parallel()
	_, dbURL := storetest.IsolatedDB(t)
	a, b := newHarnessOn(t, dbURL), newHarnessOn(t, dbURL)
	flow := a.createFlow(
		[]map[string]any{node("pause", "Wait", map[string]any{"duration": "1s"}), node("after", "Condition", nil)},
		[]map[string]any{edge("pause", "after", nil)})
	const runs = 1000
	ids := make([]string, runs)
	var wg sync.WaitGroup
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < runs; i += 8 {
				h := a
				if i%2 == 1 {
					h = b
				}
				var r runJSON
				if code := h.do("POST", "/api/v1/flows/"+flow+"/runs", map[string]any{"input": map[string]any{"i": i}}, &r); code != 201 {
					t.Errorf("start %d: %d", i, code)
				}
				ids[i] = r.ID
			}
		}()
	}
	wg.Wait()
	require.False(t, t.Failed())
	for _, id := range ids {
		a.waitStatus(id, "completed")
	}
	conn, err := pgx.Connect(context.Background(), dbURL)
	require.NoError(t, err)
	defer conn.Close(context.Background())
	var woken, runsWoken int
	require.NoError(t, conn.QueryRow(context.Background(), `SELECT count(*), count(DISTINCT run_id) FROM run_events
		WHERE key = 'pause' AND type = 'node.status' AND payload->>'status' = 'completed'`).Scan(&woken, &runsWoken))
	require.Equal(t, runs, woken, "each timer woke once")
	require.Equal(t, runs, runsWoken)
}

func TestWaitSurvivesARestart(t *testing.T) {
	t.Parallel()
	st, dbURL := storetest.IsolatedDB(t)
	a := newHarnessOn(t, dbURL)
	flow := a.createFlow([]map[string]any{node("pause", "Wait", map[string]any{"duration": "1s"}), node("after", "Condition", nil)},
		[]map[string]any{edge("pause", "after", nil)})
	r := a.startRun(flow, map[string]any{})
	sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(t, a.app.Stop(sctx))          // no process left to wake it
	storetest.AdvanceDueTimes(t, st, time.Minute) // the timer fell due meanwhile
	b := newHarnessOn(t, dbURL)
	require.Equal(t, "completed", b.waitRun(r.ID, "completed").Nodes["after"].Status)
}

func TestApprovalTimeout(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	flow := h.createFlow(
		[]map[string]any{node("review", "UX", map[string]any{"timeoutSeconds": 60, "onTimeout": "reject"}),
			node("sales", "Condition", nil), node("nurture", "Condition", nil)},
		[]map[string]any{redge("review", "sales", map[string]any{"outcome": "approve"}), redge("review", "nurture", map[string]any{"outcome": "reject"})})
	r := h.startRun(flow, map[string]any{"lead": "ada"})
	require.Equal(t, "waiting_for_user", r.Nodes["review"].Status)
	h.sweeps(1)
	require.Equal(t, "waiting_for_user", h.run(r.ID).Nodes["review"].Status, "not timed out before its minute")
	h.advance(time.Minute)
	fin := h.waitRun(r.ID, "completed")
	require.Equal(t, "skipped", fin.Nodes["sales"].Status)
	var in struct {
		Lead     string `json:"lead"`
		Decision struct {
			Outcome string `json:"outcome"`
			By      string `json:"by"`
		} `json:"decision"`
	}
	require.NoError(t, json.Unmarshal(fin.Nodes["nurture"].Input, &in))
	require.Equal(t, "ada", in.Lead)
	require.Equal(t, "reject", in.Decision.Outcome)
	require.Equal(t, "timeout", in.Decision.By)

	// The inbox shows the deadline and what it does.
	slow := h.createFlow([]map[string]any{node("review", "UX", map[string]any{"timeoutSeconds": 3600, "onTimeout": "approve"})}, nil)
	before := time.Now()
	h.startRun(slow, map[string]any{})
	var ap struct {
		Approvals []struct {
			Deadline  *time.Time `json:"deadline"`
			OnTimeout *string    `json:"on_timeout"`
			Iteration int        `json:"iteration"`
		} `json:"approvals"`
	}
	require.Equal(t, 200, h.do("GET", "/api/v1/approvals", nil, &ap))
	require.Len(t, ap.Approvals, 1)
	require.WithinDuration(t, before.Add(time.Hour), *ap.Approvals[0].Deadline, 5*time.Second)
	require.Equal(t, "approve", *ap.Approvals[0].OnTimeout)
	require.Zero(t, ap.Approvals[0].Iteration)

	// onTimeout fail (or none): the node fails with the reason.
	flow = h.createFlow([]map[string]any{node("review", "UX", map[string]any{"timeoutSeconds": 1, "onTimeout": "fail"})}, nil)
	r = h.startRun(flow, map[string]any{})
	h.advance(time.Second)
	fin = h.waitRun(r.ID, "failed")
	require.Equal(t, "no answer within 1 seconds", *fin.Nodes["review"].Error)

	// Answered in time: the deadline does nothing.
	flow = h.createFlow([]map[string]any{node("review", "UX", map[string]any{"timeoutSeconds": 1, "onTimeout": "fail"})}, nil)
	r = h.startRun(flow, map[string]any{})
	require.Equal(t, 200, h.do("POST", "/api/v1/runs/"+r.ID+"/nodes/review/complete", map[string]any{"outcome": "approve"}, nil))
	h.advance(time.Minute) // past the deadline it had
	h.sweeps(2)
	require.Equal(t, "completed", h.run(r.ID).Status)
}

func TestTimeCompileErrors(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	graph := map[string]any{"nodes": []map[string]any{
		node("a", "Wait", map[string]any{"duration": "-5m"}),
		node("b", "Wait", map[string]any{"duration": "two days"}),
		node("c", "Wait", map[string]any{"until": "input.at", "timezone": "Mars/Olympus"}),
		node("d", "Wait", map[string]any{"until": "next tuesday"}),
		node("e", "Wait", map[string]any{}),
		node("f", "UX", map[string]any{"timeoutSeconds": 60, "onTimeout": "maybe"}),
	}, "edges": []map[string]any{edge("a", "b", nil), edge("b", "c", nil), edge("c", "d", nil), edge("d", "e", nil), edge("e", "f", nil)}}
	_, details := h.refused(422, "POST", "/api/v1/flows", map[string]any{"name": "bad time", "graph": graph})
	got := byPath(details)
	require.Len(t, got, 6, "%v", got)
	require.Contains(t, got["nodes[0].data.duration"], "negative")
	require.Contains(t, got["nodes[1].data.duration"], "neither a Go duration")
	require.Contains(t, got["nodes[2].data.timezone"], "not an IANA time zone")
	require.Contains(t, got["nodes[3].data.until"], "neither a time")
	require.Contains(t, got["nodes[4].data.duration"], "needs a duration")
	require.Contains(t, got["nodes[5].data.onTimeout"], "one of its outcomes")
}
