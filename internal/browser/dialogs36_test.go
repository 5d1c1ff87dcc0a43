package browser_test

import (
	"testing"

	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
	"github.com/stretchr/testify/require"
)

// TestUIDialogKeyboard (QA 36): a dialog (New board, Edit board, an
// entity's journey, Start a run) opened with the focus on its × button,
// so a keyboard user tabbed past it to reach the first field, and Tab
// then went on out of the dialog into the page behind it, hidden from a
// screen reader (aria-modal). The focus starts in the first field, and
// Tab and Shift+Tab go round the dialog.
func TestUIDialogKeyboard(t *testing.T) {
	s := newStack(t)
	s.run("boards", chromedp.Navigate(s.url+"/boards"), tokenSignIn(token))
	s.run("new board", chromedp.Click(`[data-action="new-board"]`, chromedp.ByQuery), chromedp.WaitVisible("#board-name", chromedp.ByQuery))
	active := func() string {
		var a string
		s.run("active", chromedp.Evaluate(`(() => { const a = document.activeElement; return (a.closest(".modal") ? "in:" : "out:") + (a.id || a.getAttribute("aria-label") || a.innerText); })()`, &a))
		return a
	}
	s.waitJS("focus in the name", `document.activeElement?.id === "board-name"`)
	s.run("type", chromedp.KeyEvent("Pipeline"))
	require.Equal(t, "Pipeline", s.value("#board-name"), "typing goes to the first field")
	seen := map[string]bool{}
	for i := 0; i < 6; i++ {
		s.run("tab", chromedp.KeyEvent(kb.Tab))
		a := active()
		require.Equal(t, "in:", a[:3], "Tab %d left the dialog for %s", i+1, a)
		seen[a] = true
	}
	require.True(t, seen["in:Close"], "Tab comes round to Close: %v", seen)
	// Shift+Tab from the first control goes to the last.
	s.run("to the close", chromedp.Focus(`.modal [aria-label="Close"]`, chromedp.ByQuery))
	s.run("shift tab", input.DispatchKeyEvent(input.KeyRawDown).WithKey("Tab").WithCode("Tab").WithWindowsVirtualKeyCode(9).WithModifiers(input.ModifierShift),
		input.DispatchKeyEvent(input.KeyUp).WithKey("Tab").WithCode("Tab").WithWindowsVirtualKeyCode(9).WithModifiers(input.ModifierShift))
	require.Equal(t, "in:Create board", active())
	s.run("escape", chromedp.KeyEvent(kb.Escape))
	s.waitJS("closed, focus back", `!document.querySelector(".modal") && document.activeElement?.dataset.action === "new-board"`)
}
