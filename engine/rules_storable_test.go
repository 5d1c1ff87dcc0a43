package engine_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/stitchd/stitchd/engine"
)

// TestRuleUnstorableValues: a value a step makes that Postgres cannot
// store (a string holding NUL, which jsonb refuses) fails the step that
// made it, saying why, or — a variable — sets null with the reason in
// the run.variables event; it never fails the transaction (the start or
// callback answered 500 at every try, the node stuck).
func TestRuleUnstorableValues(t *testing.T) {
	t.Run("an output fails its node", func(t *testing.T) {
		r := newRig(t)
		run := r.start(`{"nodes":[
			{"id":"x","type":"Transform","data":{"expression":"{\"v\": \"a\\x00b\"}"}},
			{"id":"after","type":"Transform","data":{"expression":"1"}}],
			"edges":[{"id":"e","source":"x","target":"after"}]}`, `{}`)
		got, ns := r.wantStatuses(run.ID, engine.RunFailed, map[string]engine.Status{
			"x": engine.StatusFailed, "after": engine.StatusPending})
		require.NotNil(t, ns["x"].Error)
		require.Contains(t, *ns["x"].Error, `the output holds a NUL character (\u0000), which cannot be stored`)
		require.NotNil(t, got.Error)
	})
	// Text columns refuse NUL too: an Event's key, an assignee.
	for name, c := range map[string]struct{ graph, why string }{
		"an event key fails its node": {`{"nodes":[{"id":"x","type":"Event","data":{"event":"e","key":"\"a\\x00b\"","timeoutSeconds":60}}],"edges":[]}`,
			"the key holds a NUL character"},
		"an assignee fails its node": {`{"nodes":[{"id":"x","type":"UX","data":{"assignees":"\"a\\x00b@example.com\""}}],"edges":[]}`,
			"is not an email address"},
	} {
		t.Run(name, func(t *testing.T) {
			r := newRig(t)
			run := r.start(c.graph, `{}`)
			_, ns := r.wantStatuses(run.ID, engine.RunFailed, map[string]engine.Status{"x": engine.StatusFailed})
			require.NotNil(t, ns["x"].Error)
			require.Contains(t, *ns["x"].Error, c.why)
		})
	}
	t.Run("a variable is set null", func(t *testing.T) {
		r := newRig(t)
		run := r.start(`{"nodes":[
			{"id":"x","type":"Transform","data":{"expression":"1",
				"setVariables":{"bad":"\"a\\x00b\"","nan":"0.0 / 0.0","good":"output + 1","big":"1e200"}}}],"edges":[]}`, `{}`)
		r.wantStatuses(run.ID, engine.RunCompleted, map[string]engine.Status{"x": engine.StatusCompleted})
		evs := r.eventsOf(run.ID, engine.EventRunVariables)
		require.Len(t, evs, 1)
		b, err := json.Marshal(evs[0].Payload)
		require.NoError(t, err)
		var p struct {
			Set    map[string]any    `json:"set"`
			Errors map[string]string `json:"errors"`
		}
		require.NoError(t, json.Unmarshal(b, &p))
		require.Equal(t, map[string]any{"bad": nil, "nan": nil, "good": 2.0, "big": 1e200}, p.Set, "a big number is stored")
		require.Contains(t, p.Errors["bad"], `its value holds a NUL character (\u0000), which cannot be stored`)
		require.Contains(t, p.Errors["nan"], "its value is not JSON")
		require.NotContains(t, p.Errors, "good")
		require.NotContains(t, p.Errors, "big")
	})
}

// TestTryUnstorableOutputFailsAsARun: a step tried alone whose output a run
// could not store fails with the run's message (TestRuleUnstorableValues).
func TestTryUnstorableOutputFailsAsARun(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	run := r.start(`{"nodes":[{"id":"x","type":"Transform","data":{"expression":"{\"v\": \"a\\x00b\"}"}}],"edges":[]}`, `{}`)
	_, ns := r.wantStatuses(run.ID, engine.RunFailed, map[string]engine.Status{"x": engine.StatusFailed})
	g, err := r.eng.Graph(context.Background(), run.FlowVersionID)
	require.NoError(t, err)
	res, err := r.eng.TryNode(context.Background(), engine.TryNodeParams{Graph: g, NodeID: "x", Input: json.RawMessage(`{}`)})
	require.NoError(t, err)
	require.NotNil(t, res.Error)
	require.Equal(t, *ns["x"].Error, *res.Error)
	require.Nil(t, res.Output)
}
