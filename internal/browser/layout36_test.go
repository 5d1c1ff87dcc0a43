package browser_test

import (
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"
)

// TestUIPhoneNoSidewaysScroll (QA 36): on a phone (390 px) the
// Credentials, My tokens, Members and board analytics pages scrolled
// sideways: a table's column head read out only to screen readers
// (Actions) was placed outside the table's scrolling box, and the
// analytics charts were at least 380 px wide plus their padding. Each
// page fits the screen; a wide table scrolls within its box.
func TestUIPhoneNoSidewaysScroll(t *testing.T) {
	s := newStack(t, withSecretKey(t))
	boardID := s.twoSectionBoard("Pipeline")
	s.api("POST", "/entities", map[string]any{"board_id": boardID, "type": "lead", "name": "Ada"}, nil)
	s.api("POST", "/credentials", map[string]any{"name": "crm", "type": "bearer", "data": map[string]any{"token": "x"},
		"allowed_hosts": []string{"api.example.com", "auth.example.com:8443"}}, nil)
	const pw = "correct horse battery"
	s.api("POST", "/users", map[string]any{"email": "ann@example.com", "name": "Ann", "role": "admin", "password": pw}, nil)
	s.run("sign in", chromedp.EmulateViewport(390, 844), chromedp.Navigate(s.url+"/tokens"), passwordSignIn("ann@example.com", pw))
	s.waitJS("tokens page", `!!document.querySelector("#token-name")`)
	s.run("a token", setValue("#token-name", "ci"), chromedp.Click(`form.token-form button[type="submit"]`, chromedp.ByQuery))
	s.waitJS("token listed", `!!document.querySelector('tr[data-token="ci"]')`)
	for _, p := range []struct{ path, ready string }{
		{"/tokens", `tr[data-token="ci"]`},
		{"/credentials", `tr[data-credential="crm"]`},
		{"/members", `tr[data-member="ann@example.com"]`},
		{"/boards/" + boardID + "/analytics", `tr[data-analytics-section="new"]`},
	} {
		s.run("open "+p.path, chromedp.Navigate(s.url+p.path), chromedp.WaitVisible(p.ready, chromedp.ByQuery))
		var w struct{ Scroll, Client int }
		s.run("widths", chromedp.Evaluate(`({Scroll: document.documentElement.scrollWidth, Client: document.documentElement.clientWidth})`, &w))
		if w.Scroll > w.Client {
			s.shot("qa36-sideways" + strings.ReplaceAll(p.path, "/", "-"))
		}
		require.LessOrEqual(t, w.Scroll, w.Client, "%s scrolls sideways on a phone", p.path)
	}
}
