package engine_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/stitchd/stitchd/engine"
)

// joinGraph is "whichever comes first": three branches into join, a node
// with data.join "any" — a worker told of its cancel (a), a chain of two
// workers (b1 → b2) and a person's decision (ask); join hands on to done.
const joinGraph = `{"nodes":[
	{"id":"start","type":"Condition","data":{}},
	{"id":"a","type":"Worker","data":{"webhookUrl":"http://worker.invalid/a","cancelUrl":"http://worker.invalid/cancel","retry":{"maxAttempts":1}}},
	{"id":"b1",` + worker + `},{"id":"b2",` + worker + `},
	{"id":"ask","type":"UX","data":{"prompt":"go?"}},
	{"id":"join","type":"Transform","data":{"expression":"input","join":"any"}},
	{"id":"done",` + worker + `}],
	"edges":[{"id":"e1","source":"start","target":"a"},{"id":"e2","source":"start","target":"b1"},{"id":"e3","source":"b1","target":"b2"},
		{"id":"e4","source":"start","target":"ask"},{"id":"e5","source":"a","target":"join"},{"id":"e6","source":"b2","target":"join"},
		{"id":"e7","source":"ask","target":"join"},{"id":"e8","source":"join","target":"done"}]}`

// TestRuleJoinAny: docs/state_machine.md, Joins — a node with data.join
// "any" fires on its first arrival, with that upstream node's output as
// its input; the same transaction cancels the other branches: a running
// Worker is cancelled and its cancelUrl told, a pending node is skipped;
// a late callback of a cancelled node is a conflict (409) and changes
// nothing; the run completes without them.
func TestRuleJoinAny(t *testing.T) {
	t.Parallel()
	const (
		C = engine.StatusCompleted
		R = engine.StatusRunning
		P = engine.StatusPending
		W = engine.StatusWaitingForUser
		X = engine.StatusCancelled
		S = engine.StatusSkipped
	)
	r := newRig(t)
	run := r.start(joinGraph, `{"order":7}`)
	r.wantStatuses(run.ID, engine.RunRunning, map[string]engine.Status{"start": C, "a": R, "b1": R, "b2": P, "ask": W, "join": P, "done": P})

	// The person answers first: join fires with the decision.
	require.NoError(t, r.decide(run.ID, "ask", "approve", `{"why":"fast"}`))
	got, ns := r.wantStatuses(run.ID, engine.RunRunning,
		map[string]engine.Status{"a": X, "b1": X, "b2": S, "ask": C, "join": C, "done": R})
	require.Equal(t, 1, got.ActiveNodes, "only done is under way")
	require.Equal(t, 0, got.FailedNodes)
	var in map[string]any
	require.NoError(t, json.Unmarshal(ns["join"].Input, &in))
	decision, ok := in["decision"].(map[string]any)
	require.True(t, ok, "join's input is the arrival's output: ask's, with its decision")
	require.Equal(t, "approve", decision["outcome"])
	require.EqualValues(t, 7, in["order"])

	joined := r.eventsOf(run.ID, engine.EventJoined)
	require.Len(t, joined, 1)
	require.JSONEq(t, `{"node_id":"join","arrival":"ask","cancelled":["a","b1"],"skipped":["b2"]}`, string(joined[0].Payload))
	require.Equal(t, map[string]string{"a#1": "cancelled", "b1#1": "cancelled", "done#1": "pending"}, r.dispatchStatuses(run.ID),
		"the cancelled workers' undelivered dispatches are dropped")

	// a's worker is told, at its cancelUrl, as on a run's cancel.
	var url, payload string
	require.NoError(t, r.st.Gorm().Raw(`SELECT url, payload::text FROM notifications WHERE run_id = ? AND type = 'worker.cancel'`, run.ID).
		Row().Scan(&url, &payload))
	require.Equal(t, "http://worker.invalid/cancel", url)
	var notice map[string]any
	require.NoError(t, json.Unmarshal([]byte(payload), &notice))
	require.Equal(t, "a", notice["nodeId"])
	require.Equal(t, "another branch reached join first", notice["reason"])

	// Late callbacks of the cancelled branches are conflicts.
	require.ErrorIs(t, r.callback(run.ID, "a", 1, engine.StatusCompleted, `{"late":true}`), engine.ErrConflict)
	require.ErrorIs(t, r.callback(run.ID, "b1", 1, engine.StatusCompleted, `{}`), engine.ErrConflict)
	r.wantStatuses(run.ID, engine.RunRunning, map[string]engine.Status{"a": X, "b1": X, "b2": S, "join": C, "done": R})

	require.NoError(t, r.callback(run.ID, "done", 1, engine.StatusCompleted, `{"ok":true}`))
	got, _ = r.wantStatuses(run.ID, engine.RunCompleted, map[string]engine.Status{"done": C})
	require.JSONEq(t, `{"ok":true}`, string(got.Output))
	require.Zero(t, got.ActiveNodes)
}

// TestRuleJoinAnyWhilePaused: an arrival at a join of a paused run fires
// nothing; the resume fires the join (and cancels the other branches).
// A join every branch of which skipped is skipped.
func TestRuleJoinAnyWhilePaused(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	r := newRig(t)
	run := r.start(joinGraph, `{}`)
	_, err := r.eng.PauseRun(ctx, run.ID)
	require.NoError(t, err)
	require.NoError(t, r.callback(run.ID, "a", 1, engine.StatusCompleted, `{"from":"a"}`))
	r.wantStatuses(run.ID, engine.RunPaused, map[string]engine.Status{"a": engine.StatusCompleted, "join": engine.StatusPending})
	_, err = r.eng.ResumeRun(ctx, run.ID)
	require.NoError(t, err)
	_, ns := r.wantStatuses(run.ID, engine.RunRunning, map[string]engine.Status{"join": engine.StatusCompleted,
		"b1": engine.StatusCancelled, "b2": engine.StatusSkipped, "ask": engine.StatusCancelled, "done": engine.StatusRunning})
	require.JSONEq(t, `{"from":"a"}`, string(ns["join"].Input))

	// Every way in decided, none taken: the join is skipped.
	const branches = `{"nodes":[
		{"id":"start","type":"Condition","data":{}},
		{"id":"x","type":"Transform","data":{"expression":"1"}},{"id":"y","type":"Transform","data":{"expression":"2"}},
		{"id":"join","type":"Transform","data":{"expression":"input","join":"any"}},
		{"id":"other","type":"Transform","data":{"expression":"3"}}],
		"edges":[{"id":"e1","source":"start","target":"x","data":{"condition":"false"}},
			{"id":"e2","source":"start","target":"y","data":{"condition":"false"}},
			{"id":"e3","source":"start","target":"other","data":{"default":true}},
			{"id":"e4","source":"x","target":"join"},{"id":"e5","source":"y","target":"join"}]}`
	run = r.start(branches, `{}`)
	r.wantStatuses(run.ID, engine.RunCompleted, map[string]engine.Status{"x": engine.StatusSkipped, "y": engine.StatusSkipped,
		"join": engine.StatusSkipped, "other": engine.StatusCompleted})
}

// TestRuleJoinAnyWayAround: a node with a way to the end of the flow
// that does not pass the join (b1, which also leads to side) is not
// cancelled when the join fires: it goes on, and its completion finds
// its successor on the join's branch (b2) skipped and fires the other.
func TestRuleJoinAnyWayAround(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	run := r.start(`{"nodes":[{"id":"start","type":"Condition","data":{}},
		{"id":"a",`+worker+`},{"id":"b1",`+worker+`},{"id":"b2",`+worker+`},{"id":"side",`+worker+`},
		{"id":"join","type":"Transform","data":{"expression":"input","join":"any"}}],
		"edges":[{"id":"e1","source":"start","target":"a"},{"id":"e2","source":"start","target":"b1"},{"id":"e3","source":"b1","target":"b2"},
			{"id":"e4","source":"b1","target":"side"},{"id":"e5","source":"a","target":"join"},{"id":"e6","source":"b2","target":"join"}]}`, `{}`)
	require.NoError(t, r.callback(run.ID, "a", 1, engine.StatusCompleted, `{"a":1}`))
	r.wantStatuses(run.ID, engine.RunRunning, map[string]engine.Status{"join": engine.StatusCompleted, "b1": engine.StatusRunning,
		"b2": engine.StatusSkipped, "side": engine.StatusPending})
	require.NoError(t, r.callback(run.ID, "b1", 1, engine.StatusCompleted, `{"b1":1}`))
	r.wantStatuses(run.ID, engine.RunRunning, map[string]engine.Status{"b2": engine.StatusSkipped, "side": engine.StatusRunning})
	require.NoError(t, r.callback(run.ID, "side", 1, engine.StatusCompleted, `{}`))
	r.wantStatuses(run.ID, engine.RunCompleted, map[string]engine.Status{"b2": engine.StatusSkipped, "side": engine.StatusCompleted})
}

// TestRuleJoinAnyInAFanOut: a join "any" inside a Splitter's region whose
// branches start at instances the Splitter fires itself: the first
// branch's arrival fires the join and skips the other branch's first node
// before the fan-out gets to fire it, which it then leaves alone; every
// item reaches the Collector once.
func TestRuleJoinAnyInAFanOut(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	run := r.start(`{"nodes":[
		{"id":"s","type":"Splitter","data":{"arrayPath":"xs"}},
		{"id":"a","type":"Transform","data":{"expression":"{\"via\": \"a\", \"n\": input}"}},
		{"id":"b","type":"Transform","data":{"expression":"input"}},
		{"id":"b2","type":"Transform","data":{"expression":"{\"via\": \"b\", \"n\": input}"}},
		{"id":"j","type":"Transform","data":{"expression":"input","join":"any"}},
		{"id":"c","type":"Collector","data":{}}],
		"edges":[{"id":"e1","source":"s","target":"a"},{"id":"e2","source":"s","target":"b"},{"id":"e3","source":"b","target":"b2"},
			{"id":"e4","source":"a","target":"j"},{"id":"e5","source":"b2","target":"j"},{"id":"e6","source":"j","target":"c"}]}`,
		`{"xs":[1,2]}`)
	got, ns := r.wantStatuses(run.ID, engine.RunCompleted, map[string]engine.Status{"c": engine.StatusCompleted})
	require.JSONEq(t, `[{"via":"a","n":1},{"via":"a","n":2}]`, string(got.Output))
	for _, k := range []string{"b_0", "b_1", "b2_0", "b2_1"} {
		require.Equal(t, engine.StatusSkipped, ns[k].Status, k)
	}
}
