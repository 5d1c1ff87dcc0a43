package browser_test

import (
	"fmt"
	"testing"

	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"
)

// TestUIBranches walks issue 26 in the web UI: a flow whose approval step
// offers three outcomes, two of them with an edge of their own and a
// failure edge on its worker. A person rejects on the approvals page; the
// run view shows the reject branch taken and the approve branch skipped;
// in the editor a condition is typed on an edge, the server's complaint
// about it is painted on the edge, and once fixed the saved condition
// labels the edge.
func TestUIBranches(t *testing.T) {
	s := newStack(t)
	var flow struct{ ID string }
	s.api("POST", "/flows", map[string]any{"name": "Branches", "graph": map[string]any{
		"nodes": []map[string]any{
			{"id": "score", "type": "Worker", "data": map[string]any{"webhookUrl": s.worker.URL + "/score", "timeoutSeconds": 30}},
			{"id": "check", "type": "Condition", "data": map[string]any{"label": "Worth a look?"}},
			{"id": "review", "type": "UX", "data": map[string]any{"label": "Review the lead", "prompt": "Call this lead?",
				"outcomes": []string{"approve", "reject", "escalate"}}},
			{"id": "approved", "type": "Worker", "data": map[string]any{"webhookUrl": s.worker.URL + "/approved"}},
			{"id": "nurture", "type": "Worker", "data": map[string]any{"webhookUrl": s.worker.URL + "/nurture"}},
			{"id": "alert", "type": "Worker", "data": map[string]any{"webhookUrl": s.worker.URL + "/alert"}},
		},
		"edges": []map[string]any{
			{"id": "e1", "source": "score", "target": "check"},
			{"id": "e2", "source": "check", "target": "review"},
			{"id": "e3", "source": "review", "target": "approved", "data": map[string]any{"outcome": "approve"}},
			{"id": "e4", "source": "review", "target": "nurture", "data": map[string]any{"outcome": "reject"}},
			{"id": "e5", "source": "score", "target": "alert", "data": map[string]any{"on": "failure"}},
		},
	}}, &flow)
	var run struct{ ID string }
	s.api("POST", "/flows/"+flow.ID+"/runs", map[string]any{"input": map[string]any{"lead": "ada@example.com"}}, &run)

	s.run("open", chromedp.Navigate(s.url+"/approvals"), tokenSignIn(token))

	// The approvals page: one button per outcome and a comment box.
	card := fmt.Sprintf(`li[data-approval="%s/review"]`, run.ID)
	s.waitJS("approval card", fmt.Sprintf(`!!document.querySelector(%q)`, card))
	var outcomes []string
	s.run("outcome buttons", chromedp.Evaluate(fmt.Sprintf(`[...document.querySelectorAll(%q)].map(b => b.dataset.outcome + ":" + b.innerText)`,
		card+" .outcome-buttons button"), &outcomes))
	require.Equal(t, []string{"approve:Approve", "reject:Reject", "escalate:Escalate"}, outcomes)
	s.run("comment", sendKeys(card+" textarea.comment", "not a fit yet"))
	s.shot("b01-approvals-outcomes")
	s.run("reject", chromedp.Click(card+` button[data-outcome="reject"]`, chromedp.ByQuery))
	s.waitJS("inbox empty", `document.body.innerText.includes("Nothing is waiting for you")`)

	// The run view: the reject branch ran, the approve branch and the
	// failure edge's target were skipped (grey, dashed), edges show it.
	s.run("run view", chromedp.Navigate(s.url+"/runs/"+run.ID))
	node := func(id, status string) string {
		return fmt.Sprintf(`!!document.querySelector('.snode[data-node-id="%s"][data-status="%s"]')`, id, status)
	}
	s.waitJS("nurture completed", node("nurture", "completed"))
	s.waitJS("approved skipped", node("approved", "skipped"))
	s.waitJS("alert skipped", node("alert", "skipped"))
	s.waitJS("run completed", `document.querySelector(".editor-bar .status")?.innerText === "completed"`)
	edge := func(id string) string { return fmt.Sprintf(`.react-flow__edge[data-id="%s"]`, id) }
	taken := func(id string) string {
		var v string
		s.run("edge "+id, chromedp.Evaluate(fmt.Sprintf(`document.querySelector(%q)?.getAttribute("data-taken") ?? ""`, edge(id)), &v))
		return v
	}
	s.waitJS("edges drawn", fmt.Sprintf(`document.querySelectorAll('.react-flow__edge[data-taken]').length === 5 && !document.querySelector(%q)`,
		`.react-flow__edge[data-taken="open"]`))
	require.Equal(t, "true", taken("e4"), "the reject edge was taken")
	require.Equal(t, "false", taken("e3"), "the approve edge was not")
	require.Equal(t, "false", taken("e5"), "score did not fail: its failure edge was not taken")
	require.Equal(t, "true", taken("e1"))
	var skippedLook struct{ Border, Background string }
	s.run("skipped look", chromedp.Evaluate(`(() => { const c = getComputedStyle(document.querySelector('.snode[data-node-id="approved"]'));
		return {Border: c.borderLeftStyle, Background: c.backgroundColor}; })()`, &skippedLook))
	require.Equal(t, "dashed", skippedLook.Border)
	s.shot("b02-run-view-branches")
	s.settle(`.react-flow__node[data-id="review"]`)
	s.run("open review", chromedp.Click(`.react-flow__node[data-id="review"]`, chromedp.ByQuery), chromedp.WaitVisible(".node-detail", chromedp.ByQuery))
	s.waitJS("decision shown", `document.querySelector(".node-detail").innerText.includes("reject") && document.querySelector(".node-detail [data-taken-list]")?.innerText.includes("nurture")`)

	// Downstream sees the lead's data and the decision.
	var got struct {
		Status string
		Nodes  map[string]struct {
			Status string
			Input  map[string]any
		}
	}
	s.api("GET", "/runs/"+run.ID, nil, &got)
	require.Equal(t, "completed", got.Status)
	require.Equal(t, "skipped", got.Nodes["approved"].Status)
	in := got.Nodes["nurture"].Input
	require.EqualValues(t, 42, in["score"], "the data the person saw reaches the reject branch")
	dec, _ := in["decision"].(map[string]any)
	require.Equal(t, "reject", dec["outcome"])
	require.Equal(t, "not a fit yet", dec["comment"])

	// A second run, approved from the run view's panel: the approve branch
	// runs and the reject branch is skipped.
	var second struct{ ID string }
	s.api("POST", "/flows/"+flow.ID+"/runs", map[string]any{"input": map[string]any{"lead": "bob@example.com"}}, &second)
	s.run("second run", chromedp.Navigate(s.url+"/runs/"+second.ID))
	s.waitJS("review waiting", node("review", "waiting_for_user"))
	s.settleInCanvas(`.react-flow__node[data-id="review"]`)
	s.run("open review", chromedp.Click(`.react-flow__node[data-id="review"]`, chromedp.ByQuery),
		chromedp.WaitVisible(`.node-detail button[data-outcome="approve"]`, chromedp.ByQuery))
	var panel []string
	s.run("panel buttons", chromedp.Evaluate(`[...document.querySelectorAll(".node-detail .outcome-buttons button")].map(b => b.dataset.outcome)`, &panel))
	require.Equal(t, []string{"approve", "reject", "escalate"}, panel)
	s.run("approve", sendKeys(".node-detail textarea.comment", "call today"),
		chromedp.Click(`.node-detail button[data-outcome="approve"]`, chromedp.ByQuery))
	s.waitJS("approved completed", node("approved", "completed"))
	s.waitJS("nurture skipped", node("nurture", "skipped"))
	s.waitJS("decision in panel", `document.querySelector(".node-detail")?.innerText.includes("call today")`)
	s.shot("b03-run-view-approved")
	var approved struct {
		Status string
		Nodes  map[string]struct{ Input map[string]any }
	}
	s.api("GET", "/runs/"+second.ID, nil, &approved)
	require.Equal(t, "completed", approved.Status)
	dec, _ = approved.Nodes["approved"].Input["decision"].(map[string]any)
	require.Equal(t, "approve", dec["outcome"])
	require.Equal(t, "call today", dec["comment"])

	// The editor: labels on the canvas, the failure edge red and dashed.
	s.run("editor", chromedp.Navigate(s.url+"/flows/"+flow.ID), chromedp.WaitVisible(edge("e3"), chromedp.ByQuery))
	label := func(id string) string {
		var v string
		s.run("label "+id, chromedp.Evaluate(fmt.Sprintf(`document.querySelector(%q)?.textContent ?? ""`, edge(id)+" .react-flow__edge-text"), &v))
		return v
	}
	require.Equal(t, "approve", label("e3"))
	require.Equal(t, "reject", label("e4"))
	require.Equal(t, "on failure", label("e5"))
	var failureLook struct{ Dash, Stroke string }
	s.run("failure look", chromedp.Evaluate(fmt.Sprintf(`(() => { const c = getComputedStyle(document.querySelector(%q));
		return {Dash: c.strokeDasharray, Stroke: c.stroke}; })()`, edge("e5")+" path.react-flow__edge-path"), &failureLook))
	require.NotEqual(t, "none", failureLook.Dash)
	require.Equal(t, "rgb(185, 28, 28)", failureLook.Stroke)
	require.True(t, s.exists(`.react-flow__node[data-id="check"] .snode-condition`), "the Condition node has its own look")

	// Open edge e2 with a click on the canvas and make it conditional.
	s.settle(edge("e2"))
	x, y := s.edgeMid("e2")
	s.run("click e2", input.DispatchMouseEvent(input.MouseMoved, x, y),
		input.DispatchMouseEvent(input.MousePressed, x, y).WithButton(input.Left).WithButtons(1).WithClickCount(1),
		input.DispatchMouseEvent(input.MouseReleased, x, y).WithButton(input.Left).WithClickCount(1),
		chromedp.WaitVisible(`form[aria-label="Edge e2 settings"]`, chromedp.ByQuery))
	s.run("condition kind", chromedp.Click(`input[name="edge-kind"][value="condition"]`, chromedp.ByQuery), chromedp.WaitVisible("#edge-condition", chromedp.ByQuery))
	// Checked as you type: a slip shows at once, before any save.
	s.run("type a slip", sendKeys("#edge-condition", "output.score >"))
	s.waitJS("slip shown", `document.querySelector('[data-check="local"]')?.innerText.includes("ends with an operator")`)
	// A name the server does not know: saving is refused and the
	// server's message is painted on the edge and in its editor.
	s.run("unknown name", setValue("#edge-condition", "lead.score > 50"))
	s.waitJS("no slip", `!document.querySelector('[data-check="local"]')`)
	s.run("save bad", chromedp.Click(`//button[text()="Save"]`, chromedp.BySearch))
	s.waitJS("edge painted", fmt.Sprintf(`!!document.querySelector(%q)`, edge("e2")+".edge-error"))
	s.waitJS("server message", `!!document.querySelector('[data-check="server"]')`)
	require.Contains(t, s.text(".problems"), "e2")
	require.Contains(t, s.text(".problems"), "edges[1].data.condition")
	require.Contains(t, s.text(".editor-msgs"), "not saved")
	s.shot("b04-editor-condition-error")
	var v1 struct{ Version struct{ Number int } }
	s.api("GET", "/flows/"+flow.ID, nil, &v1)
	require.Equal(t, 1, v1.Version.Number, "a flow with a bad condition is not saved")

	// Fix it; add an outcome to the approval step on the way; save.
	s.run("fix", setValue("#edge-condition", "output.score > 10"))
	s.waitJS("stale", `document.querySelector('[data-check="server"]')?.innerText.includes("At the last save")`)
	s.settle(`.react-flow__node[data-id="review"]`)
	s.run("open review", chromedp.Click(`.react-flow__node[data-id="review"]`, chromedp.ByQuery), chromedp.WaitVisible("#outcome-2", chromedp.ByQuery),
		chromedp.Click(`//fieldset[contains(@class,"outcomes")]//button[text()="Add outcome"]`, chromedp.BySearch),
		chromedp.WaitVisible("#outcome-3", chromedp.ByQuery), sendKeys("#outcome-3", "later"))
	require.Contains(t, s.text(".outcomes"), "No edge for “escalate”, “later”")
	s.shot("b05-ux-outcomes")
	s.run("open e3", chromedp.Click(`button[aria-label="Edit edge e3 to approved"]`, chromedp.ByQuery), chromedp.WaitVisible("#edge-outcome", chromedp.ByQuery))
	var choices []string
	s.run("outcome choices", chromedp.Evaluate(`[...document.querySelectorAll("#edge-outcome option")].map(o => o.value)`, &choices))
	require.Equal(t, []string{"approve", "reject", "escalate", "later"}, choices)
	s.run("save", chromedp.Click(`//button[text()="Save"]`, chromedp.BySearch))
	s.waitJS("saved", `document.body.innerText.includes("Saved as version 2")`)
	s.waitJS("labelled", fmt.Sprintf(`document.querySelector(%q)?.textContent === "output.score > 10"`, edge("e2")+" .react-flow__edge-text"))
	s.waitJS("not painted", `!document.querySelector(".edge-error")`)
	s.shot("b06-editor-condition-saved")
	var saved struct {
		Graph struct {
			Nodes []struct {
				ID   string
				Data map[string]any
			}
			Edges []struct {
				ID   string
				Data map[string]any
			}
		}
	}
	s.api("GET", "/flows/"+flow.ID, nil, &saved)
	for _, e := range saved.Graph.Edges {
		switch e.ID {
		case "e2":
			require.Equal(t, map[string]any{"condition": "output.score > 10"}, e.Data)
		case "e3":
			require.Equal(t, map[string]any{"outcome": "approve"}, e.Data)
		case "e5":
			require.Equal(t, map[string]any{"on": "failure"}, e.Data)
		}
	}
	for _, n := range saved.Graph.Nodes {
		if n.ID == "review" {
			require.Equal(t, []any{"approve", "reject", "escalate", "later"}, n.Data["outcomes"])
		}
	}
}

// exists reports whether an element matches sel.
func (s *stack) exists(sel string) bool {
	s.t.Helper()
	var ok bool
	s.run("exists "+sel, chromedp.Evaluate(fmt.Sprintf(`!!document.querySelector(%q)`, sel), &ok))
	return ok
}

// edgeMid returns the viewport point halfway along an edge's path, where
// a person clicks it.
func (s *stack) edgeMid(id string) (float64, float64) {
	s.t.Helper()
	var r struct{ X, Y float64 }
	s.run("edge "+id, chromedp.Evaluate(fmt.Sprintf(`(() => { const p = document.querySelector('.react-flow__edge[data-id="%s"] path.react-flow__edge-path');
		const m = p.getPointAtLength(p.getTotalLength() / 2).matrixTransform(p.getScreenCTM());
		return {X: m.x, Y: m.y}; })()`, id), &r))
	return r.X, r.Y
}
