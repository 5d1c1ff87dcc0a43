package app_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stitchd/stitchd/internal/broker/brokertest"
)

// listedFlow is a flow as GET /api/v1/flows lists it.
type listedFlow struct {
	ID              string         `json:"id"`
	Name            string         `json:"name"`
	RunCounts       map[string]int `json:"run_counts"`
	RunCountsCapped []string       `json:"run_counts_capped"`
	Triggers        map[string]int `json:"triggers"`
}

// listed finds a flow in the flows list (every page), or nil.
func (h *harness) listed(flowID, query string) *listedFlow {
	h.t.Helper()
	cursor := ""
	for {
		var page struct {
			Flows      []listedFlow `json:"flows"`
			NextCursor *string      `json:"next_cursor"`
		}
		path := "/api/v1/flows?" + query
		if cursor != "" {
			path += "&cursor=" + cursor
		}
		require.Equal(h.t, 200, h.do("GET", path, nil, &page))
		for i := range page.Flows {
			if page.Flows[i].ID == flowID {
				return &page.Flows[i]
			}
		}
		if page.NextCursor == nil {
			return nil
		}
		cursor = *page.NextCursor
	}
}

func (h *harness) failDispatch(d dispatch) {
	h.t.Helper()
	code, body := h.post(d.Payload.CallbackURL, `{"status":"failed","error":"no"}`)
	require.Equal(h.t, 200, code, body)
}

// TestFlowListCountsRunsAndTriggers: the flows list counts each flow's
// runs by status and its triggers by kind, for every flow of the page;
// counts=false leaves them out, a bad counts is 400, and a count stops at
// the cap, saying so.
func TestFlowListCountsRunsAndTriggers(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	board := h.createBoard("new", "done")
	flow := h.entityFlow(board, "")
	quiet := h.createFlow([]map[string]any{node("t", "Transform", map[string]any{"expression": `{"n": 1}`})}, nil)
	ada, bob, cy, di := h.newEntity(board, "Ada"), h.newEntity(board, "Bob"), h.newEntity(board, "Cy"), h.newEntity(board, "Di")

	_, running := h.startFor(flow, ada)
	_, queued := h.startFor(flow, ada)
	require.Equal(t, "queued", queued.Status)
	_, done := h.startFor(flow, bob)
	h.complete(h.waitDispatch(done.ID, "w", 1), `{}`)
	h.waitRun(done.ID, "completed")
	_, failed := h.startFor(flow, cy)
	h.failDispatch(h.waitDispatch(failed.ID, "w", 1))
	h.waitRun(failed.ID, "failed")
	_, paused := h.startFor(flow, di)
	require.Equal(t, 200, h.do("POST", "/api/v1/runs/"+paused.ID+"/pause", nil, nil))
	_, cancelled := h.startFor(flow, di)
	require.Equal(t, "queued", cancelled.Status)
	require.Equal(t, 200, h.do("POST", "/api/v1/runs/"+cancelled.ID+"/cancel", nil, nil))
	h.waitDispatch(running.ID, "w", 1)

	require.Equal(t, 201, h.do("POST", "/api/v1/flows/"+flow+"/triggers", map[string]any{"slug": "counted"}, nil))
	require.Equal(t, 201, h.do("POST", "/api/v1/flows/"+flow+"/triggers", map[string]any{"slug": "counted-2"}, nil))
	require.Equal(t, 201, h.do("POST", "/api/v1/flows/"+flow+"/triggers", map[string]any{"kind": "schedule", "cron": "0 9 * * *", "enabled": false}, nil))
	require.Equal(t, 201, h.do("POST", "/api/v1/flows/"+flow+"/triggers", map[string]any{"kind": "event", "name": "lead.counted"}, nil))
	require.Equal(t, 201, h.do("POST", "/api/v1/flows/"+flow+"/triggers", map[string]any{"kind": "nats", "url": "nats://127.0.0.1:1",
		"subject": "counted.x", "enabled": false}, nil))
	require.Equal(t, 201, h.do("POST", "/api/v1/flows/"+flow+"/triggers", map[string]any{"kind": "amqp", "url": "amqp://127.0.0.1:1/",
		"queue": "counted", "enabled": false}, nil))

	got := h.listed(flow, "")
	require.NotNil(t, got)
	require.Equal(t, map[string]int{"running": 1, "queued": 1, "paused": 1, "failed": 1, "completed": 1, "cancelled": 1}, got.RunCounts)
	require.Empty(t, got.RunCountsCapped)
	require.Equal(t, map[string]int{"webhook": 2, "schedule": 1, "event": 1, "nats": 1, "amqp": 1}, got.Triggers)
	other := h.listed(quiet, "")
	require.Equal(t, map[string]int{"running": 0, "queued": 0, "paused": 0, "failed": 0, "completed": 0, "cancelled": 0}, other.RunCounts)
	require.Equal(t, map[string]int{"webhook": 0, "schedule": 0, "event": 0, "nats": 0, "amqp": 0}, other.Triggers)
	// One flow a page: each page counts its own.
	require.Equal(t, got.RunCounts, h.listed(flow, "limit=1").RunCounts)

	bare := h.listed(flow, "counts=false")
	require.Nil(t, bare.RunCounts)
	require.Nil(t, bare.Triggers)
	code, _ := h.refused(400, "GET", "/api/v1/flows?counts=maybe", nil)
	require.Equal(t, "invalid_request", code)

	// Past the cap a count stops, and says so.
	require.NoError(t, h.app.Store.Gorm().Exec(`INSERT INTO runs (id, flow_id, flow_version_id, status, trigger, input, finished_at)
		SELECT gen_random_uuid(), r.flow_id, r.flow_version_id, 'completed', '{}', '{}', now()
		FROM runs r, generate_series(1, 10000) WHERE r.id = ?`, done.ID).Error)
	got = h.listed(flow, "")
	require.Equal(t, 10000, got.RunCounts["completed"])
	require.Equal(t, []string{"completed"}, got.RunCountsCapped)
	require.Equal(t, 1, got.RunCounts["running"])
}

// TestFlowDeleteWithRunsGoing: a flow with runs running, paused or queued
// is not deleted (409 flow_busy counting them; nothing changes) unless
// cancel_runs=true, which cancels them — for a role that may cancel runs
// — and deletes; bad input changes nothing; the runs stay for history.
func TestFlowDeleteWithRunsGoing(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	board := h.createBoard("new", "done")
	flow := h.entityFlow(board, "")
	ada, bob := h.newEntity(board, "Ada"), h.newEntity(board, "Bob")
	_, running := h.startFor(flow, ada)
	_, queued := h.startFor(flow, ada)
	_, paused := h.startFor(flow, bob)
	require.Equal(t, 200, h.do("POST", "/api/v1/runs/"+paused.ID+"/pause", nil, nil))
	h.waitDispatch(running.ID, "w", 1)

	var busy struct {
		Error struct {
			Code    string         `json:"code"`
			Message string         `json:"message"`
			Details map[string]int `json:"details"`
		} `json:"error"`
	}
	require.Equal(t, 409, h.do("DELETE", "/api/v1/flows/"+flow, nil, &busy))
	require.Equal(t, "flow_busy", busy.Error.Code)
	require.Equal(t, map[string]int{"running": 1, "paused": 1, "queued": 1}, busy.Error.Details)
	require.Contains(t, busy.Error.Message, "3 runs going")

	unchanged := func(what string) {
		t.Helper()
		require.NotNil(t, h.listed(flow, ""), "%s: the flow is still listed", what)
		require.Equal(t, "running", h.run(running.ID).Status, what)
		require.Equal(t, "queued", h.run(queued.ID).Status, what)
		require.Equal(t, "paused", h.run(paused.ID).Status, what)
	}
	unchanged("busy")
	code, _ := h.refused(400, "DELETE", "/api/v1/flows/"+flow+"?cancel_runs=maybe", nil)
	require.Equal(t, "invalid_request", code)
	unchanged("bad cancel_runs")
	require.Equal(t, 404, h.do("DELETE", "/api/v1/flows/not-a-uuid", nil, nil))
	require.Equal(t, 404, h.do("DELETE", "/api/v1/flows/00000000-0000-0000-0000-000000000000?cancel_runs=true", nil, nil))
	// An editor deletes flows but may not cancel runs.
	editor := h.tokenFor("ed@example.com", "editor")
	var refused struct {
		Error struct{ Code string } `json:"error"`
	}
	require.Equal(t, 403, h.doAs(editor, "DELETE", "/api/v1/flows/"+flow+"?cancel_runs=true", nil, &refused))
	require.Equal(t, "forbidden", refused.Error.Code)
	require.Equal(t, 409, h.doAs(editor, "DELETE", "/api/v1/flows/"+flow, nil, nil))
	unchanged("editor")

	require.Equal(t, 204, h.do("DELETE", "/api/v1/flows/"+flow+"?cancel_runs=true", nil, nil))
	require.Nil(t, h.listed(flow, ""), "gone from the list")
	// The audit trail says how many runs the delete cancelled (refusals
	// wrote nothing).
	var audit struct {
		Entries []struct {
			Action  string         `json:"action"`
			Status  int            `json:"status"`
			Details map[string]any `json:"details"`
		} `json:"entries"`
	}
	h.eventually(func() bool {
		require.Equal(t, 200, h.do("GET", "/api/v1/audit?target=flow:"+flow, nil, &audit))
		return len(audit.Entries) > 0
	}, "the delete's audit entry")
	require.Len(t, audit.Entries, 1)
	require.Equal(t, "DELETE /api/v1/flows/:id", audit.Entries[0].Action)
	require.EqualValues(t, 3, audit.Entries[0].Details["cancelled_runs"])
	require.Equal(t, 404, h.do("GET", "/api/v1/flows/"+flow, nil, nil))
	for _, id := range []string{running.ID, queued.ID, paused.ID} {
		require.Equal(t, "cancelled", h.run(id).Status, "run %s", id)
	}
	require.Equal(t, 0, h.runsOf(flow, "running"), "no run of it is left running")
	require.Equal(t, 404, h.do("DELETE", "/api/v1/flows/"+flow+"?cancel_runs=true", nil, nil), "deleted once")
	require.Equal(t, 404, h.do("POST", "/api/v1/flows/"+flow+"/runs", map[string]any{}, nil), "no run of a deleted flow")

	// Finished runs (failed too) do not hold a delete; they stay readable.
	quiet := h.entityFlow(board, "allow")
	_, f := h.startFor(quiet, ada)
	h.failDispatch(h.waitDispatch(f.ID, "w", 1))
	h.waitRun(f.ID, "failed")
	require.Equal(t, 204, h.doAs(editor, "DELETE", "/api/v1/flows/"+quiet, nil, nil))
	require.Equal(t, "failed", h.run(f.ID).Status)
}

// TestDeletedFlowTriggersStartNothing: once a flow is deleted its webhook
// answers 404, an event with its trigger's name starts nothing (while
// another flow's trigger for it still does), its schedule fires no more
// (while another flow's does) and its broker trigger's consumer stops.
func TestDeletedFlowTriggersStartNothing(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	gone := h.transformFlow()
	kept := h.transformFlow()
	require.Equal(t, 201, h.do("POST", "/api/v1/flows/"+gone+"/triggers", map[string]any{"slug": "gone-hook"}, nil))
	for _, f := range []string{gone, kept} {
		require.Equal(t, 201, h.do("POST", "/api/v1/flows/"+f+"/triggers", map[string]any{"kind": "event", "name": "both.heard"}, nil))
		require.Equal(t, 201, h.do("POST", "/api/v1/flows/"+f+"/triggers", map[string]any{"kind": "schedule", "cron": "* * * * * *"}, nil))
	}
	s := brokertest.NewStream(t)
	nats := h.createBrokerTrigger(gone, map[string]any{"kind": "nats", "url": brokertest.NATSURL(), "subject": s.Subject + ".in"})
	h.waitConnected(nats, true)
	code, body := h.post(h.app.URL+"/hooks/gone-hook", `{"n": 1}`)
	require.Equal(t, 202, code, body)

	require.Equal(t, 204, h.do("DELETE", "/api/v1/flows/"+gone+"?cancel_runs=true", nil, nil))
	var before int
	require.NoError(t, h.app.Store.Gorm().Raw(`SELECT count(*) FROM runs WHERE flow_id = ?`, gone).Row().Scan(&before))
	deleted := time.Now()

	code, body = h.post(h.app.URL+"/hooks/gone-hook", `{"n": 2}`)
	require.Equal(t, 404, code, body)
	var heard struct {
		Started []string `json:"started"`
	}
	require.Equal(t, 202, h.do("POST", "/api/v1/events", map[string]any{"name": "both.heard", "key": "k"}, &heard))
	require.Len(t, heard.Started, 1, "the kept flow's trigger only")
	var startedFlow string
	require.NoError(t, h.app.Store.Gorm().Raw(`SELECT flow_id::text FROM runs WHERE id = ?`, heard.Started[0]).Row().Scan(&startedFlow))
	require.Equal(t, kept, startedFlow)
	// The consumer stops: its state says so.
	h.eventually(func() bool {
		var connected bool
		require.NoError(t, h.app.Store.Gorm().Raw(`SELECT coalesce(bool_or(connected), false) FROM broker_consumers WHERE trigger_id = ?`, nats).
			Row().Scan(&connected))
		return !connected
	}, "the deleted flow's consumer stops")
	s.Publish(t, "in", "after-delete", []byte(`{"n": 3}`))
	// The kept flow's schedule fires twice after the delete: the deleted
	// one's had as many chances.
	h.eventually(func() bool {
		var n int
		require.NoError(t, h.app.Store.Gorm().Raw(`SELECT count(*) FROM runs WHERE flow_id = ? AND trigger->>'type' = 'schedule' AND created_at > ?`,
			kept, deleted.Add(time.Second)).Row().Scan(&n))
		return n >= 2
	}, "the kept flow's schedule fires")
	var after int
	require.NoError(t, h.app.Store.Gorm().Raw(`SELECT count(*) FROM runs WHERE flow_id = ?`, gone).Row().Scan(&after))
	require.Equal(t, before, after, "no run of the deleted flow began after the delete (%d before)", before)
}
