package browser_test

import (
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/cdproto/fetch"
	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"
)

// Work a person does while a save is on its way, or types without
// applying it, is not lost and not called saved; a decision refused
// because someone decided first is said, not dropped with its card.

// holdRequests holds the page's requests of method to urlPattern until
// release is closed (the others go at once): a save on a slow network.
func (s *stack) holdRequests(method, urlPattern string) (release func(), held *atomic.Int32) {
	s.t.Helper()
	gate := make(chan struct{})
	held = &atomic.Int32{}
	chromedp.ListenTarget(s.ctx, func(ev any) {
		e, ok := ev.(*fetch.EventRequestPaused)
		if !ok {
			return
		}
		go func() {
			if e.Request.Method == method {
				held.Add(1)
				<-gate
			}
			_ = chromedp.Run(s.ctx, fetch.ContinueRequest(e.RequestID))
		}()
	})
	s.run("hold "+method+" "+urlPattern, fetch.Enable().WithPatterns([]*fetch.RequestPattern{{URLPattern: urlPattern, RequestStage: fetch.RequestStageRequest}}))
	var once atomic.Bool
	release = func() {
		if once.CompareAndSwap(false, true) {
			close(gate)
		}
	}
	s.t.Cleanup(release)
	return release, held
}

// savedGraph is a flow's version number and its nodes' data, as saved.
func (s *stack) savedGraph(id string) (int, map[string]map[string]any) {
	s.t.Helper()
	var f struct {
		Version struct{ Number int }
		Graph   struct {
			Nodes []struct {
				ID   string
				Data map[string]any
			}
		}
	}
	s.api("GET", "/flows/"+id, nil, &f)
	out := map[string]map[string]any{}
	for _, n := range f.Graph.Nodes {
		out[n.ID] = n.Data
	}
	return f.Version.Number, out
}

// openTransformFlow makes a flow of one Transform, t1, opens it in the
// editor and selects t1; it returns the flow's id.
func (s *stack) openTransformFlow(name string) string {
	s.t.Helper()
	id := s.editorFlow(name, []map[string]any{transformNode("t1", 0, 0)}, nil, nil)
	s.run("open", chromedp.Navigate(s.url+"/flows/"+id), tokenSignIn(token))
	s.settleInCanvas(canvasNode("t1"))
	s.run("select", chromedp.Click(canvasNode("t1"), chromedp.ByQuery), chromedp.WaitVisible(`form[aria-label="Transform t1 settings"]`, chromedp.ByQuery))
	return id
}

// saveTypingMeanwhile sets t1's expression, saves, and types t1's label
// "Typed while saving" while the save's PUT is held, then lets it go.
func (s *stack) saveTypingMeanwhile(expression string) {
	s.t.Helper()
	s.run("expression", typeInEditor("node-expression", expression))
	s.waitJS("typed", fmt.Sprintf(`document.querySelector("#node-expression").value === %q`, expression))
	release, held := s.holdRequests("PUT", "*/api/v1/flows/*")
	s.run("save", chromedp.Click(`//button[text()="Save"]`, chromedp.BySearch))
	require.Eventually(s.t, func() bool { return held.Load() == 1 }, 10*time.Second, 20*time.Millisecond, "the save's PUT held")
	s.run("label meanwhile", chromedp.Click("#node-label", chromedp.ByQuery), chromedp.SendKeys("#node-label", "Typed while saving", chromedp.ByQuery))
	release()
}

// TestUIEditsDuringASaveStayUnsaved: a label typed while the save of an
// expression is on its way is not in that version, and the editor says so
// — still unsaved, guarded on leaving — until the next save keeps it. It
// used to say "Saved" and drop the label on the next navigation.
func TestUIEditsDuringASaveStayUnsaved(t *testing.T) {
	s := newStack(t)
	id := s.openTransformFlow("Racing")
	s.saveTypingMeanwhile(`{"v": 1}`)
	s.waitJS("saved", `document.body.innerText.includes("Saved as version 2.")`)
	s.shot("sr01-edited-while-saving")
	body := s.text("body")
	require.Contains(t, body, "Changes made while it was saving are not saved yet")
	require.Contains(t, body, "Unsaved changes.")
	require.True(t, s.beforeUnloadAsks(), "the label is still to lose")
	v, nodes := s.savedGraph(id)
	require.Equal(t, 2, v)
	require.Equal(t, `{"v": 1}`, nodes["t1"]["expression"])
	require.Nil(t, nodes["t1"]["label"], "the label came after the save was sent")

	s.run("to Runs", chromedp.Click(`nav a[href="/runs"]`, chromedp.ByQuery), chromedp.WaitVisible(`[data-unsaved-dialog]`, chromedp.ByQuery),
		chromedp.Click(`[data-action="unsaved-save"]`, chromedp.ByQuery))
	s.waitJS("on the runs page", `location.pathname === "/runs"`)
	v, nodes = s.savedGraph(id)
	require.Equal(t, 3, v)
	require.Equal(t, "Typed while saving", nodes["t1"]["label"])
}

// TestUINewFlowKeepsEditsMadeWhileCreated: a step added while a new
// flow's first save is on its way is on the canvas at the flow's new
// address, unsaved, and the next save keeps it. The editor used to reload
// the saved copy there and drop it.
func TestUINewFlowKeepsEditsMadeWhileCreated(t *testing.T) {
	s := newStack(t)
	s.run("new flow", chromedp.Navigate(s.url+"/flows/new"), tokenSignIn(token))
	s.waitJS("palette", `!!document.querySelector('[data-palette="Transform"]')`)
	s.run("add Transform", chromedp.Click(`[data-palette="Transform"]`, chromedp.ByQuery), chromedp.WaitVisible(`form[aria-label="Transform transform1 settings"]`, chromedp.ByQuery))
	s.run("expression", typeInEditor("node-expression", `input`))
	s.waitJS("typed", `document.querySelector("#node-expression").value === 'input'`)
	release, held := s.holdRequests("POST", "*/api/v1/flows")
	s.run("save", chromedp.Click(`//button[text()="Save"]`, chromedp.BySearch))
	require.Eventually(t, func() bool { return held.Load() == 1 }, 10*time.Second, 20*time.Millisecond, "the create's POST held")
	s.run("add Wait meanwhile", chromedp.Click(`[data-palette="Wait"]`, chromedp.ByQuery), chromedp.WaitVisible(`#node-duration`, chromedp.ByQuery),
		setValue("#node-duration", "10s"))
	release()
	s.waitJS("at the new address", `/^\/flows\/[0-9a-f-]{36}$/.test(location.pathname) && !!document.querySelector('.react-flow__node[data-id="wait1"]')`)
	s.settleInCanvas(canvasNode("wait1"))
	s.shot("sr02-created-while-editing")
	body := s.text("body")
	require.Contains(t, body, "Created; saved as version 1. Changes made while it was saving are not saved yet")
	require.Contains(t, body, "Unsaved changes.")
	require.True(t, s.exists(canvasNode("transform1")))
	id := s.path()[len("/flows/"):]
	v, nodes := s.savedGraph(id)
	require.Equal(t, 1, v)
	require.Len(t, nodes, 1, "the Wait came after the create was sent")
	s.run("save again", chromedp.Click(`//button[text()="Save"]`, chromedp.BySearch))
	s.waitJS("saved", `document.body.innerText.includes("Saved as version 2.")`)
	v, nodes = s.savedGraph(id)
	require.Equal(t, 2, v)
	require.Equal(t, "10s", nodes["wait1"]["duration"])
	require.False(t, s.beforeUnloadAsks())
}

// TestUIJSONTabTextNotAppliedIsUnsaved: text typed in a node's JSON tab
// and not applied is unsaved work: the editor says so and guards it, and
// Save refuses until it is applied or reset (Save used to answer "No
// changes to the graph" and leaving dropped the text).
func TestUIJSONTabTextNotAppliedIsUnsaved(t *testing.T) {
	s := newStack(t)
	id := s.openTransformFlow("Typed")
	s.run("JSON tab", chromedp.Click(`[data-tab="json"]`, chromedp.ByQuery), chromedp.WaitVisible("#node-json-t1", chromedp.ByQuery),
		setValue("#node-json-t1", `{"expression": "{\"typed\": true}", "label": "Typed in JSON"}`))
	s.waitJS("unsaved", `document.body.innerText.includes("Unsaved changes.")`)
	require.True(t, s.beforeUnloadAsks())
	s.run("save", chromedp.Click(`//button[text()="Save"]`, chromedp.BySearch))
	s.waitJS("refused", `document.body.innerText.includes("The JSON tab of step t1 holds changes not applied")`)
	s.shot("sr03-json-not-applied")
	v, _ := s.savedGraph(id)
	require.Equal(t, 1, v, "nothing saved")
	s.run("to Runs", chromedp.Click(`nav a[href="/runs"]`, chromedp.ByQuery), chromedp.WaitVisible(`[data-unsaved-dialog]`, chromedp.ByQuery),
		chromedp.Click(`[data-action="unsaved-stay"]`, chromedp.ByQuery))
	s.run("apply", chromedp.Click(`[data-action="json-apply"]`, chromedp.ByQuery))
	s.run("save", chromedp.Click(`//button[text()="Save"]`, chromedp.BySearch))
	s.waitJS("saved", `document.body.innerText.includes("Saved as version 2.")`)
	v, nodes := s.savedGraph(id)
	require.Equal(t, 2, v)
	require.Equal(t, "Typed in JSON", nodes["t1"]["label"])
	require.False(t, s.beforeUnloadAsks())
}

// TestUIRefusedDecisionIsSaid: an approver whose card is stale (his inbox
// stream is cut) approves a step someone rejected meanwhile; the server's
// 409 is said on the page after the card goes, until dismissed. The card
// used to vanish with its error: "Nothing is waiting for you".
func TestUIRefusedDecisionIsSaid(t *testing.T) {
	s := newStack(t)
	const pw = "correct horse battery"
	s.api("POST", "/users", map[string]any{"email": "gus@example.com", "name": "Gus", "role": "approver", "groups": []string{"finance"}, "password": pw}, nil)
	id := s.editorFlow("Approve", []map[string]any{{"id": "ask", "type": "UX", "position": map[string]any{"x": 0, "y": 0},
		"data": map[string]any{"label": "Check order", "prompt": "OK?", "assignees": map[string]any{"groups": []string{"finance"}}}}}, nil, nil)
	var run struct{ ID string }
	s.api("POST", "/flows/"+id+"/runs", map[string]any{"input": map[string]any{"amount": 5}}, &run)
	card := fmt.Sprintf(`li.approval[data-approval="%s/ask"]`, run.ID)
	// The inbox's live stream is cut: the card is not taken away live.
	chromedp.ListenTarget(s.ctx, func(ev any) {
		if e, ok := ev.(*fetch.EventRequestPaused); ok {
			go func() { _ = chromedp.Run(s.ctx, fetch.FailRequest(e.RequestID, "ConnectionRefused")) }()
		}
	})
	s.run("cut the stream", fetch.Enable().WithPatterns([]*fetch.RequestPattern{{URLPattern: "*/approvals/stream*"}}))
	s.run("gus", chromedp.Navigate(s.url+"/approvals"), passwordSignIn("gus@example.com", pw), chromedp.WaitVisible(card, chromedp.ByQuery))
	s.api("POST", "/runs/"+run.ID+"/nodes/ask/complete", map[string]any{"outcome": "reject", "comment": "no budget"}, nil)
	s.run("gus approves", chromedp.Click(card+` button[data-outcome="approve"]`, chromedp.ByQuery))
	s.waitJS("refusal said", `(document.querySelector("[data-refused]")?.innerText ?? "").includes("Your “Approve” on ask was not recorded")`)
	s.waitJS("card gone", fmt.Sprintf(`!document.querySelector(%q)`, card))
	s.shot("sr04-refused-decision")
	require.Contains(t, s.text("[data-refused]"), "is no longer waiting for a decision (it is failed)", "the server's words")
	var r struct{ Status string }
	s.api("GET", "/runs/"+run.ID, nil, &r)
	require.Equal(t, "failed", r.Status, "the first decision stands")
	s.run("dismiss", chromedp.Click(`[data-action="dismiss-refused"]`, chromedp.ByQuery))
	s.waitJS("dismissed", `!document.querySelector("[data-refused]")`)
}

// TestUIEditsDuringASaveOfAnOldVersionStay: saving a flow opened at an
// older version goes to the flow's own address, which loads it again;
// a label typed while that save was on its way comes along, unsaved.
func TestUIEditsDuringASaveOfAnOldVersionStay(t *testing.T) {
	s := newStack(t)
	id := s.editorFlow("Versions", []map[string]any{transformNode("t1", 0, 0)}, nil, nil)
	s.api("PUT", "/flows/"+id, map[string]any{"name": "Versions", "graph": map[string]any{
		"nodes": []map[string]any{transformNode("t1", 0, 0), transformNode("t2", 320, 0)}, "edges": []any{}}}, nil)
	s.run("open version 1", chromedp.Navigate(s.url+"/flows/"+id+"?version=1"), tokenSignIn(token))
	s.settleInCanvas(canvasNode("t1"))
	s.run("select", chromedp.Click(canvasNode("t1"), chromedp.ByQuery), chromedp.WaitVisible(`form[aria-label="Transform t1 settings"]`, chromedp.ByQuery))
	s.saveTypingMeanwhile(`{"back": 1}`)
	// Loaded again at the flow's own address, the kept draft taken in.
	s.waitJS("reloaded at the flow's address", fmt.Sprintf(`location.search === "" && sessionStorage.getItem("stitchd.draft.%s") === null
		&& !document.body.innerText.includes("Loading flow") && document.body.innerText.includes("Typed while saving")`, id))
	s.settleInCanvas(canvasNode("t1"))
	require.Contains(t, s.text(canvasNode("t1")), "Typed while saving", "the label is on the step as loaded")
	require.Contains(t, s.text("body"), "Unsaved changes.")
	v, nodes := s.savedGraph(id)
	require.Equal(t, 3, v)
	require.Nil(t, nodes["t1"]["label"])
	require.True(t, s.beforeUnloadAsks())
}
