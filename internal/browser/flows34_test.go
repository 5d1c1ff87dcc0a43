package browser_test

import (
	"fmt"
	"net/http"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"
)

// uxFlow makes a flow (on board, if set) whose one step waits for a
// person: its runs stay running until decided.
func (s *stack) uxFlow(name, board string) string {
	s.t.Helper()
	body := map[string]any{"name": name, "graph": map[string]any{"nodes": []map[string]any{
		{"id": "ask", "type": "UX", "position": map[string]any{"x": 0, "y": 0}, "data": map[string]any{"prompt": "OK?"}}}, "edges": []any{}}}
	if board != "" {
		body["board_id"] = board
	}
	var f struct{ ID string }
	s.api("POST", "/flows", body, &f)
	return f.ID
}

// status answers an API GET's status code.
func (s *stack) status(path string) int {
	s.t.Helper()
	req, err := http.NewRequest("GET", s.url+"/api/v1"+path, nil)
	require.NoError(s.t, err)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(s.t, err)
	_ = resp.Body.Close()
	return resp.StatusCode
}

// TestUIFlowsPage (issue 34): the flows page shows each flow's runs by
// status and its triggers, and follows runs as they start; Delete asks
// first and removes the flow; a flow with runs going says how many and
// deletes only by cancelling them, and a run started while the dialog is
// open is caught by the server's refusal and shown.
func TestUIFlowsPage(t *testing.T) {
	s := newStack(t)
	var board struct{ ID string }
	s.api("POST", "/boards", map[string]any{"name": "Leads", "sections": []map[string]string{{"id": "new", "name": "New"}}}, &board)
	busy := s.uxFlow("Busy", board.ID)
	quiet := s.uxFlow("Quiet", "")
	var idle struct{ ID string }
	s.api("POST", "/flows", map[string]any{"name": "Idle", "graph": map[string]any{"nodes": []map[string]any{
		{"id": "t", "type": "Transform", "position": map[string]any{"x": 0, "y": 0}, "data": map[string]any{"expression": `{"ok": true}`}}},
		"edges": []any{}}}, &idle)
	s.api("POST", "/flows/"+busy+"/triggers", map[string]any{"slug": "busy-hook"}, nil)
	s.api("POST", "/flows/"+busy+"/triggers", map[string]any{"kind": "schedule", "cron": "0 9 * * *", "enabled": false}, nil)

	row := func(id string) string { return fmt.Sprintf(`tr[data-flow=%q]`, id) }
	count := func(id, st string) string { return row(id) + fmt.Sprintf(` [data-count=%q]`, st) }
	s.run("flows", chromedp.Navigate(s.url+"/flows"), tokenSignIn(token))
	s.waitJS("rows", fmt.Sprintf(`!!document.querySelector(%q)`, row(busy)))
	require.Equal(t, "no runs", s.text(row(busy)+" .muted"))
	var trig string
	s.run("triggers", chromedp.AttributeValue(row(busy)+` [data-triggers]`, "data-triggers", &trig, nil, chromedp.ByQuery))
	require.Equal(t, "2", trig)
	require.Contains(t, s.text(row(busy)+` [data-triggers]`), "1 webhook, 1 schedule")
	require.Contains(t, s.text(row(idle.ID)+` [data-triggers]`), "No triggers")

	// Runs started: two running and one queued behind its entity's run,
	// shown as they start, without a reload.
	var ada struct{ ID string }
	s.api("POST", "/entities", map[string]any{"board_id": board.ID, "type": "lead", "name": "Ada"}, &ada)
	for range 2 {
		s.api("POST", "/flows/"+busy+"/runs", map[string]any{"entity_id": ada.ID}, nil)
	}
	s.api("POST", "/flows/"+busy+"/runs", map[string]any{}, nil)
	s.api("POST", "/flows/"+idle.ID+"/runs", map[string]any{}, nil)
	s.waitJS("counts", fmt.Sprintf(`document.querySelector(%q)?.dataset.n === "2" && document.querySelector(%q)?.dataset.n === "1"
		&& document.querySelector(%q)?.dataset.n === "1"`, count(busy, "running"), count(busy, "queued"), count(idle.ID, "completed")))
	var shown []string
	s.run("statuses", chromedp.Evaluate(fmt.Sprintf(`[...document.querySelectorAll(%q)].map(a => a.dataset.count)`, row(busy)+" [data-count]"), &shown))
	require.Equal(t, []string{"running", "queued"}, shown, "only the statuses with runs")
	s.shot("f01-flows-counts")

	// Delete asks, then removes the flow.
	s.run("delete idle", chromedp.Click(row(idle.ID)+` [data-action="delete-flow"]`, chromedp.ByQuery),
		chromedp.WaitVisible(fmt.Sprintf(`[data-delete-dialog=%q]`, idle.ID), chromedp.ByQuery))
	require.Equal(t, 200, s.status("/flows/"+idle.ID), "asked, not deleted yet")
	s.run("confirm", chromedp.Click(`[data-action="delete-confirm"]`, chromedp.ByQuery))
	s.waitJS("idle gone", fmt.Sprintf(`!document.querySelector(%q) && !document.querySelector("[data-delete-dialog]")`, row(idle.ID)))
	require.Equal(t, 404, s.status("/flows/"+idle.ID))
	require.Contains(t, s.text("[data-notice]"), "Idle")

	// A flow with runs going: the dialog counts them and offers only to
	// cancel them and delete.
	s.run("delete busy", chromedp.Click(row(busy)+` [data-action="delete-flow"]`, chromedp.ByQuery),
		chromedp.WaitVisible(`[data-busy="3"]`, chromedp.ByQuery))
	require.Contains(t, s.text(`[data-busy]`), "2 running, 0 paused, 1 queued")
	var plain bool
	s.run("no plain delete", chromedp.Evaluate(`!!document.querySelector('[data-action="delete-confirm"]')`, &plain))
	require.False(t, plain, "no plain delete while runs are going")
	s.shot("f02-delete-busy")
	s.run("cancel and delete", chromedp.Click(`[data-action="delete-cancel-runs"]`, chromedp.ByQuery))
	s.waitJS("busy gone", fmt.Sprintf(`!document.querySelector(%q)`, row(busy)))
	var runs struct {
		Runs []struct{ Status string } `json:"runs"`
	}
	s.api("GET", "/runs?flow_id="+busy, nil, &runs)
	require.Len(t, runs.Runs, 3)
	for _, r := range runs.Runs {
		require.Equal(t, "cancelled", r.Status)
	}

	// A run started while the dialog is open: the server refuses, the
	// dialog says so, and nothing is deleted until the run is cancelled.
	s.run("delete quiet", chromedp.Click(row(quiet)+` [data-action="delete-flow"]`, chromedp.ByQuery),
		chromedp.WaitVisible(`[data-action="delete-confirm"]`, chromedp.ByQuery))
	var started struct{ ID string }
	s.api("POST", "/flows/"+quiet+"/runs", map[string]any{}, &started)
	s.run("confirm quiet", chromedp.Click(`[data-action="delete-confirm"]`, chromedp.ByQuery),
		chromedp.WaitVisible(`[data-busy="1"]`, chromedp.ByQuery))
	require.Equal(t, 200, s.status("/flows/"+quiet), "refused: still there")
	s.run("cancel quiet", chromedp.Click(`[data-action="delete-cancel-runs"]`, chromedp.ByQuery))
	s.waitJS("quiet gone", fmt.Sprintf(`!document.querySelector(%q)`, row(quiet)))
	var run struct{ Status string }
	s.api("GET", "/runs/"+started.ID, nil, &run)
	require.Equal(t, "cancelled", run.Status)
}
