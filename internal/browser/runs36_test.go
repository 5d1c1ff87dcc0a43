package browser_test

import (
	"fmt"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"
)

// TestUIRunListKeepsLoadedRuns (QA 36): the run list is read again at
// every run's event; the runs Load more had added vanished at the next
// one (the list went back to its first 50). They stay, and current.
func TestUIRunListKeepsLoadedRuns(t *testing.T) {
	s := newStack(t)
	flowID := s.uxFlow("Many", "")
	var first struct{ ID string }
	for i := 0; i < 53; i++ {
		var r struct{ ID string }
		s.api("POST", "/flows/"+flowID+"/runs", map[string]any{"input": map[string]any{"n": i}}, &r)
		if i == 0 {
			first = r
		}
	}
	row := func(id string) string { return fmt.Sprintf(`tr[data-run=%q]`, id) }
	s.run("runs", chromedp.Navigate(s.url+"/runs?flow_id="+flowID), tokenSignIn(token))
	s.waitJS("a page", `document.querySelectorAll("tr[data-run]").length === 50`)
	s.run("more", chromedp.Click(`//button[normalize-space()="Load more"]`, chromedp.BySearch))
	s.waitJS("all 53", fmt.Sprintf(`document.querySelectorAll("tr[data-run]").length === 53 && !!document.querySelector(%q)`, row(first.ID)))
	// The oldest run is cancelled (an event), and a new one starts.
	s.api("POST", "/runs/"+first.ID+"/cancel", nil, nil)
	var newer struct{ ID string }
	s.api("POST", "/flows/"+flowID+"/runs", map[string]any{"input": map[string]any{"n": 53}}, &newer)
	s.waitJS("the new run listed", fmt.Sprintf(`!!document.querySelector(%q)`, row(newer.ID)))
	s.waitJS("the oldest still listed, cancelled", fmt.Sprintf(`document.querySelector(%q)?.innerText.includes("cancelled")`, row(first.ID)))
	var n int
	s.run("count", chromedp.Evaluate(`document.querySelectorAll("tr[data-run]").length`, &n))
	require.Equal(t, 54, n, "every run is listed")
}
