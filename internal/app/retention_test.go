package app_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stitchd/stitchd/internal/app"
)

// finishedAgo moves a finished run's finish into the past.
func (h *harness) finishedAgo(runID string, ago time.Duration) {
	h.t.Helper()
	require.NoError(h.t, h.app.Store.Gorm().Exec(`UPDATE runs SET finished_at = now() - make_interval(secs => ?) WHERE id = ?`,
		ago.Seconds(), runID).Error)
}

// rowsOf counts a run's rows: the run, its node states and its events.
func (h *harness) rowsOf(runID string) (runs, nodes, events int) {
	h.t.Helper()
	require.NoError(h.t, h.app.Store.Gorm().Raw(`SELECT (SELECT count(*) FROM runs WHERE id = ?),
		(SELECT count(*) FROM node_states WHERE run_id = ?), (SELECT count(*) FROM run_events WHERE run_id = ?)`,
		runID, runID, runID).Row().Scan(&runs, &nodes, &events))
	return runs, nodes, events
}

func TestRetentionDeletesFinishedRunsPastIt(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(c *app.Config) { c.Retention = 24 * time.Hour })
	quick := h.createFlow([]map[string]any{node("t", "Transform", map[string]any{"expression": "input"})}, nil)
	waiting := h.createFlow([]map[string]any{node("ask", "UX", nil)}, nil)
	old := h.startRun(quick, map[string]any{})
	young := h.startRun(quick, map[string]any{})
	open := h.startRun(waiting, map[string]any{})
	require.Equal(t, "completed", old.Status)
	h.finishedAgo(old.ID, 25*time.Hour)
	h.finishedAgo(young.ID, 23*time.Hour)
	// A run that has not finished is kept however old it is.
	require.NoError(t, h.app.Store.Gorm().Exec(`UPDATE runs SET created_at = now() - interval '90 days' WHERE id = ?`, open.ID).Error)

	h.eventually(func() bool { r, _, _ := h.rowsOf(old.ID); return r == 0 }, "run %s to be deleted", old.ID)
	_, nodes, events := h.rowsOf(old.ID)
	require.Zero(t, nodes, "its node states go with it")
	require.Zero(t, events, "and its events")
	r, nodes, _ := h.rowsOf(young.ID)
	require.Equal(t, 1, r, "a run within the retention stays")
	require.Positive(t, nodes)
	r, _, _ = h.rowsOf(open.ID)
	require.Equal(t, 1, r)
	require.Equal(t, 404, h.do("GET", "/api/v1/runs/"+old.ID, nil, nil))
}

func TestRetentionOfAFlowOverridesTheServers(t *testing.T) {
	t.Parallel()
	h := newHarness(t) // no --retention: only flows that set theirs
	kept := h.createFlow([]map[string]any{node("t", "Transform", map[string]any{"expression": "1"})}, nil)
	var f flowResp
	require.Equal(t, 201, h.do("POST", "/api/v1/flows", map[string]any{"name": "short-lived", "graph": map[string]any{
		"nodes":    []map[string]any{node("t", "Transform", map[string]any{"expression": "1"})},
		"edges":    []any{},
		"settings": map[string]any{"retentionDays": 2}}}, &f))
	a := h.startRun(kept, map[string]any{})
	b := h.startRun(f.ID, map[string]any{})
	c := h.startRun(f.ID, map[string]any{})
	h.finishedAgo(a.ID, 400*24*time.Hour)
	h.finishedAgo(b.ID, 3*24*time.Hour)
	h.finishedAgo(c.ID, 24*time.Hour)
	h.eventually(func() bool { r, _, _ := h.rowsOf(b.ID); return r == 0 }, "run %s to be deleted", b.ID)
	r, _, _ := h.rowsOf(a.ID)
	require.Equal(t, 1, r, "a flow without retention keeps its runs")
	r, _, _ = h.rowsOf(c.ID)
	require.Equal(t, 1, r)

	_, ps := h.refused(422, "POST", "/api/v1/flows", map[string]any{"name": "x", "graph": map[string]any{
		"nodes": []map[string]any{node("t", "Transform", map[string]any{"expression": "1"})}, "edges": []any{},
		"settings": map[string]any{"retentionDays": 0.5}}})
	require.Contains(t, byPath(ps)["settings.retentionDays"], "whole number of days")
}

func TestRetentionKeepsTheChildOfARunningParent(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(c *app.Config) { c.Retention = time.Hour })
	child := h.createFlow([]map[string]any{node("t", "Transform", map[string]any{"expression": "1"})}, nil)
	parent := h.createFlow([]map[string]any{subNode("s", child, nil), node("ask", "UX", nil)},
		[]map[string]any{edge("s", "ask", nil)})
	r := h.startRun(parent, map[string]any{})
	kid := r.Nodes["s"].ChildRunID
	require.NotEmpty(t, kid)
	h.finishedAgo(kid, 2*time.Hour)
	// A deleted run's neighbour in time: deleted while the parent waits.
	other := h.startRun(child, map[string]any{})
	h.finishedAgo(other.ID, 3*time.Hour)
	h.eventually(func() bool { n, _, _ := h.rowsOf(other.ID); return n == 0 }, "run %s to be deleted", other.ID)
	n, _, _ := h.rowsOf(kid)
	require.Equal(t, 1, n, "the child of a run still going is kept")
}
