package web

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"html/template"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/coreos/go-oidc/v3/oidc"
	"github.com/labstack/echo/v4"
	"golang.org/x/oauth2"

	"github.com/stitchd/stitchd/engine"
	"github.com/stitchd/stitchd/store"
)

// OIDC sign-in (docs/people.md, OIDC sign-in): the authorization code flow
// with PKCE (S256) against an OpenID Connect provider. GET
// /api/v1/auth/oidc/login sends the browser to the provider; the provider
// sends it back to GET /api/v1/auth/oidc/callback, which checks the
// answer, finds or makes the user by the ID token's email, replaces the
// user's groups with the groups claim's, and starts a session exactly as
// a password sign-in does.
//
// The flow's state lives in one short-lived cookie holding a random
// secret (and the sign-in's start time and next path). The state, the
// nonce and the PKCE verifier are HMACs of that secret, so the cookie is
// the only thing to keep: no server key (every process can finish a
// sign-in another began), no table, and what the provider and the URL
// see (state, nonce, the S256 challenge) does not give away the verifier.
// Someone who could write the cookie could only sign a browser in to
// their own account; over https the cookie is named __Host-… so a
// sibling subdomain cannot set it.

const (
	// OIDCLoginPath starts an OIDC sign-in.
	OIDCLoginPath = "/api/v1/auth/oidc/login"
	// OIDCCallbackPath is the redirect URL to register at the provider
	// (after --base-url).
	OIDCCallbackPath = "/api/v1/auth/oidc/callback"
	// oidcFlowTTL bounds the time from the click to the provider's answer.
	oidcFlowTTL      = 10 * time.Minute
	oidcCookie       = "stitchd_oidc"
	oidcSecureCookie = "__Host-stitchd_oidc"
	// oidcTimeout bounds each request to the provider (discovery, keys,
	// the code exchange).
	oidcTimeout     = 10 * time.Second
	maxNextLen      = 2048
	defaultGroupsCl = "groups"
)

// OIDCConfig turns on sign-in through an OpenID Connect provider. It is
// off unless Issuer and ClientID are set.
type OIDCConfig struct {
	// Issuer is the provider's issuer URL; its discovery document is
	// Issuer + "/.well-known/openid-configuration", read at the first
	// sign-in (a provider that is down does not stop the server).
	Issuer       string
	ClientID     string
	ClientSecret string
	// GroupsClaim names the ID token claim (a list of strings, or one
	// string) whose values replace the user's groups at every sign-in
	// (default "groups").
	GroupsClaim string
	// DefaultRole is given to a person signing in for the first time;
	// empty: only existing users may sign in.
	DefaultRole string
	// Scopes asked of the provider (default openid, email, profile;
	// openid is always asked).
	Scopes []string
	// HTTPClient talks to the provider (default one with a 10s timeout).
	HTTPClient *http.Client
}

// Enabled reports whether OIDC sign-in is on.
func (c OIDCConfig) Enabled() bool { return c.Issuer != "" && c.ClientID != "" }

// Check reports the first problem with the settings (none when off).
func (c OIDCConfig) Check() error {
	if c.Issuer == "" && c.ClientID == "" {
		return nil
	}
	if c.Issuer == "" || c.ClientID == "" {
		return errors.New("OIDC sign-in needs both --oidc-issuer and --oidc-client-id")
	}
	u, err := url.Parse(c.Issuer)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
		return fmt.Errorf("--oidc-issuer must be the provider's issuer URL, such as https://accounts.example.com, not %q", c.Issuer)
	}
	if c.DefaultRole != "" && !slices.Contains(store.Roles, c.DefaultRole) {
		return fmt.Errorf("--oidc-default-role must be one of %s, or empty (none) to let only existing users sign in, not %q",
			strings.Join(store.Roles, ", "), c.DefaultRole)
	}
	return nil
}

// oidcAuth is the server's OIDC client. The provider is discovered at the
// first sign-in and kept; a failed discovery is tried again at the next.
type oidcAuth struct {
	cfg         OIDCConfig
	redirectURL string
	client      *http.Client
	log         *slog.Logger

	mu       sync.Mutex
	provider *oidcProvider
}

type oidcProvider struct {
	oauth    oauth2.Config
	verifier *oidc.IDTokenVerifier
}

func newOIDCAuth(cfg OIDCConfig, baseURL string, log *slog.Logger) *oidcAuth {
	if cfg.GroupsClaim == "" {
		cfg.GroupsClaim = defaultGroupsCl
	}
	if len(cfg.Scopes) == 0 {
		cfg.Scopes = []string{oidc.ScopeOpenID, "email", "profile"}
	}
	if !slices.Contains(cfg.Scopes, oidc.ScopeOpenID) {
		cfg.Scopes = append([]string{oidc.ScopeOpenID}, cfg.Scopes...)
	}
	client := cfg.HTTPClient
	if client == nil {
		client = &http.Client{Timeout: oidcTimeout}
	}
	return &oidcAuth{cfg: cfg, redirectURL: strings.TrimRight(baseURL, "/") + OIDCCallbackPath, client: client, log: log}
}

// load discovers the provider once it answers.
func (o *oidcAuth) load(ctx context.Context) (*oidcProvider, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.provider != nil {
		return o.provider, nil
	}
	dctx, cancel := context.WithTimeout(oidc.ClientContext(ctx, o.client), oidcTimeout)
	defer cancel()
	p, err := oidc.NewProvider(dctx, o.cfg.Issuer)
	if err != nil {
		return nil, fmt.Errorf("error discovering the OIDC provider %s: %w", o.cfg.Issuer, err)
	}
	o.provider = &oidcProvider{
		oauth: oauth2.Config{ClientID: o.cfg.ClientID, ClientSecret: o.cfg.ClientSecret, Endpoint: p.Endpoint(),
			RedirectURL: o.redirectURL, Scopes: o.cfg.Scopes},
		// The token's times are the provider's wall clock: checked
		// against this machine's.
		verifier: p.Verifier(&oidc.Config{ClientID: o.cfg.ClientID}),
	}
	o.log.Info("OIDC provider discovered", "issuer", o.cfg.Issuer)
	return o.provider, nil
}

// oidcFlow is one sign-in's cookie: a random secret, when it began, and
// where to go after.
type oidcFlow struct {
	secret  []byte
	started time.Time
	next    string
}

func (f oidcFlow) derive(label string) string {
	m := hmac.New(sha256.New, f.secret)
	m.Write([]byte("stitchd oidc " + label))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// state, nonce and verifier (43 URL-safe characters, as PKCE wants).
func (f oidcFlow) state() string    { return f.derive("state") }
func (f oidcFlow) nonce() string    { return f.derive("nonce") }
func (f oidcFlow) verifier() string { return f.derive("pkce verifier") }

func (f oidcFlow) encode() string {
	return base64.RawURLEncoding.EncodeToString(f.secret) + "." + strconv.FormatInt(f.started.Unix(), 10) + "." +
		base64.RawURLEncoding.EncodeToString([]byte(f.next))
}

func decodeOIDCFlow(v string) (oidcFlow, bool) {
	parts := strings.Split(v, ".")
	if len(parts) != 3 {
		return oidcFlow{}, false
	}
	secret, err1 := base64.RawURLEncoding.DecodeString(parts[0])
	started, err2 := strconv.ParseInt(parts[1], 10, 64)
	next, err3 := base64.RawURLEncoding.DecodeString(parts[2])
	if err1 != nil || err2 != nil || err3 != nil || len(secret) != 32 {
		return oidcFlow{}, false
	}
	return oidcFlow{secret: secret, started: time.Unix(started, 0), next: string(next)}, true
}

func (s *Server) oidcCookie(c echo.Context, value string, maxAge int) *http.Cookie {
	secure := c.Scheme() == "https" || strings.HasPrefix(s.cfg.BaseURL, "https://")
	name := oidcCookie
	if secure {
		name = oidcSecureCookie
	}
	return &http.Cookie{Name: name, Value: value, Path: "/", MaxAge: maxAge, HttpOnly: true, Secure: secure, //nolint:gosec // G124: Secure over https only, so that a development server on http works
		SameSite: http.SameSiteLaxMode}
}

// safeNext is a path on this site to go to after sign-in: it must start
// with one "/" (not "//" or "/\", which browsers read as another host),
// and hold no scheme, host or control character.
func safeNext(next string) (string, bool) {
	if next == "" {
		return "/", true
	}
	if len(next) > maxNextLen || !strings.HasPrefix(next, "/") || strings.HasPrefix(next, "//") ||
		strings.ContainsAny(next, "\\") || !utf8.ValidString(next) {
		return "", false
	}
	for _, r := range next {
		if r < 0x20 || r == 0x7f {
			return "", false
		}
	}
	u, err := url.Parse(next)
	if err != nil || u.Scheme != "" || u.Host != "" || u.User != nil || !strings.HasPrefix(u.Path, "/") {
		return "", false
	}
	return next, true
}

// authProviders tells the UI which ways of signing in to offer.
func (s *Server) authProviders(c echo.Context) error {
	return c.JSON(http.StatusOK, map[string]any{"password": true,
		"oidc": map[string]any{"enabled": s.oidc != nil, "login_url": OIDCLoginPath}})
}

func (s *Server) oidcLogin(c echo.Context) error {
	if s.oidc == nil {
		return s.renderSignIn(c, http.StatusNotFound, "Single sign-on is not set up",
			"This server signs people in with their email and password.")
	}
	next, ok := safeNext(c.QueryParam("next"))
	if !ok {
		return s.renderSignIn(c, http.StatusBadRequest, "Sign-in link not valid",
			`"next" must be a path on this site, such as /runs.`)
	}
	p, err := s.oidc.load(c.Request().Context())
	if err != nil {
		s.log.Error("OIDC sign-in: the provider could not be discovered", "error", err)
		return s.renderSignIn(c, http.StatusBadGateway, "The sign-in provider is unreachable",
			"stitchd could not reach the single sign-on provider. Try again in a moment; if it keeps failing, the server's log says why.")
	}
	f := oidcFlow{secret: make([]byte, 32), started: s.cfg.Clock.Now(), next: next}
	if _, err := rand.Read(f.secret); err != nil {
		return err
	}
	c.SetCookie(s.oidcCookie(c, f.encode(), int(oidcFlowTTL.Seconds())))
	return c.Redirect(http.StatusFound, p.oauth.AuthCodeURL(f.state(), oidc.Nonce(f.nonce()), oauth2.S256ChallengeOption(f.verifier())))
}

func (s *Server) oidcCallback(c echo.Context) error {
	if s.oidc == nil {
		return s.renderSignIn(c, http.StatusNotFound, "Single sign-on is not set up",
			"This server signs people in with their email and password.")
	}
	ctx := c.Request().Context()
	q := c.Request().URL.Query()
	// The cookie serves one answer, whatever it is.
	name := s.oidcCookie(c, "", -1).Name
	ck, err := c.Request().Cookie(name)
	c.SetCookie(s.oidcCookie(c, "", -1))
	startAgain := "Start again from the sign-in page."
	if err != nil {
		return s.renderSignIn(c, http.StatusBadRequest, "Sign-in not started here",
			"This browser did not start this sign-in, or took more than 10 minutes. "+startAgain)
	}
	f, ok := decodeOIDCFlow(ck.Value)
	now := s.cfg.Clock.Now()
	if !ok || now.Sub(f.started) > oidcFlowTTL || f.started.Sub(now) > time.Minute {
		return s.renderSignIn(c, http.StatusBadRequest, "Sign-in expired",
			"The sign-in took more than 10 minutes. "+startAgain)
	}
	if subtle.ConstantTimeCompare([]byte(q.Get("state")), []byte(f.state())) != 1 {
		return s.renderSignIn(c, http.StatusBadRequest, "Sign-in could not be verified",
			"The provider's answer does not belong to the sign-in this browser started (state mismatch). "+startAgain)
	}
	if e := q.Get("error"); e != "" {
		msg := "The provider answered " + e
		if d := q.Get("error_description"); d != "" {
			msg += ": " + d
		}
		return s.renderSignIn(c, http.StatusForbidden, "The provider refused the sign-in", msg+".")
	}
	code := q.Get("code")
	if code == "" {
		return s.renderSignIn(c, http.StatusBadRequest, "Sign-in could not be verified", "The provider's answer has no code. "+startAgain)
	}
	p, err := s.oidc.load(ctx)
	if err != nil {
		s.log.Error("OIDC sign-in: the provider could not be discovered", "error", err)
		return s.renderSignIn(c, http.StatusBadGateway, "The sign-in provider is unreachable",
			"stitchd could not reach the single sign-on provider. Try again in a moment.")
	}
	xctx, cancel := context.WithTimeout(context.WithValue(ctx, oauth2.HTTPClient, s.oidc.client), oidcTimeout)
	defer cancel()
	tok, err := p.oauth.Exchange(xctx, code, oauth2.VerifierOption(f.verifier()))
	if err != nil {
		s.log.Warn("OIDC sign-in: the code exchange failed", "error", err)
		var re *oauth2.RetrieveError
		if errors.As(err, &re) && re.Response != nil && re.Response.StatusCode < 500 {
			return s.renderSignIn(c, http.StatusBadRequest, "The provider did not accept the sign-in",
				"The provider refused to exchange the sign-in code ("+orText(re.ErrorCode, re.Response.Status)+"). "+startAgain)
		}
		return s.renderSignIn(c, http.StatusBadGateway, "The sign-in provider is unreachable",
			"stitchd could not finish the sign-in with the provider. Try again in a moment.")
	}
	raw, _ := tok.Extra("id_token").(string)
	if raw == "" {
		return s.renderSignIn(c, http.StatusBadGateway, "The provider's answer has no ID token",
			"The provider answered without an ID token: is the client an OpenID Connect client, with the openid scope?")
	}
	idt, err := p.verifier.Verify(xctx, raw)
	if err != nil {
		s.log.Warn("OIDC sign-in: the ID token was refused", "error", err)
		return s.renderSignIn(c, http.StatusForbidden, "The provider's ID token was refused", "The ID token is not valid: "+err.Error()+".")
	}
	if subtle.ConstantTimeCompare([]byte(idt.Nonce), []byte(f.nonce())) != 1 {
		return s.renderSignIn(c, http.StatusForbidden, "The provider's ID token was refused",
			"The ID token was not made for this sign-in (nonce mismatch). "+startAgain)
	}
	var claims map[string]any
	if err := idt.Claims(&claims); err != nil {
		return s.renderSignIn(c, http.StatusBadGateway, "The provider's ID token was refused", "Its claims are not readable: "+err.Error()+".")
	}
	id, problem := s.oidc.identity(claims)
	if problem != "" {
		return s.renderSignIn(c, http.StatusForbidden, "Sign-in refused", problem)
	}
	u, status, problem, err := s.oidcUser(ctx, id)
	if err != nil {
		return err
	}
	if problem != "" {
		return s.renderSignIn(c, status, "Sign-in refused", problem)
	}
	if _, _, err := s.startSession(c, u, "GET "+OIDCCallbackPath, map[string]any{"via": "oidc", "address": c.RealIP()}); err != nil {
		return err
	}
	next, ok := safeNext(f.next)
	if !ok {
		next = "/"
	}
	return c.Redirect(http.StatusSeeOther, next)
}

func orText(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// oidcIdentity is what a sign-in takes from the ID token.
type oidcIdentity struct {
	email, name string
	groups      []string
}

// identity reads the ID token's claims, or says what is wrong with them.
func (o *oidcAuth) identity(cl map[string]any) (oidcIdentity, string) {
	var id oidcIdentity
	email, _ := cl["email"].(string)
	if strings.TrimSpace(email) == "" {
		return id, "The provider gave no email address: ask for the email scope, and give the account an email."
	}
	id.email = strings.TrimSpace(email)
	switch v := cl["email_verified"].(type) {
	case nil:
	case bool:
		if !v {
			return id, "The provider has not verified the email address " + id.email + "."
		}
	case string: // some providers send "true"/"false"
		if b, err := strconv.ParseBool(v); err != nil || !b {
			return id, "The provider has not verified the email address " + id.email + "."
		}
	default:
		return id, "The provider's email_verified claim is not true or false."
	}
	for _, k := range []string{"name", "preferred_username"} {
		if n, _ := cl[k].(string); strings.TrimSpace(n) != "" {
			id.name = truncateUTF8(strings.TrimSpace(n), maxUserNameLen)
			break
		}
	}
	if id.name == "" {
		id.name = truncateUTF8(id.email, maxUserNameLen)
	}
	var groups []string
	switch v := cl[o.cfg.GroupsClaim].(type) {
	case nil:
	case string:
		groups = []string{v}
	case []any:
		for _, g := range v {
			s, ok := g.(string)
			if !ok {
				return id, "The provider's " + o.cfg.GroupsClaim + " claim must list group names (strings)."
			}
			groups = append(groups, s)
		}
	default:
		return id, "The provider's " + o.cfg.GroupsClaim + " claim must be a list of group names."
	}
	id.groups = []string{}
	for _, g := range groups {
		if g == "" || slices.Contains(id.groups, g) {
			continue
		}
		if len(g) > maxGroupLen {
			return id, fmt.Sprintf("The provider's group %.40q… is longer than %d bytes.", g, maxGroupLen)
		}
		id.groups = append(id.groups, g)
	}
	if len(id.groups) > maxGroups {
		return id, fmt.Sprintf("The provider names %d groups; stitchd keeps at most %d. Narrow the %s claim at the provider.",
			len(id.groups), maxGroups, o.cfg.GroupsClaim)
	}
	return id, ""
}

func truncateUTF8(s string, n int) string {
	if len(s) <= n {
		return s
	}
	s = s[:n]
	for !utf8.ValidString(s) {
		s = s[:len(s)-1]
	}
	return s
}

// oidcUser finds the user by the token's email (in any case) and replaces
// their groups with the token's, or makes them with the default role. A
// refusal is a status and a message; err is the database's.
func (s *Server) oidcUser(ctx context.Context, id oidcIdentity) (*store.User, int, string, error) {
	u, err := s.cfg.Store.UserByEmail(ctx, id.email)
	if errors.Is(err, engine.ErrNotFound) {
		role := s.oidc.cfg.DefaultRole
		if role == "" {
			return nil, http.StatusForbidden, "stitchd has no account for " + id.email + ". Ask an admin to create one.", nil
		}
		p, perr := NewUser(id.email, id.name, role, id.groups, nil)
		if perr != nil {
			return nil, http.StatusForbidden, "stitchd cannot make an account from the provider's answer: " +
				strings.Join(ProblemsOf(perr), "; ") + ".", nil
		}
		p.Now = s.cfg.Clock.Now()
		u, err = s.cfg.Store.CreateUser(ctx, p)
		if errors.Is(err, engine.ErrConflict) {
			// Made meanwhile by another sign-in: use it.
			u, err = s.cfg.Store.UserByEmail(ctx, id.email)
		} else if err == nil {
			s.log.Info("OIDC sign-in made a user", "email", u.Email, "role", u.Role)
			return u, 0, "", nil
		}
	}
	if err != nil {
		return nil, 0, "", err
	}
	if u.Disabled {
		return nil, http.StatusForbidden, "This account is disabled. Ask an admin to enable it.", nil
	}
	if !slices.Equal(u.Groups, id.groups) {
		groups := id.groups
		if u, err = s.cfg.Store.UpdateUser(ctx, u.ID, store.UpdateUserParams{Groups: &groups, Now: s.cfg.Clock.Now()}); err != nil {
			return nil, 0, "", err
		}
	}
	return u, 0, "", nil
}

var signInPage = template.Must(template.New("signin").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>{{.Title}} · stitchd</title>
<style>body{font:16px system-ui,sans-serif;max-width:36rem;margin:3rem auto;padding:0 1rem;color:#1f2937}
h1{font-size:1.4rem}.error{color:#b91c1c}</style></head><body>
<h1>{{.Title}}</h1>
<p class="error" id="signin-error">{{.Message}}</p>
<p><a href="/">Back to stitchd's sign-in page</a></p>
</body></html>`))

// renderSignIn answers a sign-in the browser was sent through with a small
// page saying what went wrong.
func (s *Server) renderSignIn(c echo.Context, status int, title, message string) error {
	h := c.Response().Header()
	h.Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'none'")
	h.Set("Referrer-Policy", "no-referrer")
	var b strings.Builder
	if err := signInPage.Execute(&b, struct{ Title, Message string }{title, message}); err != nil {
		return err
	}
	return c.HTML(status, b.String())
}
