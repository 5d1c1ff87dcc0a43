package browser_test

import (
	"fmt"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"
)

// TestUITriggersOnCanvas: a flow's triggers are drawn as start nodes left
// of its first step; a click opens one's settings in the side panel, with
// the Triggers page's forms (a schedule enabled and its cron edited there,
// a webhook's entity mapping and wait; saved at once; the webhook keeps its
// slug); they are never part of the
// graph the editor saves, and clicking them is no unsaved change.
func TestUITriggersOnCanvas(t *testing.T) {
	s := newStack(t)
	var flow struct{ ID string }
	s.api("POST", "/flows", map[string]any{"name": "Started", "graph": map[string]any{
		"nodes": []map[string]any{
			{"id": "request", "type": "Transform", "position": map[string]int{"x": 0, "y": 0}, "data": map[string]any{"expression": "input"}},
			{"id": "done", "type": "Transform", "position": map[string]int{"x": 260, "y": 0}, "data": map[string]any{"expression": "input"}},
		},
		"edges": []map[string]any{{"id": "e1", "source": "request", "target": "done"}}}}, &flow)
	var hook, sched struct {
		ID   string `json:"id"`
		Slug string `json:"slug"`
	}
	s.api("POST", "/flows/"+flow.ID+"/triggers", map[string]any{"slug": "canvas-hook"}, &hook)
	s.api("POST", "/flows/"+flow.ID+"/triggers", map[string]any{"kind": "schedule", "cron": "0 9 * * *", "timezone": "UTC", "enabled": false}, &sched)
	var board struct{ ID string }
	s.api("POST", "/boards", map[string]any{"name": "Leads", "sections": []map[string]string{{"id": "new", "name": "New"}, {"id": "won", "name": "Won"}}}, &board)
	start := func(id string) string { return fmt.Sprintf(`.react-flow__node[data-id="trigger:%s"]`, id) }

	s.run("open", chromedp.Navigate(s.url+"/flows/"+flow.ID), tokenSignIn(token))
	s.waitJS("start nodes", fmt.Sprintf(`!!document.querySelector(%q) && !!document.querySelector(%q)`, start(hook.ID), start(sched.ID)))
	s.settle(start(hook.ID))
	require.Contains(t, s.text(start(hook.ID)), "POST /hooks/canvas-hook")
	require.Contains(t, s.text(start(sched.ID)), "0 9 * * *")
	var left struct{ Hook, Sched, Request float64 }
	s.run("where", chromedp.Evaluate(fmt.Sprintf(`({Hook: document.querySelector(%q).getBoundingClientRect().right,
		Sched: document.querySelector(%q).getBoundingClientRect().right,
		Request: document.querySelector('.react-flow__node[data-id="request"]').getBoundingClientRect().left})`, start(hook.ID), start(sched.ID)), &left))
	require.Less(t, left.Hook, left.Request, "the webhook starts left of the first step")
	require.Less(t, left.Sched, left.Request)
	require.True(t, s.exists(fmt.Sprintf(`.react-flow__edge[data-id="trigger:%s>request"]`, hook.ID)), "drawn leading into the first step")

	// The schedule's settings, from a click on its node: enabled, new cron.
	s.run("open the schedule", chromedp.Click(start(sched.ID), chromedp.ByQuery),
		chromedp.WaitVisible(fmt.Sprintf(`[data-trigger-settings=%q] li.trigger.schedule`, sched.ID), chromedp.ByQuery))
	s.run("enable", chromedp.Click(`[data-trigger-settings] [data-action="enable"]`, chromedp.ByQuery))
	s.waitJS("enabled", `document.querySelector('[data-trigger-settings] li.trigger.schedule')?.dataset.enabled === "true"`)
	cron := fmt.Sprintf("#sched-%s-cron", sched.ID[:8])
	s.run("edit", chromedp.Click(`[data-trigger-settings] [data-action="edit"]`, chromedp.ByQuery), chromedp.WaitVisible(cron, chromedp.ByQuery),
		setValue(cron, "30 8 * * 1-5"), chromedp.Click(`[data-trigger-settings] [data-action="save-schedule"]`, chromedp.ByQuery))
	s.waitJS("new cron on the node", fmt.Sprintf(`document.querySelector(%q)?.innerText.includes("30 8 * * 1-5")`, start(sched.ID)))
	var got struct {
		Cron    string `json:"cron"`
		Enabled bool   `json:"enabled"`
		Slug    string `json:"slug"`
	}
	s.api("GET", "/triggers/"+sched.ID, nil, &got)
	require.Equal(t, "30 8 * * 1-5", got.Cron)
	require.True(t, got.Enabled)
	s.shot("tc01-schedule-on-canvas")

	// The webhook's.
	s.run("open the webhook", chromedp.Click(start(hook.ID), chromedp.ByQuery),
		chromedp.WaitVisible(fmt.Sprintf(`[data-trigger-settings=%q] li.trigger.webhook`, hook.ID), chromedp.ByQuery))
	require.Contains(t, s.text(`[data-trigger-settings]`), "/hooks/canvas-hook")

	// Its entity mapping and respond, edited there: a board chosen from the
	// list, the type and paths typed, the wait set; saved at once.
	p := "#hook-" + hook.ID[:8]
	s.run("edit the webhook", chromedp.Click(`[data-trigger-settings] [data-action="edit"]`, chromedp.ByQuery),
		chromedp.WaitVisible(p+"-entity", chromedp.ByQuery), chromedp.Click(p+"-entity", chromedp.ByQuery),
		chromedp.WaitVisible(p+"-board", chromedp.ByQuery))
	s.waitJS("boards listed", fmt.Sprintf(`!!document.querySelector('%s-board option[value="%s"]')`, p, board.ID))
	s.run("the mapping", setValue(p+"-board", board.ID), setValue(p+"-entity-type", "lead"),
		setValue(p+"-name-path", "customer.name"), setValue(p+"-email-path", "customer.email"),
		chromedp.Click(p+"-wait", chromedp.ByQuery), chromedp.WaitVisible(p+"-wait-seconds", chromedp.ByQuery), setValue(p+"-wait-seconds", "12"))
	s.waitJS("sections shown", `document.querySelector("[data-trigger-settings] .hook-entity")?.innerText.includes("New → Won")`)
	s.run("save the webhook", chromedp.Click(`[data-trigger-settings] [data-action="save-webhook"]`, chromedp.ByQuery))
	s.waitJS("saved", `!!document.querySelector("[data-trigger-settings] [data-respond-wait='12']")`)
	var hooked struct {
		Slug    string            `json:"slug"`
		Entity  map[string]string `json:"entity"`
		Respond map[string]any    `json:"respond"`
	}
	s.api("GET", "/triggers/"+hook.ID, nil, &hooked)
	require.Equal(t, "canvas-hook", hooked.Slug)
	require.Equal(t, map[string]string{"board_id": board.ID, "type": "lead", "name_path": "customer.name", "email_path": "customer.email"}, hooked.Entity)
	require.Equal(t, map[string]any{"mode": "wait", "timeout_seconds": 12.0}, hooked.Respond)
	require.Contains(t, s.text(`[data-trigger-settings] li.trigger.webhook`), "creates or updates a lead")
	s.shot("tc02-webhook-on-canvas")

	// A step still selects as before; the triggers are no edit to the graph.
	s.run("select request", chromedp.Click(`.react-flow__node[data-id="request"]`, chromedp.ByQuery),
		chromedp.WaitVisible(`form[aria-label="Transform request settings"]`, chromedp.ByQuery))
	require.False(t, s.exists(`[data-trigger-settings]`))
	require.NotContains(t, s.text("body"), "Unsaved changes.")
	s.run("save", chromedp.Click(`//button[text()="Save"]`, chromedp.BySearch))
	s.waitJS("saved", `document.body.innerText.includes("No changes to the graph: still version 1")`)
	var saved struct {
		Graph struct {
			Nodes []struct{ ID string }
			Edges []struct{ ID string }
		}
	}
	s.api("GET", "/flows/"+flow.ID, nil, &saved)
	require.Len(t, saved.Graph.Nodes, 2)
	require.Len(t, saved.Graph.Edges, 1)
}
