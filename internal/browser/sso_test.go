package browser_test

import (
	"net"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/oauth2-proxy/mockoidc"
	"github.com/stretchr/testify/require"

	"github.com/stitchd/stitchd/internal/app"
	"github.com/stitchd/stitchd/web"
)

// TestUISSO: with OIDC sign-in set up, the sign-in page offers "Sign in
// with SSO"; Chromium goes through a real provider on loopback and comes
// back signed in, on the page it started from, as the provider's person
// (made at this first sign-in with the default role).
func TestUISSO(t *testing.T) {
	m, err := mockoidc.NewServer(nil)
	require.NoError(t, err)
	ln, err := (&net.ListenConfig{}).Listen(t.Context(), "tcp", "127.0.0.1:0")
	require.NoError(t, err)
	require.NoError(t, m.Start(ln, nil))
	t.Cleanup(func() { _ = m.Shutdown() })
	s := newStack(t, func(c *app.Config) {
		c.OIDC = web.OIDCConfig{Issuer: m.Issuer(), ClientID: m.ClientID, ClientSecret: m.ClientSecret, DefaultRole: "approver"}
	})
	m.QueueUser(&mockoidc.MockUser{Subject: "sso-1", Email: "sso.person@example.com", EmailVerified: true})

	s.run("open", chromedp.Navigate(s.url+"/approvals"), chromedp.WaitVisible(`a[data-action="sso"]`, chromedp.ByQuery))
	s.shot("sso-sign-in")
	s.run("sso", chromedp.Click(`a[data-action="sso"]`, chromedp.ByQuery), chromedp.WaitVisible(".whoami", chromedp.ByQuery))
	require.Contains(t, s.text(".whoami"), "sso.person@example.com")
	require.Contains(t, s.text(".whoami .role-chip"), "approver")
	var path string
	s.run("where", chromedp.Evaluate(`location.pathname`, &path))
	require.Equal(t, "/approvals", path)

	// Without OIDC the page offers no SSO link.
	plain := newStack(t)
	plain.run("open", chromedp.Navigate(plain.url+"/"), chromedp.WaitVisible("#email", chromedp.ByQuery))
	var links int
	plain.run("count", chromedp.Evaluate(`document.querySelectorAll('a[data-action="sso"]').length`, &links))
	require.Zero(t, links)
}
