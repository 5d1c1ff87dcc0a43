package engine_test

import (
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
	for name, g := range map[string]string{
		"an event key fails its node": `{"nodes":[{"id":"x","type":"Event","data":{"event":"e","key":"\"a\\x00b\"","timeoutSeconds":60}}],"edges":[]}`,
		"an assignee fails its node":  `{"nodes":[{"id":"x","type":"UX","data":{"assignees":"\"a\\x00b@example.com\""}}],"edges":[]}`,
	} {
		t.Run(name, func(t *testing.T) {
			r := newRig(t)
			run := r.start(g, `{}`)
			_, ns := r.wantStatuses(run.ID, engine.RunFailed, map[string]engine.Status{"x": engine.StatusFailed})
			require.NotNil(t, ns["x"].Error)
		})
	}
	t.Run("a variable is set null", func(t *testing.T) {
		r := newRig(t)
		run := r.start(`{"nodes":[
			{"id":"x","type":"Transform","data":{"expression":"1",
				"setVariables":{"bad":"\"a\\x00b\"","nan":"0.0 / 0.0","good":"output + 1"}}}],"edges":[]}`, `{}`)
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
		require.Equal(t, map[string]any{"bad": nil, "nan": nil, "good": 2.0}, p.Set)
		require.Contains(t, p.Errors["bad"], `its value holds a NUL character (\u0000), which cannot be stored`)
		require.Contains(t, p.Errors["nan"], "its value is not JSON")
		require.NotContains(t, p.Errors, "good")
	})
}
