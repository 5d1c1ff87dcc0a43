package app_test

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/stitchd/stitchd/internal/testkit"
)

type postedEvent struct {
	ID        string `json:"id"`
	Delivered int    `json:"delivered"`
	Duplicate bool   `json:"duplicate"`
	Kept      bool   `json:"kept"`
}

func (h *harness) postEvent(body map[string]any) postedEvent {
	h.t.Helper()
	var out postedEvent
	require.Equal(h.t, 202, h.do("POST", "/api/v1/events", body, &out))
	return out
}

func paymentFlow(h *harness, extra map[string]any) string {
	data := map[string]any{"event": "payment.received", "key": "input.order_id"}
	for k, v := range extra {
		data[k] = v
	}
	return h.createFlow([]map[string]any{node("pay", "Event", data), node("ship", "Condition", nil)},
		[]map[string]any{edge("pay", "ship", nil)})
}

func TestEventsWake1000RunsOnce(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	flow := paymentFlow(h, nil)
	const n = 1000
	ids := make([]string, n)
	parallel := func(work func(i int)) {
		var wg sync.WaitGroup
		next := make(chan int)
		for w := 0; w < 16; w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range next {
					work(i)
				}
			}()
		}
		for i := 0; i < n; i++ {
			next <- i
		}
		close(next)
		wg.Wait()
	}
	parallel(func(i int) {
		var raw json.RawMessage
		if code := h.do("POST", "/api/v1/flows/"+flow+"/runs", map[string]any{"input": map[string]any{"order_id": i}}, &raw); code != 201 {
			t.Errorf("start %d: %d %s", i, code, raw)
			return
		}
		var r runJSON
		if err := json.Unmarshal(raw, &r); err != nil {
			t.Errorf("start %d: %v in %s", i, err, raw)
			return
		}
		if r.Nodes["pay"].Status != "waiting_for_event" {
			t.Errorf("run %d: pay is %s", i, r.Nodes["pay"].Status)
		}
		ids[i] = r.ID
	})
	require.False(t, t.Failed())
	delivered := make([]int, n)
	parallel(func(i int) {
		var out postedEvent
		if code := h.do("POST", "/api/v1/events", map[string]any{"name": "payment.received", "key": strconv.Itoa(i),
			"payload": map[string]any{"paid": i}}, &out); code != 202 {
			t.Errorf("post %d: %d", i, code)
		}
		delivered[i] = out.Delivered
	})
	require.False(t, t.Failed())
	for i := range ids {
		require.Equal(t, 1, delivered[i], "event %d woke its run", i)
	}
	// Every run completed with its own event's payload: read in one query
	// (a thousand runs' answers, each checked against the contract, were
	// most of this test's time).
	var done int
	h.eventually(func() bool {
		require.NoError(t, h.app.Store.Gorm().Raw(`SELECT count(*) FROM runs WHERE id IN ? AND status = 'completed'`,
			ids).Row().Scan(&done))
		return done == n
	}, "%d runs completed (%s are)", n, testkit.Later(func() string { return strconv.Itoa(done) }))
	var outs []struct {
		RunID  string
		Output string
	}
	require.NoError(t, h.app.Store.Gorm().Raw(`SELECT run_id, output::text AS output FROM node_states WHERE run_id IN ? AND key = 'pay'`,
		ids).Scan(&outs).Error)
	require.Len(t, outs, n)
	index := make(map[string]int, n)
	for i, id := range ids {
		index[id] = i
	}
	for _, o := range outs {
		require.JSONEq(t, fmt.Sprintf(`{"paid": %d}`, index[o.RunID]), o.Output, "run %s", o.RunID)
	}
	var woken, runs int
	require.NoError(t, h.app.Store.Gorm().Raw(`SELECT count(*), count(DISTINCT run_id) FROM run_events WHERE type = 'node.event_received'`).
		Row().Scan(&woken, &runs))
	require.Equal(t, n, woken, "each run woken once")
	require.Equal(t, n, runs)
}

func TestEventBeforeWaitAndRepeatedID(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	flow := paymentFlow(h, nil)
	// The event comes first: kept, and taken by the wait when it begins.
	early := h.postEvent(map[string]any{"name": "payment.received", "key": "early", "payload": map[string]any{"paid": true}, "id": "pay-early"})
	require.Equal(t, 0, early.Delivered)
	require.True(t, early.Kept)
	r := h.startRun(flow, map[string]any{"order_id": "early"})
	require.Equal(t, "completed", r.Status, "the early event completes the wait at once")
	require.JSONEq(t, `{"paid": true}`, string(r.Nodes["pay"].Output))
	// It was taken: a second wait on the key waits.
	r2 := h.startRun(flow, map[string]any{"order_id": "early"})
	require.Equal(t, "waiting_for_event", r2.Nodes["pay"].Status)
	// A repeated id delivers nothing twice.
	again := h.postEvent(map[string]any{"name": "payment.received", "key": "early", "payload": map[string]any{"paid": 2}, "id": "pay-early"})
	require.True(t, again.Duplicate)
	require.Equal(t, 0, again.Delivered)
	require.Equal(t, "waiting_for_event", h.run(r2.ID).Nodes["pay"].Status)
	first := h.postEvent(map[string]any{"name": "payment.received", "key": "early", "payload": map[string]any{"paid": 3}, "id": "pay-2"})
	require.Equal(t, 1, first.Delivered)
	require.False(t, first.Kept)
	repeat := h.postEvent(map[string]any{"name": "payment.received", "key": "early", "payload": map[string]any{"paid": 3}, "id": "pay-2"})
	require.True(t, repeat.Duplicate)
	fin := h.waitRun(r2.ID, "completed")
	require.JSONEq(t, `{"paid": 3}`, string(fin.Nodes["pay"].Output))
	// A wait can be completed by hand.
	r4 := h.startRun(flow, map[string]any{"order_id": "never"})
	require.Equal(t, 200, h.do("POST", "/api/v1/runs/"+r4.ID+"/nodes/pay/skip", map[string]any{"output": map[string]any{"paid": "by hand"}}, nil))
	require.JSONEq(t, `{"paid": "by hand"}`, string(h.waitRun(r4.ID, "completed").Nodes["pay"].Output))
	// A numeric key reads as its digits; an expired event is not taken.
	h.postEvent(map[string]any{"name": "payment.received", "key": "77", "ttlSeconds": 0})
	r3 := h.startRun(flow, map[string]any{"order_id": 77})
	require.Equal(t, "waiting_for_event", r3.Nodes["pay"].Status)
	require.Equal(t, 1, h.postEvent(map[string]any{"name": "payment.received", "key": "77"}).Delivered)
	require.JSONEq(t, `null`, string(h.waitRun(r3.ID, "completed").Nodes["pay"].Output))
}

func TestEventTimeoutAndLeftDeliveries(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	flow := h.createFlow([]map[string]any{node("pay", "Event", map[string]any{"event": "payment.received", "key": "input.order_id",
		"timeoutSeconds": 1, "onTimeout": "fail"}), node("remind", "Condition", nil), node("ship", "Condition", nil)},
		[]map[string]any{redge("pay", "remind", map[string]any{"on": "failure"}), edge("pay", "ship", nil)})
	r := h.startRun(flow, map[string]any{"order_id": "slow"})
	fin := h.waitRun(r.ID, "completed")
	require.Equal(t, "failed", fin.Nodes["pay"].Status)
	require.Contains(t, *fin.Nodes["pay"].Error, `no event payment.received with key "slow" arrived in time`)
	require.Equal(t, "completed", fin.Nodes["remind"].Status, "the timeout is routable")
	require.Equal(t, "skipped", fin.Nodes["ship"].Status)

	// A process stopped between storing an event and delivering it: the
	// stored delivery is made by a sweeper.
	wait := paymentFlow(h, nil)
	r = h.startRun(wait, map[string]any{"order_id": "left"})
	require.NoError(t, h.app.Store.Gorm().Exec(`INSERT INTO events (id, name, key, payload, expires_at, consumed_at, delivered)
		VALUES ('left-1', 'payment.received', 'left', '{"paid": "late"}', now() + interval '1 day', now(), 1)`).Error)
	require.NoError(t, h.app.Store.Gorm().Exec(`INSERT INTO event_deliveries (event_id, run_id, key, attempt, created_at)
		VALUES ('left-1', ?, 'pay', 1, now() - interval '10 seconds')`, r.ID).Error)
	fin = h.waitRun(r.ID, "completed")
	require.JSONEq(t, `{"paid": "late"}`, string(fin.Nodes["pay"].Output))
	var left int
	require.NoError(t, h.app.Store.Gorm().Raw(`SELECT count(*) FROM event_deliveries`).Row().Scan(&left))
	require.Zero(t, left)
}

func TestEventBadInput(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	for _, body := range []map[string]any{
		{"name": "", "key": "1"},
		{"name": "x"},
		{"name": "x", "key": ""},
		{"name": "x", "key": 42},
		{"name": "x", "key": "1", "ttlSeconds": -1},
		{"name": "x", "key": "1", "id": strings.Repeat("i", 300)},
	} {
		require.Equal(t, 400, h.do("POST", "/api/v1/events", body, nil), "%v", body)
	}
	big := `{"name":"x","key":"1","payload":"` + strings.Repeat("p", 2<<20) + `"}`
	require.Equal(t, 413, h.do("POST", "/api/v1/events", json.RawMessage(big), nil), "a payload over the body limit")
	_, details := h.refused(422, "POST", "/api/v1/flows", map[string]any{"name": "bad event", "graph": map[string]any{
		"nodes": []map[string]any{node("a", "Event", map[string]any{"event": ""}), node("b", "Event", map[string]any{"event": "x", "key": "output.id"})},
		"edges": []map[string]any{edge("a", "b", nil)}}})
	paths := []string{}
	for _, d := range details {
		paths = append(paths, d.Path)
	}
	require.ElementsMatch(t, []string{"nodes[0].data.event", "nodes[0].data.key", "nodes[1].data.key"}, paths)
}

func TestEventTriggers(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	flow := h.createFlow([]map[string]any{node("greet", "Transform", map[string]any{"expression": `{"hello": input.name}`})}, nil)
	var trig struct {
		ID      string `json:"id"`
		Kind    string `json:"kind"`
		Enabled bool   `json:"enabled"`
	}
	require.Equal(t, 201, h.do("POST", "/api/v1/flows/"+flow+"/triggers", map[string]any{"kind": "event", "name": "lead.created"}, &trig))
	require.Equal(t, "event", trig.Kind)
	require.True(t, trig.Enabled)
	type started struct {
		Started   []string `json:"started"`
		Duplicate bool     `json:"duplicate"`
	}
	var first, again started
	body := map[string]any{"name": "lead.created", "key": "ada@example.com", "payload": map[string]any{"name": "ada"}, "id": "lead-1"}
	require.Equal(t, 202, h.do("POST", "/api/v1/events", body, &first))
	require.Len(t, first.Started, 1)
	fin := h.waitRun(first.Started[0], "completed")
	require.JSONEq(t, `{"hello": "ada"}`, string(fin.Output))
	require.Equal(t, 202, h.do("POST", "/api/v1/events", body, &again))
	require.True(t, again.Duplicate)
	require.Equal(t, first.Started, again.Started, "a repeated event starts no second run")

	require.Equal(t, 200, h.do("PATCH", "/api/v1/triggers/"+trig.ID, map[string]any{"enabled": false}, nil))
	var off started
	require.Equal(t, 202, h.do("POST", "/api/v1/events", map[string]any{"name": "lead.created", "key": "bob"}, &off))
	require.Empty(t, off.Started, "a disabled trigger starts nothing")
	var list struct {
		Triggers []map[string]any `json:"triggers"`
	}
	require.Equal(t, 200, h.do("GET", "/api/v1/flows/"+flow+"/triggers", nil, &list))
	require.Len(t, list.Triggers, 1)
	require.Equal(t, "lead.created", list.Triggers[0]["name"])
	require.Equal(t, 204, h.do("DELETE", "/api/v1/triggers/"+trig.ID, nil, nil))
	require.Equal(t, 400, h.do("POST", "/api/v1/flows/"+flow+"/triggers", map[string]any{"kind": "event", "name": " "}, nil))
	require.Equal(t, 404, h.do("PATCH", "/api/v1/triggers/"+trig.ID, map[string]any{"enabled": true}, nil), "deleted")
}
