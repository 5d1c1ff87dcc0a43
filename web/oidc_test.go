package web_test

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/google/uuid"
	"github.com/oauth2-proxy/mockoidc"
	"github.com/stretchr/testify/require"

	"github.com/stitchd/stitchd/engine"
	"github.com/stitchd/stitchd/store"
	"github.com/stitchd/stitchd/store/storetest"
	"github.com/stitchd/stitchd/web"
)

// testProvider is a real OpenID Connect provider (mockoidc) on loopback,
// which records the authorization requests it gets and can be taken down.
type testProvider struct {
	m         *mockoidc.MockOIDC
	down      atomic.Bool
	mu        sync.Mutex
	authorize []url.Values
}

func startProvider(t *testing.T) *testProvider {
	t.Helper()
	m, err := mockoidc.NewServer(nil)
	require.NoError(t, err)
	p := &testProvider{m: m}
	require.NoError(t, m.AddMiddleware(func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if p.down.Load() {
				http.Error(w, "down for maintenance", http.StatusServiceUnavailable)
				return
			}
			if r.URL.Path == mockoidc.AuthorizationEndpoint {
				p.mu.Lock()
				p.authorize = append(p.authorize, r.URL.Query())
				p.mu.Unlock()
			}
			next.ServeHTTP(w, r)
		})
	}))
	ln, err := (&net.ListenConfig{}).Listen(t.Context(), "tcp", "127.0.0.1:0")
	require.NoError(t, err)
	require.NoError(t, m.Start(ln, nil))
	t.Cleanup(func() { _ = m.Shutdown() })
	return p
}

func (p *testProvider) lastAuthorize(t *testing.T) url.Values {
	p.mu.Lock()
	defer p.mu.Unlock()
	require.NotEmpty(t, p.authorize)
	return p.authorize[len(p.authorize)-1]
}

// idUser is a provider's user whose ID token carries exactly the given
// claims on top of the registered ones (iss, aud, exp, nonce…); a nil
// claim removes a registered one, another value replaces it.
type idUser map[string]any

func (u idUser) ID() string                        { s, _ := u["sub"].(string); return s }
func (u idUser) Userinfo([]string) ([]byte, error) { return json.Marshal(map[string]any(u)) }
func (u idUser) Claims(_ []string, base *mockoidc.IDTokenClaims) (jwt.Claims, error) {
	b, err := json.Marshal(base)
	if err != nil {
		return nil, err
	}
	m := jwt.MapClaims{}
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, err
	}
	for k, v := range u {
		if v == nil {
			delete(m, k)
		} else {
			m[k] = v
		}
	}
	return m, nil
}

// oidcServer is a stitchd on loopback (its base URL returned) signing in
// through p, the OIDC settings changed by mod.
func oidcServer(t *testing.T, st *store.Store, p *testProvider, mod ...func(*web.OIDCConfig)) string {
	t.Helper()
	var h http.Handler
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { h.ServeHTTP(w, r) }))
	t.Cleanup(ts.Close)
	cfg := web.OIDCConfig{Issuer: p.m.Issuer(), ClientID: p.m.ClientID, ClientSecret: p.m.ClientSecret,
		DefaultRole: store.RoleViewer, Scopes: []string{"openid", "email", "profile", "groups"}}
	for _, m := range mod {
		m(&cfg)
	}
	h = newServer(t, st, func(c *web.Config) { c.BaseURL = ts.URL; c.OIDC = cfg }).Handler()
	return ts.URL
}

// browser is a client with a cookie jar that follows redirects.
func browser() *http.Client {
	jar, _ := cookiejar.New(nil)
	return &http.Client{Jar: jar, Timeout: 30 * time.Second}
}

// answer is what the tests read of a response, its body read and closed
// by get.
type answer struct {
	StatusCode int
	Header     http.Header
	Request    *http.Request // the last one, after redirects
}

func get(t *testing.T, c *http.Client, u string) (answer, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	r, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	require.NoError(t, err)
	resp, err := c.Do(r)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return answer{StatusCode: resp.StatusCode, Header: resp.Header, Request: resp.Request}, string(b)
}

// oidcSignIn signs in through the provider as user (queued at the
// provider) in a new browser, and returns the browser and the last answer.
func oidcSignIn(t *testing.T, base string, p *testProvider, user mockoidc.User, next string) (*http.Client, answer, string) {
	t.Helper()
	p.m.QueueUser(user)
	b := browser()
	u := base + web.OIDCLoginPath
	if next != "" {
		u += "?next=" + url.QueryEscape(next)
	}
	resp, body := get(t, b, u)
	return b, resp, body
}

type meJSON struct {
	userJSON
	CSRFToken string `json:"csrf_token"`
}

// me is GET /api/v1/me in browser b (its status and the user).
func me(t *testing.T, b *http.Client, base string) (int, meJSON) {
	t.Helper()
	resp, body := get(t, b, base+"/api/v1/me")
	var m meJSON
	if resp.StatusCode == http.StatusOK {
		require.NoError(t, json.Unmarshal([]byte(body), &m), body)
	}
	return resp.StatusCode, m
}

func hasCookie(b *http.Client, base, name string) bool {
	u, _ := url.Parse(base)
	for _, c := range b.Jar.Cookies(u) {
		if c.Name == name {
			return true
		}
	}
	return false
}

// TestOIDCSignIn: login → provider → callback → a session, in a browser
// that follows redirects; the groups claim becomes the user's groups, and
// replaces them at the next sign-in; the sign-in is audited.
func TestOIDCSignIn(t *testing.T) {
	t.Parallel()
	st := storetest.TestTx(t)
	p := startProvider(t)
	base := oidcServer(t, st, p)
	ctx := context.Background()
	ana, err := st.CreateUser(ctx, store.CreateUserParams{ID: uuid.NewString(), Email: "ana@example.com", Name: "Ana",
		Role: store.RoleOperator, Groups: []string{"legacy"}, Now: time.Now()})
	require.NoError(t, err)

	// The provider's email in another case is the same person.
	b, resp, body := oidcSignIn(t, base, p, &mockoidc.MockUser{Subject: "ana-1", Email: "Ana@Example.com", EmailVerified: true,
		Groups: []string{"sales", "emea", "sales"}}, "/runs?status=failed")
	require.Equal(t, "/runs", resp.Request.URL.Path, body)
	require.Equal(t, "status=failed", resp.Request.URL.RawQuery)
	require.True(t, hasCookie(b, base, web.SessionCookie))
	require.False(t, hasCookie(b, base, "stitchd_oidc"), "the flow's cookie is used once")
	code, m := me(t, b, base)
	require.Equal(t, http.StatusOK, code)
	require.Equal(t, userJSON{ID: ana.ID, Email: "ana@example.com", Name: "Ana", Role: store.RoleOperator,
		Groups: []string{"sales", "emea"}}, m.userJSON, "the role kept, the groups the claim's")
	require.NotEmpty(t, m.CSRFToken, "a session, as a password sign-in makes")

	// The provider was asked with PKCE (S256), a nonce and a state that is
	// not the cookie's secret.
	q := p.lastAuthorize(t)
	require.Equal(t, "S256", q.Get("code_challenge_method"))
	require.Len(t, q.Get("code_challenge"), 43)
	require.NotEmpty(t, q.Get("nonce"))
	require.NotEmpty(t, q.Get("state"))
	require.NotEqual(t, q.Get("state"), q.Get("nonce"))
	require.Equal(t, base+web.OIDCCallbackPath, q.Get("redirect_uri"))
	require.Equal(t, "openid email profile groups", q.Get("scope"))

	// A write through the OIDC session needs its CSRF token, as any.
	ctxw, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	wr, err := http.NewRequestWithContext(ctxw, http.MethodPost, base+"/api/v1/tokens", strings.NewReader(`{"name": "ci"}`))
	require.NoError(t, err)
	wr.Header.Set("Content-Type", "application/json")
	wr.Header.Set(web.CSRFHeader, m.CSRFToken)
	wresp, err := b.Do(wr)
	require.NoError(t, err)
	wresp.Body.Close()
	require.Equal(t, http.StatusCreated, wresp.StatusCode)

	es, _, err := st.AuditPage(ctx, store.AuditFilter{Actor: "ana@example.com", WithServer: true})
	require.NoError(t, err)
	var signIns []store.AuditEntry
	for _, e := range es {
		if e.Action == "GET /api/v1/auth/oidc/callback" {
			signIns = append(signIns, e)
		}
	}
	require.Len(t, signIns, 1)
	require.Equal(t, "user:"+ana.ID, signIns[0].Target)
	require.Equal(t, http.StatusOK, signIns[0].Status)
	require.Equal(t, "oidc", signIns[0].Details["via"])

	// The next sign-in replaces the groups (none given: none kept); no
	// next: the UI's root.
	b2, resp, body := oidcSignIn(t, base, p, &mockoidc.MockUser{Subject: "ana-1", Email: "ana@example.com", EmailVerified: true,
		Groups: []string{"ops"}}, "")
	require.Equal(t, "/", resp.Request.URL.Path, body)
	_, m = me(t, b2, base)
	require.Equal(t, []string{"ops"}, m.Groups)
	b3, _, _ := oidcSignIn(t, base, p, idUser{"sub": "ana-1", "email": "ana@example.com"}, "")
	_, m = me(t, b3, base)
	require.Empty(t, m.Groups)
	// The first browser is still signed in, with the groups as they are now.
	_, m = me(t, b, base)
	require.Equal(t, ana.ID, m.ID)
	require.Empty(t, m.Groups)
}

// TestOIDCGroupsClaim: --oidc-groups-claim names the claim read.
func TestOIDCGroupsClaim(t *testing.T) {
	t.Parallel()
	st := storetest.TestTx(t)
	p := startProvider(t)
	base := oidcServer(t, st, p, func(c *web.OIDCConfig) { c.GroupsClaim = "roles" })
	b, _, body := oidcSignIn(t, base, p, idUser{"sub": "bo", "email": "bo@example.com", "name": "Bo Li",
		"groups": []string{"ignored"}, "roles": []string{"finance", "approvers"}}, "")
	code, m := me(t, b, base)
	require.Equal(t, http.StatusOK, code, body)
	require.Equal(t, "Bo Li", m.Name)
	require.Equal(t, []string{"finance", "approvers"}, m.Groups)

	// A claim that is not a list of names refuses the sign-in.
	b, resp, body := oidcSignIn(t, base, p, idUser{"sub": "cy", "email": "cy@example.com", "roles": map[string]any{"a": 1}}, "")
	require.Equal(t, http.StatusForbidden, resp.StatusCode, body)
	require.Contains(t, body, "roles claim must be a list")
	require.False(t, hasCookie(b, base, web.SessionCookie))
}

// TestOIDCNewUsers: an unknown email is made a user with the default
// role, or refused when there is none.
func TestOIDCNewUsers(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	t.Run("default role", func(t *testing.T) {
		t.Parallel()
		st := storetest.TestTx(t)
		p := startProvider(t)
		base := oidcServer(t, st, p, func(c *web.OIDCConfig) { c.DefaultRole = store.RoleApprover })
		b, resp, body := oidcSignIn(t, base, p, &mockoidc.MockUser{Subject: "new-1", Email: "New.Person@Example.com",
			PreferredUsername: "new.person", EmailVerified: true, Groups: []string{"legal"}}, "")
		require.Equal(t, "/", resp.Request.URL.Path, body)
		code, m := me(t, b, base)
		require.Equal(t, http.StatusOK, code)
		require.Equal(t, "new.person@example.com", m.Email)
		require.Equal(t, "new.person", m.Name, "preferred_username when there is no name")
		require.Equal(t, store.RoleApprover, m.Role)
		require.Equal(t, []string{"legal"}, m.Groups)
		u, err := st.UserByEmail(ctx, "new.person@example.com")
		require.NoError(t, err)
		require.Equal(t, m.ID, u.ID)
		require.Nil(t, u.PasswordHash, "no password: the provider vouches for them")

		// Signing in again finds the same user.
		b, _, _ = oidcSignIn(t, base, p, &mockoidc.MockUser{Subject: "new-1", Email: "new.person@example.com", EmailVerified: true}, "")
		_, m2 := me(t, b, base)
		require.Equal(t, m.ID, m2.ID)
		us, err := st.ListUsers(ctx)
		require.NoError(t, err)
		require.Len(t, us, 1)
	})
	t.Run("no default role", func(t *testing.T) {
		t.Parallel()
		st := storetest.TestTx(t)
		p := startProvider(t)
		base := oidcServer(t, st, p, func(c *web.OIDCConfig) { c.DefaultRole = "" })
		b, resp, body := oidcSignIn(t, base, p, &mockoidc.MockUser{Subject: "x", Email: "stranger@example.com", EmailVerified: true}, "")
		require.Equal(t, http.StatusForbidden, resp.StatusCode, body)
		require.Contains(t, body, "no account for stranger@example.com")
		require.Equal(t, "text/html; charset=UTF-8", resp.Header.Get("Content-Type"))
		require.False(t, hasCookie(b, base, web.SessionCookie))
		_, err := st.UserByEmail(ctx, "stranger@example.com")
		require.ErrorIs(t, err, engine.ErrNotFound)
		// An existing user still signs in.
		_, err = st.CreateUser(ctx, store.CreateUserParams{ID: uuid.NewString(), Email: "known@example.com", Name: "Known",
			Role: store.RoleEditor, Now: time.Now()})
		require.NoError(t, err)
		b, _, _ = oidcSignIn(t, base, p, &mockoidc.MockUser{Subject: "k", Email: "known@example.com", EmailVerified: true}, "")
		code, m := me(t, b, base)
		require.Equal(t, http.StatusOK, code)
		require.Equal(t, store.RoleEditor, m.Role)
	})
}

// TestOIDCRefusals: each is a clear 4xx page (502 for a provider that is
// down), no session, nothing changed.
func TestOIDCRefusals(t *testing.T) {
	t.Parallel()
	st := storetest.TestTx(t)
	p := startProvider(t)
	base := oidcServer(t, st, p)
	ctx := context.Background()
	eve, err := st.CreateUser(ctx, store.CreateUserParams{ID: uuid.NewString(), Email: "eve@example.com", Name: "Eve",
		Role: store.RoleAdmin, Groups: []string{"kept"}, Now: time.Now()})
	require.NoError(t, err)
	yes := true
	_, err = st.UpdateUser(ctx, eve.ID, store.UpdateUserParams{Disabled: &yes, Now: time.Now()})
	require.NoError(t, err)

	for _, c := range []struct {
		name   string
		user   mockoidc.User
		status int
		says   string
	}{
		{"disabled user", &mockoidc.MockUser{Subject: "e", Email: "eve@example.com", EmailVerified: true, Groups: []string{"new"}},
			http.StatusForbidden, "This account is disabled"},
		{"email not verified", idUser{"sub": "u", "email": "unverified@example.com", "email_verified": false},
			http.StatusForbidden, "has not verified the email address unverified@example.com"},
		{"email_verified as a string", idUser{"sub": "u", "email": "unverified@example.com", "email_verified": "false"},
			http.StatusForbidden, "has not verified"},
		{"no email", idUser{"sub": "u"}, http.StatusForbidden, "no email address"},
		{"another audience", idUser{"sub": "u", "email": "aud@example.com", "aud": "another-client"},
			http.StatusForbidden, "ID token is not valid"},
		{"another issuer", idUser{"sub": "u", "email": "iss@example.com", "iss": "https://evil.example"},
			http.StatusForbidden, "ID token is not valid"},
		{"expired", idUser{"sub": "u", "email": "exp@example.com", "exp": time.Now().Add(-time.Minute).Unix()},
			http.StatusForbidden, "expired"},
		{"another nonce", idUser{"sub": "u", "email": "nonce@example.com", "nonce": "replayed"},
			http.StatusForbidden, "nonce mismatch"},
		{"no nonce", idUser{"sub": "u", "email": "nonce@example.com", "nonce": nil},
			http.StatusForbidden, "nonce mismatch"},
		{"a bad email", idUser{"sub": "u", "email": "not an address"}, http.StatusForbidden, "email must be a plain address"},
	} {
		b, resp, body := oidcSignIn(t, base, p, c.user, "")
		require.Equal(t, c.status, resp.StatusCode, "%s: %s", c.name, body)
		require.Equal(t, base+web.OIDCCallbackPath, resp.Request.URL.Scheme+"://"+resp.Request.URL.Host+resp.Request.URL.Path, c.name)
		require.Contains(t, body, c.says, c.name)
		require.False(t, hasCookie(b, base, web.SessionCookie), c.name)
		code, _ := me(t, b, base)
		require.Equal(t, http.StatusUnauthorized, code, c.name)
	}
	u, err := st.GetUser(ctx, eve.ID)
	require.NoError(t, err)
	require.Equal(t, []string{"kept"}, []string(u.Groups), "a refused sign-in changes nothing")
	us, err := st.ListUsers(ctx)
	require.NoError(t, err)
	require.Len(t, us, 1, "no user made by a refused sign-in")
}

// TestOIDCState: the provider's answer must come back to the browser that
// started the sign-in, with its state, once.
func TestOIDCState(t *testing.T) {
	t.Parallel()
	st := storetest.TestTx(t)
	p := startProvider(t)
	base := oidcServer(t, st, p)
	_, err := st.CreateUser(context.Background(), store.CreateUserParams{ID: uuid.NewString(), Email: "jane.doe@example.com",
		Name: "Jane", Role: store.RoleViewer, Now: time.Now()})
	require.NoError(t, err)

	// stepped walks the redirects one by one: login, provider, and the
	// callback URL the provider sends the browser to.
	stepped := func() (*http.Client, *url.URL) {
		b := browser()
		b.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
		resp, _ := get(t, b, base+web.OIDCLoginPath)
		require.Equal(t, http.StatusFound, resp.StatusCode)
		require.True(t, hasCookie(b, base, "stitchd_oidc"))
		resp, body := get(t, b, resp.Header.Get("Location"))
		require.Equal(t, http.StatusFound, resp.StatusCode, body)
		cb, err := url.Parse(resp.Header.Get("Location"))
		require.NoError(t, err)
		require.Equal(t, web.OIDCCallbackPath, cb.Path)
		return b, cb
	}

	// A forged state.
	b, cb := stepped()
	q := cb.Query()
	q.Set("state", "forged")
	forged := *cb
	forged.RawQuery = q.Encode()
	resp, body := get(t, b, forged.String())
	require.Equal(t, http.StatusBadRequest, resp.StatusCode, body)
	require.Contains(t, body, "state mismatch")
	require.False(t, hasCookie(b, base, web.SessionCookie))
	// The cookie served that one answer: the real one is refused now.
	resp, body = get(t, b, cb.String())
	require.Equal(t, http.StatusBadRequest, resp.StatusCode, body)
	require.Contains(t, body, "did not start this sign-in")

	// Another browser cannot finish a sign-in this one started.
	_, cb = stepped()
	resp, body = get(t, browser(), cb.String())
	require.Equal(t, http.StatusBadRequest, resp.StatusCode, body)
	require.Contains(t, body, "did not start this sign-in")

	// The right browser does, once.
	b, cb = stepped()
	resp, body = get(t, b, cb.String())
	require.Equal(t, http.StatusSeeOther, resp.StatusCode, body)
	require.Equal(t, "/", resp.Header.Get("Location"))
	require.True(t, hasCookie(b, base, web.SessionCookie))
	resp, body = get(t, b, cb.String())
	require.Equal(t, http.StatusBadRequest, resp.StatusCode, body)

	// The provider's own refusal is shown.
	b, cb = stepped()
	q = cb.Query()
	q.Del("code")
	q.Set("error", "access_denied")
	q.Set("error_description", "the user said no")
	cb.RawQuery = q.Encode()
	resp, body = get(t, b, cb.String())
	require.Equal(t, http.StatusForbidden, resp.StatusCode, body)
	require.Contains(t, body, "access_denied: the user said no")
}

// TestOIDCNext: only a path on this site is a place to go after sign-in.
func TestOIDCNext(t *testing.T) {
	t.Parallel()
	st := storetest.TestTx(t)
	p := startProvider(t)
	base := oidcServer(t, st, p)
	for _, next := range []string{"https://evil.example/", "//evil.example/x", "/\\evil.example", "\\\\evil.example",
		"http:/evil.example", "evil.example", "javascript:alert(1)", "/runs\r\nSet-Cookie: x=1", "/" + strings.Repeat("a", 3000)} {
		b, resp, body := oidcSignIn(t, base, p, &mockoidc.MockUser{Subject: "n", Email: "n@example.com", EmailVerified: true}, next)
		require.Equal(t, http.StatusBadRequest, resp.StatusCode, "%q: %s", next, body)
		require.Equal(t, base+web.OIDCLoginPath, resp.Request.URL.Scheme+"://"+resp.Request.URL.Host+resp.Request.URL.Path, next)
		require.Contains(t, body, "must be a path on this site")
		require.False(t, hasCookie(b, base, "stitchd_oidc"), next)
	}
	b, resp, body := oidcSignIn(t, base, p, &mockoidc.MockUser{Subject: "n", Email: "n@example.com", EmailVerified: true}, "/flows/abc/edit#node-1")
	require.Equal(t, "/flows/abc/edit", resp.Request.URL.Path, body)
	require.True(t, hasCookie(b, base, web.SessionCookie))
}

// TestOIDCProviderDown: a provider that is down at the first sign-in is
// a 502 page, and discovered at a later one; the server ran all along.
func TestOIDCProviderDown(t *testing.T) {
	t.Parallel()
	st := storetest.TestTx(t)
	p := startProvider(t)
	p.down.Store(true)
	base := oidcServer(t, st, p)
	b, resp, body := oidcSignIn(t, base, p, &mockoidc.MockUser{Subject: "d", Email: "d@example.com", EmailVerified: true}, "")
	require.Equal(t, http.StatusBadGateway, resp.StatusCode, body)
	require.Contains(t, body, "provider is unreachable")
	require.False(t, hasCookie(b, base, "stitchd_oidc"))
	resp, body = get(t, browser(), base+"/api/v1/auth/providers")
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.JSONEq(t, `{"password": true, "oidc": {"enabled": true, "login_url": "/api/v1/auth/oidc/login"}}`, body)

	p.down.Store(false)
	b, resp, body = oidcSignIn(t, base, p, &mockoidc.MockUser{Subject: "d", Email: "d@example.com", EmailVerified: true}, "")
	require.Equal(t, "/", resp.Request.URL.Path, body)
	code, m := me(t, b, base)
	require.Equal(t, http.StatusOK, code)
	require.Equal(t, store.RoleViewer, m.Role)

	// Down again between the login and the code exchange: 502, not 500.
	b = browser()
	b.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	resp, _ = get(t, b, base+web.OIDCLoginPath)
	resp, _ = get(t, b, resp.Header.Get("Location"))
	p.down.Store(true)
	resp, body = get(t, b, resp.Header.Get("Location"))
	require.Equal(t, http.StatusBadGateway, resp.StatusCode, body)
}

// TestOIDCOff: without an issuer and client id, the routes say so and the
// UI is told to offer passwords only.
func TestOIDCOff(t *testing.T) {
	t.Parallel()
	h := newServer(t, storetest.TestTx(t)).Handler()
	rec := do(t, h, req{method: http.MethodGet, path: "/api/v1/auth/providers", noAuth: true})
	require.Equal(t, http.StatusOK, rec.Code)
	require.JSONEq(t, `{"password": true, "oidc": {"enabled": false, "login_url": "/api/v1/auth/oidc/login"}}`, rec.Body.String())
	for _, path := range []string{web.OIDCLoginPath, web.OIDCCallbackPath + "?state=x&code=y"} {
		rec := do(t, h, req{method: http.MethodGet, path: path, noAuth: true})
		require.Equal(t, http.StatusNotFound, rec.Code, path)
		require.Contains(t, rec.Body.String(), "Single sign-on is not set up", path)
	}
}

func TestOIDCConfigCheck(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		cfg  web.OIDCConfig
		want string
	}{
		{web.OIDCConfig{}, ""},
		{web.OIDCConfig{GroupsClaim: "groups", DefaultRole: "viewer"}, ""},
		{web.OIDCConfig{Issuer: "https://id.example.com", ClientID: "stitchd", DefaultRole: "viewer"}, ""},
		{web.OIDCConfig{Issuer: "https://id.example.com", ClientID: "stitchd"}, ""},
		{web.OIDCConfig{Issuer: "https://id.example.com"}, "both --oidc-issuer and --oidc-client-id"},
		{web.OIDCConfig{ClientID: "stitchd"}, "both --oidc-issuer and --oidc-client-id"},
		{web.OIDCConfig{Issuer: "id.example.com", ClientID: "stitchd"}, "--oidc-issuer must be"},
		{web.OIDCConfig{Issuer: "ftp://id.example.com", ClientID: "stitchd"}, "--oidc-issuer must be"},
		{web.OIDCConfig{Issuer: "https://id.example.com", ClientID: "stitchd", DefaultRole: "root"}, "--oidc-default-role must be one of"},
	} {
		err := c.cfg.Check()
		if c.want == "" {
			require.NoError(t, err, "%+v", c.cfg)
		} else {
			require.ErrorContains(t, err, c.want, "%+v", c.cfg)
		}
	}
}
