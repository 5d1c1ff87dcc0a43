package web

import (
	"errors"
	"fmt"
	"net/http"
	"net/mail"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"
	"github.com/labstack/echo/v4"

	"github.com/stitchd/stitchd/engine"
	"github.com/stitchd/stitchd/internal/password"
	"github.com/stitchd/stitchd/store"
)

// Sign-in limits: failed attempts per account and per address within
// loginWindow before further attempts are refused (429) until the window
// has passed.
const (
	DefaultSessionTTL  = 12 * time.Hour
	loginWindow        = 15 * time.Minute
	maxAccountFailures = 10
	maxAddressFailures = 50
	maxUserNameLen     = 200
	maxGroups          = 100
	maxGroupLen        = 100
	maxTokenNameLen    = 100
)

type loginBody struct {
	Email    string `json:"email"`
	Password string `json:"password"`
}

func (s *Server) login(c echo.Context) error {
	// JSON only: a cross-site form (text/plain) cannot sign a browser in
	// as someone else.
	if ct := c.Request().Header.Get("Content-Type"); !strings.HasPrefix(strings.ToLower(ct), "application/json") {
		return errorf(http.StatusUnsupportedMediaType, "invalid_request", "sign in with a JSON body (Content-Type: application/json)")
	}
	var b loginBody
	if err := bind(c, &b); err != nil {
		return err
	}
	if b.Email == "" || b.Password == "" {
		return badRequest(`give "email" and "password"`)
	}
	if len(b.Email) > 320 || len(b.Password) > password.MaxLength {
		return unauthorized("wrong email or password")
	}
	ctx := c.Request().Context()
	now := s.cfg.Clock.Now()
	addr := c.RealIP()
	// The attempt counts as a failure until it succeeds (then the
	// account's failures are cleared): attempts sent at once each see the
	// others, so no burst gets past the limits.
	if err := s.cfg.Store.RecordLoginFailure(ctx, b.Email, addr, now, now.Add(-loginWindow)); err != nil {
		return err
	}
	byAccount, byAddress, err := s.cfg.Store.LoginFailures(ctx, b.Email, addr, now.Add(-loginWindow))
	if err != nil {
		return err
	}
	if byAccount > maxAccountFailures || byAddress > maxAddressFailures {
		c.Response().Header().Set("Retry-After", strconv.Itoa(int(loginWindow.Seconds())))
		return errorf(http.StatusTooManyRequests, "rate_limited", "too many failed sign-ins; try again later")
	}
	u, err := s.cfg.Store.UserByEmail(ctx, b.Email)
	if err != nil && !errors.Is(err, engine.ErrNotFound) {
		return err
	}
	release, err := s.passwordSlot(c, "sign-ins")
	if err != nil {
		return err
	}
	defer release()
	hash, err := s.dummyHash()
	if err != nil {
		return err
	}
	if u != nil && u.PasswordHash != nil {
		hash = *u.PasswordHash
	}
	ok, verr := password.Verify(b.Password, hash)
	if u == nil || u.PasswordHash == nil || verr != nil || !ok {
		if verr != nil && u != nil && u.PasswordHash != nil {
			s.log.Error("a stored password hash is malformed", "user", u.ID, "error", verr)
		}
		return unauthorized("wrong email or password")
	}
	if u.Disabled {
		return forbidden("account_disabled", "this account is disabled")
	}
	if err := s.cfg.Store.ClearLoginFailures(ctx, b.Email); err != nil {
		return err
	}
	csrf, expires, err := s.startSession(c, u, "POST /api/v1/auth/login", map[string]any{"address": c.RealIP()})
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, map[string]any{"user": u, "csrf_token": csrf, "expires_at": expires.UTC()})
}

// DefaultLoginConcurrency is LoginConcurrency's default: two password
// checks per CPU keep the CPUs busy; more only add memory (19 MiB each)
// and wait.
func DefaultLoginConcurrency() int { return 2 * runtime.GOMAXPROCS(0) }

// passwordSlot waits up to LoginWait for a turn to check or hash a
// password (LoginConcurrency at once, whatever the addresses: the
// per-address limits do not bound a crowd of them), then answers 429,
// saying there are too many of what (sign-ins, user writes). release
// gives the turn back.
func (s *Server) passwordSlot(c echo.Context, what string) (release func(), err error) {
	t := time.NewTimer(s.cfg.LoginWait)
	defer t.Stop()
	select {
	case s.hashSlots <- struct{}{}:
	case <-t.C:
		c.Response().Header().Set("Retry-After", "1")
		return nil, errorf(http.StatusTooManyRequests, "rate_limited", "too many "+what+" at once; try again in a second")
	case <-c.Request().Context().Done():
		return nil, fmt.Errorf("waiting for a turn to check or hash a password: %w", c.Request().Context().Err())
	}
	n := s.hashing.Add(1)
	if s.cfg.PasswordChecks != nil {
		s.cfg.PasswordChecks.Signal(int(n))
	}
	return func() {
		s.hashing.Add(-1)
		<-s.hashSlots
	}, nil
}

// startSession signs u in, however they proved who they are (a password,
// an OIDC provider): a session kept as the SHA-256 of its random cookie,
// with its CSRF token, for SessionTTL; the cookie; and the sign-in's audit
// entry (action, details), whose failure is logged.
func (s *Server) startSession(c echo.Context, u *store.User, action string, details map[string]any) (csrf string, expires time.Time, err error) {
	ctx := c.Request().Context()
	sid, err := randomSecret()
	if err != nil {
		return "", time.Time{}, err
	}
	if csrf, err = randomSecret(); err != nil {
		return "", time.Time{}, err
	}
	now := s.cfg.Clock.Now()
	expires = now.Add(s.cfg.SessionTTL)
	if err := s.cfg.Store.CreateSession(ctx, hashSecret(sid), u.ID, csrf, now, expires); err != nil {
		return "", time.Time{}, err
	}
	c.SetCookie(s.sessionCookie(c, sid, expires))
	if err := s.cfg.Store.InsertAudit(ctx, store.AuditEntry{At: now, Actor: u.Email, Action: action,
		Target: "user:" + u.ID, RequestID: c.Response().Header().Get(echo.HeaderXRequestID), Status: http.StatusOK,
		Details: details}); err != nil {
		s.log.Error("error writing an audit entry", "action", action, "actor", u.Email, "error", err)
	}
	return csrf, expires, nil
}

func (s *Server) sessionCookie(c echo.Context, value string, expires time.Time) *http.Cookie {
	return &http.Cookie{Name: SessionCookie, Value: value, Path: "/", Expires: expires, HttpOnly: true, //nolint:gosec // G124: Secure over https only, so that a development server on http works
		Secure: c.Scheme() == "https" || strings.HasPrefix(s.cfg.BaseURL, "https://"), SameSite: http.SameSiteLaxMode}
}

func (s *Server) logout(c echo.Context) error {
	if ck, err := c.Request().Cookie(SessionCookie); err == nil && ck.Value != "" {
		if err := s.cfg.Store.DeleteSession(c.Request().Context(), hashSecret(ck.Value)); err != nil {
			return err
		}
	}
	gone := s.sessionCookie(c, "", time.Unix(0, 0)) //nolint:gosec // G124: as sessionCookie
	gone.MaxAge = -1
	c.SetCookie(gone)
	return c.NoContent(http.StatusNoContent)
}

func (s *Server) me(c echo.Context) error {
	p := principalOf(c)
	if p.Bootstrap() {
		return c.JSON(http.StatusOK, map[string]any{"role": store.RoleAdmin, "bootstrap": true, "workspace": p.Workspace,
			"server_admin": true})
	}
	// role is the caller's in the request's workspace ("" when they are no
	// member of it); server_admin whether they are admin everywhere.
	out := map[string]any{"id": p.User.ID, "email": p.User.Email, "name": p.User.Name, "role": p.Role(),
		"groups": p.User.Groups, "disabled": p.User.Disabled, "workspace": p.Workspace, "server_admin": p.ServerAdmin()}
	if p.Session {
		// A reloaded page finds its CSRF token here.
		out["csrf_token"] = p.csrf
	}
	return c.JSON(http.StatusOK, out)
}

type userBody struct {
	Email    *string   `json:"email"`
	Name     *string   `json:"name"`
	Role     *string   `json:"role"`
	Groups   *[]string `json:"groups"`
	Password *string   `json:"password"`
	Disabled *bool     `json:"disabled"`
}

// check lists every problem with a user's fields (create: all required).
func (b *userBody) check(create bool) error {
	var problems []engine.Problem
	add := func(path, msg string) {
		problems = append(problems, engine.Problem{Code: "invalid_user", Path: path, Message: msg})
	}
	if b.Email != nil || create {
		switch {
		case b.Email == nil || *b.Email == "":
			add("email", "email is required")
		case !create:
			add("email", "email cannot change; create a new user")
		default:
			a, err := mail.ParseAddress(*b.Email)
			if err != nil || a.Address != *b.Email || len(*b.Email) > 254 {
				add("email", "email must be a plain address such as ana@example.com")
			} else {
				*b.Email = strings.ToLower(*b.Email)
			}
		}
	}
	if b.Name != nil || create {
		if b.Name == nil || strings.TrimSpace(*b.Name) == "" || len(*b.Name) > maxUserNameLen {
			add("name", "name is required, at most "+strconv.Itoa(maxUserNameLen)+" bytes")
		}
	}
	if b.Role != nil || create {
		if b.Role == nil || !slices.Contains(store.Roles, *b.Role) {
			add("role", "role must be one of "+strings.Join(store.Roles, ", "))
		}
	}
	if b.Groups != nil {
		if len(*b.Groups) > maxGroups {
			add("groups", "at most "+strconv.Itoa(maxGroups)+" groups")
		}
		for i, g := range *b.Groups {
			if strings.TrimSpace(g) == "" || len(g) > maxGroupLen {
				add("groups["+strconv.Itoa(i)+"]", "a group is a non-empty name of at most "+strconv.Itoa(maxGroupLen)+" bytes")
			}
		}
	}
	if b.Password != nil {
		if msg := password.Check(*b.Password); msg != "" {
			add("password", msg)
		}
	}
	if b.Disabled != nil && create {
		add("disabled", "a new user is enabled; disable it with PATCH")
	}
	if len(problems) > 0 {
		return &apiError{Status: http.StatusBadRequest, Code: "invalid_request",
			Message: "the user has " + plural(len(problems), "problem"), Details: problems}
	}
	return nil
}

// hashPassword hashes a user's new password (nil: none given) in a
// password slot: a hash costs what a check does (19 MiB of memory and its
// CPU time), so user writes share sign-ins' bound.
func (s *Server) hashPassword(c echo.Context, pw *string) (*string, error) {
	if pw == nil {
		return nil, nil
	}
	release, err := s.passwordSlot(c, "user writes with a password")
	if err != nil {
		return nil, err
	}
	defer release()
	h, err := password.Hash(*pw, s.cfg.PasswordParams)
	if err != nil {
		return nil, err
	}
	return &h, nil
}

func (s *Server) createUser(c echo.Context) error {
	var b userBody
	if err := bind(c, &b); err != nil {
		return err
	}
	if err := b.check(true); err != nil {
		return err
	}
	hash, err := s.hashPassword(c, b.Password)
	if err != nil {
		return err
	}
	var groups []string
	if b.Groups != nil {
		groups = *b.Groups
	}
	u, err := s.cfg.Store.CreateUser(c.Request().Context(), store.CreateUserParams{ID: uuid.NewString(), Email: *b.Email,
		Name: strings.TrimSpace(*b.Name), Role: *b.Role, Groups: groups, PasswordHash: hash, Now: s.cfg.Clock.Now(),
		Workspace: workspaceOf(c)})
	if err != nil {
		return err
	}
	setAuditTarget(c, "user:"+u.ID)
	return c.JSON(http.StatusCreated, u)
}

func (s *Server) listUsers(c echo.Context) error {
	p, err := pageParams(c)
	if err != nil {
		return err
	}
	us, next, err := s.cfg.Store.ListUsersPage(c.Request().Context(), p)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, map[string]any{"users": us, "next_cursor": nextCursor(next)})
}

func (s *Server) getUser(c echo.Context) error {
	u, err := s.cfg.Store.GetUser(c.Request().Context(), c.Param("id"))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, u)
}

func (s *Server) patchUser(c echo.Context) error {
	var b userBody
	if err := bind(c, &b); err != nil {
		return err
	}
	if err := b.check(false); err != nil {
		return err
	}
	hash, err := s.hashPassword(c, b.Password)
	if err != nil {
		return err
	}
	if b.Name != nil {
		n := strings.TrimSpace(*b.Name)
		b.Name = &n
	}
	u, err := s.cfg.Store.UpdateUser(c.Request().Context(), c.Param("id"), store.UpdateUserParams{Name: b.Name, Role: b.Role,
		Groups: b.Groups, Disabled: b.Disabled, PasswordHash: hash, Now: s.cfg.Clock.Now(), Workspace: workspaceOf(c)})
	if err != nil {
		return err
	}
	details := map[string]any{}
	for k, set := range map[string]bool{"name": b.Name != nil, "role": b.Role != nil, "groups": b.Groups != nil,
		"disabled": b.Disabled != nil, "password": b.Password != nil} {
		if set {
			details[k] = true
		}
	}
	c.Set(auditDetailsKey, map[string]any{"changed": details})
	return c.JSON(http.StatusOK, u)
}

func (s *Server) deleteUser(c echo.Context) error {
	if p := principalOf(c); p.User != nil && p.User.ID == c.Param("id") {
		return errorf(http.StatusConflict, "conflict", "you cannot delete yourself; another admin can")
	}
	if err := s.cfg.Store.DeleteUser(c.Request().Context(), c.Param("id")); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}

func (s *Server) createToken(c echo.Context) error {
	p := principalOf(c)
	if p.Bootstrap() {
		return badRequest("the admin token belongs to no user: create a user (stitchd user create), sign in and make tokens as that user")
	}
	if p.TokenID != "" {
		// A stolen token must not outlive its revocation through tokens it
		// made.
		return forbidden("session_required", "tokens are made by a signed-in person, not by another token")
	}
	var b struct {
		Name string `json:"name"`
		// Role "worker" makes a token that only polls task queues.
		Role *string `json:"role"`
		// Workspace binds the token to one workspace it acts in.
		Workspace *string `json:"workspace"`
	}
	if err := bind(c, &b); err != nil {
		return err
	}
	b.Name = strings.TrimSpace(b.Name)
	if b.Name == "" || len(b.Name) > maxTokenNameLen {
		return badRequest(`"name" is required, at most ` + strconv.Itoa(maxTokenNameLen) + " bytes")
	}
	if b.Role != nil && *b.Role != store.RoleWorker {
		return badRequest(`"role" may only be "worker" (a token that polls task queues and nothing else), or absent (the person's role)`)
	}
	if b.Workspace != nil {
		if err := s.mayBind(c, p, *b.Workspace); err != nil {
			return err
		}
	}
	secret, err := randomSecret()
	if err != nil {
		return err
	}
	tok := tokenPrefix + secret
	t := store.APIToken{ID: uuid.NewString(), UserID: p.User.ID, Name: b.Name, CreatedAt: s.cfg.Clock.Now(), Role: b.Role,
		Workspace: b.Workspace}
	if err := s.cfg.Store.CreateToken(c.Request().Context(), t, hashSecret(tok)); err != nil {
		return err
	}
	setAuditTarget(c, "token:"+t.ID)
	out := map[string]any{"id": t.ID, "name": t.Name, "token": tok, "created_at": t.CreatedAt.UTC()}
	if t.Role != nil {
		out["role"] = *t.Role
	}
	if t.Workspace != nil {
		out["workspace"] = *t.Workspace
	}
	return c.JSON(http.StatusCreated, out)
}

func (s *Server) listTokens(c echo.Context) error {
	p := principalOf(c)
	if p.Bootstrap() {
		return c.JSON(http.StatusOK, map[string]any{"tokens": []store.APIToken{}})
	}
	ts, err := s.cfg.Store.ListTokens(c.Request().Context(), p.User.ID)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, map[string]any{"tokens": ts})
}

func (s *Server) revokeToken(c echo.Context) error {
	p := principalOf(c)
	owner := ""
	if p.Role() != store.RoleAdmin {
		owner = p.User.ID
	}
	if err := s.cfg.Store.RevokeToken(c.Request().Context(), c.Param("id"), owner, s.cfg.Clock.Now()); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}

func (s *Server) listAudit(c echo.Context) error {
	pp, err := pageParams(c)
	if err != nil {
		return err
	}
	f := store.AuditFilter{Actor: c.QueryParam("actor"), Target: c.QueryParam("target"), PageParams: pp, WithServer: principalOf(c).ServerAdmin()}
	for _, v := range []string{f.Actor, f.Target} {
		if !utf8.ValidString(v) || strings.ContainsRune(v, 0) || len(v) > 1000 {
			return badRequest("actor and target must be text (UTF-8, no NUL, at most 1000 bytes)")
		}
	}
	if v := c.QueryParam("since"); v != "" {
		t, err := time.Parse(time.RFC3339Nano, v)
		if err != nil {
			return badRequest("since must be an RFC 3339 time such as 2026-11-25T10:00:00Z")
		}
		f.Since = &t
	}
	es, next, err := s.cfg.Store.AuditPage(c.Request().Context(), f)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, map[string]any{"entries": es, "next_cursor": nextCursor(next)})
}

// NewUser is a user checked as POST /api/v1/users checks one: the email
// lower-cased, the name trimmed, every problem in the error's details.
func NewUser(email, name, role string, groups []string, pw *string) (store.CreateUserParams, error) {
	b := userBody{Email: &email, Name: &name, Role: &role, Groups: &groups, Password: pw}
	if err := b.check(true); err != nil {
		return store.CreateUserParams{}, err
	}
	return store.CreateUserParams{ID: uuid.NewString(), Email: *b.Email, Name: strings.TrimSpace(name), Role: role, Groups: groups}, nil
}

// ProblemsOf lists the problems an error of NewUser carries, one a line.
func ProblemsOf(err error) []string {
	var ae *apiError
	if !errors.As(err, &ae) {
		return []string{err.Error()}
	}
	ps, _ := ae.Details.([]engine.Problem)
	out := make([]string, 0, len(ps))
	for _, p := range ps {
		out = append(out, p.Path+": "+p.Message)
	}
	return out
}
