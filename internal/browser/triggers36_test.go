package browser_test

import (
	"fmt"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"
)

// TestUITriggersChangedByEditorsOnly (QA 36): the Triggers page offered
// viewers and operators Disable, Edit, Rotate secret and Delete on every
// trigger; the server refused each with "role viewer may not DELETE
// /api/v1/triggers/:id". Only a role that may change triggers is offered
// them; the others see the triggers.
func TestUITriggersChangedByEditorsOnly(t *testing.T) {
	s := newStack(t)
	const pw = "correct horse battery"
	for _, u := range []struct{ email, role string }{{"vic@example.com", "viewer"}, {"ops@example.com", "operator"}, {"eve@example.com", "editor"}} {
		s.api("POST", "/users", map[string]any{"email": u.email, "name": u.role, "role": u.role, "password": pw}, nil)
	}
	flowID := s.uxFlow("Hooked", "")
	s.api("POST", "/flows/"+flowID+"/triggers", map[string]any{"slug": "hooked", "secret": "0123456789abcdef0123"}, nil)
	s.api("POST", "/flows/"+flowID+"/triggers", map[string]any{"kind": "schedule", "cron": "0 9 * * *", "timezone": "UTC"}, nil)
	buttons := func() string {
		var b string
		s.run("buttons", chromedp.Evaluate(`[...document.querySelectorAll("li.trigger button")].map(b => b.innerText).join(",")`, &b))
		return b
	}
	page := s.url + "/flows/" + flowID + "/triggers"
	for i, who := range []string{"vic@example.com", "ops@example.com", "eve@example.com"} {
		if i == 0 {
			s.run("sign in "+who, chromedp.Navigate(page), passwordSignIn(who, pw))
		} else {
			s.run("sign out", chromedp.Click(`//button[normalize-space()="Sign out"]`, chromedp.BySearch), chromedp.WaitVisible("#email", chromedp.ByQuery))
			s.run("sign in "+who, chromedp.Navigate(page), passwordSignIn(who, pw))
		}
		s.waitJS("the triggers of "+who, fmt.Sprintf(`document.querySelector(".whoami-email")?.innerText === %q && document.querySelectorAll("li.trigger").length === 2`, who))
		if who == "eve@example.com" {
			require.Equal(t, "Disable,Edit,Delete,Edit,Rotate secret,Delete", buttons(), "an editor changes triggers")
		} else {
			require.Empty(t, buttons(), "%s is offered no change", who)
			require.Contains(t, s.text("li.trigger.webhook"), "/hooks/hooked", "%s sees the webhook", who)
			require.Contains(t, s.text("li.trigger.schedule"), "0 9 * * *")
		}
	}
}

// TestUICredentialsSayWhySecretsAreOff (QA 36): on a server started
// without STITCHD_SECRET_KEY, saving a credential was answered 503
// "secrets are off on this server: start it with STITCHD_SECRET_KEY …",
// and the page said "stitchd cannot reach its database right now. Try
// again in a moment." — a wrong reason, and trying again never helps. The
// server's reason is shown.
func TestUICredentialsSayWhySecretsAreOff(t *testing.T) {
	s := newStack(t) // no SecretKey
	s.run("credentials", chromedp.Navigate(s.url+"/credentials"), tokenSignIn(token))
	s.run("new", chromedp.Click(`//button[normalize-space()="New credential"]`, chromedp.BySearch), chromedp.WaitVisible("#cred-name", chromedp.ByQuery),
		setValue("#cred-name", "crm"), setValue(`[data-cred-field="token"]`, "s3cret"), setValue("#cred-hosts", "api.example.com"),
		chromedp.Click(`form.credential-form button[type="submit"]`, chromedp.ByQuery))
	s.waitJS("refused", `!!document.querySelector("form.credential-form [role=alert]")`)
	msg := s.text("form.credential-form [role=alert]")
	require.Contains(t, msg, "STITCHD_SECRET_KEY", "the setting that turns secrets on is named")
	require.NotContains(t, msg, "database")
	require.Equal(t, "crm", s.value("#cred-name"), "the form keeps what was typed")
	s.shot("qa36-credentials-secrets-off")
}

// TestUITriggersOfMissingFlow (QA 36): the Triggers page of a flow that
// is not there (deleted, a bookmark) said "error loading flow <id>: not
// found" with a Try again that never helps, under New schedule, New
// webhook and New broker trigger buttons for that flow. It is the flow's
// not-found page, with the way back to the flows.
func TestUITriggersOfMissingFlow(t *testing.T) {
	s := newStack(t)
	flowID := s.uxFlow("Gone soon", "")
	s.api("DELETE", "/flows/"+flowID, nil, nil)
	s.run("triggers", chromedp.Navigate(s.url+"/flows/"+flowID+"/triggers"), tokenSignIn(token))
	s.waitJS("not found", `!!document.querySelector('[data-not-found="flow"] a.btn[href="/flows"]')`)
	require.False(t, s.exists(`[data-action="new-schedule"]`), "nothing is offered for a flow that is not there")
	require.NotContains(t, s.text("main"), "error loading")
}
