package browser_test

import (
	"fmt"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"
)

// TestUICancelledRunIsNotFailed (QA 36): a run an operator cancelled
// from the run view said, in the red of a failure, "Run failed:
// cancelled". It says the run was cancelled; a failed run still says why
// it failed.
func TestUICancelledRunIsNotFailed(t *testing.T) {
	s := newStack(t)
	flowID := s.uxFlow("Cancel me", "")
	var run struct{ ID string }
	s.api("POST", "/flows/"+flowID+"/runs", map[string]any{"input": map[string]any{}}, &run)
	s.run("run", chromedp.Navigate(s.url+"/runs/"+run.ID), tokenSignIn(token))
	s.waitJS("running", `document.querySelector(".editor-bar .status")?.innerText === "running"`)
	s.run("cancel", chromedp.Click(`[data-action="cancel"]`, chromedp.ByQuery)) // the confirm is accepted
	s.waitJS("cancelled", `document.querySelector(".editor-bar .status")?.innerText === "cancelled" && !!document.querySelector('.snode[data-node-id="ask"][data-status="cancelled"]')`)
	s.run("reload", chromedp.Reload()) // the run as read, its error with it
	s.waitJS("read again", `document.querySelector(".editor-bar .status")?.innerText === "cancelled"`)
	s.shot("qa36-cancelled-run")
	var body string
	s.run("page", chromedp.Evaluate(`document.querySelector(".runview").innerText`, &body))
	require.NotContains(t, body, "Run failed", "a cancelled run did not fail")
	require.Contains(t, body, "Run cancelled.")
	require.False(t, s.exists(".runview > .error-box"), "nothing is shown as an error")

	// A failed run still says why.
	var failing struct{ ID string }
	s.api("POST", "/flows", map[string]any{"name": "Failing", "graph": map[string]any{
		"nodes": []map[string]any{{"id": "work", "type": "Worker", "position": map[string]any{"x": 0, "y": 0},
			"data": map[string]any{"webhookUrl": s.worker.URL + "/work", "retry": map[string]any{"maxAttempts": 1}}}},
		"edges": []map[string]any{}}}, &failing)
	s.api("POST", "/flows/"+failing.ID+"/runs", map[string]any{"input": map[string]any{"fail": true}}, &run)
	s.run("failed run", chromedp.Navigate(s.url+"/runs/"+run.ID))
	s.waitJS("failed", `document.querySelector(".runview > .error-box")?.innerText === "Run failed: node work failed: this item is marked to fail"`)
}

// TestUIEntityIdToStartARunWith (QA 36): Start a run for an existing
// entity asks for "the entity's id (see its card)", but neither the card
// nor its journey showed it. The journey shows it now, to copy into the
// dialog.
func TestUIEntityIdToStartARunWith(t *testing.T) {
	s := newStack(t)
	boardID := s.twoSectionBoard("Leads")
	flowID := s.uxFlow("Qualify", boardID)
	var ada struct{ ID string }
	s.api("POST", "/entities", map[string]any{"board_id": boardID, "type": "lead", "name": "Ada"}, &ada)
	s.run("board", chromedp.Navigate(s.url+"/boards/"+boardID), tokenSignIn(token))
	s.run("open Ada", chromedp.Click(fmt.Sprintf(`.entity-card[data-entity=%q]`, ada.ID), chromedp.ByQuery), chromedp.WaitVisible(".journey", chromedp.ByQuery))
	s.waitJS("its id", `!!document.querySelector(".journey [data-entity-id]")`)
	id := s.text(".journey [data-entity-id]")
	require.Equal(t, ada.ID, id)

	s.run("editor", chromedp.Navigate(s.url+"/flows/"+flowID))
	s.run("start", chromedp.Click(`//button[normalize-space()="Start run"]`, chromedp.BySearch), chromedp.WaitVisible(`input[name="run-entity"][value="existing"]`, chromedp.ByQuery),
		chromedp.Click(`input[name="run-entity"][value="existing"]`, chromedp.ByQuery), chromedp.WaitVisible("#run-entity-id", chromedp.ByQuery))
	require.NotContains(t, s.attr("#run-entity-id", "placeholder"), "see its card")
	s.run("entity", setValue("#run-entity-id", id), chromedp.Click(`.modal button[type="submit"]`, chromedp.ByQuery))
	s.waitJS("the run", `location.pathname.startsWith("/runs/")`)
	var runs struct {
		Runs []struct {
			EntityID string `json:"entity_id"`
		}
	}
	s.api("GET", "/runs?flow_id="+flowID, nil, &runs)
	require.Len(t, runs.Runs, 1)
	require.Equal(t, ada.ID, runs.Runs[0].EntityID)
}

// TestUIRunViewFitsOnOpen (QA 36): the run view was never fitted to its
// flow while the run waited (React Flow counted its nodes unmeasured, as
// the canvas does not hand their sizes back): it opened at 0,0, zoom 1,
// and a flow drawn left of or above 0,0 — steps dragged there in the
// editor — was out of sight, the canvas empty but for the legend. The
// view is fitted as the editor's is.
func TestUIRunViewFitsOnOpen(t *testing.T) {
	s := newStack(t)
	var flow struct{ ID string }
	s.api("POST", "/flows", map[string]any{"name": "Up left", "graph": map[string]any{
		"nodes": []map[string]any{
			{"id": "prep", "type": "Transform", "position": map[string]any{"x": -900, "y": -600}, "data": map[string]any{"label": "Prepare", "expression": "input"}},
			{"id": "ask", "type": "UX", "position": map[string]any{"x": -600, "y": -600}, "data": map[string]any{"prompt": "OK?"}}},
		"edges": []map[string]any{{"id": "e1", "source": "prep", "target": "ask"}}}}, &flow)
	var run struct{ ID string }
	s.api("POST", "/flows/"+flow.ID+"/runs", map[string]any{"input": map[string]any{}}, &run)
	s.run("run", chromedp.Navigate(s.url+"/runs/"+run.ID), tokenSignIn(token))
	s.waitJS("waiting", `!!document.querySelector('.snode[data-node-id="ask"][data-status="waiting_for_user"]')`)
	s.settle(`.react-flow__node[data-id="ask"]`)
	s.settle(".react-flow__viewport")
	s.shot("qa36-run-fitted")
	require.True(t, s.inCanvas(`.react-flow__node[data-id="prep"]`), "the first step is in view")
	require.True(t, s.inCanvas(`.react-flow__node[data-id="ask"]`), "the waiting step is in view")
}
