package browser_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"
)

// TestUISubFlow walks a SubFlow step in the web UI. A child flow "KYC
// check" (the loopback worker, then an approval) has two versions; in the
// editor a SubFlow step is added to the parent from the palette, saved
// without a flow (refused: the server's message under the Flow field),
// then given the child flow picked from the list (the parent itself is not
// offered), version 2 from the versions list, and passEntity unticked,
// and saved. A run shows the step running with a link to its child run;
// the step's panel links to it too. Followed, the child run shows a
// breadcrumb back to the parent run and the step; its approval is answered
// there, and the breadcrumb leads back to the parent, opened on the step,
// which completes with the child's output.
func TestUISubFlow(t *testing.T) {
	s := newStack(t)

	childGraph := func(label string) map[string]any {
		return map[string]any{
			"nodes": []map[string]any{
				{"id": "check", "type": "Worker", "position": map[string]any{"x": 0, "y": 0},
					"data": map[string]any{"label": label, "webhookUrl": s.worker.URL}},
				{"id": "review", "type": "UX", "position": map[string]any{"x": 320, "y": 0},
					"data": map[string]any{"label": "Review the check", "prompt": "Approve this person?"}},
			},
			"edges": []map[string]any{{"id": "e1", "source": "check", "target": "review"}},
		}
	}
	var child struct {
		ID      string
		Version struct{ Number int }
	}
	s.api("POST", "/flows", map[string]any{"name": "KYC check", "graph": childGraph("Check documents")}, &child)
	s.api("PUT", "/flows/"+child.ID, map[string]any{"graph": childGraph("Check the documents"), "message": "clearer label"}, &child)
	require.Equal(t, 2, child.Version.Number)

	var parent struct{ ID string }
	s.api("POST", "/flows", map[string]any{"name": "Onboarding", "graph": map[string]any{
		"nodes": []map[string]any{
			{"id": "prep", "type": "Transform", "position": map[string]any{"x": 0, "y": 0},
				"data": map[string]any{"label": "Shape the person", "expression": `{"name": upper(input.name)}`}},
			{"id": "after", "type": "Transform", "position": map[string]any{"x": 640, "y": 0},
				"data": map[string]any{"label": "Summarise", "expression": `{"score": input.score, "outcome": input.decision.outcome}`}},
		},
		"edges": []map[string]any{},
	}}, &parent)

	node := func(id string) string { return fmt.Sprintf(`.react-flow__node[data-id="%s"]`, id) }
	status := func(id, st string) string {
		return fmt.Sprintf(`!!document.querySelector('.snode[data-node-id="%s"][data-status="%s"]')`, id, st)
	}
	s.run("open", chromedp.Navigate(s.url+"/flows/"+parent.ID), tokenSignIn(token))
	s.waitJS("editor", fmt.Sprintf(`!!document.querySelector(%q)`, node("after")))
	s.settle(node("after"))

	// A SubFlow step from the palette lands between the two, selected.
	s.run("add SubFlow", chromedp.Click(`[data-palette="SubFlow"]`, chromedp.ByQuery),
		chromedp.WaitVisible(`form[aria-label="SubFlow sub1 settings"]`, chromedp.ByQuery))
	require.True(t, s.exists(node("sub1")+" .snode-subflow"), "the SubFlow node has its own look")
	require.Equal(t, "↳", s.text(node("sub1")+" .snode-mark"))
	s.waitJS("passEntity ticked by default", `document.querySelector("#node-pass-entity")?.checked === true`)

	// Saved without a flow: refused, the message under the Flow field.
	s.run("save without flow", chromedp.Click(`//button[text()="Save"]`, chromedp.BySearch))
	s.waitJS("refused", `!!document.querySelector('.subflow-fields [data-check="server"]')`)
	require.Contains(t, s.text(".problems"), "nodes[2].data.flow")
	require.Contains(t, s.text(`.subflow-fields [data-check="server"]`), "needs a flow")
	require.Contains(t, s.text(".editor-msgs"), "not saved")
	s.shot("s01-subflow-no-flow")

	// The flow from the list: every flow but this one.
	s.waitJS("flows listed", fmt.Sprintf(`!!document.querySelector('#node-subflow option[value="%s"]')`, child.ID))
	var flows []string
	s.run("flow options", chromedp.Evaluate(`[...document.querySelectorAll("#node-subflow option")].map(o => o.value)`, &flows))
	require.Equal(t, []string{"", child.ID}, flows, "the flows to choose from, the parent itself left out")
	s.run("pick flow", setValue("#node-subflow", child.ID))
	s.waitJS("stale", `document.querySelector('.subflow-fields [data-check="server"]')?.innerText.includes("At the last save")`)
	s.waitJS("summary on node", fmt.Sprintf(`document.querySelector(%q)?.innerText === "runs KYC check · latest"`, node("sub1")+" .snode-summary"))

	// The version from the list: latest (v2 now), then each version.
	s.waitJS("versions listed", `document.querySelectorAll("#node-subflow-version option").length === 3`)
	var versions []string
	s.run("version options", chromedp.Evaluate(`[...document.querySelectorAll("#node-subflow-version option")].map(o => o.value + "=" + o.innerText)`, &versions))
	require.Equal(t, []string{"latest=latest (v2 now)", "2=v2 — clearer label", "1=v1"}, versions)
	s.run("pick version", setValue("#node-subflow-version", "2"))
	s.waitJS("pinned on node", fmt.Sprintf(`document.querySelector(%q)?.innerText === "runs KYC check · v2"`, node("sub1")+" .snode-summary"))
	s.run("no entity", chromedp.Click("#node-pass-entity", chromedp.ByQuery))
	s.waitJS("unticked", `!document.querySelector("#node-pass-entity").checked`)

	// Wired prep → sub1 → after.
	s.run("sub1 → after", setValue("#node-connect", "after"), chromedp.Click(`//button[text()="Add edge"]`, chromedp.BySearch))
	s.waitJS("edge added", `document.querySelectorAll(".react-flow__edge").length === 1`)
	s.settle(node("prep"))
	s.run("prep → sub1", chromedp.Click(node("prep"), chromedp.ByQuery), chromedp.WaitVisible(`form[aria-label="Transform prep settings"]`, chromedp.ByQuery),
		setValue("#node-connect", "sub1"), chromedp.Click(`//button[text()="Add edge"]`, chromedp.BySearch))
	s.waitJS("wired", `document.querySelectorAll(".react-flow__edge").length === 2`)
	s.shot("s02-subflow-editor")
	s.run("save", chromedp.Click(`//button[text()="Save"]`, chromedp.BySearch))
	s.waitJS("saved", `document.body.innerText.includes("Saved as version 2")`)
	s.waitJS("no problems", `!document.querySelector(".problems") && !document.querySelector(".snode.has-error")`)

	var saved struct {
		Graph struct {
			Nodes []struct {
				ID, Type string
				Data     map[string]any
			}
		}
	}
	s.api("GET", "/flows/"+parent.ID, nil, &saved)
	var sub map[string]any
	for _, n := range saved.Graph.Nodes {
		if n.ID == "sub1" {
			require.Equal(t, "SubFlow", n.Type)
			sub = n.Data
		}
	}
	require.Equal(t, map[string]any{"flow": child.ID, "version": 2.0, "passEntity": false}, sub)

	// A run: the step runs its child, linked on the node and in its panel.
	s.run("start run", chromedp.Click(`//button[text()="Start run"]`, chromedp.BySearch), chromedp.WaitVisible("#run-input", chromedp.ByQuery),
		setValue("#run-input", `{"name": "ada"}`), chromedp.Click(`.modal button[type="submit"]`, chromedp.ByQuery))
	s.waitJS("run view", `location.pathname.startsWith("/runs/")`)
	parentPath := s.runPath()
	parentRun := strings.TrimPrefix(parentPath, "/runs/")
	s.waitJS("sub1 running", status("sub1", "running"))
	s.waitJS("link on node", fmt.Sprintf(`!!document.querySelector(%q)`, node("sub1")+" a.snode-child"))
	var run struct {
		Nodes map[string]struct {
			Status     string
			ChildRunID string `json:"child_run_id"`
		}
	}
	s.api("GET", parentPath, nil, &run)
	childRun := run.Nodes["sub1"].ChildRunID
	require.NotEmpty(t, childRun, "the SubFlow node started a child run")
	require.Equal(t, "/runs/"+childRun, s.attr(node("sub1")+" a.snode-child", "href"))
	// A live run's view: the node may still move as the canvas is fitted
	// and its badge grows, and a click sent before lands off it.
	s.settleInCanvas(node("sub1"))
	s.run("open sub1", chromedp.Click(node("sub1")+" .snode-type", chromedp.ByQuery),
		chromedp.WaitVisible(`.node-detail [data-child-run] a[data-link="child-run"]`, chromedp.ByQuery))
	require.Equal(t, childRun, s.attr(".node-detail [data-child-run]", "data-child-run"))
	s.waitJS("child's flow named", `document.querySelector('.node-detail a[data-link="child-run"]')?.innerText === "KYC check run →"`)
	s.shot("s03-subflow-running")

	// The child run: a breadcrumb back to the parent run and its step.
	s.run("follow", chromedp.Click(`.node-detail a[data-link="child-run"]`, chromedp.ByQuery))
	s.waitJS("child run view", fmt.Sprintf(`location.pathname === "/runs/%s" && !!document.querySelector("nav.crumbs")`, childRun))
	require.Equal(t, parentRun, s.attr("nav.crumbs", "data-parent-run"))
	require.Equal(t, "sub1", s.text(`nav.crumbs a[data-link="parent-step"]`))
	s.waitJS("parent named", `document.querySelector('nav.crumbs a[data-link="parent-run"]')?.innerText === "Onboarding run"`)
	require.Contains(t, s.text(".run-title h1"), "KYC check")
	require.Contains(t, s.text(".run-title h1"), "v2", "the child runs the pinned version")

	// Its worker answers; its approval is answered here.
	s.waitJS("review waiting", status("review", "waiting_for_user"))
	s.settleInCanvas(node("review"))
	s.run("open review", chromedp.Click(node("review"), chromedp.ByQuery),
		chromedp.WaitVisible(`.node-detail button[data-outcome="approve"]`, chromedp.ByQuery))
	s.shot("s04-child-run")
	s.run("approve", chromedp.Click(`.node-detail button[data-outcome="approve"]`, chromedp.ByQuery))
	s.waitJS("child completed", `document.querySelector("section.runview")?.dataset.runStatus === "completed"`)

	// Back to the parent, opened on the step: it completed with the child's output.
	s.run("back", chromedp.Click(`nav.crumbs a[data-link="parent-step"]`, chromedp.ByQuery))
	s.waitJS("parent run view", fmt.Sprintf(`location.pathname === %q && document.querySelector(".node-detail h2")?.innerText === "sub1"`, parentPath))
	s.waitJS("parent completed", `document.querySelector("section.runview")?.dataset.runStatus === "completed"`)
	s.waitJS("sub1 completed", status("sub1", "completed"))
	s.waitJS("child completed in panel", `document.querySelector(".node-detail [data-child-run] .status")?.innerText === "completed"`)
	s.shot("s05-parent-completed")

	var done struct {
		Status string
		Output map[string]any
	}
	s.api("GET", parentPath, nil, &done)
	require.Equal(t, "completed", done.Status)
	require.Equal(t, map[string]any{"score": 42.0, "outcome": "approve"}, done.Output)
	var c struct {
		ParentRunID string `json:"parent_run_id"`
		ParentKey   string `json:"parent_key"`
	}
	s.api("GET", "/runs/"+childRun, nil, &c)
	require.Equal(t, parentRun, c.ParentRunID)
	require.Equal(t, "sub1", c.ParentKey)
}
