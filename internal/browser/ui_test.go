package browser_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"
)

// TestUI walks a person's day in the web UI, one journey after another on
// one stitchd and one browser: sign in, draw a flow and fix its compile
// error, watch a run turn green, approve a step, follow a fan-out and
// retry its failed item, watch an entity move across a board, and use it
// all on a narrow screen.
func TestUI(t *testing.T) {
	s := newStack(t)
	var flowID string
	// Each journey builds on the last: stop at the first that fails.
	step := func(name string, f func(t *testing.T)) {
		if !t.Run(name, f) {
			t.FailNow()
		}
	}

	step("sign in", func(t *testing.T) {
		s.t = t
		s.run("open", chromedp.Navigate(s.url+"/flows"), chromedp.WaitVisible("#email", chromedp.ByQuery))
		s.shot("01-sign-in")
		s.run("token form", chromedp.Click(`[data-action="use-token"]`, chromedp.ByQuery), chromedp.WaitVisible("#token", chromedp.ByQuery))
		s.run("wrong token", sendKeys("#token", "not-the-token"), chromedp.Click(`form button[type="submit"]`, chromedp.ByQuery),
			chromedp.WaitVisible("#signin-error", chromedp.ByQuery))
		require.Contains(t, s.text("#signin-error"), "not accepted")
		s.run("right token", setValue("#token", token), chromedp.Click(`form button[type="submit"]`, chromedp.ByQuery))
		s.waitJS("flows page", `document.body.innerText.includes("No flows yet")`)
		var href string
		s.run("url", chromedp.Location(&href))
		require.NotContains(t, href, token, "the token must never be in a URL")
		var stored string
		s.run("stored", chromedp.Evaluate(`localStorage.getItem("stitchd.token")`, &stored))
		require.Equal(t, token, stored, "kept across tabs until sign-out (localStorage)")
		// Another tab is signed in too (issue 45).
		other, cancelOther := chromedp.NewContext(s.ctx)
		defer cancelOther()
		octx, cancel := context.WithTimeout(other, 30*time.Second)
		defer cancel()
		require.NoError(t, chromedp.Run(octx, chromedp.Navigate(s.url+"/runs"),
			chromedp.Poll(`!!document.querySelector(".whoami") && !document.querySelector("#email")`, nil,
				chromedp.WithPollingInterval(50*time.Millisecond), chromedp.WithPollingTimeout(25*time.Second))), "a second tab")
		s.shot("02-flows-empty")
	})

	step("draw a flow, see a compile error, save", func(t *testing.T) {
		s.t = t
		s.run("new flow", chromedp.Click(`a[href="/flows/new"]`, chromedp.ByQuery), chromedp.WaitVisible(".palette", chromedp.ByQuery))
		// Drag a Worker from the palette onto the canvas with the mouse.
		px, py := s.center(`[data-palette="Worker"]`)
		cx, cy := s.center(".canvas .react-flow__pane")
		s.drag(px, py, cx-200, cy-40)
		s.waitJS("worker on canvas", `!!document.querySelector('.react-flow__node[data-id="worker1"]')`)
		// Add an approval step with the keyboard: focus its palette button, press Enter.
		s.run("add UX by keyboard", chromedp.Focus(`[data-palette="UX"]`, chromedp.ByQuery), chromedp.KeyEvent("\r"))
		s.waitJS("approval on canvas", `!!document.querySelector('.react-flow__node[data-id="approval1"]')`)
		// Move the approval to the right, then connect worker1 → approval1 by dragging between handles.
		ax, ay := s.center(`.react-flow__node[data-id="approval1"]`)
		s.drag(ax, ay, cx+150, cy+30)
		sx, sy := s.center(`.react-flow__node[data-id="worker1"] .react-flow__handle.source`)
		tx, ty := s.center(`.react-flow__node[data-id="approval1"] .react-flow__handle.target`)
		s.drag(sx, sy, tx, ty)
		s.waitJS("edge drawn", `document.querySelectorAll(".react-flow__edge").length === 1`)

		s.run("name and prompt", setValue("#flow-name", "Browser flow"),
			chromedp.Click(`.react-flow__node[data-id="approval1"]`, chromedp.ByQuery), chromedp.WaitVisible("#node-prompt", chromedp.ByQuery),
			sendKeys("#node-prompt", "Ship it?"),
			sendKeys("#node-label", "Ship approval"))
		// The worker has no webhook URL yet: saving shows the problem on the node.
		s.run("save with error", chromedp.Click(`//button[text()="Save"]`, chromedp.BySearch))
		s.waitJS("error painted", `!!document.querySelector('.react-flow__node[data-id="worker1"] .snode.has-error')`)
		require.Contains(t, s.text(".problems"), "worker1")
		require.Contains(t, s.text(".editor-msgs"), "not saved")
		s.shot("03-editor-compile-error")
		var flows struct{ Flows []any }
		s.api("GET", "/flows", nil, &flows)
		require.Empty(t, flows.Flows, "a flow with compile errors must not be saved")

		// Fix it in the side panel and save: version 1.
		s.run("fix", chromedp.Click(`.react-flow__node[data-id="worker1"]`, chromedp.ByQuery), chromedp.WaitVisible("#node-url", chromedp.ByQuery),
			sendKeys("#node-url", s.worker.URL+"/score"),
			sendKeys("#node-timeout", "30"),
			chromedp.Click(`//button[text()="Save"]`, chromedp.BySearch))
		s.waitJS("saved", `document.body.innerText.includes("saved as version 1")`)
		s.waitJS("error cleared", `!document.querySelector(".snode.has-error")`)
		var href string
		s.run("url", chromedp.Location(&href))
		flowID = href[strings.LastIndex(href, "/")+1:]
		var flow struct {
			Name  string
			Graph struct {
				Nodes []struct {
					ID, Type string
					Data     map[string]any
				}
				Edges []struct{ Source, Target string }
			}
		}
		s.api("GET", "/flows/"+flowID, nil, &flow)
		require.Equal(t, "Browser flow", flow.Name)
		require.Len(t, flow.Graph.Nodes, 2)
		require.Len(t, flow.Graph.Edges, 1)
		require.Equal(t, "worker1", flow.Graph.Edges[0].Source)
		require.Equal(t, "approval1", flow.Graph.Edges[0].Target)
		for _, n := range flow.Graph.Nodes {
			if n.ID == "worker1" {
				require.Equal(t, s.worker.URL+"/score", n.Data["webhookUrl"])
				require.EqualValues(t, 30, n.Data["timeoutSeconds"])
			}
		}
		s.shot("04-editor-saved")

		// A second save after moving the approval is version 2; the version list browses back to 1.
		ax, ay = s.center(`.react-flow__node[data-id="approval1"]`)
		s.drag(ax, ay, ax, ay+80)
		s.run("save v2", setValue("#flow-message", "moved the approval"), chromedp.Click(`//button[text()="Save"]`, chromedp.BySearch))
		s.waitJS("v2", `document.body.innerText.includes("Saved as version 2")`)
		s.run("browse v1", setValue("#flow-version", "1"))
		s.waitJS("viewing v1", `document.body.innerText.includes("Viewing version 1 of 2")`)
		s.shot("05-editor-version-1")
	})

	step("run turns green and waits for approval", func(t *testing.T) {
		s.t = t
		s.run("open flow", chromedp.Navigate(s.url+"/flows/"+flowID), chromedp.WaitVisible(`//button[text()="Start run"]`, chromedp.BySearch))
		s.run("start run", chromedp.Click(`//button[text()="Start run"]`, chromedp.BySearch), chromedp.WaitVisible("#run-input", chromedp.ByQuery),
			setValue("#run-input", `{"lead": "ada@example.com"}`), chromedp.Click(`.modal button[type="submit"]`, chromedp.ByQuery))
		s.waitJS("run view", `location.pathname.startsWith("/runs/")`)
		// The worker calls back after 300 ms: the node turns green over SSE, without a reload.
		s.waitJS("worker running or done", `!!document.querySelector('.snode[data-node-id="worker1"][data-status]')`)
		s.run("mark page", chromedp.Evaluate(`window.__noReload = true`, nil))
		s.waitJS("worker completed", `!!document.querySelector('.snode[data-node-id="worker1"][data-status="completed"]')`)
		s.waitJS("approval waiting", `!!document.querySelector('.snode[data-node-id="approval1"][data-status="waiting_for_user"]')`)
		s.waitJS("same page", `window.__noReload === true`)
		s.settle(`.react-flow__node[data-id="worker1"]`)
		s.run("open node", chromedp.Click(`.react-flow__node[data-id="worker1"]`, chromedp.ByQuery), chromedp.WaitVisible(".node-detail", chromedp.ByQuery))
		s.waitJS("node detail", `document.querySelector(".node-detail").innerText.includes("scored_by")`)
		s.waitJS("delivery event", `document.querySelector(".node-detail .events")?.innerText.includes("delivered")`)
		var events []string
		s.run("events", chromedp.Evaluate(`[...document.querySelectorAll(".node-detail .events li strong")].map(e => e.parentElement.innerText.replace(/^\S+ \S+ /, ""))`, &events))
		require.Equal(t, []string{"node.status running · attempt 1", "node.status completed · attempt 1", "dispatch.attempt attempt 1 · try 1 · delivered"}, events,
			"each event of worker1 once, in order")
		s.shot("06-run-view")
	})

	step("approvals inbox", func(t *testing.T) {
		s.t = t
		s.run("open", chromedp.Click(`nav a[href="/approvals"]`, chromedp.ByQuery))
		s.waitJS("card", `document.querySelectorAll(".approval").length === 1 && document.body.innerText.includes("Ship it?")`)
		s.shot("07-approvals")
		var buttons []string
		s.run("outcome buttons", chromedp.Evaluate(`[...document.querySelectorAll(".approval .outcome-buttons button")].map(b => b.innerText)`, &buttons))
		require.Equal(t, []string{"Approve", "Reject"}, buttons, "a UX node without outcomes offers approve and reject")
		s.run("approve", sendKeys(".approval textarea.comment", "yes, ship it"),
			chromedp.Click(`//li[contains(@class,"approval")]//button[text()="Approve"]`, chromedp.BySearch))
		s.waitJS("inbox empty", `document.body.innerText.includes("Nothing is waiting for you")`)

		// A new approval arrives live; rejecting it (the flow has no reject
		// edge) fails the run.
		var second struct{ ID string }
		s.api("POST", "/flows/"+flowID+"/runs", map[string]any{"input": map[string]any{"lead": "bob@example.com"}}, &second)
		s.waitJS("new card, live", `document.querySelectorAll(".approval").length === 1`)
		s.run("reject", sendKeys(".approval textarea.comment", "not a fit"),
			chromedp.Click(`//li[contains(@class,"approval")]//button[text()="Reject"]`, chromedp.BySearch))
		s.waitJS("inbox empty again", `document.body.innerText.includes("Nothing is waiting for you")`)
		var rejected struct{ Status, Error string }
		s.api("GET", "/runs/"+second.ID, nil, &rejected)
		require.Equal(t, "failed", rejected.Status)
		require.Contains(t, rejected.Error, "rejected")
		var runs struct {
			Runs []struct{ ID, Status string }
		}
		s.api("GET", "/runs?flow_id="+flowID, nil, &runs)
		require.Len(t, runs.Runs, 2)
		var run struct {
			Status string
			Output map[string]any
		}
		s.api("GET", "/runs/"+runs.Runs[len(runs.Runs)-1].ID, nil, &run)
		require.Equal(t, "completed", run.Status)
		// The approval's output is its input (worker1's output) and the decision.
		require.Equal(t, "worker1", run.Output["scored_by"])
		decision, _ := run.Output["decision"].(map[string]any)
		require.Equal(t, "approve", decision["outcome"])
		require.Equal(t, "yes, ship it", decision["comment"])
		s.shot("08-approvals-empty")
	})

	step("fan-out counts and retry", func(t *testing.T) {
		s.t = t
		var f struct{ ID string }
		s.api("POST", "/flows", map[string]any{"name": "Fan-out", "graph": map[string]any{
			"nodes": []map[string]any{
				{"id": "split", "type": "Splitter", "data": map[string]any{"arrayPath": "items"}},
				{"id": "score", "type": "Worker", "data": map[string]any{"webhookUrl": s.worker.URL + "/score", "retry": map[string]any{"maxAttempts": 1}}},
				{"id": "merge", "type": "Collector", "data": map[string]any{}},
			},
			"edges": []map[string]any{{"id": "e1", "source": "split", "target": "score"}, {"id": "e2", "source": "score", "target": "merge"}},
		}}, &f)
		items := make([]map[string]any, 20)
		for i := range items {
			items[i] = map[string]any{"n": i, "fail": i == 7}
		}
		var run struct{ ID string }
		s.api("POST", "/flows/"+f.ID+"/runs", map[string]any{"input": map[string]any{"items": items}}, &run)
		s.run("open run", chromedp.Navigate(s.url+"/runs/"+run.ID))
		s.waitJS("counts", `(document.querySelector('.snode[data-node-id="score"] .snode-counts')?.innerText ?? "").includes("score ×20: 19 ✓ 1 ✗")`)
		s.shot("09-run-fanout-failed")
		// Open the failed instance and retry it. The worker fails it again
		// (the item still says fail), so the retry shows as attempt 2. The
		// run's failure comes a moment after the counts, and its banner
		// pushes the canvas down: a click computed before it lands on the pane.
		s.waitJS("run failed", `document.body.innerText.includes("Run failed:")`)
		s.settle(`.react-flow__node[data-id="score"]`)
		s.run("open score", chromedp.Click(`.react-flow__node[data-id="score"]`, chromedp.ByQuery), chromedp.WaitVisible("#inst-filter", chromedp.ByQuery),
			setValue("#inst-filter", "failed"), chromedp.Click(`//ul[@aria-label="Instances"]//button`, chromedp.BySearch),
			chromedp.WaitVisible(`//button[normalize-space(.)="Retry score_7"]`, chromedp.BySearch),
			chromedp.Click(`//button[normalize-space(.)="Retry score_7"]`, chromedp.BySearch))
		s.waitJS("attempt 2", `document.querySelector(".instance")?.innerText.includes("node.status running · attempt 2")`)
		s.waitJS("failed again", `(document.querySelector('.snode[data-node-id="score"] .snode-counts')?.innerText ?? "").includes("19 ✓ 1 ✗")
			&& document.querySelectorAll(".instance .events li").length >= 4`)
		s.shot("10-run-fanout-retried")
		// A failed run can be abandoned.
		s.run("cancel", chromedp.Click(`//button[text()="Cancel run"]`, chromedp.BySearch))
		s.waitJS("cancelled", `document.querySelector(".editor-bar .status")?.innerText === "cancelled"`)
		var cancelled struct{ Status string }
		s.api("GET", "/runs/"+run.ID, nil, &cancelled)
		require.Equal(t, "cancelled", cancelled.Status)
	})

	step("entity card moves across the board", func(t *testing.T) {
		s.t = t
		var board struct{ ID string }
		s.api("POST", "/boards", map[string]any{"name": "Leads", "sections": []map[string]any{
			{"id": "new", "name": "New"}, {"id": "enriched", "name": "Enriched"}, {"id": "qualified", "name": "Qualified"}}}, &board)
		var f struct{ ID string }
		s.api("POST", "/flows", map[string]any{"name": "Qualify", "board_id": board.ID, "graph": map[string]any{
			"nodes": []map[string]any{
				{"id": "enrich", "type": "Worker", "data": map[string]any{"webhookUrl": s.worker.URL + "/enrich",
					"entityMovement": map[string]any{"onSuccess": map[string]any{"targetSectionId": "enriched"}}}},
				{"id": "check", "type": "UX", "data": map[string]any{"prompt": "Qualified?",
					"entityMovement": map[string]any{"onSuccess": map[string]any{"targetSectionId": "qualified", "completeAs": "success", "setEntityType": "prospect"}}}},
			},
			"edges": []map[string]any{{"id": "e1", "source": "enrich", "target": "check"}},
		}}, &f)
		var ent struct{ ID string }
		s.api("POST", "/entities", map[string]any{"board_id": board.ID, "type": "lead", "name": "Ada Lovelace", "email": "ada@example.com", "section_id": "new"}, &ent)

		s.run("open board", chromedp.Navigate(s.url+"/boards/"+board.ID))
		card := func(section string) string {
			return fmt.Sprintf(`!!document.querySelector('[data-section="%s"] [data-entity="%s"]')`, section, ent.ID)
		}
		s.waitJS("card in New", card("new"))
		s.waitJS("live", `!!document.querySelector(".live.on")`)
		s.run("mark page", chromedp.Evaluate(`window.__noReload = true`, nil))
		s.shot("11-board-new")
		var run struct{ ID string }
		s.api("POST", "/flows/"+f.ID+"/runs", map[string]any{"input": map[string]any{}, "entity_id": ent.ID}, &run)
		s.waitJS("card moved to Enriched", card("enriched"))
		s.shot("12-board-enriched")
		s.api("POST", "/runs/"+run.ID+"/nodes/check/complete", map[string]any{"status": "completed", "output": map[string]any{"ok": true}}, nil)
		s.waitJS("card moved to Qualified", card("qualified"))
		s.waitJS("same page", `window.__noReload === true`)
		require.Contains(t, s.text(`[data-section="qualified"] .count`), "1")
		require.Contains(t, s.text(`[data-section="new"] .count`), "0")
		// The journey timeline: created, run started, two moves.
		s.run("journey", chromedp.Click(fmt.Sprintf(`[data-entity="%s"]`, ent.ID), chromedp.ByQuery), chromedp.WaitVisible(".timeline", chromedp.ByQuery))
		s.waitJS("journey entries", `document.querySelectorAll(".timeline li").length >= 3 && document.querySelector(".timeline").innerText.includes("Enriched → Qualified")`)
		s.shot("13-board-journey")
		s.run("close", chromedp.KeyEvent("\x1b"))
		s.waitJS("closed", `!document.querySelector(".timeline")`)
	})

	step("narrow screen", func(t *testing.T) {
		s.t = t
		s.run("phone", chromedp.EmulateViewport(390, 844))
		s.run("flows", chromedp.Navigate(s.url+"/flows"), chromedp.WaitVisible(".menu-toggle", chromedp.ByQuery))
		s.shot("14-narrow-flows")
		s.run("menu", chromedp.Click(".menu-toggle", chromedp.ByQuery), chromedp.WaitVisible(`nav a[href="/boards"]`, chromedp.ByQuery))
		s.shot("15-narrow-menu")
		s.run("editor", chromedp.Navigate(s.url+"/flows/"+flowID), chromedp.WaitVisible(".react-flow__node", chromedp.ByQuery))
		s.shot("16-narrow-editor")
		for _, page := range []string{"/flows/" + flowID, "/runs", "/approvals", "/boards"} {
			var wide []string
			s.run("open "+page, chromedp.Navigate(s.url+page), chromedp.WaitVisible("main", chromedp.ByQuery))
			s.waitJS("rendered", `!document.querySelector(".loading")`)
			// The page itself must not scroll sideways; panels that scroll
			// inside themselves (the palette, the board) are fine.
			s.run("fits", chromedp.Evaluate(`document.documentElement.scrollWidth <= window.innerWidth ? [] :
				[...document.querySelectorAll("body *")].filter(e => e.getBoundingClientRect().right > window.innerWidth + 1).map(e => e.tagName + "#" + e.id + "." + e.className).slice(0, 8)`, &wide))
			require.Empty(t, wide, "%s must fit a 390 px screen", page)
		}
		s.run("desktop", chromedp.EmulateViewport(1280, 800))
	})

	step("sign out", func(t *testing.T) {
		s.t = t
		s.run("sign out", chromedp.Click(`//button[text()="Sign out"]`, chromedp.BySearch), chromedp.WaitVisible("#email", chromedp.ByQuery))
		var stored any
		s.run("stored", chromedp.Evaluate(`localStorage.getItem("stitchd.token")`, &stored))
		require.Nil(t, stored, "sign-out forgets the token")
	})
}
