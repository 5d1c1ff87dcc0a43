package browser_test

import (
	"fmt"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"
)

// TestUIBoardEditing (issue 34): a board is created, renamed, given
// sections (added, renamed, deleted) and the metadata its cards show, and
// deleted from the UI; its entities are found by name or email, edited
// and deleted.
func TestUIBoardEditing(t *testing.T) {
	s := newStack(t)
	s.run("boards", chromedp.Navigate(s.url+"/boards"), tokenSignIn(token))
	s.run("new board", chromedp.Click(`[data-action="new-board"]`, chromedp.ByQuery), chromedp.WaitVisible("#board-name", chromedp.ByQuery),
		setValue("#board-name", "Pipeline"), setValue("#board-sections", "New, Won"),
		chromedp.Click(`[data-form="new-board"] button[type="submit"]`, chromedp.ByQuery))
	s.waitJS("board page", `location.pathname.startsWith("/boards/") && !!document.querySelector('.column[data-section="won"]')`)
	var boardID string
	s.run("board id", chromedp.Evaluate(`location.pathname.split("/")[2]`, &boardID))
	require.Equal(t, "Pipeline", s.text(".page-head h1"))

	var ada, bob struct{ ID string }
	s.api("POST", "/entities", map[string]any{"board_id": boardID, "type": "lead", "name": "Ada Lovelace", "email": "ada@example.com",
		"metadata": map[string]any{"score": 87, "plan": "pro"}}, &ada)
	s.api("POST", "/entities", map[string]any{"board_id": boardID, "type": "lead", "name": "Bob", "email": "bob@example.org"}, &bob)
	card := func(id string) string { return fmt.Sprintf(`.entity-card[data-entity=%q]`, id) }
	s.run("reload", chromedp.Reload())
	s.waitJS("cards", fmt.Sprintf(`!!document.querySelector(%q) && !!document.querySelector(%q)`, card(ada.ID), card(bob.ID)))
	// Without card_fields a card shows the first metadata keys.
	s.waitJS("metadata on the card", fmt.Sprintf(`document.querySelector(%q)?.innerText.includes("87")`, card(ada.ID)+` [data-meta-key="score"]`))

	// Search by name, then by email: only the matches stay.
	s.run("search name", setValue("#board-search", "lovelace"))
	s.waitJS("only Ada", fmt.Sprintf(`!!document.querySelector(%q) && !document.querySelector(%q) && !!document.querySelector("[data-search-result]")`,
		card(ada.ID), card(bob.ID)))
	s.run("search email", setValue("#board-search", "example.org"))
	s.waitJS("only Bob", fmt.Sprintf(`!!document.querySelector(%q) && !document.querySelector(%q)`, card(bob.ID), card(ada.ID)))
	s.run("clear search", setValue("#board-search", ""))
	s.waitJS("both", fmt.Sprintf(`!!document.querySelector(%q) && !!document.querySelector(%q) && !document.querySelector("[data-search-result]")`,
		card(ada.ID), card(bob.ID)))

	// Rename the board, show only "plan" on cards, add, rename and delete
	// sections.
	s.run("edit board", chromedp.Click(`[data-action="edit-board"]`, chromedp.ByQuery), chromedp.WaitVisible("#board-rename", chromedp.ByQuery),
		setValue("#board-rename", "Sales pipeline"), setValue("#board-card-fields", "plan"),
		chromedp.Click(`[data-action="save-board"]`, chromedp.ByQuery))
	s.waitJS("renamed", `document.querySelector(".page-head h1").innerText === "Sales pipeline"`)
	s.waitJS("plan only", fmt.Sprintf(`!!document.querySelector(%q) && !document.querySelector(%q)`,
		card(ada.ID)+` [data-meta-key="plan"]`, card(ada.ID)+` [data-meta-key="score"]`))
	s.run("add section", setValue("#new-section-name", "Lost"), chromedp.Click(`[data-action="add-section"]`, chromedp.ByQuery))
	s.waitJS("lost column", `[...document.querySelectorAll(".column")].map(c => c.dataset.section).join() === "new,won,lost"`)
	s.run("rename won", setValue(`[data-section-edit="won"] input`, "Closed won"),
		chromedp.Click(`[data-section-edit="won"] [data-action="rename-section"]`, chromedp.ByQuery))
	s.waitJS("won renamed", `document.querySelector('.column[data-section="won"] h2')?.innerText === "Closed won"`)
	s.run("delete lost", chromedp.Click(`[data-section-edit="lost"] [data-action="delete-section"]`, chromedp.ByQuery))
	s.waitJS("lost gone", `[...document.querySelectorAll(".column")].map(c => c.dataset.section).join() === "new,won"`)
	// A section holding entities says where they go before it can go.
	var disabled bool
	s.run("new holds entities", chromedp.Evaluate(`document.querySelector('[data-section-edit="new"] [data-action="delete-section"]').disabled`, &disabled))
	require.True(t, disabled, "a section holding entities needs a place for them first")
	s.shot("b01-board-settings")
	s.run("close settings", chromedp.Click(`.modal [aria-label="Close"]`, chromedp.ByQuery))

	// Edit Ada, then delete Bob.
	s.run("open Ada", chromedp.Click(card(ada.ID), chromedp.ByQuery), chromedp.WaitVisible(".entity-edit summary", chromedp.ByQuery),
		chromedp.Click(".entity-edit summary", chromedp.ByQuery), chromedp.WaitVisible("#entity-name", chromedp.ByQuery),
		setValue("#entity-name", "Ada King"), chromedp.Click(`[data-action="save-entity"]`, chromedp.ByQuery))
	s.waitJS("Ada renamed", fmt.Sprintf(`document.querySelector(%q)?.innerText.includes("Ada King")`, card(ada.ID)))
	s.run("close Ada", chromedp.Click(`.modal [aria-label="Close"]`, chromedp.ByQuery))
	s.run("open Bob", chromedp.Click(card(bob.ID), chromedp.ByQuery), chromedp.WaitVisible(".entity-edit summary", chromedp.ByQuery),
		chromedp.Click(".entity-edit summary", chromedp.ByQuery), chromedp.WaitVisible(`[data-action="delete-entity"]`, chromedp.ByQuery),
		chromedp.Click(`[data-action="delete-entity"]`, chromedp.ByQuery))
	s.waitJS("Bob gone", fmt.Sprintf(`!document.querySelector(%q) && !document.querySelector(".modal")`, card(bob.ID)))

	// Delete the board: back on the list, which no longer has it.
	s.run("delete board", chromedp.Click(`[data-action="edit-board"]`, chromedp.ByQuery),
		chromedp.WaitVisible(`[data-action="delete-board"]`, chromedp.ByQuery), chromedp.Click(`[data-action="delete-board"]`, chromedp.ByQuery))
	s.waitJS("on the list", `location.pathname === "/boards" && !!document.querySelector(".page-head h1") && !document.querySelector(".spinner")`)
	s.waitJS("board gone", `![...document.querySelectorAll(".board-list a")].some(a => a.innerText.includes("pipeline"))`)
	var boards struct{ Boards []struct{ ID string } }
	s.api("GET", "/boards", nil, &boards)
	require.Empty(t, boards.Boards)
}

// TestUISetMetadataOnCard (issue 34): a worker's output {"score": 87},
// written into its entity's metadata by entityMovement.onSuccess.setMetadata,
// shows on the entity's card on the board.
func TestUISetMetadataOnCard(t *testing.T) {
	s := newStack(t)
	s.worker.output.Store(&map[string]any{"score": 87})
	var board struct{ ID string }
	s.api("POST", "/boards", map[string]any{"name": "Scores", "sections": []map[string]string{{"id": "new"}, {"id": "scored", "name": "Scored"}}}, &board)
	var flow struct{ ID string }
	s.api("POST", "/flows", map[string]any{"name": "Score", "board_id": board.ID, "graph": map[string]any{
		"nodes": []map[string]any{{"id": "score", "type": "Worker", "position": map[string]any{"x": 0, "y": 0},
			"data": map[string]any{"webhookUrl": s.worker.URL + "/score", "entityMovement": map[string]any{
				"onSuccess": map[string]any{"targetSectionId": "scored", "setMetadata": map[string]any{"score": "score"}}}}}},
		"edges": []map[string]any{}}}, &flow)
	var ent struct{ ID string }
	s.api("POST", "/entities", map[string]any{"board_id": board.ID, "type": "lead", "name": "Ada"}, &ent)
	s.run("board", chromedp.Navigate(s.url+"/boards/"+board.ID), tokenSignIn(token))
	s.waitJS("Ada in New", fmt.Sprintf(`!!document.querySelector('.column[data-section="new"] .entity-card[data-entity=%q]')`, ent.ID))
	require.False(t, s.exists(`[data-meta-key="score"]`), "no score before the run")
	s.api("POST", "/flows/"+flow.ID+"/runs", map[string]any{"entity_id": ent.ID, "input": map[string]any{}}, nil)
	// Live: the card moves to Scored and shows the score the worker gave.
	s.waitJS("score on the card", fmt.Sprintf(`document.querySelector('.column[data-section="scored"] .entity-card[data-entity=%q] [data-meta-key="score"]')?.innerText.includes("87")`, ent.ID))
	s.shot("b02-set-metadata-card")
}

// TestUIApprovalSummary (issue 34): the inbox card of a UX step with a
// summary is titled with its entity's name and shows the summary's
// labelled values; a rejection's reason shows in the entity's journey.
func TestUIApprovalSummary(t *testing.T) {
	s := newStack(t)
	var board struct{ ID string }
	s.api("POST", "/boards", map[string]any{"name": "Leads", "sections": []map[string]string{{"id": "new"}, {"id": "nurture", "name": "Nurture"}}}, &board)
	var flow struct{ ID string }
	s.api("POST", "/flows", map[string]any{"name": "Review", "board_id": board.ID, "graph": map[string]any{
		"nodes": []map[string]any{
			{"id": "ask", "type": "UX", "position": map[string]any{"x": 0, "y": 0}, "data": map[string]any{"label": "Send to sales?",
				"summary":        []any{map[string]any{"label": "Email", "path": "email"}, "company.size"},
				"entityMovement": map[string]any{"onOutcome": map[string]any{"reject": map[string]any{"targetSectionId": "nurture"}}}}},
			{"id": "no", "type": "Condition", "position": map[string]any{"x": 300, "y": 0}, "data": map[string]any{}}},
		"edges": []map[string]any{{"id": "e1", "source": "ask", "target": "no", "data": map[string]any{"outcome": "reject"}}}}}, &flow)
	var ent struct{ ID string }
	s.api("POST", "/entities", map[string]any{"board_id": board.ID, "type": "lead", "name": "Grace Hopper"}, &ent)
	var run struct{ ID string }
	s.api("POST", "/flows/"+flow.ID+"/runs", map[string]any{"entity_id": ent.ID,
		"input": map[string]any{"email": "grace@example.com", "company": map[string]any{"size": 250}}}, &run)

	card := fmt.Sprintf(`li.approval[data-approval="%s/ask"]`, run.ID)
	s.run("inbox", chromedp.Navigate(s.url+"/approvals"), tokenSignIn(token))
	s.waitJS("card", fmt.Sprintf(`!!document.querySelector(%q)`, card+" [data-summary]"))
	require.Contains(t, s.text(card+" [data-approval-title]"), "Grace Hopper", "the entity's name is the card's title")
	require.Contains(t, s.text(card+" [data-approval-title]"), "Send to sales?")
	require.Equal(t, "Email", s.text(card+` [data-summary-item="Email"] dt`))
	require.Equal(t, "grace@example.com", s.text(card+` [data-summary-item="Email"] dd`))
	require.Equal(t, "250", s.text(card+` [data-summary-item="company.size"] dd`))
	s.shot("b03-approval-summary")

	s.api("POST", "/runs/"+run.ID+"/nodes/ask/complete", map[string]any{"outcome": "reject", "comment": "not before the budget"}, nil)
	s.run("journey", chromedp.Navigate(s.url+"/boards/"+board.ID+"?entity="+ent.ID))
	s.waitJS("reason in the journey", `[...document.querySelectorAll("[data-journey-comment]")].some(q => q.innerText.includes("not before the budget"))`)
}
