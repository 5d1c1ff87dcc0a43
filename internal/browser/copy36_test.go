package browser_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/browser"
	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"
)

// TestUICopyOverPlainHTTP (QA 36): opened over plain HTTP by an address
// other than localhost (http://stitchd.internal:8080, as a team serves
// it), a page has no navigator.clipboard, and the Copy buttons of a new
// token and of a webhook's new secret — each shown once — did nothing,
// saying nothing. They copy there too (or say to copy by hand). The
// page is opened at [::ffff:127.0.0.1], which Chromium does not hold for
// localhost, as it would not a name on the network.
func TestUICopyOverPlainHTTP(t *testing.T) {
	s := newStack(t)
	plain := strings.Replace(s.url, "127.0.0.1", "[::ffff:127.0.0.1]", 1)
	const pw = "correct horse battery"
	s.api("POST", "/users", map[string]any{"email": "ann@example.com", "name": "Ann", "role": "admin", "password": pw}, nil)
	s.run("sign in", chromedp.Navigate(plain+"/tokens"), passwordSignIn("ann@example.com", pw))
	s.waitJS("tokens page", `!!document.querySelector("#token-name")`)
	var secure bool
	s.run("insecure", chromedp.Evaluate(`window.isSecureContext`, &secure))
	require.False(t, secure, "the page is not a secure context, as over HTTP on the network")
	s.run("a token", setValue("#token-name", "ci"), chromedp.Click(`form.token-form button[type="submit"]`, chromedp.ByQuery))
	s.waitJS("made", `!!document.querySelector("[data-new-token]")`)
	tok := s.value("[data-new-token]")
	s.run("copy", chromedp.Click(`//div[contains(@class,"new-token")]//button[normalize-space()="Copy"]`, chromedp.BySearch))
	s.waitJS("copied", `[...document.querySelectorAll(".new-token button")].some(b => b.innerText === "Copied")`)
	require.Equal(t, tok, s.clipboard(), "the token is on the clipboard")

	// A webhook's rotated secret, on the Triggers page.
	flowID := s.uxFlow("Hooked", "")
	var hook struct{ ID string }
	s.api("POST", "/flows/"+flowID+"/triggers", map[string]any{"slug": "hooked", "secret": "0123456789abcdef0123"}, &hook)
	card := fmt.Sprintf(`li[data-trigger="%s"]`, hook.ID)
	s.run("triggers", chromedp.Navigate(plain+"/flows/"+flowID+"/triggers"), chromedp.WaitVisible(card+` [data-action="rotate-secret"]`, chromedp.ByQuery),
		chromedp.Click(card+` [data-action="rotate-secret"]`, chromedp.ByQuery), chromedp.WaitVisible(card+` [data-action="confirm-rotate"]`, chromedp.ByQuery),
		chromedp.Click(card+` [data-action="confirm-rotate"]`, chromedp.ByQuery))
	s.waitJS("new secret", fmt.Sprintf(`/^[0-9a-f]{64}$/.test(document.querySelector(%q)?.innerText ?? "")`, card+" [data-new-secret] [data-secret]"))
	secret := s.text(card + " [data-new-secret] [data-secret]")
	s.run("copy secret", chromedp.Click(card+` [data-action="copy-secret"]`, chromedp.ByQuery))
	s.waitJS("secret copied", fmt.Sprintf(`document.querySelector(%q).innerText === "Copied"`, card+` [data-action="copy-secret"]`))
	require.Equal(t, secret, s.clipboard(), "the secret is on the clipboard")
}

// clipboard reads the clipboard, in a tab of the test's browser context
// on the server's localhost address (a secure context), with the
// permission to read it granted.
func (s *stack) clipboard() string {
	s.t.Helper()
	c := chromedp.FromContext(s.ctx)
	s.run("grant", chromedp.ActionFunc(func(ctx context.Context) error {
		return browser.GrantPermissions([]browser.PermissionType{browser.PermissionTypeClipboardReadWrite, browser.PermissionTypeClipboardSanitizedWrite}).
			WithOrigin(s.url).WithBrowserContextID(c.BrowserContextID).Do(cdp.WithExecutor(ctx, c.Browser))
	}))
	tab, cancel := chromedp.NewContext(s.ctx)
	defer cancel()
	var text string
	ctx, cancelT := context.WithTimeout(tab, 20*time.Second)
	defer cancelT()
	require.NoError(s.t, chromedp.Run(ctx, chromedp.Navigate(s.url+"/"), chromedp.Evaluate(`navigator.clipboard.readText()`, &text, awaitPromise)))
	return text
}
