package app_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/stitchd/stitchd/callbacks"
)

func TestLinearChain(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	flow := h.createFlow(
		[]map[string]any{wnode(h, "a"), wnode(h, "b"), wnode(h, "c")},
		[]map[string]any{edge("a", "b", nil), edge("b", "c", nil)})
	r := h.startRun(flow, map[string]any{"lead": "ada"})
	require.Equal(t, "running", r.Status)
	require.Equal(t, "pending", r.Nodes["b"].Status)

	da := h.waitDispatch(r.ID, "a", 1)
	require.JSONEq(t, `{"lead":"ada"}`, string(da.Payload.Input), "entry worker gets the run input")
	require.Equal(t, 1, da.Payload.Attempt)
	// Standard Webhooks signature headers, verifiable with the webhook secret.
	secret, err := h.app.Store.WebhookSecret(context.Background())
	require.NoError(t, err)
	require.NoError(t, callbacks.VerifyWebhook(secret, da.Header.Get("webhook-id"), da.Header.Get("webhook-timestamp"),
		da.Header.Get("webhook-signature"), da.Body, time.Now(), 5*time.Minute))
	require.Equal(t, "running", h.run(r.ID).Nodes["a"].Status)

	h.complete(da, `{"score": 7}`)
	db := h.waitDispatch(r.ID, "b", 1)
	require.JSONEq(t, `{"score":7}`, string(db.Payload.Input))
	h.complete(db, `"plain string"`)
	dc := h.waitDispatch(r.ID, "c", 1)
	require.JSONEq(t, `{"b":"plain string"}`, string(dc.Payload.Input), "a non-object output is stored under the upstream id")
	h.complete(dc, `{"done": true}`)

	fin := h.waitRun(r.ID, "completed")
	require.JSONEq(t, `{"done":true}`, string(fin.Output))
	for _, k := range []string{"a", "b", "c"} {
		require.Equal(t, "completed", fin.Nodes[k].Status)
		require.Equal(t, 1, h.dispatchCount(r.ID, k), "node %s dispatched once", k)
	}
}

func TestDiamondJoinFiresOnce(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	flow := h.createFlow(
		[]map[string]any{wnode(h, "a"), wnode(h, "b"), wnode(h, "c"), wnode(h, "d")},
		[]map[string]any{edge("a", "b", nil), edge("a", "c", nil), edge("b", "d", nil), edge("c", "d", nil)})
	r := h.startRun(flow, map[string]any{})
	h.complete(h.waitDispatch(r.ID, "a", 1), `{"from_a": 1}`)
	db, dc := h.waitDispatch(r.ID, "b", 1), h.waitDispatch(r.ID, "c", 1)
	h.complete(db, `{"from_b": 2, "shared": "b"}`)
	require.Equal(t, "pending", h.run(r.ID).Nodes["d"].Status, "d waits for c")
	h.complete(dc, `{"from_c": 3, "shared": "c"}`)
	dd := h.waitDispatch(r.ID, "d", 1)
	require.JSONEq(t, `{"from_b":2,"from_c":3,"shared":"c"}`, string(dd.Payload.Input), "merged in edge order, later edges win")
	h.complete(dd, `{}`)
	h.waitRun(r.ID, "completed")
	require.Equal(t, 1, h.dispatchCount(r.ID, "d"))
}

func TestUXGateBetweenWorkers(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	flow := h.createFlow(
		[]map[string]any{wnode(h, "a"), node("approve", "ux", map[string]any{"label": "Approve", "prompt": "Ship it?"}), wnode(h, "b")},
		[]map[string]any{edge("a", "approve", nil), edge("approve", "b", nil)})
	r := h.startRun(flow, map[string]any{})
	h.complete(h.waitDispatch(r.ID, "a", 1), `{"draft": "v1"}`)
	n := h.waitNode(r.ID, "approve", "waiting_for_user")
	require.JSONEq(t, `{"draft":"v1"}`, string(n.Input))

	var ap struct {
		Approvals []struct {
			RunID  string          `json:"run_id"`
			Key    string          `json:"key"`
			Label  string          `json:"label"`
			Prompt string          `json:"prompt"`
			Input  json.RawMessage `json:"input"`
		} `json:"approvals"`
	}
	require.Equal(t, 200, h.do("GET", "/api/v1/approvals", nil, &ap))
	require.Len(t, ap.Approvals, 1)
	require.Equal(t, "approve", ap.Approvals[0].Key)
	require.Equal(t, "Ship it?", ap.Approvals[0].Prompt)
	require.Equal(t, "Approve", ap.Approvals[0].Label)

	// Completing a worker node through the UX endpoint is a 400.
	var e map[string]any
	require.Equal(t, 400, h.do("POST", "/api/v1/runs/"+r.ID+"/nodes/a/complete", map[string]any{"status": "completed"}, &e))
	require.Equal(t, 400, h.do("POST", "/api/v1/runs/"+r.ID+"/nodes/b/complete", map[string]any{"status": "completed"}, nil),
		"b is a pending Worker: not a UX node")
	require.Equal(t, 200, h.do("POST", "/api/v1/runs/"+r.ID+"/nodes/approve/complete",
		map[string]any{"status": "completed", "output": map[string]any{"approved": true}}, nil))
	db := h.waitDispatch(r.ID, "b", 1)
	var in struct {
		Draft    string `json:"draft"`
		Decision struct {
			Outcome string          `json:"outcome"`
			Answer  json.RawMessage `json:"answer"`
		} `json:"decision"`
	}
	require.NoError(t, json.Unmarshal(db.Payload.Input, &in))
	require.Equal(t, "v1", in.Draft, "the next node sees the UX node's input")
	require.Equal(t, "approve", in.Decision.Outcome)
	require.JSONEq(t, `{"approved":true}`, string(in.Decision.Answer), "and the person's answer")
	h.complete(db, `{}`)
	h.waitRun(r.ID, "completed")
	require.Equal(t, 200, h.do("GET", "/api/v1/approvals", nil, &ap))
	require.Empty(t, ap.Approvals)
}

func TestUXCompleteConflicts(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	flow := h.createFlow(
		[]map[string]any{node("u1", "UX", nil), node("u2", "UX", nil)},
		[]map[string]any{edge("u1", "u2", nil)})
	r := h.startRun(flow, map[string]any{"x": 1})
	require.Equal(t, "waiting_for_user", r.Nodes["u1"].Status)
	// u2 is pending, not waiting: 409, nothing changes.
	require.Equal(t, 409, h.do("POST", "/api/v1/runs/"+r.ID+"/nodes/u2/complete", map[string]any{"status": "completed"}, nil))
	require.Equal(t, "pending", h.run(r.ID).Nodes["u2"].Status)
	require.Equal(t, 200, h.do("POST", "/api/v1/runs/"+r.ID+"/nodes/u1/complete", map[string]any{"status": "completed", "output": map[string]any{"ok": true}}, nil))
	require.Equal(t, 409, h.do("POST", "/api/v1/runs/"+r.ID+"/nodes/u1/complete", map[string]any{"status": "completed", "output": map[string]any{"ok": true}}, nil))
	got := h.run(r.ID)
	require.Equal(t, "waiting_for_user", got.Nodes["u2"].Status)
	var in struct {
		X        int `json:"x"`
		Decision struct {
			Answer json.RawMessage `json:"answer"`
		} `json:"decision"`
	}
	require.NoError(t, json.Unmarshal(got.Nodes["u2"].Input, &in))
	require.Equal(t, 1, in.X)
	require.JSONEq(t, `{"ok":true}`, string(in.Decision.Answer), "the first answer stands")
	require.Equal(t, 400, h.do("POST", "/api/v1/runs/"+r.ID+"/nodes/u2/complete", map[string]any{"status": "maybe"}, nil))
	require.Equal(t, 404, h.do("POST", "/api/v1/runs/"+r.ID+"/nodes/nope/complete", map[string]any{"status": "completed"}, nil))
	require.Equal(t, 200, h.do("POST", "/api/v1/runs/"+r.ID+"/nodes/u2/complete", map[string]any{"status": "failed", "error": "no"}, nil))
	fin := h.waitRun(r.ID, "failed")
	require.Contains(t, *fin.Error, "no")
}

func TestFailureThenManualRetry(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	flow := h.createFlow([]map[string]any{wnode(h, "a"), wnode(h, "b")}, []map[string]any{edge("a", "b", nil)})
	r := h.startRun(flow, map[string]any{"n": 1})
	d1 := h.waitDispatch(r.ID, "a", 1)
	code, body := h.post(d1.Payload.CallbackURL, `{"status":"failed","error":"upstream API down"}`)
	require.Equal(t, 200, code, body)
	fin := h.waitRun(r.ID, "failed")
	require.Equal(t, "failed", fin.Nodes["a"].Status)
	require.Equal(t, "upstream API down", *fin.Nodes["a"].Error)
	require.Contains(t, *fin.Error, "upstream API down")
	// Identical repeat of the failure: 200, no change.
	code, _ = h.post(d1.Payload.CallbackURL, `{"status":"failed","error":"upstream API down"}`)
	require.Equal(t, 200, code)
	// Retrying a node that is not failed is a 409.
	require.Equal(t, 409, h.do("POST", "/api/v1/runs/"+r.ID+"/nodes/b/retry", nil, nil))

	var rr runJSON
	require.Equal(t, 200, h.do("POST", "/api/v1/runs/"+r.ID+"/nodes/a/retry", nil, &rr))
	require.Equal(t, "running", rr.Status, "a retry moves the run back to running")
	require.Equal(t, "running", rr.Nodes["a"].Status)
	require.Equal(t, 2, rr.Nodes["a"].Attempt)
	d2 := h.waitDispatch(r.ID, "a", 2)
	require.JSONEq(t, `{"n":1}`, string(d2.Payload.Input))
	require.NotEqual(t, d1.Payload.CallbackURL, d2.Payload.CallbackURL)
	// The old attempt's callback is stale now.
	code, _ = h.post(d1.Payload.CallbackURL, `{"status":"completed","output":{}}`)
	require.Equal(t, 409, code)
	h.complete(d2, `{"ok": 1}`)
	h.complete(h.waitDispatch(r.ID, "b", 1), `{"ok": 2}`)
	fin = h.waitRun(r.ID, "completed")
	require.Nil(t, fin.Error)
}

func TestAutomaticRetryPerPolicy(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	n := wnode(h, "a")
	as[map[string]any](t, n["data"])["retry"] = map[string]any{"maxAttempts": 3, "initialDelayMs": 1, "maxDelayMs": 5}
	flow := h.createFlow([]map[string]any{n}, nil)
	r := h.startRun(flow, map[string]any{})
	for attempt := 1; attempt <= 3; attempt++ {
		d := h.waitDispatch(r.ID, "a", attempt)
		code, _ := h.post(d.Payload.CallbackURL, `{"status":"failed","error":"boom `+strconv.Itoa(attempt)+`"}`)
		require.Equal(t, 200, code)
	}
	fin := h.waitRun(r.ID, "failed")
	require.Equal(t, 3, fin.Nodes["a"].Attempt)
	require.Equal(t, "boom 3", *fin.Nodes["a"].Error)
}

func TestCancelMidRun(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	flow := h.createFlow([]map[string]any{wnode(h, "a"), wnode(h, "b")}, []map[string]any{edge("a", "b", nil)})
	r := h.startRun(flow, map[string]any{})
	d := h.waitDispatch(r.ID, "a", 1)
	var c runJSON
	require.Equal(t, 200, h.do("POST", "/api/v1/runs/"+r.ID+"/cancel", nil, &c))
	require.Equal(t, "cancelled", c.Status)
	require.Equal(t, "cancelled", c.Nodes["a"].Status)
	require.Equal(t, "cancelled", c.Nodes["b"].Status)
	code, _ := h.post(d.Payload.CallbackURL, `{"status":"completed","output":{}}`)
	require.Equal(t, 409, code, "a callback for a cancelled node is a conflict")
	require.Equal(t, 409, h.do("POST", "/api/v1/runs/"+r.ID+"/cancel", nil, nil))
	require.Equal(t, 409, h.do("POST", "/api/v1/runs/"+r.ID+"/nodes/a/retry", nil, nil))
	require.Equal(t, "cancelled", h.run(r.ID).Status)
	require.Equal(t, 0, h.dispatchCount(r.ID, "b"))
}

func TestEdgeMappings(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	flow := h.createFlow(
		[]map[string]any{wnode(h, "a"), wnode(h, "b"), wnode(h, "c")},
		[]map[string]any{
			edge("a", "c", map[string]string{"name": "person.name", "all": "@this", "second": "tags.1", "missing": "nope.nope"}),
			edge("b", "c", nil),
		})
	r := h.startRun(flow, map[string]any{})
	h.complete(h.waitDispatch(r.ID, "a", 1), `{"person":{"name":"Ada"},"tags":["x","y"]}`)
	h.complete(h.waitDispatch(r.ID, "b", 1), `{"fromB":true}`)
	dc := h.waitDispatch(r.ID, "c", 1)
	require.JSONEq(t, `{"name":"Ada","all":{"person":{"name":"Ada"},"tags":["x","y"]},"second":"y","fromB":true}`, string(dc.Payload.Input))
	h.complete(dc, `1`)
	fin := h.waitRun(r.ID, "completed")
	require.JSONEq(t, `1`, string(fin.Output))
}

func TestCallbackConflicts(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	flow := h.createFlow([]map[string]any{wnode(h, "a"), wnode(h, "b")}, []map[string]any{edge("a", "b", nil)})
	r := h.startRun(flow, map[string]any{})
	d := h.waitDispatch(r.ID, "a", 1)

	// A callback for a pending node (b), with a valid token: 409.
	code, _ := h.post(h.mint(r.ID, "b", 1, time.Now().Add(time.Hour)), `{"status":"completed","output":{}}`)
	require.Equal(t, 409, code)
	// Malformed and invalid bodies: 400.
	for _, b := range []string{`{`, `[]`, `{"status":"done"}`, ``, `{"status":"completed"} x`} {
		code, _ = h.post(d.Payload.CallbackURL, b)
		require.Equal(t, 400, code, "body %q", b)
	}
	// Bad, tampered and expired tokens: 401.
	code, _ = h.post(h.app.URL+"/callbacks/not-a-token", `{"status":"completed"}`)
	require.Equal(t, 401, code)
	code, _ = h.post(d.Payload.CallbackURL+"x", `{"status":"completed"}`)
	require.Equal(t, 401, code)
	code, _ = h.post(h.mint(r.ID, "a", 1, time.Now().Add(-time.Second)), `{"status":"completed"}`)
	require.Equal(t, 401, code)
	require.Equal(t, "running", h.run(r.ID).Nodes["a"].Status, "nothing changed")

	// Heartbeat: 200, still running.
	code, _ = h.post(d.Payload.CallbackURL, `{"status":"running","progress":{"pct":50}}`)
	require.Equal(t, 200, code)
	h.complete(d, `{"v":1}`)
	// Identical repeat: 200; conflicting repeat: 409; nothing changes twice.
	code, _ = h.post(d.Payload.CallbackURL, `{"status":"completed","output":{"v":1}}`)
	require.Equal(t, 200, code)
	code, _ = h.post(d.Payload.CallbackURL, `{"status":"completed","output":{"v":2}}`)
	require.Equal(t, 409, code)
	code, _ = h.post(d.Payload.CallbackURL, `{"status":"failed","error":"late"}`)
	require.Equal(t, 409, code)
	code, _ = h.post(d.Payload.CallbackURL, `{"status":"running"}`)
	require.Equal(t, 409, code, "heartbeat for a completed node")
	got := h.run(r.ID)
	require.JSONEq(t, `{"v":1}`, string(got.Nodes["a"].Output))
	h.waitDispatch(r.ID, "b", 1)
	require.Equal(t, 1, h.dispatchCount(r.ID, "b"))
	// The repeats' count-down of b (sent with their compare-and-set) was
	// rolled back with them.
	var pending int
	require.NoError(t, h.app.Store.Gorm().Raw(`SELECT pending_parents FROM node_states WHERE run_id = ? AND key = 'b'`,
		r.ID).Row().Scan(&pending))
	require.Equal(t, 0, pending)
}

func TestWorkerRejectsDispatch(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.worker.SetStatus(500)
	flow := h.createFlow([]map[string]any{wnode(h, "a")}, nil)
	r := h.startRun(flow, map[string]any{})
	fin := h.waitRun(r.ID, "failed")
	require.Contains(t, *fin.Nodes["a"].Error, "worker answered 500")
}

func TestUnreachableWorker(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	n := node("a", "Worker", map[string]any{"webhookUrl": "http://127.0.0.1:1/nothing", "retry": map[string]any{"maxAttempts": 1},
		"delivery": map[string]any{"maxTries": 1}})
	flow := h.createFlow([]map[string]any{n}, nil)
	r := h.startRun(flow, map[string]any{})
	fin := h.waitRun(r.ID, "failed")
	require.Contains(t, *fin.Nodes["a"].Error, "unreachable")
}

// TestJoinOf100ConcurrentCallbacks: 100 entry workers feed one join; their
// callbacks arrive at once; the join must fire exactly once. 50 trials.
func TestJoinOf100ConcurrentCallbacks(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	const width, trials = 100, 50
	nodes := []map[string]any{node("join", "UX", nil)}
	var edges []map[string]any
	for i := 0; i < width; i++ {
		id := fmt.Sprintf("w%03d", i)
		nodes = append(nodes, wnode(h, id))
		edges = append(edges, edge(id, "join", nil))
	}
	flow := h.createFlow(nodes, edges)
	var wg sync.WaitGroup
	sem := make(chan struct{}, 5)
	for trial := 0; trial < trials; trial++ {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			r := h.startRun(flow, map[string]any{})
			var ds []dispatch
			for i := 0; i < width; i++ {
				ds = append(ds, h.waitDispatch(r.ID, fmt.Sprintf("w%03d", i), 1))
			}
			start := make(chan struct{})
			var cw sync.WaitGroup
			codes := make([]int, width)
			for i, d := range ds {
				cw.Add(1)
				go func() {
					defer cw.Done()
					<-start
					codes[i], _ = h.post(d.Payload.CallbackURL, fmt.Sprintf(`{"status":"completed","output":{"k%03d":%d}}`, i, i))
				}()
			}
			close(start)
			cw.Wait()
			// assert and return, not require: this is not the test's
			// goroutine.
			for i, c := range codes {
				if !assert.Equal(t, 200, c, "callback %d", i) {
					return
				}
			}
			j := h.waitNode(r.ID, "join", "waiting_for_user")
			if !assert.Equal(t, 1, j.Attempt, "the join fired exactly once") {
				return
			}
			var in map[string]int
			if !assert.NoError(t, json.Unmarshal(j.Input, &in)) || !assert.Len(t, in, width, "every upstream output merged") {
				return
			}
			var n int
			if !assert.NoError(t, h.app.Store.Gorm().Raw(`SELECT count(*) FROM run_events WHERE run_id = ? AND key = 'join'
				AND payload->>'status' = 'waiting_for_user'`, r.ID).Row().Scan(&n)) {
				return
			}
			assert.Equal(t, 1, n, "one waiting_for_user event for the join")
		}()
	}
	wg.Wait()
}

func TestRunOutputWithSeveralTerminals(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	flow := h.createFlow([]map[string]any{wnode(h, "a"), wnode(h, "b"), wnode(h, "c")},
		[]map[string]any{edge("a", "b", nil), edge("a", "c", nil)})
	r := h.startRun(flow, map[string]any{})
	h.complete(h.waitDispatch(r.ID, "a", 1), `{}`)
	h.complete(h.waitDispatch(r.ID, "b", 1), `{"b":1}`)
	h.complete(h.waitDispatch(r.ID, "c", 1), `[1,2]`)
	fin := h.waitRun(r.ID, "completed")
	require.JSONEq(t, `{"b":{"b":1},"c":[1,2]}`, string(fin.Output))
}

func TestIdempotentStartAndPinnedVersion(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	flow := h.createFlow([]map[string]any{node("u", "UX", nil)}, nil)
	var v2 map[string]any
	require.Equal(t, 200, h.do("PUT", "/api/v1/flows/"+flow, map[string]any{"graph": map[string]any{
		"nodes": []map[string]any{node("u", "UX", nil), node("u2", "UX", nil)},
		"edges": []map[string]any{edge("u", "u2", nil)}}}, &v2))
	var r1 runJSON
	require.Equal(t, 201, h.do("POST", "/api/v1/flows/"+flow+"/runs", map[string]any{"version": 1}, &r1))
	require.Len(t, r1.Nodes, 1, "pinned to version 1")
	var r2 runJSON
	require.Equal(t, 201, h.do("POST", "/api/v1/flows/"+flow+"/runs", map[string]any{}, &r2))
	require.Len(t, r2.Nodes, 2, "current version 2")
	require.Equal(t, 400, h.do("POST", "/api/v1/flows/"+flow+"/runs", map[string]any{"version": 9}, nil))
}

// TestConcurrentDuplicateAndConflictingCallbacks sends 40 callbacks for one
// node at once — half with one output, half with another — so that they
// share group-commit batches: one output wins, its repeats get 200, the
// others 409, and the node completes exactly once.
func TestConcurrentDuplicateAndConflictingCallbacks(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	flow := h.createFlow([]map[string]any{wnode(h, "a"), wnode(h, "b")}, []map[string]any{edge("a", "b", nil)})
	for trial := 0; trial < 5; trial++ {
		r := h.startRun(flow, map[string]any{})
		d := h.waitDispatch(r.ID, "a", 1)
		start := make(chan struct{})
		codes := make([]int, 40)
		var wg sync.WaitGroup
		for i := range codes {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				codes[i], _ = h.post(d.Payload.CallbackURL, fmt.Sprintf(`{"status":"completed","output":{"v":%d}}`, i%2))
			}()
		}
		close(start)
		wg.Wait()
		got := h.run(r.ID).Nodes["a"]
		var out struct {
			V int `json:"v"`
		}
		require.NoError(t, json.Unmarshal(got.Output, &out))
		for i, c := range codes {
			if i%2 == out.V {
				require.Equal(t, 200, c, "callback %d repeats the winner", i)
			} else {
				require.Equal(t, 409, c, "callback %d conflicts with the winner", i)
			}
		}
		var completions int
		require.NoError(t, h.app.Store.Gorm().Raw(`SELECT count(*) FROM run_events WHERE run_id = ? AND key = 'a'
			AND payload->>'status' = 'completed'`, r.ID).Row().Scan(&completions))
		require.Equal(t, 1, completions)
		h.waitDispatch(r.ID, "b", 1)
		require.Equal(t, 1, h.dispatchCount(r.ID, "b"))
	}
}
