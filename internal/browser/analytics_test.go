package browser_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/stitchd/stitchd/internal/testkit"
)

// TestUIAnalytics: a board's SLA set in its settings flags an entity
// overdue on its card; the board's Analytics page draws the funnel and the
// time in section and lists the overdue entity; a flow's heat map puts
// each step's figures on the canvas and each branch's share on its edge.
func TestUIAnalytics(t *testing.T) {
	s := newStack(t)
	var board struct{ ID string }
	s.api("POST", "/boards", map[string]any{"name": "Sales", "sections": []map[string]any{{"id": "lead", "name": "Lead"},
		{"id": "won", "name": "Won"}}}, &board)
	for _, n := range []string{"Acme", "Globex"} {
		s.api("POST", "/entities", map[string]any{"board_id": board.ID, "type": "lead", "name": n, "section_id": "lead"}, nil)
	}
	s.run("board", chromedp.Navigate(s.url+"/boards/"+board.ID), tokenSignIn(token))
	s.waitJS("cards", `document.querySelectorAll('.column[data-section="lead"] .entity-card').length === 2`)
	// An SLA of one second (0.0003 h), set in the board's settings.
	s.run("edit", chromedp.Click(`[data-action="edit-board"]`, chromedp.ByQuery), chromedp.WaitVisible(`[data-sla-input="lead"]`, chromedp.ByQuery),
		setValue(`[data-sla-input="lead"]`, "0.0003"),
		chromedp.Click(`[data-section-edit="lead"] [data-action="save-sla"]`, chromedp.ByQuery))
	s.waitJS("SLA shown", `(document.querySelector('.column[data-section="lead"] .column-sla')?.innerText || "").includes("SLA")`)
	// Once a second has passed, the board shows both cards overdue.
	testkit.Eventually(t, 30*time.Second, func() bool {
		var b struct {
			Sections []struct {
				Entities []struct {
					Overdue bool `json:"overdue"`
				} `json:"entities"`
			} `json:"sections"`
		}
		s.api("GET", "/boards/"+board.ID, nil, &b)
		return len(b.Sections[0].Entities) == 2 && b.Sections[0].Entities[1].Overdue
	}, "the entities to be past the SLA")
	s.run("reload", chromedp.Navigate(s.url+"/boards/"+board.ID))
	s.waitJS("overdue card", `document.querySelectorAll('.column[data-section="lead"] .entity-card[data-overdue="true"]').length === 2`)

	s.run("analytics", chromedp.Click(`[data-link="board-analytics"]`, chromedp.ByQuery))
	s.waitJS("analytics page", `!!document.querySelector('[data-board-analytics] [data-analytics-section="lead"]')`)
	require.Equal(t, "2", s.text(`[data-analytics-section="lead"] [data-entered]`))
	require.Equal(t, "2", s.text(`[data-analytics-section="lead"] [data-overdue-count]`))
	s.waitJS("charts drawn", `document.querySelectorAll('.chart .recharts-bar-rectangle, .chart .recharts-rectangle').length > 0`)
	s.waitJS("overdue list", `document.querySelectorAll('[data-overdue-entity]').length === 2`)
	s.shot("board-analytics")

	// A flow whose switch sends amounts over 100 one way: 3 of 4 runs.
	var flow struct{ ID string }
	s.api("POST", "/flows", map[string]any{"name": "Triage", "graph": map[string]any{"nodes": []map[string]any{
		{"id": "check", "type": "Condition", "position": map[string]any{"x": 0, "y": 0}, "data": map[string]any{}},
		{"id": "big", "type": "Transform", "position": map[string]any{"x": 250, "y": -80}, "data": map[string]any{"expression": `{"big": true}`}},
		{"id": "small", "type": "Transform", "position": map[string]any{"x": 250, "y": 80}, "data": map[string]any{"expression": `{"big": false}`}},
	}, "edges": []map[string]any{
		{"id": "e1", "source": "check", "target": "big", "data": map[string]any{"condition": "input.amount > 100"}},
		{"id": "e2", "source": "check", "target": "small", "data": map[string]any{"default": true}},
	}}}, &flow)
	for _, a := range []int{500, 200, 300, 5} {
		s.api("POST", "/flows/"+flow.ID+"/runs", map[string]any{"input": map[string]any{"amount": a}}, nil)
	}
	s.run("editor", chromedp.Navigate(s.url+"/flows/"+flow.ID))
	s.waitJS("canvas", `!!document.querySelector('.react-flow__node[data-id="check"]')`)
	s.run("heat map", chromedp.Click(`[data-action="heatmap"]`, chromedp.ByQuery))
	s.waitJS("figures on the steps", `document.querySelector('.snode[data-node-id="check"] [data-heat]')?.dataset.heat === "4"`)
	require.Contains(t, s.text(`.snode[data-node-id="big"] .snode-heat`), "3 runs")
	s.waitJS("branch shares", fmt.Sprintf(`[...document.querySelectorAll('.react-flow__edge-text')].map(e => e.textContent).sort().join() === %q`, "25 %,75 %"))
	require.Contains(t, s.text("[data-heat-summary]"), "4 runs, 4 completed")
	s.shot("flow-heatmap")
}
