package browser_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"
)

// TestUIAuditDetailsInWords (QA 36b): the Audit page's Details column
// showed each entry's details as raw JSON ({"changed":{"role":true}},
// {"address":"127.0.0.1"}). They are labelled lines in words now:
// "Changed: role", "From address: 127.0.0.1".
func TestUIAuditDetailsInWords(t *testing.T) {
	s := newStack(t)
	const pw = "correct horse battery"
	var ann struct{ ID string }
	s.api("POST", "/users", map[string]any{"email": "ann@example.com", "name": "Ann", "role": "admin", "password": pw}, nil)
	s.api("POST", "/users", map[string]any{"email": "bo@example.com", "name": "Bo", "role": "viewer", "password": pw}, &ann)
	p := s.login("ann@example.com", pw)
	code, body := p.call("PATCH", "/users/"+ann.ID, map[string]any{"role": "editor", "name": "Bo B."}, nil)
	require.Equal(t, 200, code, body)

	s.run("audit", chromedp.Navigate(s.url+"/audit"), passwordSignIn("ann@example.com", pw))
	row := `tr[data-audit-action="PATCH /api/v1/users/:id"]`
	s.waitJS("the user change", fmt.Sprintf(`!!document.querySelector(%q)`, row))
	details := s.text(row + " td:nth-child(6)")
	require.NotContains(t, details, "{", "no JSON: %q", details)
	require.Contains(t, details, "Changed")
	require.Contains(t, details, "name, role")
	signIn := `tr[data-audit-action="POST /api/v1/auth/login"]`
	require.Contains(t, s.text(signIn+" td:nth-child(6)"), "From address")
	require.NotContains(t, s.text(signIn+" td:nth-child(6)"), `"address"`)
	s.shot("qa36b-audit-details")
}

// TestUIExportSaysWhyItFailed (QA 36b): the board analytics' Export CSV
// said only "The export failed (403)." when the server refused it; the
// server's reason, in words, is said now.
func TestUIExportSaysWhyItFailed(t *testing.T) {
	s := newStack(t)
	const pw = "correct horse battery"
	var ann struct{ ID string }
	s.api("POST", "/users", map[string]any{"email": "ann@example.com", "name": "Ann", "role": "viewer", "password": pw}, &ann)
	var tok struct {
		Token string `json:"token"`
	}
	code, body := s.login("ann@example.com", pw).call("POST", "/tokens", map[string]any{"name": "laptop"}, &tok)
	require.Equal(t, 201, code, body)
	require.NotEmpty(t, tok.Token, body)
	boardID := s.twoSectionBoard("Sales")
	s.run("analytics", chromedp.Navigate(s.url+"/boards/"+boardID+"/analytics"), tokenSignIn(tok.Token))
	s.waitJS("the page", `!!document.querySelector('[data-action="export-csv"]')`)
	// An admin disables Ann meanwhile: her token stops working (403).
	s.api("PATCH", "/users/"+ann.ID, map[string]any{"disabled": true}, nil)
	s.run("export", chromedp.Click(`[data-action="export-csv"]`, chromedp.ByQuery))
	s.waitJS("refused", `!!document.querySelector('.error-box[role="alert"]')`)
	msg := s.text(`.error-box[role="alert"]`)
	require.Contains(t, msg, "This account is disabled", "the reason is said")
	require.NotContains(t, msg, "(403)", "not a status code")
	s.shot("qa36b-export-refused")
}

// TestUITriggersNoticeGoes (QA 36b): the Triggers page's success message
// ("Schedule created.") stayed over the page for good, and a later one
// ("Schedule disabled…") read as if it were still news. It goes after a
// few seconds, and a Dismiss button takes it away at once.
func TestUITriggersNoticeGoes(t *testing.T) {
	s := newStack(t)
	flowID := s.uxFlow("Nightly", "")
	s.run("triggers", chromedp.Navigate(s.url+"/flows/"+flowID+"/triggers"), tokenSignIn(token))
	s.run("new schedule", chromedp.Click(`[data-action="new-schedule"]`, chromedp.ByQuery), chromedp.WaitVisible("#sched-cron", chromedp.ByQuery),
		setValue("#sched-cron", "0 9 * * *"), setValue("#sched-timezone", "UTC"),
		chromedp.Click(`form.schedule-form button[type="submit"]`, chromedp.ByQuery))
	s.waitJS("created", `(document.querySelector(".triggers-page .banner.ok[role=status]")?.innerText || "").includes("Schedule created")`)
	shown := time.Now()
	s.waitJS("the notice goes", `!document.querySelector(".triggers-page .banner.ok[role=status]")`)
	require.Less(t, time.Since(shown), 15*time.Second)
	require.True(t, s.exists("li.trigger.schedule"), "the schedule stays listed")

	s.run("disable", chromedp.Click(`//li[contains(@class,"schedule")]//button[normalize-space()="Disable"]`, chromedp.BySearch))
	s.waitJS("disabled", `(document.querySelector(".triggers-page .banner.ok[role=status]")?.innerText || "").includes("disabled")`)
	s.run("dismiss", chromedp.Click(`.triggers-page .banner.ok[role=status] button[aria-label="Dismiss"]`, chromedp.ByQuery))
	s.waitJS("dismissed", `!document.querySelector(".triggers-page .banner.ok[role=status]")`)
}

// TestUIWorkspaceSwitcherShowsNewWorkspace (QA 36b): a person an admin
// added to a second workspace saw no workspace switcher until they signed
// out and in again: the list was read once, at sign-in. It is read again
// as they move between pages.
func TestUIWorkspaceSwitcherShowsNewWorkspace(t *testing.T) {
	s := newStack(t)
	const pw = "correct horse battery"
	s.api("POST", "/users", map[string]any{"email": "sam@example.com", "name": "Sam", "role": "viewer", "password": pw}, nil)
	s.run("sign in", chromedp.Navigate(s.url+"/flows"), passwordSignIn("sam@example.com", pw))
	s.waitJS("signed in", `document.querySelector(".whoami-email")?.innerText === "sam@example.com"`)
	require.False(t, s.exists(`select[aria-label="Workspace"]`), "one workspace: nothing to choose")

	s.api("POST", "/workspaces", map[string]any{"slug": "sales", "name": "Sales team"}, nil)
	s.api("PUT", "/workspaces/sales/members/sam@example.com", map[string]any{"role": "editor"}, nil)
	s.run("runs", chromedp.Click(`nav a[href="/runs"]`, chromedp.ByQuery))
	s.waitJS("the switcher", `document.querySelector('select[aria-label="Workspace"]')?.options.length === 2`)
	var names string
	s.run("names", chromedp.Evaluate(`[...document.querySelector('select[aria-label="Workspace"]').options].map(o => o.text).join(",")`, &names))
	require.Contains(t, names, "Sales team")
	s.shot("qa36b-workspace-granted")
}
