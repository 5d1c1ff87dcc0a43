package engine_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/stitchd/stitchd/engine"
)

// sagaGraph: a and b run side by side, each with an undo node (ua, ub);
// c follows both (no undo node), d follows c. Every node is a worker
// without automatic retries.
const sagaGraph = `{"nodes":[
	{"id":"start","type":"Condition","data":{}},
	{"id":"a",` + worker + `},{"id":"b",` + worker + `},{"id":"c",` + worker + `},{"id":"d",` + worker + `},
	{"id":"ua",` + worker + `},{"id":"ub",` + worker + `}],
	"edges":[{"id":"e1","source":"start","target":"a"},{"id":"e2","source":"start","target":"b"},
		{"id":"e3","source":"a","target":"c"},{"id":"e4","source":"b","target":"c"},{"id":"e5","source":"c","target":"d"},
		{"id":"u1","source":"a","target":"ua","data":{"on":"compensate"}},
		{"id":"u2","source":"b","target":"ub","data":{"on":"compensate"}}]}`

// sagaToD starts sagaGraph and completes b, then a (the order of
// completion is not the graph's), then c: d is running.
func sagaToD(t *testing.T, r *rig) *engine.Run {
	t.Helper()
	run := r.start(sagaGraph, `{"order":1}`)
	require.NoError(t, r.callback(run.ID, "b", 1, engine.StatusCompleted, `{"b":"booked"}`))
	require.NoError(t, r.callback(run.ID, "a", 1, engine.StatusCompleted, `{"a":"charged"}`))
	require.NoError(t, r.callback(run.ID, "c", 1, engine.StatusCompleted, `{"c":1}`))
	_, ns := r.nodes(run.ID)
	require.Equal(t, engine.StatusRunning, ns["d"].Status)
	require.NotContains(t, ns, "ua", "an undo node has no row until the run is compensated")
	return run
}

// TestRuleCompensationOrder: docs/state_machine.md, Compensation — when
// a run with undo nodes fails (d fails for good), the undo nodes of the
// completed steps that have one run first, one at a time, in reverse
// order of completion (a completed after b: ua, then ub), each with its
// step's output, input and the failure; c, completed without an undo
// node, is left as it is. Then the run fails, compensated.
func TestRuleCompensationOrder(t *testing.T) {
	t.Parallel()
	const (
		C = engine.StatusCompleted
		R = engine.StatusRunning
		P = engine.StatusPending
		F = engine.StatusFailed
	)
	ctx := context.Background()
	r := newRig(t)
	run := sagaToD(t, r)

	require.NoError(t, r.callback(run.ID, "d", 1, engine.StatusFailed, ""))
	got, ns := r.wantStatuses(run.ID, engine.RunRunning, map[string]engine.Status{"d": F, "c": C, "ua": R, "ub": P})
	require.Nil(t, got.Error)
	comp := got.Compensation
	require.NotNil(t, comp)
	require.Equal(t, engine.Compensation{Reason: "failed", Error: "node d failed: boom", State: "compensating",
		Steps: []engine.CompensationStep{{Step: "a", Undo: "ua"}, {Step: "b", Undo: "ub"}}}, *comp)
	require.JSONEq(t, `{"output":{"a":"charged"},"input":{"order":1},"error":"node d failed: boom"}`, string(ns["ua"].Input))
	evs := r.eventsOf(run.ID, engine.EventRunCompensating)
	require.Len(t, evs, 1)
	require.JSONEq(t, `{"reason":"failed","error":"node d failed: boom","steps":[{"step":"a","undo":"ua"},{"step":"b","undo":"ub"}]}`,
		string(evs[0].Payload))
	require.Empty(t, r.eventsOf(run.ID, engine.EventRunFailed), "the run does not fail before its undo nodes ran")

	// Refused while compensating: pausing, retrying the failed step.
	_, err := r.eng.PauseRun(ctx, run.ID)
	require.ErrorIs(t, err, engine.ErrConflict)
	require.ErrorIs(t, r.eng.RetryNode(ctx, run.ID, "d"), engine.ErrConflict)

	require.NoError(t, r.callback(run.ID, "ua", 1, engine.StatusCompleted, `{"refunded":true}`))
	_, ns = r.wantStatuses(run.ID, engine.RunRunning, map[string]engine.Status{"ua": C, "ub": R})
	require.JSONEq(t, `{"output":{"b":"booked"},"input":{"order":1},"error":"node d failed: boom"}`, string(ns["ub"].Input))

	require.NoError(t, r.callback(run.ID, "ub", 1, engine.StatusCompleted, `{"released":true}`))
	got, _ = r.wantStatuses(run.ID, engine.RunFailed, map[string]engine.Status{"ua": C, "ub": C, "d": F})
	require.Equal(t, "node d failed: boom", *got.Error)
	require.Equal(t, "compensated", got.Compensation.State)
	compensated := r.eventsOf(run.ID, engine.EventNodeCompensated)
	require.Len(t, compensated, 2)
	require.Equal(t, []string{"a", "b"}, []string{compensated[0].Key, compensated[1].Key})
	failed := r.eventsOf(run.ID, engine.EventRunFailed)
	require.Len(t, failed, 1)
	require.JSONEq(t, `{"error":"node d failed: boom","compensated":true}`, string(failed[0].Payload))

	// Its steps were undone: no retry brings the run back.
	require.ErrorIs(t, r.eng.RetryNode(ctx, run.ID, "d"), engine.ErrConflict)
	_, err = r.eng.CancelRunWith(ctx, engine.CancelRunParams{RunID: run.ID, Compensate: true})
	require.ErrorIs(t, err, engine.ErrConflict, "compensated once")
}

// TestRuleCompensationUndoFails: an undo node that fails for good stops
// the compensation (the undo nodes after it stay pending) and the run
// fails naming it; retried, the compensation goes on from there and the
// run ends compensated.
func TestRuleCompensationUndoFails(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	r := newRig(t)
	run := sagaToD(t, r)
	require.NoError(t, r.callback(run.ID, "d", 1, engine.StatusFailed, ""))
	require.NoError(t, r.callback(run.ID, "ua", 1, engine.StatusFailed, ""))
	got, _ := r.wantStatuses(run.ID, engine.RunFailed, map[string]engine.Status{"ua": engine.StatusFailed, "ub": engine.StatusPending})
	require.Equal(t, "node d failed: boom", *got.Error, "the run's error is its failure, not its undo node's")
	require.Equal(t, engine.Compensation{Reason: "failed", Error: "node d failed: boom", State: "failed", FailedNode: "ua",
		Steps: []engine.CompensationStep{{Step: "a", Undo: "ua"}, {Step: "b", Undo: "ub"}}}, *got.Compensation)
	failed := r.eventsOf(run.ID, engine.EventRunFailed)
	require.Len(t, failed, 1)
	require.JSONEq(t, `{"error":"node d failed: boom","compensation_failed":"ua"}`, string(failed[0].Payload))
	require.Empty(t, r.eventsOf(run.ID, engine.EventNodeCompensated))

	// The operator retries the undo node: the compensation goes on.
	require.NoError(t, r.eng.RetryNode(ctx, run.ID, "ua"))
	got, _ = r.wantStatuses(run.ID, engine.RunRunning, map[string]engine.Status{"ua": engine.StatusRunning, "ub": engine.StatusPending})
	require.Equal(t, "compensating", got.Compensation.State)
	require.NoError(t, r.callback(run.ID, "ua", 2, engine.StatusCompleted, `{}`))
	require.NoError(t, r.callback(run.ID, "ub", 1, engine.StatusCompleted, `{}`))
	got, _ = r.wantStatuses(run.ID, engine.RunFailed, map[string]engine.Status{"ua": engine.StatusCompleted, "ub": engine.StatusCompleted})
	require.Equal(t, "compensated", got.Compensation.State)
}

// TestRuleCancelWithCompensation: a cancel with compensate cancels what
// is under way (as any cancel), then runs the undo nodes of the completed
// steps with the error "cancelled", the run running meanwhile; it ends
// cancelled, compensated. Undo nodes that complete at once (Transforms)
// compensate in the cancelling transaction.
func TestRuleCancelWithCompensation(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	t.Run("workers", func(t *testing.T) {
		t.Parallel()
		r := newRig(t)
		run := sagaToD(t, r)
		out, err := r.eng.CancelRunWith(ctx, engine.CancelRunParams{RunID: run.ID, Compensate: true})
		require.NoError(t, err)
		require.Equal(t, engine.RunRunning, out.Status)
		got, ns := r.wantStatuses(run.ID, engine.RunRunning, map[string]engine.Status{"d": engine.StatusCancelled,
			"ua": engine.StatusRunning, "ub": engine.StatusPending})
		require.Equal(t, "cancelled", got.Compensation.Reason)
		require.JSONEq(t, `{"output":{"a":"charged"},"input":{"order":1},"error":"cancelled"}`, string(ns["ua"].Input))
		require.ErrorIs(t, r.callback(run.ID, "d", 1, engine.StatusCompleted, `{}`), engine.ErrConflict, "d was cancelled")

		require.NoError(t, r.callback(run.ID, "ua", 1, engine.StatusCompleted, `{}`))
		require.NoError(t, r.callback(run.ID, "ub", 1, engine.StatusCompleted, `{}`))
		got, _ = r.wantStatuses(run.ID, engine.RunCancelled, map[string]engine.Status{"ua": engine.StatusCompleted, "ub": engine.StatusCompleted})
		require.Equal(t, "cancelled", *got.Error)
		require.Equal(t, "compensated", got.Compensation.State)
		cancelled := r.eventsOf(run.ID, engine.EventRunCancelled)
		require.Len(t, cancelled, 1)
		require.JSONEq(t, `{"compensated":true}`, string(cancelled[0].Payload))
	})
	t.Run("undo nodes that complete at once", func(t *testing.T) {
		t.Parallel()
		r := newRig(t)
		run := r.start(`{"nodes":[{"id":"a","type":"Transform","data":{"expression":"{\"booked\": input.n}"}},
			{"id":"b",`+worker+`},{"id":"ua","type":"Transform","data":{"expression":"{\"undone\": input.output.booked, \"why\": input.error}"}}],
			"edges":[{"id":"e1","source":"a","target":"b"},{"id":"u","source":"a","target":"ua","data":{"on":"compensate"}}]}`, `{"n":3}`)
		_, err := r.eng.CancelRunWith(ctx, engine.CancelRunParams{RunID: run.ID, Compensate: true})
		require.NoError(t, err)
		got, ns := r.wantStatuses(run.ID, engine.RunCancelled, map[string]engine.Status{"a": engine.StatusCompleted,
			"b": engine.StatusCancelled, "ua": engine.StatusCompleted})
		require.Equal(t, "compensated", got.Compensation.State)
		require.JSONEq(t, `{"undone":3,"why":"cancelled"}`, string(ns["ua"].Output))
	})
	t.Run("a run with no step to undo", func(t *testing.T) {
		t.Parallel()
		r := newRig(t)
		run := r.start(sagaGraph, `{}`)
		_, err := r.eng.CancelRunWith(ctx, engine.CancelRunParams{RunID: run.ID, Compensate: true})
		require.NoError(t, err)
		got, _ := r.wantStatuses(run.ID, engine.RunCancelled, map[string]engine.Status{"a": engine.StatusCancelled})
		require.Equal(t, engine.Compensation{Reason: "cancelled", Error: "cancelled", State: "compensated",
			Steps: []engine.CompensationStep{}}, *got.Compensation)
	})
}

// TestRuleCompensationInOneTransaction: a failure whose undo nodes
// complete at once fails the run compensated in the failing transaction;
// the order of completion counts the steps of that transaction too.
func TestRuleCompensationInOneTransaction(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	run := r.start(`{"nodes":[{"id":"w",`+worker+`},
		{"id":"x","type":"Transform","data":{"expression":"1"}},{"id":"y","type":"Transform","data":{"expression":"2"}},
		{"id":"z","type":"Transform","data":{"expression":"input.missing.field"}},
		{"id":"uw","type":"Log","data":{"message":"undo w"}},{"id":"ux","type":"Log","data":{"message":"undo x"}},
		{"id":"uy","type":"Log","data":{"message":"undo y"}}],
		"edges":[{"id":"e1","source":"w","target":"x"},{"id":"e2","source":"x","target":"y"},{"id":"e3","source":"y","target":"z"},
			{"id":"c1","source":"w","target":"uw","data":{"on":"compensate"}},{"id":"c2","source":"x","target":"ux","data":{"on":"compensate"}},
			{"id":"c3","source":"y","target":"uy","data":{"on":"compensate"}}]}`, `{}`)
	require.NoError(t, r.callback(run.ID, "w", 1, engine.StatusCompleted, `{"w":1}`))
	got, _ := r.wantStatuses(run.ID, engine.RunFailed, map[string]engine.Status{"z": engine.StatusFailed,
		"uw": engine.StatusCompleted, "ux": engine.StatusCompleted, "uy": engine.StatusCompleted})
	require.Equal(t, []engine.CompensationStep{{Step: "y", Undo: "uy"}, {Step: "x", Undo: "ux"}, {Step: "w", Undo: "uw"}},
		got.Compensation.Steps)
	var order []string
	for _, ev := range r.eventsOf(run.ID, engine.EventNodeLog) {
		var p struct {
			Message string `json:"message"`
		}
		require.NoError(t, json.Unmarshal(ev.Payload, &p))
		order = append(order, p.Message)
	}
	require.Equal(t, []string{"undo y", "undo x", "undo w"}, order)
}

// TestRuleCompensationUndoFailsAtOnce: an undo node that fails as it
// fires (a Transform whose expression fails) ends the compensation and
// the run in that transaction, naming it; the undo nodes after it do not
// run.
func TestRuleCompensationUndoFailsAtOnce(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	run := r.start(`{"nodes":[{"id":"a","type":"Transform","data":{"expression":"1"}},{"id":"b","type":"Transform","data":{"expression":"2"}},
		{"id":"c",`+worker+`},
		{"id":"ua","type":"Log","data":{"message":"undo a"}},{"id":"ub","type":"Transform","data":{"expression":"input.output.nothing.here"}}],
		"edges":[{"id":"e1","source":"a","target":"b"},{"id":"e2","source":"b","target":"c"},
			{"id":"c1","source":"a","target":"ua","data":{"on":"compensate"}},{"id":"c2","source":"b","target":"ub","data":{"on":"compensate"}}]}`, `{}`)
	require.NoError(t, r.callback(run.ID, "c", 1, engine.StatusFailed, ""))
	got, _ := r.wantStatuses(run.ID, engine.RunFailed, map[string]engine.Status{"c": engine.StatusFailed, "ub": engine.StatusFailed,
		"ua": engine.StatusPending})
	require.Equal(t, "failed", got.Compensation.State)
	require.Equal(t, "ub", got.Compensation.FailedNode)
	require.Equal(t, "node c failed: boom", *got.Error)
	require.Zero(t, got.ActiveNodes)
	failed := r.eventsOf(run.ID, engine.EventRunFailed)
	require.Len(t, failed, 1)
	require.JSONEq(t, `{"error":"node c failed: boom","compensation_failed":"ub"}`, string(failed[0].Payload))
}
