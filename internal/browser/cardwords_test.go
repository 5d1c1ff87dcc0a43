package browser_test

import (
	"fmt"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"
)

// TestUITaskCardInWords: an approver's card shows a list of objects in the
// run's input, and what reached the step, as labelled words, not JSON; a
// form's list field has an Add button that says so (its glyph had no font:
// an empty white box).
func TestUITaskCardInWords(t *testing.T) {
	s := newStack(t)
	form := map[string]any{"type": "object", "properties": map[string]any{
		"tags": map[string]any{"type": "array", "items": map[string]any{"type": "string"}, "title": "Tags"}}}
	id := s.editorFlow("Order", []map[string]any{{"id": "ask", "type": "UX", "position": map[string]any{"x": 0, "y": 0},
		"data": map[string]any{"label": "Check order", "prompt": "OK?", "form": form}}}, nil, nil)
	var run struct{ ID string }
	s.api("POST", "/flows/"+id+"/runs", map[string]any{"input": map[string]any{"order": map[string]any{"item": "Laptop",
		"lines": []any{map[string]any{"sku": "a"}, map[string]any{"sku": "b", "zone": "x"}}}}}, &run)
	card := fmt.Sprintf(`li.approval[data-approval="%s/ask"]`, run.ID)
	s.run("inbox", chromedp.Navigate(s.url+"/approvals?tab=all"), tokenSignIn(token), chromedp.WaitVisible(card, chromedp.ByQuery))
	s.waitJS("summary", fmt.Sprintf(`!!document.querySelector(%q)`, card+` [data-summary="run-input"] [data-summary-item="Order › Lines"]`))
	require.Equal(t, "Sku: a; Sku: b, Zone: x", s.text(card+` [data-summary="run-input"] [data-summary-item="Order › Lines"] dd`))
	s.run("open what reached it", chromedp.Evaluate(fmt.Sprintf(`document.querySelector(%q).open = true`, card+" details.step-input"), nil))
	require.Equal(t, "Sku: a; Sku: b, Zone: x", s.text(card+` [data-summary="step-input"] [data-summary-item="Order › Lines"] dd`))
	s.waitJS("the form", fmt.Sprintf(`!!document.querySelector(%q)`, card+" .glyphicon-plus"))
	var add struct {
		Glyph string
		Width float64
	}
	s.run("the Add button", chromedp.Evaluate(fmt.Sprintf(`(() => { const g = document.querySelector(%q);
		return {glyph: getComputedStyle(g, "::before").content, width: g.closest("button").getBoundingClientRect().width}; })()`,
		card+" .glyphicon-plus"), &add))
	require.Contains(t, add.Glyph, "Add")
	require.Greater(t, add.Width, 30.0)
	s.shot("cw01-card-in-words")
}
