package browser_test

import (
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"
)

// TestUIMemberWithoutAccount (QA 36): giving a role on the Members page
// to an email no account has said "Could not give nobody@example.com the
// role viewer: not found: user nobody@example.com not found". It says
// what to do: the account is made on the Users page first.
func TestUIMemberWithoutAccount(t *testing.T) {
	s := newStack(t)
	s.run("members", chromedp.Navigate(s.url+"/members"), tokenSignIn(token))
	s.run("add", chromedp.WaitVisible("#member-email", chromedp.ByQuery), setValue("#member-email", "nobody@example.com"),
		chromedp.Click(`[data-action="add-member"]`, chromedp.ByQuery))
	s.waitJS("refused", `!!document.querySelector("main .error-box[role=alert]")`)
	msg := s.text("main .error-box[role=alert]")
	require.NotContains(t, msg, "not found:", "no code in the sentence")
	require.Contains(t, msg, "nobody@example.com has no account yet")
	require.Contains(t, msg, "Users page")
	require.Equal(t, "nobody@example.com", s.value("#member-email"), "the email typed is kept to try again")
}

// TestUIAnalyticsOfMissingBoard (QA 36): the analytics of a board that
// is not there (a deleted board's bookmark) said "error loading board
// <id>: not found" with Try again, which never helps. It is the board's
// not-found page, with the way back to the boards, as the board's own
// page is.
func TestUIAnalyticsOfMissingBoard(t *testing.T) {
	s := newStack(t)
	boardID := s.twoSectionBoard("Gone soon")
	s.api("DELETE", "/boards/"+boardID, nil, nil)
	s.run("analytics", chromedp.Navigate(s.url+"/boards/"+boardID+"/analytics"), tokenSignIn(token))
	s.waitJS("not found", `!!document.querySelector('[data-not-found="board"] a.btn[href="/boards"]')`)
	require.NotContains(t, s.text("main"), "error loading")
}

// TestUIEmptyPagesForAViewer (QA 36): a viewer's empty Boards page told
// them to "Create one with New board", a button a viewer is not shown,
// and the empty run list to "Start a run from a flow's page", which a
// viewer may not. They say who does.
func TestUIEmptyPagesForAViewer(t *testing.T) {
	s := newStack(t)
	const pw = "correct horse battery"
	s.api("POST", "/users", map[string]any{"email": "vic@example.com", "name": "Vic", "role": "viewer", "password": pw}, nil)
	s.run("boards", chromedp.Navigate(s.url+"/boards"), passwordSignIn("vic@example.com", pw))
	s.waitJS("empty boards", `!!document.querySelector(".empty h3")`)
	require.False(t, s.exists(`[data-action="new-board"]`))
	require.NotContains(t, s.text(".empty"), "New board")
	require.Contains(t, s.text(".empty"), "An editor or admin creates one")
	s.run("runs", chromedp.Navigate(s.url+"/runs"))
	s.waitJS("empty runs", `document.querySelector(".empty h3")?.innerText === "No runs here yet"`)
	require.NotContains(t, s.text(".empty"), "Start a run from")
}

// TestUIMemberChangesOwnRole (QA 36): a workspace admin who gave
// themself another role on the Members page went on being shown as
// admin, with the admin's pages and controls, until a reload (each use
// then refused). The header, the menu and the page follow the new role
// at once.
func TestUIMemberChangesOwnRole(t *testing.T) {
	s := newStack(t)
	const pw = "correct horse battery"
	s.api("POST", "/users", map[string]any{"email": "sam@example.com", "name": "Sam", "role": "viewer", "password": pw}, nil)
	s.api("POST", "/users", map[string]any{"email": "ria@example.com", "name": "Ria", "role": "admin", "password": pw}, nil)
	// Sam is an admin of the default workspace, not a server admin.
	s.api("PUT", "/workspaces/default/members/sam@example.com", map[string]any{"role": "admin"}, nil)
	s.run("members", chromedp.Navigate(s.url+"/members"), passwordSignIn("sam@example.com", pw))
	s.waitJS("Sam's row", `!!document.querySelector('tr[data-member="sam@example.com"] select')`)
	require.Equal(t, "admin", s.text(".whoami .role-chip"))
	s.run("operator", setValue(`tr[data-member="sam@example.com"] select`, "operator"))
	s.waitJS("now an operator", `document.querySelector(".whoami .role-chip")?.innerText === "operator"`)
	s.waitJS("no admin's page", `/Not for your role/.test(document.querySelector("main").innerText) && !document.querySelector('a[href="/members"]')`)
}
