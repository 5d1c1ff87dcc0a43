package app_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestRunDeadline(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	// Per start: the worker never answers; once its minute has passed (on
	// the moved clock) the run fails.
	flow := h.createFlow([]map[string]any{wnode(h, "slow"), node("after", "Condition", nil)}, []map[string]any{edge("slow", "after", nil)})
	var r struct {
		runJSON
		DeadlineAt *string `json:"deadline_at"`
	}
	require.Equal(t, 201, h.do("POST", "/api/v1/flows/"+flow+"/runs", map[string]any{"input": map[string]any{}, "deadlineSeconds": 60}, &r))
	require.NotNil(t, r.DeadlineAt)
	d := h.waitDispatch(r.ID, "slow", 1)
	h.sweeps(1)
	require.Equal(t, "running", h.run(r.ID).Status, "not failed before its deadline")
	h.advance(time.Minute)
	fin := h.waitRun(r.ID, "failed")
	require.Equal(t, "deadline", *fin.Error)
	require.Equal(t, "failed", fin.Nodes["slow"].Status)
	require.Equal(t, "the run's deadline passed", *fin.Nodes["slow"].Error)
	require.Equal(t, "pending", fin.Nodes["after"].Status)
	code, _ := h.post(d.Payload.CallbackURL, `{"status": "completed", "output": {}}`)
	require.Equal(t, 409, code, "the worker's late answer is stale")
	require.Equal(t, "failed", h.run(r.ID).Status)

	// The flow's setting, over a person who never answers.
	graph := map[string]any{"nodes": []map[string]any{node("ask", "UX", nil)}, "edges": []map[string]any{},
		"settings": map[string]any{"deadlineSeconds": 1}}
	var f struct {
		ID string `json:"id"`
	}
	require.Equal(t, 201, h.do("POST", "/api/v1/flows", map[string]any{"name": "with a deadline", "graph": graph}, &f))
	run := h.startRun(f.ID, map[string]any{})
	h.advance(time.Second)
	fin = h.waitRun(run.ID, "failed")
	require.Equal(t, "deadline", *fin.Error)
	require.Equal(t, "failed", fin.Nodes["ask"].Status)
	require.Equal(t, 409, h.do("POST", "/api/v1/runs/"+run.ID+"/nodes/ask/complete", map[string]any{"outcome": "approve"}, nil))

	// A run that finishes in time is not touched.
	quick := h.createFlow([]map[string]any{node("x", "Condition", nil)}, nil)
	var q runJSON
	require.Equal(t, 201, h.do("POST", "/api/v1/flows/"+quick+"/runs", map[string]any{"input": map[string]any{}, "deadlineSeconds": 1}, &q))
	require.Equal(t, "completed", q.Status)

	// Bad input.
	require.Equal(t, 400, h.do("POST", "/api/v1/flows/"+flow+"/runs", map[string]any{"deadlineSeconds": 0}, nil))
	require.Equal(t, 400, h.do("POST", "/api/v1/flows/"+flow+"/runs", map[string]any{"deadlineSeconds": -5}, nil))
	graph["settings"] = map[string]any{"deadlineSeconds": "soon"}
	_, details := h.refused(422, "POST", "/api/v1/flows", map[string]any{"name": "bad deadline", "graph": graph})
	require.Equal(t, "settings.deadlineSeconds", details[0].Path)
}
