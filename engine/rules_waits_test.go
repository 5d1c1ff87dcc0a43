package engine_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/stitchd/stitchd/engine"
	"github.com/stitchd/stitchd/store"
)

// TestRuleWait: docs/state_machine.md, "Time: sleeping nodes" — a Wait
// node fires pending → running → sleeping with a wake_at (the run stays
// running); the sweeper's claim (store.DueTimers) finds it only once the
// database's clock passed its wake_at, and Engine.Wake moves it sleeping →
// running → completed with its input as output, once; a time already
// past by the engine's clock, or a duration of nothing, completes it at
// once; a cancelled sleeper is not woken.
func TestRuleWait(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	graph := func(data string) string {
		return `{"nodes":[{"id":"nap","type":"Wait","data":` + data + `},
			{"id":"after","type":"Transform","data":{"expression":"{\"woke\": input.v}"}}],
			"edges":[{"id":"e1","source":"nap","target":"after"}]}`
	}
	t.Run("sleeps until its duration passed", func(t *testing.T) {
		t.Parallel()
		r := newRig(t)
		run := r.start(graph(`{"duration":"1h"}`), `{"v":1}`)
		got, ns := r.wantStatuses(run.ID, engine.RunRunning,
			map[string]engine.Status{"nap": engine.StatusSleeping, "after": engine.StatusPending})
		require.NotNil(t, ns["nap"].WakeAt)
		require.Equal(t, 1, got.ActiveNodes, "sleeping is active")
		require.Empty(t, r.dueTimers(run.ID), "not due yet")
		r.advanceDue(run.ID, 59*time.Minute)
		require.Empty(t, r.dueTimers(run.ID), "not due a minute before")
		r.advanceDue(run.ID, 2*time.Minute)
		due := r.sweepTimers(run.ID)
		require.Equal(t, []engine.DueNode{{Key: "nap", Attempt: 1}}, due)
		got, ns = r.wantStatuses(run.ID, engine.RunCompleted,
			map[string]engine.Status{"nap": engine.StatusCompleted, "after": engine.StatusCompleted})
		require.JSONEq(t, `{"v":1}`, string(ns["nap"].Output), "its input as output")
		require.JSONEq(t, `{"woke":1}`, string(got.Output))
		require.NoError(t, r.eng.Wake(ctx, run.ID, due), "a second wake of the same attempt")
		_, ns = r.nodes(run.ID)
		require.Equal(t, 1, ns["nap"].Attempt, "woken once")
		require.Len(t, r.eventsOf(run.ID, engine.EventRunCompleted), 1)
	})
	t.Run("a duration of nothing completes at once", func(t *testing.T) {
		t.Parallel()
		r := newRig(t)
		run := r.start(graph(`{"duration":"0s"}`), `{"v":2}`)
		r.wantStatuses(run.ID, engine.RunCompleted, map[string]engine.Status{"nap": engine.StatusCompleted, "after": engine.StatusCompleted})
	})
	t.Run("until: a time the engine's clock passed completes at once", func(t *testing.T) {
		t.Parallel()
		r, clk := clockedRig(t)
		until := clk.Now().Add(time.Hour).UTC().Format(time.RFC3339)
		g := graph(`{"until":"` + until + `"}`)
		first := r.start(g, `{"v":3}`)
		_, ns := r.wantStatuses(first.ID, engine.RunRunning, map[string]engine.Status{"nap": engine.StatusSleeping})
		require.WithinDuration(t, clk.Now().Add(time.Hour), *ns["nap"].WakeAt, 2*time.Second, "wake_at is the until time")
		clk.Advance(2 * time.Hour)
		second := r.start(g, `{"v":3}`)
		r.wantStatuses(second.ID, engine.RunCompleted, map[string]engine.Status{"nap": engine.StatusCompleted, "after": engine.StatusCompleted})
	})
	t.Run("a Wait with branches decides them when woken", func(t *testing.T) {
		t.Parallel()
		r := newRig(t)
		run := r.start(`{"nodes":[{"id":"nap","type":"Wait","data":{"duration":"10m"}},
			{"id":"yes","type":"Condition","data":{}},{"id":"no","type":"Condition","data":{}}],
			"edges":[{"id":"e1","source":"nap","target":"yes","data":{"condition":"output.go"}},
				{"id":"e2","source":"nap","target":"no","data":{"default":true}}]}`, `{"go":true}`)
		r.advanceDue(run.ID, 10*time.Minute)
		require.Len(t, r.sweepTimers(run.ID), 1)
		_, ns := r.wantStatuses(run.ID, engine.RunCompleted,
			map[string]engine.Status{"nap": engine.StatusCompleted, "yes": engine.StatusCompleted, "no": engine.StatusSkipped})
		require.Equal(t, []string{"yes"}, ns["nap"].Taken)
	})
	t.Run("a cancelled sleeper is not woken", func(t *testing.T) {
		t.Parallel()
		r := newRig(t)
		run := r.start(graph(`{"duration":"1m"}`), `{}`)
		_, err := r.eng.CancelRun(ctx, run.ID)
		require.NoError(t, err)
		r.advanceDue(run.ID, time.Hour)
		require.Empty(t, r.dueTimers(run.ID), "no longer sleeping")
		require.NoError(t, r.eng.Wake(ctx, run.ID, []engine.DueNode{{Key: "nap", Attempt: 1}}), "a claim made before the cancel")
		r.wantStatuses(run.ID, engine.RunCancelled,
			map[string]engine.Status{"nap": engine.StatusCancelled, "after": engine.StatusCancelled})
	})
}

// eventGraph is ev (an Event node on name, keyed by input.order) → after,
// with a failure edge to late.
func eventGraph(name, extra string) string {
	return `{"nodes":[{"id":"ev","type":"Event","data":{"event":"` + name + `","key":"input.order"` + extra + `}},
		{"id":"after","type":"Transform","data":{"expression":"{\"paid\": input.amount}"}},
		{"id":"late","type":"Transform","data":{"expression":"{\"late\": input.error}"}}],
		"edges":[{"id":"e1","source":"ev","target":"after"},{"id":"e2","source":"ev","target":"late","data":{"on":"failure"}}]}`
}

// TestRuleEventWait: docs/state_machine.md, "Events: waiting for the
// outside world" — an Event node fires pending → running →
// waiting_for_event with its name and key; an event posted for the pair
// (store.PostEvent, then Engine.DeliverEvent per waiter, as POST
// /api/v1/events does) completes it with the payload; an event posted
// first is kept and taken by the wait at once (once); another key
// delivers nothing; a repeated event id delivers nothing; past
// timeoutSeconds (store.OverdueEvents, then Engine.TimeOutEvent) the node
// fails, which a failure edge routes.
func TestRuleEventWait(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	post := func(r *rig, id, name, key, payload string) []store.Waiter {
		t.Helper()
		dup, waiters, err := r.st.PostEvent(ctx, store.NewEvent{ID: id, Name: name, Key: key, Payload: json.RawMessage(payload), TTLSeconds: 3600})
		require.NoError(t, err)
		require.False(t, dup)
		for _, w := range waiters {
			require.NoError(t, r.eng.DeliverEvent(ctx, engine.DeliverEventParams{RunID: w.RunID, Key: w.Key, Attempt: w.Attempt,
				EventID: w.EventID, Name: name, On: key, Payload: json.RawMessage(payload)}))
		}
		return waiters
	}
	t.Run("a posted event completes the wait", func(t *testing.T) {
		t.Parallel()
		r := newRig(t)
		name := "paid." + uuid.NewString()
		run := r.start(eventGraph(name, ""), `{"order":42}`)
		_, ns := r.wantStatuses(run.ID, engine.RunRunning,
			map[string]engine.Status{"ev": engine.StatusWaitingForEvent, "after": engine.StatusPending})
		require.Equal(t, name, *ns["ev"].EventName)
		require.Equal(t, "42", *ns["ev"].EventKey, "the key expression's value, a whole number without decimals")

		require.Empty(t, post(r, uuid.NewString(), name, "43", `{"amount":1}`), "another key")
		r.wantStatuses(run.ID, engine.RunRunning, map[string]engine.Status{"ev": engine.StatusWaitingForEvent})

		id := uuid.NewString()
		waiters := post(r, id, name, "42", `{"amount":5}`)
		require.Equal(t, []store.Waiter{{EventID: id, RunID: run.ID, Key: "ev", Attempt: 1}}, waiters)
		got, ns := r.wantStatuses(run.ID, engine.RunCompleted,
			map[string]engine.Status{"ev": engine.StatusCompleted, "after": engine.StatusCompleted, "late": engine.StatusSkipped})
		require.JSONEq(t, `{"amount":5}`, string(ns["ev"].Output), "the payload is the output")
		require.JSONEq(t, `{"after":{"paid":5}}`, string(got.Output))
		require.Len(t, r.eventsOf(run.ID, engine.EventReceived), 1)

		dup, again, err := r.st.PostEvent(ctx, store.NewEvent{ID: id, Name: name, Key: "42", Payload: json.RawMessage(`{}`)})
		require.NoError(t, err)
		require.True(t, dup, "a repeated id stores nothing")
		require.Empty(t, again, "and delivers nothing")
	})
	t.Run("an event posted before the wait is taken at once, once", func(t *testing.T) {
		t.Parallel()
		r := newRig(t)
		name := "paid." + uuid.NewString()
		require.Empty(t, post(r, uuid.NewString(), name, "7", `{"amount":9}`), "nobody waits: kept")
		first := r.start(eventGraph(name, ""), `{"order":"7"}`)
		_, ns := r.wantStatuses(first.ID, engine.RunCompleted,
			map[string]engine.Status{"ev": engine.StatusCompleted, "after": engine.StatusCompleted})
		require.JSONEq(t, `{"amount":9}`, string(ns["ev"].Output))
		evs := r.eventsOf(first.ID, engine.EventReceived)
		require.Len(t, evs, 1)
		require.Contains(t, string(evs[0].Payload), `"early": true`)
		second := r.start(eventGraph(name, ""), `{"order":"7"}`)
		r.wantStatuses(second.ID, engine.RunRunning, map[string]engine.Status{"ev": engine.StatusWaitingForEvent})
	})
	t.Run("past its timeout the wait fails, routed by a failure edge", func(t *testing.T) {
		t.Parallel()
		r := newRig(t)
		name := "paid." + uuid.NewString()
		run := r.start(eventGraph(name, `,"timeoutSeconds":30`), `{"order":1}`)
		overdue := func() []string {
			due, err := r.st.OverdueEvents(ctx, 500)
			require.NoError(t, err)
			var keys []string
			for _, d := range due {
				if d.RunID == run.ID {
					keys = append(keys, d.Key)
				}
			}
			return keys
		}
		require.Empty(t, overdue())
		r.advanceDue(run.ID, 31*time.Second)
		require.Equal(t, []string{"ev"}, overdue())
		require.NoError(t, r.eng.TimeOutEvent(ctx, run.ID, "ev", 1))
		_, ns := r.wantStatuses(run.ID, engine.RunCompleted,
			map[string]engine.Status{"ev": engine.StatusFailed, "after": engine.StatusSkipped, "late": engine.StatusCompleted})
		want := `no event ` + name + ` with key "1" arrived in time`
		require.Equal(t, want, *ns["ev"].Error)
		require.JSONEq(t, `{"late":`+jsonString(want)+`}`, string(ns["late"].Output))
		require.Empty(t, post(r, uuid.NewString(), name, "1", `{}`), "no longer waiting: the event is kept for another")
	})
}

func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}
