package browser_test

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/stitchd/stitchd/internal/demo"
)

// TestUIRunTimeline (issue 34): beside the graph, the run view lists each
// step in the order it started with its start, finish, duration and what
// it waited for; a parallel step is one line for its instances.
func TestUIRunTimeline(t *testing.T) {
	s := newStack(t)
	var flow struct{ ID string }
	s.api("POST", "/flows", map[string]any{"name": "Timed", "graph": map[string]any{
		"nodes": []map[string]any{
			{"id": "split", "type": "Splitter", "position": map[string]any{"x": 0, "y": 0}, "data": map[string]any{"arrayPath": "xs"}},
			{"id": "work", "type": "Worker", "position": map[string]any{"x": 250, "y": 0}, "data": map[string]any{"webhookUrl": s.worker.URL + "/work"}},
			{"id": "join", "type": "Collector", "position": map[string]any{"x": 500, "y": 0}, "data": map[string]any{}},
			{"id": "ask", "type": "UX", "position": map[string]any{"x": 750, "y": 0}, "data": map[string]any{"prompt": "OK?"}},
		},
		"edges": []map[string]any{{"id": "e1", "source": "split", "target": "work"}, {"id": "e2", "source": "work", "target": "join"},
			{"id": "e3", "source": "join", "target": "ask"}}}}, &flow)
	var run struct{ ID string }
	s.api("POST", "/flows/"+flow.ID+"/runs", map[string]any{"input": map[string]any{"xs": []int{1, 2, 3}}}, &run)
	s.run("run", chromedp.Navigate(s.url+"/runs/"+run.ID), tokenSignIn(token))
	line := func(id string) string { return fmt.Sprintf(`[data-timeline] [data-timeline-node=%q]`, id) }
	// The person's wait is still going, and shown so.
	s.waitJS("waiting line", fmt.Sprintf(`!!document.querySelector(%q)`, line("ask")+"[data-going]"))
	require.Contains(t, s.text(line("ask")), "waiting for a person")
	var order []string
	s.run("order", chromedp.Evaluate(`[...document.querySelectorAll("[data-timeline-node]")].map(li => li.dataset.timelineNode)`, &order))
	require.Equal(t, []string{"split", "work", "join", "ask"}, order, "steps in the order they started")
	// The workers' line sums up its three instances; each took the
	// worker's ~300 ms, waiting for it.
	w := s.text(line("work"))
	require.Contains(t, w, "×3")
	require.Contains(t, w, "waiting for a worker")
	require.Contains(t, w, "avg")
	var ms float64
	s.run("work duration", chromedp.Evaluate(fmt.Sprintf(`+document.querySelector(%q).dataset.durationMs`, line("work")+" .tl-dur"), &ms))
	require.GreaterOrEqual(t, ms, 250.0, "the workers' line lasts as long as they took")
	require.Less(t, ms, 20000.0)
	s.api("POST", "/runs/"+run.ID+"/nodes/ask/complete", map[string]any{"outcome": "approve"}, nil)
	s.waitJS("finished", fmt.Sprintf(`!document.querySelector(%q) && /→ \d/.test(document.querySelector(%q).innerText)`,
		line("ask")+"[data-going]", line("ask")))
	s.shot("r01-timeline")
}

// TestUIReadableZoom (issue 34): the demo flow, fitted on a 1280×800
// screen, is drawn with node titles of 11 px or more (it is panned, not
// shrunk); on a phone-sized screen the whole flow still fits the canvas.
func TestUIReadableZoom(t *testing.T) {
	s := newStack(t)
	var board struct{ ID string }
	secs := make([]map[string]string, len(demo.Sections))
	for i, sec := range demo.Sections {
		secs[i] = map[string]string{"id": sec.ID, "name": sec.Name}
	}
	s.api("POST", "/boards", map[string]any{"name": "Lead qualification", "sections": secs}, &board)
	var graph any
	require.NoError(t, json.Unmarshal(demo.Graph(s.worker.URL), &graph))
	var flow struct{ ID string }
	s.api("POST", "/flows", map[string]any{"name": "Lead qualification", "board_id": board.ID, "graph": graph}, &flow)

	// titlePx is the smallest node title as drawn: its font size times the
	// canvas's zoom.
	const titlePx = `(() => { const m = new DOMMatrix(getComputedStyle(document.querySelector(".react-flow__viewport")).transform);
		return Math.min(...[...document.querySelectorAll(".snode-title")].map(el => parseFloat(getComputedStyle(el).fontSize) * m.a)); })()`
	for _, page := range []string{"/flows/" + flow.ID} {
		s.run("open "+page, chromedp.Navigate(s.url+page))
		if page == "/flows/"+flow.ID {
			s.run("sign in", tokenSignIn(token))
		}
		s.waitJS("nodes", `document.querySelectorAll(".snode-title").length >= 8`)
		s.settle(`.react-flow__node[data-id="enrich"]`)
		var px float64
		s.run("measure", chromedp.Evaluate(titlePx, &px))
		require.GreaterOrEqual(t, px, 11.0, "%s: node titles are drawn at %.1f px", page, px)
	}
	var run struct{ ID string }
	s.api("POST", "/flows/"+flow.ID+"/runs", map[string]any{"input": map[string]any{"name": "Ada", "email": "ada@example.com"}}, &run)
	s.run("run view", chromedp.Navigate(s.url+"/runs/"+run.ID))
	s.waitJS("run nodes", `document.querySelectorAll(".snode-title").length >= 8`)
	s.settle(`.react-flow__node[data-id="enrich"]`)
	var px float64
	s.run("measure run", chromedp.Evaluate(titlePx, &px))
	require.GreaterOrEqual(t, px, 11.0, "run view: node titles are drawn at %.1f px", px)
	s.shot("z01-demo-1280")

	// A phone: every node inside the canvas.
	s.run("phone", chromedp.EmulateViewport(390, 844), chromedp.Navigate(s.url+"/flows/"+flow.ID))
	s.waitJS("phone nodes", `document.querySelectorAll(".react-flow__node").length >= 8`)
	s.settle(`.react-flow__node[data-id="enrich"]`)
	var fits bool
	s.run("fits", chromedp.Evaluate(`(() => { const c = document.querySelector(".react-flow").getBoundingClientRect();
		return [...document.querySelectorAll(".react-flow__node")].every(n => { const b = n.getBoundingClientRect();
			return b.left >= c.left - 1 && b.right <= c.right + 1 && b.top >= c.top - 1 && b.bottom <= c.bottom + 1; }); })()`, &fits))
	s.shot("z02-demo-phone")
	require.True(t, fits, "on a phone the whole flow fits the canvas")
}
