package browser_test

import (
	"fmt"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"
)

// TestUICompensationAndJoin walks issue 48 in the web UI: in the editor an
// undo step is drawn for a step (an edge set to "Undo (compensation)",
// dashed amber and labelled "undo"), and a step with two incoming edges is
// set to fire on the first; a Respond step is set up in its own panel. A
// run waiting for a person is cancelled with "Cancel and undo": the run
// view says it is compensating, then compensated, and numbers the undo
// edges in the order their undo steps ran (the last completed step
// first).
func TestUICompensationAndJoin(t *testing.T) {
	s := newStack(t)
	var flow struct{ ID string }
	w := func(id string, x, y int) map[string]any {
		return map[string]any{"id": id, "type": "Worker", "position": map[string]any{"x": x, "y": y},
			"data": map[string]any{"webhookUrl": s.worker.URL + "/" + id}}
	}
	s.api("POST", "/flows", map[string]any{"name": "Saga", "graph": map[string]any{
		"nodes": []map[string]any{
			w("reserve", 0, 0), w("charge", 300, 0),
			{"id": "ship", "type": "UX", "position": map[string]any{"x": 600, "y": 0}, "data": map[string]any{"prompt": "Ship it?"}},
			{"id": "notify", "type": "Log", "position": map[string]any{"x": 600, "y": 160}, "data": map[string]any{"message": "booked"}},
			{"id": "undo_reserve", "type": "Log", "position": map[string]any{"x": 0, "y": 300}, "data": map[string]any{"message": "released"}},
			w("undo_charge", 300, 300),
		},
		"edges": []map[string]any{
			{"id": "e1", "source": "reserve", "target": "charge"},
			{"id": "e2", "source": "charge", "target": "ship"},
			{"id": "e3", "source": "reserve", "target": "notify"},
			{"id": "e4", "source": "charge", "target": "notify"},
			{"id": "u1", "source": "reserve", "target": "undo_reserve", "data": map[string]any{"on": "compensate"}},
		},
	}}, &flow)

	node := func(id string) string { return fmt.Sprintf(`.react-flow__node[data-id="%s"]`, id) }
	edge := func(id string) string { return fmt.Sprintf(`.react-flow__edge[data-id="%s"]`, id) }
	s.run("open", chromedp.Navigate(s.url+"/flows/"+flow.ID), tokenSignIn(token))
	s.waitJS("editor", fmt.Sprintf(`document.querySelector(%q)?.textContent === "undo"`, edge("u1")+" .react-flow__edge-text"))
	var look struct{ Dash, Stroke, Kind string }
	s.run("undo edge look", chromedp.Evaluate(fmt.Sprintf(`(() => { const c = getComputedStyle(document.querySelector(%q));
		return {Dash: c.strokeDasharray, Stroke: c.stroke, Kind: document.querySelector(%q).getAttribute("data-kind")}; })()`,
		edge("u1")+" path.react-flow__edge-path", edge("u1")), &look))
	require.NotEqual(t, "none", look.Dash, "an undo edge is dashed")
	require.Equal(t, "rgb(180, 83, 9)", look.Stroke, "in amber, unlike a failure edge")
	require.Equal(t, "compensate", look.Kind)

	// Draw charge → undo_charge and make it charge's undo edge.
	s.settleInCanvas(node("charge"))
	s.run("open charge", chromedp.Click(node("charge"), chromedp.ByQuery), chromedp.WaitVisible("#node-connect", chromedp.ByQuery),
		setValue("#node-connect", "undo_charge"), chromedp.Click(`//button[text()="Add edge"]`, chromedp.BySearch))
	s.waitJS("edge added", `document.querySelectorAll(".react-flow__edge").length === 6`)
	var editLabel string
	s.run("find the new edge", chromedp.Evaluate(`[...document.querySelectorAll('button[aria-label^="Edit edge "]')].map(b => b.getAttribute("aria-label")).find(l => l.endsWith(" to undo_charge")) ?? ""`, &editLabel))
	require.NotEmpty(t, editLabel)
	s.run("edit it", chromedp.Click(fmt.Sprintf(`button[aria-label=%q]`, editLabel), chromedp.ByQuery),
		chromedp.WaitVisible(`input[name="edge-kind"][value="compensate"]`, chromedp.ByQuery),
		chromedp.Click(`input[name="edge-kind"][value="compensate"]`, chromedp.ByQuery))
	s.waitJS("undo hint", `document.querySelector("[data-compensate-hint]")?.innerText.includes("undo_charge's input")`)
	require.False(t, s.exists(`.edge-settings [data-check="local"]`), "undo_charge has no other edge")
	require.False(t, s.exists("#map-k-0"), "an undo edge has no mapping")
	s.shot("s01-undo-edge-settings")

	// notify has two incoming edges: it may fire on the first.
	s.settleInCanvas(node("notify"))
	s.run("open notify", chromedp.Click(node("notify"), chromedp.ByQuery), chromedp.WaitVisible("#node-join", chromedp.ByQuery),
		setValue("#node-join", "any"))
	s.waitJS("join hint", `document.querySelector("#node-join").closest(".field").innerText.includes("other branches leading here are cancelled")`)
	require.False(t, s.exists(`[data-type-config="Log"] select[id*="join"]`), "join is not asked twice by the schema form")

	// A Respond step from the palette, set up in its own panel.
	s.run("add Respond", chromedp.Click(`[data-palette="Respond"]`, chromedp.ByQuery),
		chromedp.WaitVisible(`form[aria-label="Respond respond1 settings"]`, chromedp.ByQuery), chromedp.WaitVisible("#node-respond-status", chromedp.ByQuery),
		setValue("#node-respond-status", "202"))
	s.run("json body", chromedp.Click(`input[name="respond-body-mode"][value="json"]`, chromedp.ByQuery), chromedp.WaitVisible("#node-respond-body", chromedp.ByQuery),
		setValue("#node-respond-body", `{"accepted": "{{ input.order }}"}`))
	s.shot("s02-respond-panel")
	s.run("save", chromedp.Click(`//button[text()="Save"]`, chromedp.BySearch))
	s.waitJS("saved", `document.body.innerText.includes("Saved as version 2")`)

	var saved struct {
		Graph struct {
			Nodes []struct {
				ID   string
				Data map[string]any
			}
			Edges []struct {
				Source, Target string
				Data           map[string]any
			}
		}
	}
	s.api("GET", "/flows/"+flow.ID, nil, &saved)
	undoEdges := map[string]string{}
	for _, e := range saved.Graph.Edges {
		if e.Data["on"] == "compensate" {
			undoEdges[e.Source] = e.Target
		}
	}
	require.Equal(t, map[string]string{"reserve": "undo_reserve", "charge": "undo_charge"}, undoEdges)
	data := map[string]map[string]any{}
	for _, n := range saved.Graph.Nodes {
		data[n.ID] = n.Data
	}
	require.Equal(t, "any", data["notify"]["join"])
	require.EqualValues(t, 202, data["respond1"]["status"])
	require.Equal(t, map[string]any{"accepted": "{{ input.order }}"}, data["respond1"]["body"])

	// A run waits for the person at ship: cancel it with undo.
	var run struct{ ID string }
	s.api("POST", "/flows/"+flow.ID+"/runs", map[string]any{"input": map[string]any{"order": "o-1"}}, &run)
	s.run("run view", chromedp.Navigate(s.url+"/runs/"+run.ID))
	s.waitJS("ship waiting", fmt.Sprintf(`!!document.querySelector('%s .snode[data-status="waiting_for_user"]')`, node("ship")))
	s.waitJS("undo edges open", fmt.Sprintf(`document.querySelector(%q)?.getAttribute("data-taken") === "open"`, edge("u1")))
	s.run("cancel and undo", chromedp.Click(`button[data-action="cancel-compensate"]`, chromedp.ByQuery))
	s.waitJS("compensated", `!!document.querySelector('[data-compensation="compensated"]')`)
	s.waitJS("run cancelled", `document.querySelector(".editor-bar .status")?.innerText === "cancelled"`)
	require.Contains(t, s.text(`[data-compensation]`), "2 completed steps were undone")
	order := func(sel string) string {
		var v string
		s.run("order "+sel, chromedp.Evaluate(fmt.Sprintf(`document.querySelector(%q)?.getAttribute("data-undo-order") ?? ""`, sel), &v))
		return v
	}
	var chargeUndo string
	s.run("charge's undo edge", chromedp.Evaluate(`[...document.querySelectorAll('.react-flow__edge[data-kind="compensate"]')].map(e => e.getAttribute("data-id")).find(id => id !== "u1") ?? ""`, &chargeUndo))
	require.NotEmpty(t, chargeUndo)
	require.Equal(t, "1", order(edge(chargeUndo)), "charge completed last: undone first")
	require.Equal(t, "2", order(edge("u1")))
	s.waitJS("numbered", fmt.Sprintf(`document.querySelector(%q)?.textContent === "undo 1 of 2" && document.querySelector(%q)?.textContent === "undo 2 of 2"`,
		edge(chargeUndo)+" .react-flow__edge-text", edge("u1")+" .react-flow__edge-text"))
	s.waitJS("undo edges taken", fmt.Sprintf(`document.querySelector(%q)?.getAttribute("data-taken") === "true"`, edge("u1")))
	s.shot("s03-run-compensated")

	var got struct {
		Status      string
		Compensated bool
		Nodes       map[string]struct{ Status string }
	}
	s.api("GET", "/runs/"+run.ID, nil, &got)
	require.Equal(t, "cancelled", got.Status)
	require.True(t, got.Compensated)
	require.Equal(t, "completed", got.Nodes["undo_charge"].Status)
	require.Equal(t, "completed", got.Nodes["undo_reserve"].Status)
	require.Equal(t, "completed", got.Nodes["notify"].Status)
}
