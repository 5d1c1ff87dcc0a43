package browser_test

import (
	"testing"

	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
	"github.com/stretchr/testify/require"
)

// ctrl presses Ctrl with key (shift too when asked), as a keyboard does.
func ctrl(key string, shift bool) chromedp.Action {
	m := input.ModifierCtrl
	if shift {
		m |= input.ModifierShift
	}
	return chromedp.KeyEvent(key, chromedp.KeyModifiers(m))
}

// TestUIUndoRedo: a step deleted by a stray Delete comes back with Ctrl+Z,
// its edge and settings too, and goes again with Ctrl+Shift+Z; a label
// set is taken back by the Undo button and made again by Redo; Ctrl+Z in
// a text field is the field's own, and behind a dialog does nothing; what
// Undo and Redo put back is what Save keeps. There was no undo but Tidy
// up's.
func TestUIUndoRedo(t *testing.T) {
	s := newStack(t)
	id := s.editorFlow("Undone", []map[string]any{
		transformNode("t1", 0, 0),
		{"id": "t2", "type": "Transform", "position": map[string]any{"x": 320, "y": 0}, "data": map[string]any{"expression": `{"kept": input}`}},
	}, []map[string]any{{"id": "e1", "source": "t1", "target": "t2"}}, nil)
	s.run("open", chromedp.Navigate(s.url+"/flows/"+id), tokenSignIn(token))
	s.settleInCanvas(canvasNode("t2"))
	require.True(t, s.exists(`[data-action="undo"]:disabled`))
	require.True(t, s.exists(`[data-action="redo"]:disabled`))

	s.run("delete t2", chromedp.Click(canvasNode("t2"), chromedp.ByQuery), chromedp.WaitVisible(`form[aria-label="Transform t2 settings"]`, chromedp.ByQuery),
		chromedp.Click(canvasNode("t2"), chromedp.ByQuery), chromedp.KeyEvent(kb.Delete))
	s.waitJS("deleted", `!document.querySelector('.react-flow__node[data-id="t2"]')`)
	s.run("Ctrl+Z", chromedp.Click(".react-flow__pane", chromedp.ByQuery), ctrl("z", false))
	s.waitJS("back", `!!document.querySelector('.react-flow__node[data-id="t2"]') && document.querySelectorAll(".react-flow__edge").length === 1`)
	s.shot("un01-deleted-step-back")
	require.False(t, s.exists(`[data-action="redo"]:disabled`), "Redo is offered")
	s.run("Ctrl+Shift+Z", ctrl("z", true))
	s.waitJS("gone again", `!document.querySelector('.react-flow__node[data-id="t2"]')`)
	s.run("Ctrl+Z again", ctrl("z", false))
	s.waitJS("back again", `!!document.querySelector('.react-flow__node[data-id="t2"]')`)

	s.run("select t1", chromedp.Click(canvasNode("t1"), chromedp.ByQuery), chromedp.WaitVisible(`form[aria-label="Transform t1 settings"]`, chromedp.ByQuery))
	// One change (the keystrokes of a label typed are one change when they
	// come within BURST_MS of each other: useGraphHistory.test.ts).
	s.run("a label", setValue("#node-label", "Fetch leads"))
	s.waitJS("typed", `document.querySelector(".react-flow__node[data-id='t1']").innerText.includes("Fetch leads")`)
	s.run("Undo", chromedp.Click(`[data-action="undo"]`, chromedp.ByQuery))
	s.waitJS("label gone", `!document.querySelector(".react-flow__node[data-id='t1']").innerText.includes("Fetch")`)
	require.True(t, s.exists(`.react-flow__node[data-id="t2"]`), "one Undo took back the label, no more")
	s.run("Redo", chromedp.Click(`[data-action="redo"]`, chromedp.ByQuery))
	s.waitJS("label back", `document.querySelector(".react-flow__node[data-id='t1']").innerText.includes("Fetch leads")`)
	// In a text field, Ctrl+Z is the field's (it has nothing to take back
	// of a value Redo set): the graph's history is not used.
	s.run("Ctrl+Z in the field", chromedp.Click("#node-label", chromedp.ByQuery), ctrl("z", false))
	require.Contains(t, s.text(canvasNode("t1")), "Fetch leads", "the field's Ctrl+Z took back no step of the graph")
	require.True(t, s.exists(`[data-action="redo"]:disabled`), "nothing taken back")
	// Behind a dialog, Ctrl+Z changes nothing of the graph.
	s.run("Start run", chromedp.Click(`//button[text()="Start run"]`, chromedp.BySearch), chromedp.WaitVisible(`.modal`, chromedp.ByQuery),
		chromedp.Focus(`.modal button`, chromedp.ByQuery), ctrl("z", false))
	require.Contains(t, s.text(canvasNode("t1")), "Fetch leads", "the dialog's Ctrl+Z took back no step of the graph")
	s.run("close", chromedp.KeyEvent(kb.Escape))
	s.waitJS("closed", `!document.querySelector(".modal")`)

	s.run("save", chromedp.Click(`//button[text()="Save"]`, chromedp.BySearch))
	s.waitJS("saved", `document.body.innerText.includes("Saved as version 2.")`)
	_, saved := s.savedGraph(id)
	require.Equal(t, `{"kept": input}`, saved["t2"]["expression"], "the step came back with its settings")
	require.Equal(t, "Fetch leads", saved["t1"]["label"])
}
