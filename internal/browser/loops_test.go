package browser_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/stitchd/stitchd/internal/testkit"
)

// TestUILoops walks a loop in the web UI: draft (a Worker) → review (UX);
// approve → publish; reject → draft is a loop edge (maxIterations 5). The
// draft is rejected twice (once on the approvals page, once through the
// API) and approved the third time from the run view's panel. The run view
// draws the three nodes only (no draft@0 rows as nodes), marks draft and
// review with their third iteration, and the review panel's stepper reads
// each iteration (the first one's decision: reject); the timeline says when
// the loop went round. In the editor the loop edge arcs back with its ↺
// label; its settings show the loop and its maxIterations; unmarking it
// flags the cycle it closes; maxIterations 0 is refused by the server,
// whose message is painted on the edge.
func TestUILoops(t *testing.T) {
	s := newStack(t)
	var flow struct{ ID string }
	s.api("POST", "/flows", map[string]any{"name": "Loops", "graph": map[string]any{
		"nodes": []map[string]any{
			{"id": "draft", "type": "Worker", "position": map[string]any{"x": 0, "y": 0},
				"data": map[string]any{"label": "Write the draft", "webhookUrl": s.worker.URL + "/draft", "timeoutSeconds": 30}},
			{"id": "review", "type": "UX", "position": map[string]any{"x": 320, "y": 0},
				"data": map[string]any{"label": "Review the draft", "prompt": "Publish this draft?"}},
			{"id": "publish", "type": "Worker", "position": map[string]any{"x": 640, "y": 0},
				"data": map[string]any{"label": "Publish", "webhookUrl": s.worker.URL + "/publish"}},
		},
		"edges": []map[string]any{
			{"id": "e1", "source": "draft", "target": "review"},
			{"id": "e2", "source": "review", "target": "publish", "data": map[string]any{"outcome": "approve"}},
			{"id": "e3", "source": "review", "target": "draft", "data": map[string]any{"outcome": "reject", "loop": map[string]any{"maxIterations": 5}}},
		},
	}}, &flow)
	var run struct{ ID string }
	s.api("POST", "/flows/"+flow.ID+"/runs", map[string]any{"input": map[string]any{"topic": "loops"}}, &run)

	type nodeState struct {
		Status    string
		Iteration int
		Output    map[string]any
	}
	var got struct {
		Status string
		Nodes  map[string]nodeState
	}
	// waitReview waits until review waits for a person in iteration iter.
	waitReview := func(iter int) {
		t.Helper()
		testkit.Eventually(t, 25*time.Second, func() bool {
			s.api("GET", "/runs/"+run.ID, nil, &got)
			r := got.Nodes["review"]
			return r.Status == "waiting_for_user" && r.Iteration == iter
		}, "review to wait in iteration %d", iter)
	}

	// Iteration 1: rejected on the approvals page.
	waitReview(0)
	s.run("open", chromedp.Navigate(s.url+"/approvals"), tokenSignIn(token))
	card := fmt.Sprintf(`li[data-approval="%s/review"]`, run.ID)
	s.waitJS("approval card", fmt.Sprintf(`!!document.querySelector(%q)`, card+` button[data-outcome="reject"]`))
	s.run("comment", sendKeys(card+" textarea.comment", "too long"))
	s.run("reject", chromedp.Click(card+` button[data-outcome="reject"]`, chromedp.ByQuery))
	// Iteration 2: the draft is written again (the worker calls back) and
	// rejected through the API.
	waitReview(1)
	s.api("POST", "/runs/"+run.ID+"/nodes/review/complete", map[string]any{"outcome": "reject", "comment": "still too long"}, nil)
	// Iteration 3: approved from the run view's panel.
	waitReview(2)
	s.run("run view", chromedp.Navigate(s.url+"/runs/"+run.ID))
	node := func(id string) string { return fmt.Sprintf(`.react-flow__node[data-id="%s"]`, id) }
	s.waitJS("review waiting", `!!document.querySelector('.snode[data-node-id="review"][data-status="waiting_for_user"]')`)
	s.settle(node("review"))
	s.run("open review", chromedp.Click(node("review"), chromedp.ByQuery),
		chromedp.WaitVisible(`.node-detail button[data-outcome="approve"]`, chromedp.ByQuery))
	s.waitJS("stepper while waiting", `document.querySelectorAll(".node-detail .iterations button").length === 3`)
	s.run("approve", chromedp.Click(`.node-detail button[data-outcome="approve"]`, chromedp.ByQuery))
	s.waitJS("publish completed", `!!document.querySelector('.snode[data-node-id="publish"][data-status="completed"]')`)
	s.waitJS("run completed", `document.querySelector(".editor-bar .status")?.innerText === "completed"`)

	// The API keeps the earlier iterations as draft@0, review@1 …
	s.api("GET", "/runs/"+run.ID, nil, &got)
	require.Equal(t, "completed", got.Status)
	require.Equal(t, 2, got.Nodes["review"].Iteration)
	require.Contains(t, got.Nodes, "draft@0")
	require.Contains(t, got.Nodes, "review@1")
	require.Len(t, got.Nodes, 7, "draft and review three times, publish once")

	// The canvas: three nodes, not one per iteration; draft and review on
	// their third iteration, publish (not on the loop) unmarked.
	var count int
	s.run("nodes", chromedp.Evaluate(`document.querySelectorAll(".react-flow__node").length`, &count))
	require.Equal(t, 3, count, "earlier iterations are not drawn as nodes")
	require.False(t, s.exists(`.react-flow__node[data-id*="@"]`))
	require.False(t, s.exists(`.snode-counts`), "earlier iterations are not counted as instances")
	iterBadge := func(id string) string {
		var v string
		s.run("badge "+id, chromedp.Evaluate(fmt.Sprintf(`document.querySelector(%q)?.innerText ?? ""`, `.snode[data-node-id="`+id+`"] .snode-iter`), &v))
		return v
	}
	require.Equal(t, "↺ ×3", iterBadge("review"))
	require.Equal(t, "↺ ×3", iterBadge("draft"))
	require.Empty(t, iterBadge("publish"))
	require.True(t, s.exists(`.react-flow__edge[data-id="e3"].edge-loop[data-taken="true"]`), "the loop edge was taken")
	require.Contains(t, s.svgText(`.react-flow__edge[data-id="e3"] .react-flow__edge-text`), "went round 2×")

	// The review panel: an iteration stepper; the current one approved,
	// the first one rejected with its comment.
	s.waitJS("panel current", `document.querySelector(".node-detail .instance")?.innerText.includes("approve")`)
	var steps []string
	s.run("steps", chromedp.Evaluate(`[...document.querySelectorAll(".node-detail .iterations button")].map(b => b.innerText + ":" + b.dataset.status)`, &steps))
	require.Equal(t, []string{"1:completed", "2:completed", "3 (current):completed"}, steps)
	require.Equal(t, "true", s.attr(`.node-detail .iterations button[data-iteration="3"]`, "aria-pressed"))
	s.shot("l01-run-view-loop")
	s.run("iteration 1", chromedp.Click(`.node-detail .iterations button[data-iteration="1"]`, chromedp.ByQuery))
	s.waitJS("iteration 1 shown", `document.querySelector(".node-detail .instance")?.dataset.iteration === "1"`)
	panel := s.text(".node-detail .instance")
	require.Contains(t, strings.ToLower(panel), "review@0 · iteration 1 of 3 (earlier)") // a heading, in capitals
	require.Contains(t, panel, "reject")
	require.Contains(t, panel, "too long")
	require.NotContains(t, panel, "approve")
	require.Contains(t, s.text(".node-detail .instance dl"), "Decision")
	s.shot("l02-run-view-iteration-1")
	s.run("iteration 2", chromedp.Click(`.node-detail .iterations button[data-iteration="2"]`, chromedp.ByQuery))
	s.waitJS("iteration 2 shown", `document.querySelector(".node-detail .instance")?.innerText.includes("still too long")`)

	// The timeline: the loop went round twice, said readably.
	var corner struct{ X, Y float64 }
	s.run("pane corner", chromedp.Evaluate(`(() => { const b = document.querySelector(".react-flow__pane").getBoundingClientRect();
		return {X: b.right - 20, Y: b.top + 20}; })()`, &corner))
	s.run("deselect", input.DispatchMouseEvent(input.MouseMoved, corner.X, corner.Y),
		input.DispatchMouseEvent(input.MousePressed, corner.X, corner.Y).WithButton(input.Left).WithButtons(1).WithClickCount(1),
		input.DispatchMouseEvent(input.MouseReleased, corner.X, corner.Y).WithButton(input.Left).WithClickCount(1),
		chromedp.WaitVisible(".timeline", chromedp.ByQuery))
	var loopEvents []string
	s.run("loop events", chromedp.Evaluate(`[...document.querySelectorAll('.timeline li[data-event="loop.iteration"]')].map(li => li.innerText)`, &loopEvents))
	require.Len(t, loopEvents, 2)
	require.Contains(t, loopEvents[0], "review went back to draft (edge e3): iteration 2 begins")
	require.Contains(t, loopEvents[1], "iteration 3 begins")

	// The editor: the loop edge arcs back with its label.
	edge := func(id string) string { return fmt.Sprintf(`.react-flow__edge[data-id="%s"]`, id) }
	s.run("editor", chromedp.Navigate(s.url+"/flows/"+flow.ID), chromedp.WaitVisible(edge("e3"), chromedp.ByQuery))
	require.Equal(t, "↺ reject · max 5", s.svgText(edge("e3")+" .react-flow__edge-text"))
	require.True(t, s.exists(edge("e3")+`.edge-loop[data-loop="5"]`))
	require.False(t, s.exists(".edge-cycle"), "a cycle closed by a loop edge is a loop")
	// The arc passes above the nodes: its highest point is over them.
	var arc struct{ Top, NodeTop float64 }
	s.run("arc", chromedp.Evaluate(fmt.Sprintf(`(() => { const p = document.querySelector(%q).getBoundingClientRect();
		const n = document.querySelector(%q).getBoundingClientRect(); return {Top: p.top, NodeTop: n.top}; })()`,
		edge("e3")+" path.react-flow__edge-path", node("review")), &arc))
	require.Less(t, arc.Top, arc.NodeTop-20, "the loop edge curves back over the steps")
	s.settle(edge("e3"))
	x, y := s.edgeMid("e3")
	s.run("click e3", input.DispatchMouseEvent(input.MouseMoved, x, y),
		input.DispatchMouseEvent(input.MousePressed, x, y).WithButton(input.Left).WithButtons(1).WithClickCount(1),
		input.DispatchMouseEvent(input.MouseReleased, x, y).WithButton(input.Left).WithClickCount(1),
		chromedp.WaitVisible(`form[aria-label="Edge e3 settings"]`, chromedp.ByQuery))
	var loopOn bool
	s.run("loop on", chromedp.Evaluate(`document.querySelector("#edge-loop").checked`, &loopOn))
	require.True(t, loopOn, "the loop option is shown ticked")
	require.Equal(t, "5", s.value("#edge-loop-max"))
	require.Contains(t, s.text("[data-loop-when]"), "Goes round when “reject” is chosen at review")
	s.shot("l03-editor-loop-edge")

	// Unmarked, the edge closes a cycle: flagged at once, on the canvas
	// and in its settings. Marked again, it is a loop.
	s.run("unmark", chromedp.Click("#edge-loop", chromedp.ByQuery))
	s.waitJS("cycle flagged", fmt.Sprintf(`!!document.querySelector(%q) && !!document.querySelector("[data-cycle-warning]")`, edge("e3")+".edge-cycle"))
	require.Contains(t, s.text("[data-cycle-warning]"), "review → draft → review")
	s.run("mark", chromedp.Click("#edge-loop", chromedp.ByQuery))
	s.waitJS("cycle gone", `!document.querySelector(".edge-cycle") && !document.querySelector("[data-cycle-warning]")`)
	require.Equal(t, "5", s.value("#edge-loop-max"))

	// A loop edge without its condition or outcome is told in the panel.
	s.run("always", chromedp.Click(`input[name="edge-kind"][value="always"]`, chromedp.ByQuery))
	s.waitJS("needs a rule", `document.querySelector("[data-loop-needs]")?.innerText.includes("needs a condition or an outcome")`)
	s.run("outcome", chromedp.Click(`input[name="edge-kind"][value="outcome"]`, chromedp.ByQuery), chromedp.WaitVisible("#edge-outcome", chromedp.ByQuery),
		setValue("#edge-outcome", "reject"))
	s.waitJS("rule again", `!document.querySelector("[data-loop-needs]")`)

	// maxIterations 0: refused by the server, painted on the edge.
	s.run("max 0", setValue("#edge-loop-max", "0"))
	s.waitJS("local check", `document.querySelector('.loop-fields [data-check="local"]')?.innerText.includes("from 1 to 10000")`)
	s.run("save bad", chromedp.Click(`//button[text()="Save"]`, chromedp.BySearch))
	s.waitJS("edge painted", fmt.Sprintf(`!!document.querySelector(%q)`, edge("e3")+".edge-error"))
	s.waitJS("server message", `document.querySelector('.loop-fields [data-check="server"]')?.innerText.includes("maxIterations")`)
	require.Contains(t, s.svgText(edge("e3")+" .react-flow__edge-text"), "⚠")
	require.Contains(t, s.text(".problems"), "edges[2].data.loop.maxIterations")
	require.Contains(t, s.text(".editor-msgs"), "not saved")
	s.shot("l04-editor-loop-max-refused")
	var v1 struct{ Version struct{ Number int } }
	s.api("GET", "/flows/"+flow.ID, nil, &v1)
	require.Equal(t, 1, v1.Version.Number, "a loop with maxIterations 0 is not saved")

	// Fixed: saved, the label follows.
	s.run("max 3", setValue("#edge-loop-max", "3"))
	s.waitJS("stale", `document.querySelector('.loop-fields [data-check="server"]')?.innerText.includes("At the last save")`)
	s.run("save", chromedp.Click(`//button[text()="Save"]`, chromedp.BySearch))
	s.waitJS("saved", `document.body.innerText.includes("Saved as version 2")`)
	s.waitJS("labelled", fmt.Sprintf(`document.querySelector(%q)?.textContent === "↺ reject · max 3"`, edge("e3")+" .react-flow__edge-text"))
	var saved struct {
		Graph struct {
			Edges []struct {
				ID   string
				Data map[string]any
			}
		}
	}
	s.api("GET", "/flows/"+flow.ID, nil, &saved)
	for _, e := range saved.Graph.Edges {
		if e.ID == "e3" {
			require.Equal(t, map[string]any{"outcome": "reject", "loop": map[string]any{"maxIterations": float64(3)}}, e.Data)
		}
	}
}

// svgText reads the text of an SVG element (innerText is HTML's).
func (s *stack) svgText(sel string) string {
	s.t.Helper()
	var v string
	s.run("text "+sel, chromedp.Evaluate(fmt.Sprintf(`document.querySelector(%q)?.textContent ?? ""`, sel), &v))
	return v
}

// value reads a form field's value.
func (s *stack) value(sel string) string {
	s.t.Helper()
	var v string
	s.run("value "+sel, chromedp.Evaluate(fmt.Sprintf(`document.querySelector(%q)?.value ?? ""`, sel), &v))
	return v
}

// attr reads an attribute of the first element matching sel.
func (s *stack) attr(sel, name string) string {
	s.t.Helper()
	var v string
	s.run("attr "+sel, chromedp.Evaluate(fmt.Sprintf(`document.querySelector(%q)?.getAttribute(%q) ?? ""`, sel, name), &v))
	return v
}
