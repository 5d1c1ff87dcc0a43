package browser_test

import (
	"fmt"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"
)

// twoSectionBoard makes a board with the sections New and Won.
func (s *stack) twoSectionBoard(name string) string {
	s.t.Helper()
	var board struct{ ID string }
	s.api("POST", "/boards", map[string]any{"name": name, "sections": []map[string]string{{"id": "new", "name": "New"}, {"id": "won", "name": "Won"}}}, &board)
	return board.ID
}

// TestUIBoardSettingsKeepTyping (QA 36): the board behind the Edit board
// dialog is read again at every move on it. A section's new name being
// typed was put back to the saved one, and the focus leapt out of the
// field to the dialog's first button, at each move: on a busy board a
// person could not rename a section. Both stay now.
func TestUIBoardSettingsKeepTyping(t *testing.T) {
	s := newStack(t)
	boardID := s.twoSectionBoard("Pipeline")
	var ada struct{ ID string }
	s.api("POST", "/entities", map[string]any{"board_id": boardID, "type": "lead", "name": "Ada"}, &ada)
	s.run("board", chromedp.Navigate(s.url+"/boards/"+boardID), tokenSignIn(token))
	s.waitJS("Ada in New", fmt.Sprintf(`!!document.querySelector('.column[data-section="new"] .entity-card[data-entity=%q]')`, ada.ID))
	field := `[data-section-edit="won"] input[aria-label^="Name of section"]`
	s.run("edit board", chromedp.Click(`[data-action="edit-board"]`, chromedp.ByQuery), chromedp.WaitVisible(field, chromedp.ByQuery),
		chromedp.Click(field, chromedp.ByQuery), sendKeys(field, " deals"))
	require.Equal(t, "Won deals", s.value(field))

	// Ada moves (a run's step, or a colleague): the board behind is read again.
	s.api("POST", "/entities/"+ada.ID+"/move", map[string]any{"section_id": "won"}, nil)
	s.waitJS("Ada in Won", fmt.Sprintf(`!!document.querySelector('.column[data-section="won"] .entity-card[data-entity=%q]')`, ada.ID))
	s.waitJS("the dialog's board read again", `/Its 1 entities go to/.test(document.querySelector('[data-section-edit="won"]').innerText)`)
	require.Equal(t, "Won deals", s.value(field), "the name being typed is kept")
	var focused bool
	s.run("focus", chromedp.Evaluate(fmt.Sprintf(`document.activeElement === document.querySelector(%q)`, field), &focused))
	require.True(t, focused, "the focus stays in the field typed in")
	s.run("type on", sendKeys(field, "!"))
	require.Equal(t, "Won deals!", s.value(field))
	s.run("rename", chromedp.Click(`[data-section-edit="won"] [data-action="rename-section"]`, chromedp.ByQuery))
	s.waitJS("renamed", `document.querySelector('.column[data-section="won"] h2')?.innerText === "Won deals!"`)
	s.shot("qa36-board-settings-typing")
}

// TestUIJourneyShowsLaterMoves (QA 36): an entity's journey is read a
// page (100 events) at a time, oldest first. The journey dialog showed the
// first page only, with nothing saying there was more: an entity moved
// often (a loop, a busy lead) showed its first moves and never its latest.
// Show later moves reads the next pages.
func TestUIJourneyShowsLaterMoves(t *testing.T) {
	s := newStack(t)
	boardID := s.twoSectionBoard("Busy")
	var ada struct{ ID string }
	s.api("POST", "/entities", map[string]any{"board_id": boardID, "type": "lead", "name": "Ada"}, &ada)
	// 1 creation and 104 moves: the last, back to New, is the 105th event.
	for i := 0; i < 104; i++ {
		to := map[bool]string{true: "won", false: "new"}[i%2 == 0]
		s.api("POST", "/entities/"+ada.ID+"/move", map[string]any{"section_id": to}, nil)
	}
	s.run("journey", chromedp.Navigate(s.url+"/boards/"+boardID+"?entity="+ada.ID), tokenSignIn(token))
	s.waitJS("journey", `document.querySelectorAll('.journey .timeline li').length >= 100`)
	require.Contains(t, s.text(".journey"), "now in New")
	s.run("show later", chromedp.Click(`[data-action="journey-more"]`, chromedp.ByQuery))
	s.waitJS("all 105", `document.querySelectorAll('.journey .timeline li').length === 105`)
	last := s.text(".journey .timeline li:last-child")
	require.Contains(t, last, "Won → New", "the latest move is shown last")
	require.False(t, s.exists(`[data-action="journey-more"]`), "nothing more to show")
	s.shot("qa36-journey-later")
}

// TestUIBoardShowMoreStays (QA 36): a section of more than 100 entities
// shows 100 and Show more; the entities it added vanished at the next
// move on the board (read again from its first page). They stay.
func TestUIBoardShowMoreStays(t *testing.T) {
	s := newStack(t)
	boardID := s.twoSectionBoard("Crowded")
	var oldest, mover struct{ ID string }
	for i := 0; i < 103; i++ {
		var e struct{ ID string }
		s.api("POST", "/entities", map[string]any{"board_id": boardID, "type": "lead", "name": fmt.Sprintf("Lead %03d", i)}, &e)
		switch i {
		case 0:
			mover = e
		case 102:
			oldest = e // the newest in New: oldest-in-section first, it is on the second page
		}
	}
	card := func(id string) string { return fmt.Sprintf(`.entity-card[data-entity=%q]`, id) }
	newCards := `document.querySelectorAll('.column[data-section="new"] .entity-card').length`
	s.run("board", chromedp.Navigate(s.url+"/boards/"+boardID), tokenSignIn(token))
	s.waitJS("a page", newCards+` === 100`)
	more := `//div[@data-section="new"]//button[starts-with(normalize-space(), "Show more")]`
	var label string
	s.run("show more", chromedp.Text(more, &label, chromedp.BySearch))
	require.Contains(t, label, "3 not shown")
	s.run("more", chromedp.Click(more, chromedp.BySearch))
	s.waitJS("all 103", newCards+` === 103 && ![...document.querySelectorAll('.column[data-section="new"] button')].some(b => b.innerText.startsWith("Show more"))`)
	s.api("POST", "/entities/"+mover.ID+"/move", map[string]any{"section_id": "won"}, nil)
	s.waitJS("moved", fmt.Sprintf(`!!document.querySelector('.column[data-section="won"] %s')`, card(mover.ID)))
	s.waitJS("the rest still shown", newCards+` === 102 && !!document.querySelector('.column[data-section="new"] `+card(oldest.ID)+`')`)
	s.shot("qa36-board-show-more")
}

// TestUIJourneyFollowsMoves (QA 36): an entity's journey, open while a
// run (or a colleague) moved the entity, kept saying where it was when
// opened ("now in New", and Move offering Won). It follows each move on
// the board. Its Edit form keeps what is being typed meanwhile, and its
// Save writes only what the person changed: it wrote back the metadata
// as it was when the form opened, undoing a run's step's meanwhile.
func TestUIJourneyFollowsMoves(t *testing.T) {
	s := newStack(t)
	boardID := s.twoSectionBoard("Live")
	var ada struct{ ID string }
	s.api("POST", "/entities", map[string]any{"board_id": boardID, "type": "lead", "name": "Ada", "metadata": map[string]any{"score": 10}}, &ada)
	s.run("journey", chromedp.Navigate(s.url+"/boards/"+boardID+"?entity="+ada.ID), tokenSignIn(token))
	s.waitJS("in New", `/now in New/.test(document.querySelector(".journey")?.innerText ?? "")`)
	s.run("edit", chromedp.Click(".entity-edit summary", chromedp.ByQuery), chromedp.WaitVisible("#entity-name", chromedp.ByQuery),
		chromedp.Click("#entity-name", chromedp.ByQuery), sendKeys("#entity-name", " King"))

	// A run's step scores Ada and moves her to Won.
	s.api("PATCH", "/entities/"+ada.ID, map[string]any{"metadata": map[string]any{"score": 90}}, nil)
	s.api("POST", "/entities/"+ada.ID+"/move", map[string]any{"section_id": "won"}, nil)
	s.waitJS("in Won", `/now in Won/.test(document.querySelector(".journey").innerText) && /New → Won/.test(document.querySelector(".journey .timeline li:last-child").innerText)`)
	var offered []string
	s.run("move offers", chromedp.Evaluate(`[...document.querySelectorAll("#move-to option")].map(o => o.value).filter(Boolean)`, &offered))
	require.Equal(t, []string{"new"}, offered, "Move offers the sections Ada is not in")
	require.Equal(t, "Ada King", s.value("#entity-name"), "the name being typed is kept")

	s.run("save", chromedp.Click(`[data-action="save-entity"]`, chromedp.ByQuery))
	s.waitJS("saved", `/Ada King — journey/.test(document.querySelector(".modal h2")?.innerText ?? "")`)
	var got struct {
		Name     string
		Metadata map[string]any
	}
	s.api("GET", "/entities/"+ada.ID, nil, &got)
	require.Equal(t, "Ada King", got.Name)
	require.Equal(t, map[string]any{"score": 90.0}, got.Metadata, "the run's score is not undone")
}
