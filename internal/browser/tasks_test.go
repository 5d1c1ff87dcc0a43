package browser_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"
)

// TestUITasks (issue 45): a finance approver signs in, finds a purchase
// on her inbox with its summary, entity and section, claims it and
// decides it with the approval form, whose comment field is the
// decision's only comment box; another approver of the same group, in a
// browser of his own, sees it claimed by her — and no buttons to decide
// it — and sees it leave his inbox when she decides. The task page then
// shows the flow with labels, the history and the journey.
func TestUITasks(t *testing.T) {
	s := newStack(t)
	const pw = "correct horse battery"
	for _, u := range []struct{ email, name string }{{"fiona@example.com", "Fiona"}, {"gus@example.com", "Gus"}} {
		s.api("POST", "/users", map[string]any{"email": u.email, "name": u.name, "role": "approver", "groups": []string{"finance"}, "password": pw}, nil)
	}
	var board struct{ ID string }
	s.api("POST", "/boards", map[string]any{"name": "Purchases", "sections": []map[string]string{
		{"id": "submitted", "name": "Submitted"}, {"id": "approved", "name": "Approved"}}}, &board)
	form := map[string]any{"type": "object", "required": []string{"comment"}, "properties": map[string]any{
		"comment":     map[string]any{"type": "string", "minLength": 1, "title": "Comment"},
		"cost_center": map[string]any{"type": "string", "title": "Cost center"}}}
	var flow struct{ ID string }
	s.api("POST", "/flows", map[string]any{"name": "Purchase request", "board_id": board.ID, "graph": map[string]any{
		"nodes": []map[string]any{
			{"id": "finance", "type": "UX", "position": map[string]any{"x": 0, "y": 0}, "data": map[string]any{
				"label": "Finance approval", "prompt": "Buy it?", "assignees": map[string]any{"groups": []string{"finance"}},
				"summary":        []any{map[string]any{"label": "Requester", "path": "requester"}, map[string]any{"label": "Amount", "path": "amount"}},
				"form":           form,
				"entityMovement": map[string]any{"onOutcome": map[string]any{"approve": map[string]any{"targetSectionId": "approved"}}}}},
			{"id": "order", "type": "Condition", "position": map[string]any{"x": 320, "y": 0}, "data": map[string]any{"label": "Place order"}}},
		"edges": []map[string]any{{"id": "e1", "source": "finance", "target": "order", "data": map[string]any{"outcome": "approve"}}}}}, &flow)
	var ent struct{ ID string }
	s.api("POST", "/entities", map[string]any{"board_id": board.ID, "type": "purchase", "name": "Laptop for Ada"}, &ent)
	var run struct{ ID string }
	s.api("POST", "/flows/"+flow.ID+"/runs", map[string]any{"entity_id": ent.ID,
		"input": map[string]any{"requester": "ada@example.com", "item": "Laptop", "amount": 1200}}, &run)
	card := fmt.Sprintf(`li.approval[data-approval="%s/finance"]`, run.ID)

	// Fiona's inbox: the card says what she decides about.
	s.run("fiona signs in", chromedp.Navigate(s.url+"/approvals"), passwordSignIn("fiona@example.com", pw))
	s.waitJS("card", fmt.Sprintf(`!!document.querySelector(%q)`, card+" [data-summary]"))
	require.Contains(t, s.text(card+" [data-approval-title]"), "Laptop for Ada")
	require.Contains(t, s.text(card+" [data-approval-title]"), "Finance approval")
	require.Equal(t, "ada@example.com", s.text(card+` [data-summary-item="Requester"] dd`))
	require.Equal(t, "1200", s.text(card+` [data-summary-item="Amount"] dd`))
	require.Equal(t, "Laptop for Ada", s.text(card+" [data-entity-name]"))
	require.Contains(t, s.text(card+" [data-entity-type]"), "purchase")
	require.Contains(t, s.text(card+" [data-entity-section]"), "Submitted")
	require.Contains(t, s.text(card+" [data-flow-name]"), "Purchase request")
	require.Equal(t, "run …"+run.ID[len(run.ID)-8:], s.text(card+" [data-run-tail]"), "the run's distinguishing tail")
	require.False(t, s.exists(card+" textarea.comment"), "the form's comment field is the only comment box")
	// The age counts up.
	var age1, age2 string
	s.run("age", chromedp.Text(card+" .approval-times [data-age]", &age1, chromedp.ByQuery))
	s.run("wait", chromedp.Sleep(2100*time.Millisecond), chromedp.Text(card+" .approval-times [data-age]", &age2, chromedp.ByQuery))
	require.NotEqual(t, age1, age2, "the waiting age is live")

	// Gus, in a browser of his own, has the same task in his inbox.
	gus := s.otherBrowser()
	runIn := func(what string, actions ...chromedp.Action) {
		t.Helper()
		ctx, cancel := context.WithTimeout(gus, 30*time.Second)
		defer cancel()
		require.NoError(t, chromedp.Run(ctx, actions...), what)
	}
	waitIn := func(what, expr string) {
		t.Helper()
		runIn(what, chromedp.Poll(expr, nil, chromedp.WithPollingInterval(50*time.Millisecond), chromedp.WithPollingTimeout(25*time.Second)))
	}
	runIn("gus signs in", chromedp.Navigate(s.url+"/approvals"), passwordSignIn("gus@example.com", pw))
	waitIn("gus sees it unclaimed", fmt.Sprintf(`!!document.querySelector(%q)`, card+" [data-unclaimed]"))
	waitIn("gus's inbox is live", `document.querySelector(".live")?.classList.contains("on")`)

	// Fiona claims it.
	s.run("claim", chromedp.Click(card+` button[data-action="claim"]`, chromedp.ByQuery))
	s.waitJS("claimed by her", fmt.Sprintf(`document.querySelector(%q)?.innerText.includes("Claimed by you")`, card+" [data-claimed]"))
	s.shot("t01-fiona-claimed")

	// Gus sees it claimed by Fiona, live (the inbox stream fires on a
	// claim), and is offered no outcome.
	waitIn("gus sees it claimed", fmt.Sprintf(`document.querySelector(%q)?.dataset.claimed === "fiona@example.com"`, card+" [data-claimed]"))
	var held bool
	runIn("no decision for gus", chromedp.Evaluate(fmt.Sprintf(`!!document.querySelector(%q) && !document.querySelector(%q)`,
		card+` [data-held-by="fiona@example.com"]`, card+` button[data-outcome]`), &held))
	require.True(t, held, "Gus is told Fiona is on it, and offered no outcome")
	var gusShot []byte
	runIn("gus shot", chromedp.CaptureScreenshot(&gusShot))
	s.saveShot("t02-gus-sees-claimed", gusShot)

	// Fiona decides with the form: the comment is required to approve.
	s.run("approve without comment", chromedp.Click(card+` button[data-outcome="approve"]`, chromedp.ByQuery))
	s.waitJS("comment required", fieldError(card, "comment")+` === "is required"`)
	s.run("fill", setValue(card+` [id$="_comment"]`, "Within the IT budget"), setValue(card+` [id$="_cost_center"]`, "CC-7"),
		chromedp.Click(card+` button[data-outcome="approve"]`, chromedp.ByQuery))
	s.waitJS("card gone", fmt.Sprintf(`!document.querySelector(%q)`, card))
	var r struct {
		Nodes map[string]struct {
			Status string
			Output json.RawMessage
		}
	}
	s.api("GET", "/runs/"+run.ID, nil, &r)
	require.Equal(t, "completed", r.Nodes["finance"].Status)
	var out struct {
		Decision struct {
			Outcome string         `json:"outcome"`
			By      string         `json:"by"`
			Comment string         `json:"comment"`
			Answer  map[string]any `json:"answer"`
		} `json:"decision"`
	}
	require.NoError(t, json.Unmarshal(r.Nodes["finance"].Output, &out))
	require.Equal(t, "approve", out.Decision.Outcome)
	require.Equal(t, "fiona@example.com", out.Decision.By)
	require.Equal(t, "Within the IT budget", out.Decision.Comment, "the form's comment is decision.comment")
	require.Equal(t, "CC-7", out.Decision.Answer["cost_center"])
	// Gus's inbox follows, live.
	waitIn("gone for gus", fmt.Sprintf(`!document.querySelector(%q)`, card))

	// The task page: the flow with its labels and the path taken, the
	// history in words, the journey.
	s.run("task page", chromedp.Navigate(s.url+"/approvals/"+run.ID+"/finance"))
	s.waitJS("task page", `!!document.querySelector("[data-task-done]") && document.querySelectorAll("[data-task-canvas] .react-flow__node").length === 2`)
	s.waitJS("labels on the canvas", `[...document.querySelectorAll("[data-task-canvas] .react-flow__node")].some(n => n.innerText.includes("Finance approval"))`)
	s.waitJS("path taken", `!!document.querySelector('[data-task-canvas] [data-taken="true"]')`)
	require.Contains(t, s.text("[data-task-history]"), "fiona@example.com claimed it")
	require.Contains(t, s.text("[data-task-history]"), "fiona@example.com chose “approve”")
	require.Contains(t, s.text("[data-task-journey]"), "moved")
	s.shot("t03-task-page")
}

// saveShot writes a PNG taken elsewhere (another browser) as an artefact.
func (s *stack) saveShot(name string, png []byte) {
	if err := os.WriteFile(filepath.Join(s.shots, name+".png"), png, 0o644); err != nil {
		s.t.Logf("screenshot %s: %v", name, err)
	}
}

// otherBrowser opens a tab in a browser context of its own (cookies,
// storage and cache shared with no other, as a fresh profile): another
// person at another computer.
func (s *stack) otherBrowser() context.Context {
	s.t.Helper()
	tab := shared.tab(s.t)
	// The first run opens the tab, bound to the context it runs on: the
	// tab's, not a deadline's.
	require.NoError(s.t, chromedp.Run(tab, chromedp.EmulateViewport(1280, 800)), "opening a second browser context")
	return tab
}
