package web

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/stitchd/stitchd/engine"
	"github.com/stitchd/stitchd/store"
)

// Credentials (README, People and access): the admin token (bootstrap,
// acts as role admin with no user), a personal API token ("stp_…", acts
// as its user) or a session cookie set by POST /api/v1/auth/login. A
// write through a session must carry the session's CSRF token in the
// X-CSRF-Token header; Bearer credentials need none (a browser never
// sends them on its own).
const (
	// SessionCookie names the sign-in cookie.
	SessionCookie = "stitchd_session"
	// CSRFHeader carries a session's CSRF token on writes.
	CSRFHeader = "X-CSRF-Token"
	// tokenPrefix starts every personal API token.
	tokenPrefix = "stp_"
)

// Principal is who a request acts as, and where.
type Principal struct {
	// User is nil for the admin token.
	User *store.User
	// TokenID is the personal token used ("" otherwise).
	TokenID string
	// Session is set when the request came with a session cookie.
	Session bool
	// Workspace is the workspace the request acts in (docs/workspaces.md).
	Workspace string
	csrf      string
	// tokenRole is a token's narrower role (store.RoleWorker), "" for none;
	// tokenWorkspace the one workspace a bound token acts in.
	tokenRole, tokenWorkspace string
	// role is the principal's role in Workspace, set once it is known.
	role string
}

// Role is the principal's role in the request's workspace.
func (p *Principal) Role() string {
	if p == nil {
		return ""
	}
	return p.role
}

// ServerAdmin reports whether the principal is admin of the whole server:
// the admin token, or a user whose own role is admin (not a workspace's
// admin only).
func (p *Principal) ServerAdmin() bool {
	return p != nil && p.tokenRole == "" && (p.User == nil || p.User.Role == store.RoleAdmin)
}

// Email is the user's email ("admin" for the admin token).
func (p *Principal) Email() string {
	if p == nil {
		return ""
	}
	if p.User == nil {
		return "admin"
	}
	return p.User.Email
}

// Groups are the user's groups.
func (p *Principal) Groups() []string {
	if p == nil || p.User == nil {
		return nil
	}
	return p.User.Groups
}

// Bootstrap reports whether the admin token was used.
func (p *Principal) Bootstrap() bool { return p != nil && p.User == nil }

const principalKey = "stitchd.principal"

// principalOf is the request's principal (nil outside /api/v1).
func principalOf(c echo.Context) *Principal {
	p, _ := c.Get(principalKey).(*Principal)
	return p
}

// hashSecret is how sessions and tokens are kept: only their SHA-256.
func hashSecret(s string) []byte {
	h := sha256.Sum256([]byte(s))
	return h[:]
}

// randomSecret is 32 random bytes, URL-safe.
func randomSecret() (string, error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return base64.RawURLEncoding.EncodeToString(b), nil
}

// unauthorized is the one answer to a credential that does not open the
// API, whatever was wrong with it.
func unauthorized(msg string) *apiError { return errorf(http.StatusUnauthorized, "unauthorized", msg) }

func forbidden(code, msg string) *apiError { return errorf(http.StatusForbidden, code, msg) }

// auth finds the request's principal, checks the route's rule (access.go)
// and a session write's CSRF token, and audits what a write changed.
func (s *Server) auth(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		p, err := s.authenticate(c)
		if err != nil {
			return err
		}
		c.Set(principalKey, p)
		if err := s.enterWorkspace(c, p); err != nil {
			return err
		}
		if err := s.authorize(c, p); err != nil {
			return err
		}
		if err := s.ownedHere(c, p); err != nil {
			return err
		}
		if p.Session && !safeMethod(c.Request().Method) {
			got := c.Request().Header.Get(CSRFHeader)
			if got == "" || subtle.ConstantTimeCompare([]byte(got), []byte(p.csrf)) != 1 {
				return forbidden("csrf", "missing or wrong "+CSRFHeader+" header: a signed-in browser's writes must carry the csrf_token given at sign-in")
			}
		}
		return s.audited(c, p, next)
	}
}

func safeMethod(m string) bool {
	return m == http.MethodGet || m == http.MethodHead || m == http.MethodOptions
}

// authenticate reads the request's credential.
func (s *Server) authenticate(c echo.Context) (*Principal, error) {
	r := c.Request()
	ctx := r.Context()
	if scheme, tok, ok := strings.Cut(r.Header.Get("Authorization"), " "); ok && strings.EqualFold(scheme, "Bearer") {
		tok = strings.TrimSpace(tok)
		if s.cfg.AuthToken != "" && subtle.ConstantTimeCompare([]byte(tok), []byte(s.cfg.AuthToken)) == 1 {
			return &Principal{}, nil
		}
		if !strings.HasPrefix(tok, tokenPrefix) {
			return nil, unauthorized("missing or invalid API token")
		}
		u, t, err := s.cfg.Store.TokenUser(ctx, hashSecret(tok), s.cfg.Clock.Now())
		if errors.Is(err, engine.ErrNotFound) {
			return nil, unauthorized("missing or invalid API token (it may have been revoked)")
		}
		if err != nil {
			return nil, err
		}
		if u.Disabled {
			return nil, forbidden("account_disabled", "the token's user is disabled")
		}
		p := &Principal{User: u, TokenID: t.ID}
		if t.Role != nil {
			p.tokenRole = *t.Role
		}
		if t.Workspace != nil {
			p.tokenWorkspace = *t.Workspace
		}
		return p, nil
	}
	if ck, err := r.Cookie(SessionCookie); err == nil && ck.Value != "" {
		u, csrf, err := s.cfg.Store.SessionUser(ctx, hashSecret(ck.Value), s.cfg.Clock.Now())
		if errors.Is(err, engine.ErrNotFound) {
			return nil, unauthorized("your session has expired or was ended; sign in again")
		}
		if err != nil {
			return nil, err
		}
		if u.Disabled {
			return nil, forbidden("account_disabled", "this account is disabled")
		}
		return &Principal{User: u, Session: true, csrf: csrf}, nil
	}
	return nil, unauthorized("missing or invalid API token")
}

// authorize applies the route's rule.
func (s *Server) authorize(c echo.Context, p *Principal) error {
	if p := c.Path(); p == "/api/v1" || p == "/api/v1/*" {
		return nil // no such route: its 404 tells a signed-in caller nothing
	}
	rule := ruleOf(c)
	role := p.Role()
	if rule.server {
		if p.ServerAdmin() {
			return nil
		}
		return forbidden("forbidden", "only a server admin may "+c.Request().Method+" "+c.Path())
	}
	if rule.participant && role == store.RoleApprover {
		id := c.Param("id")
		if validUUID(id) {
			ok, err := s.cfg.Store.IsParticipant(c.Request().Context(), id, p.Email(), p.Groups())
			if err != nil {
				return err
			}
			if ok {
				return nil
			}
		}
		return errorf(http.StatusNotFound, "not_found", "run "+id+" not found")
	}
	if rule.allows(role) || rule.unscoped && role == "" {
		return nil
	}
	return forbidden("forbidden", "role "+role+" may not "+c.Request().Method+" "+c.Path())
}

// audited runs next and, for a write that succeeded, writes who did what
// to the audit log. The entry follows the change's own commit: a failure
// to write it is logged, not undone.
func (s *Server) audited(c echo.Context, p *Principal, next echo.HandlerFunc) error {
	if safeMethod(c.Request().Method) {
		return next(c)
	}
	err := next(c)
	status := c.Response().Status
	if err != nil {
		status = toAPIError(err).Status
	}
	if status >= 400 {
		return err
	}
	e := store.AuditEntry{At: s.cfg.Clock.Now(), Actor: p.Email(), Action: c.Request().Method + " " + c.Path(),
		Target: auditTarget(c), RequestID: c.Response().Header().Get(echo.HeaderXRequestID), Status: status}
	details := map[string]any{}
	if p.TokenID != "" {
		details["token_id"] = p.TokenID
	}
	if k := c.Param("key"); k != "" {
		details["key"] = k
	}
	if d, ok := c.Get(auditDetailsKey).(map[string]any); ok {
		for k, v := range d {
			details[k] = v
		}
	}
	e.Details = details
	if !ruleOf(c).server {
		ws := p.Workspace
		e.Workspace = &ws
	}
	e.Summary = auditSummary(c, p.Email(), e.Action, e.Target)
	if aerr := s.cfg.Store.InsertAudit(c.Request().Context(), e); aerr != nil {
		s.log.Error("error writing an audit entry", "action", e.Action, "target", e.Target, "actor", e.Actor, "error", aerr)
	}
	return err
}

const (
	auditTargetKey  = "stitchd.audit.target"
	auditDetailsKey = "stitchd.audit.details"
)

// setAuditTarget names what a write made ("run:<id>" for a started run)
// when the path does not.
func setAuditTarget(c echo.Context, target string) { c.Set(auditTargetKey, target) }

// auditTarget is "<kind>:<id>" of the path's object: /runs/{id}/… is
// "run:<id>", /flows/{id} "flow:<id>".
func auditTarget(c echo.Context) string {
	if t, ok := c.Get(auditTargetKey).(string); ok {
		return t
	}
	rest := strings.TrimPrefix(c.Path(), "/api/v1/")
	kind, _, _ := strings.Cut(rest, "/")
	id := c.Param("id")
	if id == "" {
		return kind
	}
	return strings.TrimSuffix(strings.TrimSuffix(kind, "s"), "ie") + singularY(kind) + ":" + id
}

// singularY finishes "entities" → "entity" (the "ie" is cut above).
func singularY(kind string) string {
	if strings.HasSuffix(kind, "ies") {
		return "y"
	}
	return ""
}
