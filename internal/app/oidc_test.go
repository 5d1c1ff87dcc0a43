package app_test

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/cookiejar"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/oauth2-proxy/mockoidc"
	"github.com/stretchr/testify/require"

	"github.com/stitchd/stitchd/internal/app"
	"github.com/stitchd/stitchd/store"
	"github.com/stitchd/stitchd/web"
)

// TestOIDCSignInThroughTheApp: the OIDC settings reach the server, whose
// redirect URL is its own address when no base URL is set; a person signs
// in through a real provider on loopback and the session opens the API.
func TestOIDCSignInThroughTheApp(t *testing.T) {
	t.Parallel()
	m, err := mockoidc.NewServer(nil)
	require.NoError(t, err)
	ln, err := (&net.ListenConfig{}).Listen(t.Context(), "tcp", "127.0.0.1:0")
	require.NoError(t, err)
	require.NoError(t, m.Start(ln, nil))
	t.Cleanup(func() { _ = m.Shutdown() })
	h := newHarness(t, func(c *app.Config) {
		c.OIDC = web.OIDCConfig{Issuer: m.Issuer(), ClientID: m.ClientID, ClientSecret: m.ClientSecret,
			GroupsClaim: "groups", DefaultRole: store.RoleOperator, Scopes: []string{"openid", "email", "groups"}}
	})
	jar, err := cookiejar.New(nil)
	require.NoError(t, err)
	b := &http.Client{Jar: jar, Timeout: 30 * time.Second}
	// answer is what the test reads of a response, its body read and
	// closed by get.
	type answer struct {
		StatusCode int
		Request    *http.Request // the last one, after redirects
	}
	get := func(path string) (answer, []byte) {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		r, err := http.NewRequestWithContext(ctx, http.MethodGet, h.app.URL+path, nil)
		require.NoError(t, err)
		resp, err := b.Do(r)
		require.NoError(t, err)
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return answer{StatusCode: resp.StatusCode, Request: resp.Request}, body
	}

	resp, body := get("/api/v1/auth/providers")
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.JSONEq(t, `{"password": true, "oidc": {"enabled": true, "login_url": "/api/v1/auth/oidc/login"}}`, string(body))

	m.QueueUser(&mockoidc.MockUser{Subject: uuid.NewString(), Email: "olga@example.com", EmailVerified: true,
		Groups: []string{"ops", "oncall"}})
	resp, body = get(web.OIDCLoginPath + "?next=/runs")
	require.Equal(t, "/runs", resp.Request.URL.Path, string(body))
	resp, body = get("/api/v1/me")
	require.Equal(t, http.StatusOK, resp.StatusCode, string(body))
	var me struct {
		Email  string   `json:"email"`
		Role   string   `json:"role"`
		Groups []string `json:"groups"`
	}
	require.NoError(t, json.Unmarshal(body, &me))
	require.Equal(t, "olga@example.com", me.Email)
	require.Equal(t, store.RoleOperator, me.Role)
	require.Equal(t, []string{"ops", "oncall"}, me.Groups)
	// The session reads what an operator may.
	resp, body = get("/api/v1/runs")
	require.Equal(t, http.StatusOK, resp.StatusCode, string(body))
}

// TestOIDCSettingsChecked: app.New refuses half-set or wrong OIDC settings
// before it touches the database.
func TestOIDCSettingsChecked(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		oidc web.OIDCConfig
		want string
	}{
		{web.OIDCConfig{Issuer: "https://id.example.com"}, "both --oidc-issuer and --oidc-client-id"},
		{web.OIDCConfig{Issuer: "https://id.example.com", ClientID: "s", DefaultRole: "boss"}, "--oidc-default-role must be one of"},
	} {
		_, err := app.New(context.Background(), app.Config{Addr: "127.0.0.1:0", DatabaseURL: "postgres://nowhere.invalid/x", OIDC: c.oidc})
		require.ErrorContains(t, err, c.want)
	}
}
