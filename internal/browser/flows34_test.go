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
	req, err := http.NewRequestWithContext(s.t.Context(), http.MethodGet, s.url+"/api/v1"+path, nil)
	require.NoError(s.t, err)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := s.client.Do(req)
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

// TestUIQueuedRun (issue 34): a run queued behind its entity's run has a
// look of its own (neither running nor failed), says what it waits behind
// with a link to that run, is offered by the runs filter, and begins — on
// screen — when the run before it ends.
func TestUIQueuedRun(t *testing.T) {
	s := newStack(t)
	var board struct{ ID string }
	s.api("POST", "/boards", map[string]any{"name": "Leads", "sections": []map[string]string{{"id": "new", "name": "New"}}}, &board)
	flow := s.uxFlow("One at a time", board.ID)
	var ada struct{ ID string }
	s.api("POST", "/entities", map[string]any{"board_id": board.ID, "type": "lead", "name": "Ada"}, &ada)
	var first, second struct{ ID, Status string }
	s.api("POST", "/flows/"+flow+"/runs", map[string]any{"entity_id": ada.ID}, &first)
	s.api("POST", "/flows/"+flow+"/runs", map[string]any{"entity_id": ada.ID}, &second)
	require.Equal(t, "queued", second.Status)

	s.run("queued run", chromedp.Navigate(s.url+"/runs/"+second.ID), tokenSignIn(token))
	s.waitJS("queued banner", fmt.Sprintf(`!!document.querySelector('[data-run-status="queued"] [data-queued] [data-behind=%q]')`, first.ID))
	require.Contains(t, s.text("[data-queued]"), "waits its turn")
	// Its own look: the chip is the queued one, coloured unlike a running
	// or a failed run's.
	var look struct {
		Class, Border, Color, Running, Failed string
	}
	s.run("look", chromedp.Evaluate(`(() => { const el = document.querySelector(".runview .editor-bar .status");
		const probe = c => { const p = document.createElement("span"); p.className = "status " + c; document.body.append(p);
			const v = getComputedStyle(p).backgroundColor + " " + getComputedStyle(p).color; p.remove(); return v; };
		const cs = getComputedStyle(el);
		return {Class: el.className, Border: cs.borderTopStyle, Color: cs.backgroundColor + " " + cs.color,
			Running: probe("status-running"), Failed: probe("status-failed")}; })()`, &look))
	require.Equal(t, "status status-queued", look.Class)
	require.Equal(t, "dashed", look.Border)
	require.NotEqual(t, look.Running, look.Color, "not the running look")
	require.NotEqual(t, look.Failed, look.Color, "not the failed look")
	s.shot("q01-queued-run")

	// The link leads to the run it waits behind.
	s.run("behind", chromedp.Click(`[data-behind]`, chromedp.ByQuery))
	s.waitJS("first run", `location.pathname.endsWith("`+first.ID+`") && !!document.querySelector('[data-run-status="running"]')`)

	// The runs list: filtered to queued, only the queued run, with its look.
	s.run("runs list", chromedp.Navigate(s.url+"/runs?status=queued"))
	s.waitJS("queued rows", fmt.Sprintf(`!!document.querySelector('tr[data-run=%q] .status-queued')`, second.ID))
	var rows int
	var selected string
	s.run("rows", chromedp.Evaluate(`document.querySelectorAll("tr[data-run]").length`, &rows),
		chromedp.Value("#runs-status", &selected, chromedp.ByQuery))
	require.Equal(t, 1, rows)
	require.Equal(t, "queued", selected, "the filter offers queued")

	// The run before it ends: the queued run begins, and its view says so.
	s.run("back", chromedp.Navigate(s.url+"/runs/"+second.ID))
	s.waitJS("queued again", `!!document.querySelector("[data-queued]")`)
	s.api("POST", "/runs/"+first.ID+"/nodes/ask/complete", map[string]any{"outcome": "approve"}, nil)
	s.waitJS("begun", `!!document.querySelector('[data-run-status="running"]') && !document.querySelector("[data-queued]")`)
}

// TestUIFlowSettings (issue 34): the flow editor's settings set
// entityConcurrency (queue by default) and keep the graph's other settings
// when saved.
func TestUIFlowSettings(t *testing.T) {
	s := newStack(t)
	var f struct{ ID string }
	s.api("POST", "/flows", map[string]any{"name": "Settled", "graph": map[string]any{"settings": map[string]any{"deadlineSeconds": 3600},
		"nodes": []map[string]any{{"id": "ask", "type": "UX", "position": map[string]any{"x": 0, "y": 0}, "data": map[string]any{"prompt": "OK?"}}},
		"edges": []any{}}}, &f)
	s.run("editor", chromedp.Navigate(s.url+"/flows/"+f.ID), tokenSignIn(token))
	s.waitJS("settings", `!!document.querySelector("[data-flow-settings]")`)
	var checked bool
	s.run("default", chromedp.Evaluate(`document.querySelector('[data-concurrency="queue"]').checked`, &checked))
	require.True(t, checked, "queue is the default")
	require.Equal(t, "3600", s.value("#flow-deadline"))
	require.Contains(t, s.text("[data-flow-settings]"), "begins by itself when the entity's run before it ends")
	// The three choices line up, each radio button at the start of its
	// line and its words right after it (a text box's width made each
	// button a wide box, its dot drawn in the middle of it).
	var radios []struct{ Left, Width, Gap float64 }
	s.run("radios", chromedp.Evaluate(`[...document.querySelectorAll("[data-concurrency]")].map(r => {
		const b = r.getBoundingClientRect(), w = r.nextElementSibling.getBoundingClientRect(), f = r.closest("fieldset").getBoundingClientRect();
		return {Left: b.left - f.left, Width: b.width, Gap: w.left - b.right}; })`, &radios))
	require.Len(t, radios, 3)
	for _, r := range radios {
		require.InDelta(t, radios[0].Left, r.Left, 0.5, "aligned: %+v", radios)
		require.Less(t, r.Left, 30.0, "at the start of the line: %+v", radios)
		require.Less(t, r.Width, 20.0, "a radio button's own size: %+v", radios)
		require.Less(t, r.Gap, 12.0, "the words right after the button: %+v", radios)
	}
	s.run("skip", chromedp.Click(`[data-concurrency="skip"]`, chromedp.ByQuery),
		chromedp.Click(`.editor-bar .bar-actions .btn.primary`, chromedp.ByQuery))
	s.waitJS("saved", `/Saved as version 2/.test(document.querySelector(".editor-msgs").innerText)`)
	var got struct {
		Graph struct {
			Settings map[string]any `json:"settings"`
		} `json:"graph"`
	}
	s.api("GET", "/flows/"+f.ID, nil, &got)
	require.Equal(t, map[string]any{"deadlineSeconds": 3600.0, "entityConcurrency": "skip"}, got.Graph.Settings)
}
