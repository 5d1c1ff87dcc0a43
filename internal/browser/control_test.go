package browser_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"
)

// TestUIRunControl drives run control from the run view. A worker step
// fails (its input says so) and fails the run; the person completes it by
// hand from its panel with the output {"fixed": true} (a typo in the JSON
// is caught before anything is sent, and a confirmation says what it
// does); the next step runs with that output as its input, the run
// completes, and the panel and the timeline say who completed the step by
// hand and from which state. A second run is paused from the run view (a
// Paused badge and banner, Resume instead of Pause, listed under the runs
// list's paused filter); an answer given while paused is recorded but
// nothing new starts; Resume goes on to the end. A third run, paused
// behind the page's back, shows the server's refusal when Pause is pressed.
func TestUIRunControl(t *testing.T) {
	s := newStack(t)
	node := func(id, status string) string {
		return fmt.Sprintf(`!!document.querySelector('.snode[data-node-id="%s"][data-status="%s"]')`, id, status)
	}
	runStatus := func(status string) string {
		return fmt.Sprintf(`document.querySelector(".editor-bar .status")?.innerText === %q`, status)
	}
	type nodeState struct {
		Status string
		Input  any
		Output any
	}
	type runJSON struct {
		Status string
		Nodes  map[string]nodeState
	}

	// 1. Complete a failed step by hand.
	var fixFlow struct{ ID string }
	s.api("POST", "/flows", map[string]any{"name": "Fix by hand", "graph": map[string]any{
		"nodes": []map[string]any{
			{"id": "fix", "type": "Worker", "position": map[string]any{"x": 0, "y": 0},
				"data": map[string]any{"label": "Fix the record", "webhookUrl": s.worker.URL + "/fix", "timeoutSeconds": 30}},
			{"id": "next", "type": "Worker", "position": map[string]any{"x": 320, "y": 0},
				"data": map[string]any{"label": "Carry on", "webhookUrl": s.worker.URL + "/next", "timeoutSeconds": 30}},
		},
		"edges": []map[string]any{{"id": "e1", "source": "fix", "target": "next"}},
	}}, &fixFlow)
	var run struct{ ID string }
	s.api("POST", "/flows/"+fixFlow.ID+"/runs", map[string]any{"input": map[string]any{"fail": true}}, &run)

	s.run("open", chromedp.Navigate(s.url+"/runs/"+run.ID), tokenSignIn(token))
	s.waitJS("fix failed", node("fix", "failed"))
	s.waitJS("run failed", runStatus("failed"))
	s.waitJS("failure banner", `document.body.innerText.includes("Run failed:")`)
	require.False(t, s.exists(`[data-action="pause"]`), "a failed run cannot be paused")
	require.False(t, s.exists(`[data-action="resume"]`))
	s.settle(`.react-flow__node[data-id="fix"]`)
	s.run("open fix", chromedp.Click(`.react-flow__node[data-id="fix"]`, chromedp.ByQuery),
		chromedp.WaitVisible(`.node-detail [data-action="complete-by-hand"]`, chromedp.ByQuery))
	require.Contains(t, s.text(".node-detail"), "this item is marked to fail")
	s.run("complete by hand", chromedp.Click(`.node-detail [data-action="complete-by-hand"]`, chromedp.ByQuery),
		chromedp.WaitVisible(`form[aria-label="Complete fix by hand"] textarea`, chromedp.ByQuery))
	form := `form[aria-label="Complete fix by hand"]`
	require.Contains(t, s.text(form), "marks this failed step completed instead of retrying it")

	// Not JSON: said at once, and nothing can be sent.
	s.run("typo", sendKeys(form+" textarea", `{fixed: true}`))
	s.waitJS("json error", fmt.Sprintf(`document.querySelector(%q)?.innerText.startsWith("Not valid JSON")`, form+" [data-json-error]"))
	require.Equal(t, "true", s.attr(form+" textarea", "aria-invalid"))
	var disabled bool
	s.run("review disabled", chromedp.Evaluate(fmt.Sprintf(`document.querySelector(%q).disabled`, form+` [data-action="review-complete"]`), &disabled))
	require.True(t, disabled, "invalid JSON cannot be sent")
	s.shot("c01-complete-by-hand-invalid-json")

	// Fixed, reviewed, confirmed.
	s.run("fixed json", setValue(form+" textarea", `{"fixed": true}`))
	s.waitJS("json ok", fmt.Sprintf(`!document.querySelector(%q) && !document.querySelector(%q).disabled`,
		form+" [data-json-error]", form+` [data-action="review-complete"]`))
	var got runJSON
	s.api("GET", "/runs/"+run.ID, nil, &got)
	require.Equal(t, "failed", got.Nodes["fix"].Status, "nothing is sent before the confirmation")
	s.run("review", chromedp.Click(form+` [data-action="review-complete"]`, chromedp.ByQuery),
		chromedp.WaitVisible(form+` [data-action="confirm-complete"]`, chromedp.ByQuery))
	confirm := s.text(form + " .confirm")
	require.Contains(t, confirm, "Complete fix by hand with this output?")
	require.Contains(t, confirm, `"fixed": true`)
	s.shot("c02-complete-by-hand-confirm")
	s.api("GET", "/runs/"+run.ID, nil, &got)
	require.Equal(t, "failed", got.Nodes["fix"].Status, "nothing is sent before the confirmation")
	s.run("confirm", chromedp.Click(form+` [data-action="confirm-complete"]`, chromedp.ByQuery))
	s.waitJS("fix completed", node("fix", "completed"))
	s.waitJS("next completed", node("next", "completed"))
	s.waitJS("run completed", runStatus("completed"))

	// The next step ran with the output given by hand as its input.
	s.api("GET", "/runs/"+run.ID, nil, &got)
	require.Equal(t, "completed", got.Status)
	require.Equal(t, map[string]any{"fixed": true}, got.Nodes["fix"].Output)
	require.Equal(t, map[string]any{"fixed": true}, got.Nodes["next"].Input)
	require.Equal(t, "completed", got.Nodes["next"].Status)

	// The panel says it was done by hand, by whom, from which state; its
	// events too. No action is offered on a completed step.
	s.waitJS("by hand in panel", `document.querySelector(".node-detail [data-by-hand]")?.innerText.includes("by hand by admin, when it was failed")`)
	s.waitJS("by hand event", `document.querySelector('.node-detail li[data-event="node.completed_by_hand"]')?.innerText.includes("completed by hand by admin, when it was failed")`)
	require.False(t, s.exists(`.node-detail [data-action="complete-by-hand"]`))
	// The canvas marks the step done by hand, and only it.
	s.waitJS("canvas mark", `document.querySelector('.snode[data-node-id="fix"] .snode-hand')?.innerText === "by hand"`)
	require.False(t, s.exists(`.snode[data-node-id="next"] .snode-hand`))
	s.settle(`.react-flow__node[data-id="next"]`)
	s.shot("c03-completed-by-hand")
	s.deselect()
	s.waitJS("timeline", `document.querySelector('.timeline li[data-event="node.completed_by_hand"]')?.innerText.includes("fix completed by hand by admin, when it was failed")`)

	// 2. Pause and resume from the run view.
	var askFlow struct{ ID string }
	s.api("POST", "/flows", map[string]any{"name": "Pause me", "graph": map[string]any{
		"nodes": []map[string]any{
			{"id": "ask", "type": "UX", "position": map[string]any{"x": 0, "y": 0},
				"data": map[string]any{"label": "Look it over", "prompt": "Go on?"}},
			{"id": "done", "type": "Worker", "position": map[string]any{"x": 320, "y": 0},
				"data": map[string]any{"label": "Finish", "webhookUrl": s.worker.URL + "/done", "timeoutSeconds": 30}},
		},
		"edges": []map[string]any{{"id": "e1", "source": "ask", "target": "done"}},
	}}, &askFlow)
	var second struct{ ID string }
	s.api("POST", "/flows/"+askFlow.ID+"/runs", map[string]any{"input": map[string]any{"n": 2}}, &second)
	s.run("second run", chromedp.Navigate(s.url+"/runs/"+second.ID))
	s.waitJS("ask waiting", node("ask", "waiting_for_user"))
	s.waitJS("running", runStatus("running"))
	require.False(t, s.exists("[data-paused]"))
	require.False(t, s.exists(`[data-action="resume"]`))
	s.run("pause", chromedp.Click(`.editor-bar [data-action="pause"]`, chromedp.ByQuery))
	s.waitJS("paused", runStatus("paused"))
	s.waitJS("resume shown", `!!document.querySelector('.editor-bar [data-action="resume"]') && !document.querySelector('.editor-bar [data-action="pause"]')`)
	require.Equal(t, "Resume", s.text(`.editor-bar [data-action="resume"]`))
	require.Contains(t, s.text("[data-paused]"), "Nothing new starts while the run is paused")
	require.True(t, s.exists(".canvas-paused"))
	require.Equal(t, "—", s.text(".side .kv dd:nth-of-type(3)"), "a paused run has not finished")
	var colour string
	s.run("paused colour", chromedp.Evaluate(`getComputedStyle(document.querySelector(".editor-bar .status")).backgroundColor`, &colour))
	require.Equal(t, "rgb(255, 237, 213)", colour, "the paused badge has its own colour")
	require.True(t, s.exists(`.editor-bar [data-action="cancel"]`), "a paused run can be cancelled")
	var second1 runJSON
	s.api("GET", "/runs/"+second.ID, nil, &second1)
	require.Equal(t, "paused", second1.Status)
	s.waitJS("paused event", `!!document.querySelector('.timeline li[data-event="run.paused"]')`)
	require.Contains(t, s.text(`.timeline li[data-event="run.paused"]`), "run paused")
	s.shot("c04-run-paused")

	// The runs list: paused is a filter, and the run shows as paused.
	s.run("runs list", chromedp.Navigate(s.url+"/runs"), chromedp.WaitVisible("#runs-status", chromedp.ByQuery))
	var options []string
	s.run("status options", chromedp.Evaluate(`[...document.querySelectorAll("#runs-status option")].map(o => o.value)`, &options))
	require.Contains(t, options, "paused")
	s.run("filter paused", setValue("#runs-status", "paused"))
	s.waitJS("paused filter", `location.search.includes("status=paused") && document.querySelectorAll("tbody tr").length === 1`)
	require.Equal(t, "paused", s.text("tbody tr .status"))
	require.Contains(t, s.text("tbody tr"), second.ID[:8])
	s.shot("c05-runs-paused")

	// While paused, an answer is recorded but nothing new starts.
	s.run("back", chromedp.Navigate(s.url+"/runs/"+second.ID))
	s.waitJS("paused again", runStatus("paused"))
	sent := s.worker.Received()
	s.api("POST", "/runs/"+second.ID+"/nodes/ask/complete", map[string]any{"outcome": "approve"}, nil)
	s.waitJS("ask completed", node("ask", "completed"))
	// Several poll intervals: done must not start.
	since := time.Now()
	for passes := 0; passes < 4; {
		if !s.app.TestSignals.SweepDone.Wait(t, time.Minute).Before(since) {
			passes++
		}
	}
	s.api("GET", "/runs/"+second.ID, nil, &second1)
	require.Equal(t, "paused", second1.Status)
	require.Equal(t, "pending", second1.Nodes["done"].Status)
	require.Equal(t, sent, s.worker.Received(), "nothing is dispatched while paused")
	require.True(t, s.exists(`.snode[data-node-id="done"][data-status="pending"]`))
	require.Equal(t, "true", s.attr(`.react-flow__edge[data-id="e1"]`, "data-taken"), "ask took its edge; done waits for the resume")
	s.run("resume", chromedp.Click(`.editor-bar [data-action="resume"]`, chromedp.ByQuery))
	s.waitJS("pause shown", `!!document.querySelector('.editor-bar [data-action="pause"]') || document.querySelector(".editor-bar .status")?.innerText === "completed"`)
	s.waitJS("done completed", node("done", "completed"))
	s.waitJS("second completed", runStatus("completed"))
	require.False(t, s.exists("[data-paused]"))
	s.api("GET", "/runs/"+second.ID, nil, &second1)
	require.Equal(t, "completed", second1.Status)
	require.Equal(t, "completed", second1.Nodes["done"].Status)
	s.waitJS("resumed event", `!!document.querySelector('.timeline li[data-event="run.unpaused"]')`)
	require.Contains(t, s.text(`.timeline li[data-event="run.unpaused"]`), "run resumed")

	// 3. The page is behind: the run was paused elsewhere. Pressing Pause
	// shows the server's refusal, and the page catches up (Resume).
	var third struct{ ID string }
	s.api("POST", "/flows/"+askFlow.ID+"/runs", map[string]any{"input": map[string]any{"n": 3}}, &third)
	var script page.ScriptIdentifier
	s.run("freeze events", chromedp.ActionFunc(func(ctx context.Context) error {
		var err error
		// The page's event stream never answers, so it learns of the
		// pause only when it asks.
		script, err = page.AddScriptToEvaluateOnNewDocument(`(() => { const f = window.fetch.bind(window);
			window.fetch = (u, o) => String(u).includes("/events") ? new Promise(() => {}) : f(u, o); })()`).Do(ctx)
		return err
	}))
	s.run("third run", chromedp.Navigate(s.url+"/runs/"+third.ID))
	s.waitJS("third running", runStatus("running"))
	s.api("POST", "/runs/"+third.ID+"/pause", nil, nil)
	require.True(t, s.exists(`.editor-bar [data-action="pause"]`), "the page does not know yet")
	s.run("pause again", chromedp.Click(`.editor-bar [data-action="pause"]`, chromedp.ByQuery))
	s.waitJS("refusal", `document.querySelector('.runview > .error-box[role="alert"]')?.innerText.startsWith("Could not pause the run:")`)
	refusal := s.text(`.runview > .error-box[role="alert"]`)
	require.Contains(t, refusal, "is paused, not running", "the server's message")
	s.waitJS("caught up", runStatus("paused")+` && !!document.querySelector('.editor-bar [data-action="resume"]')`)
	s.shot("c06-pause-refused")
	s.run("unfreeze", chromedp.ActionFunc(func(ctx context.Context) error {
		return page.RemoveScriptToEvaluateOnNewDocument(script).Do(ctx)
	}))
	require.True(t, strings.HasPrefix(refusal, "Could not pause the run:"))
}

// deselect clicks the run view's empty canvas, which shows the run's
// summary and timeline.
func (s *stack) deselect() {
	s.t.Helper()
	var corner struct{ X, Y float64 }
	s.run("pane corner", chromedp.Evaluate(`(() => { const b = document.querySelector(".react-flow__pane").getBoundingClientRect();
		return {X: b.right - 20, Y: b.top + 20}; })()`, &corner))
	s.run("deselect", input.DispatchMouseEvent(input.MouseMoved, corner.X, corner.Y),
		input.DispatchMouseEvent(input.MousePressed, corner.X, corner.Y).WithButton(input.Left).WithButtons(1).WithClickCount(1),
		input.DispatchMouseEvent(input.MouseReleased, corner.X, corner.Y).WithButton(input.Left).WithClickCount(1),
		chromedp.WaitVisible(".timeline", chromedp.ByQuery))
}
