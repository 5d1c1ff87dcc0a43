package web_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stitchd/stitchd/internal/testkit"
	"github.com/stitchd/stitchd/store"
	"github.com/stitchd/stitchd/store/storetest"
	"github.com/stitchd/stitchd/web"
)

// movableClock is a clock the test moves.
type movableClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *movableClock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *movableClock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// peopleServer is a server with cheap password hashing and a movable clock.
func peopleServer(t *testing.T, st *store.Store) (http.Handler, *movableClock) {
	clock := &movableClock{t: time.Date(2026, 11, 25, 10, 0, 0, 0, time.UTC)}
	h := newServer(t, st, func(c *web.Config) {
		c.Clock = clock
		c.PasswordParams = testkit.CheapPasswords()
	}).Handler()
	return h, clock
}

type userJSON struct {
	ID       string   `json:"id"`
	Email    string   `json:"email"`
	Name     string   `json:"name"`
	Role     string   `json:"role"`
	Groups   []string `json:"groups"`
	Disabled bool     `json:"disabled"`
}

// signIn signs in and returns the session cookie and CSRF token.
func signIn(t *testing.T, h http.Handler, email, pw string) (cookie, csrf string) {
	t.Helper()
	rec := do(t, h, req{method: http.MethodPost, path: "/api/v1/auth/login", noAuth: true,
		body: `{"email": "` + email + `", "password": "` + pw + `"}`})
	require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
	out := decode[struct {
		User      userJSON `json:"user"`
		CSRFToken string   `json:"csrf_token"`
	}](t, rec.Body.Bytes())
	require.Equal(t, strings.ToLower(email), out.User.Email)
	require.NotEmpty(t, out.CSRFToken)
	ck := rec.Result().Cookies()
	require.Len(t, ck, 1)
	require.Equal(t, web.SessionCookie, ck[0].Name)
	require.True(t, ck[0].HttpOnly)
	require.Equal(t, http.SameSiteLaxMode, ck[0].SameSite)
	require.False(t, ck[0].Secure, "plain http: not Secure")
	return web.SessionCookie + "=" + ck[0].Value, out.CSRFToken
}

func TestUsersSignInAndSessions(t *testing.T) {
	st := storetest.TestTx(t)
	h, clock := peopleServer(t, st)
	u := decode[userJSON](t, call(t, h, http.StatusCreated, req{method: http.MethodPost, path: "/api/v1/users",
		body: `{"email": "Ana@Example.com", "name": "Ana", "role": "operator", "groups": ["sales"], "password": "correct horse"}`}))
	require.Equal(t, userJSON{ID: u.ID, Email: "ana@example.com", Name: "Ana", Role: "operator", Groups: []string{"sales"}}, u)

	// The same email again, in another case: a conflict.
	call(t, h, http.StatusConflict, req{method: http.MethodPost, path: "/api/v1/users",
		body: `{"email": "ANA@example.com", "name": "Ana 2", "role": "viewer"}`})

	cookie, csrf := signIn(t, h, "ana@example.com", "correct horse")
	me := decode[map[string]any](t, call(t, h, http.StatusOK, req{method: http.MethodGet, path: "/api/v1/me", noAuth: true,
		header: map[string]string{"Cookie": cookie}}))
	require.Equal(t, "ana@example.com", me["email"])
	require.Equal(t, "operator", me["role"])
	require.Equal(t, csrf, me["csrf_token"], "a reloaded page finds its CSRF token")

	// A write through the session needs the CSRF token.
	flowID := createFlowID(t, h)
	for _, bad := range []map[string]string{{"Cookie": cookie}, {"Cookie": cookie, web.CSRFHeader: "wrong"}} {
		rec := do(t, h, req{method: http.MethodPost, path: "/api/v1/flows/" + flowID + "/runs", noAuth: true, body: `{"input": {}}`, header: bad})
		require.Equal(t, http.StatusForbidden, rec.Code, rec.Body.String())
		require.Contains(t, rec.Body.String(), `"csrf"`)
	}
	runs := decode[struct {
		Runs []any `json:"runs"`
	}](t, call(t, h, http.StatusOK, req{method: http.MethodGet, path: "/api/v1/runs"}))
	require.Empty(t, runs.Runs, "a refused write changed nothing")
	call(t, h, http.StatusCreated, req{method: http.MethodPost, path: "/api/v1/flows/" + flowID + "/runs", noAuth: true,
		body: `{"input": {}}`, header: map[string]string{"Cookie": cookie, web.CSRFHeader: csrf}})

	// The session expires with the clock.
	clock.Add(web.DefaultSessionTTL + time.Second)
	rec := do(t, h, req{method: http.MethodGet, path: "/api/v1/me", noAuth: true, header: map[string]string{"Cookie": cookie}})
	require.Equal(t, http.StatusUnauthorized, rec.Code)
	require.Contains(t, rec.Body.String(), "expired")

	// Sign out ends the session at once.
	cookie, csrf = signIn(t, h, "ana@example.com", "correct horse")
	call(t, h, http.StatusNoContent, req{method: http.MethodPost, path: "/api/v1/auth/logout", noAuth: true,
		header: map[string]string{"Cookie": cookie, web.CSRFHeader: csrf}})
	call(t, h, http.StatusUnauthorized, req{method: http.MethodGet, path: "/api/v1/me", noAuth: true, header: map[string]string{"Cookie": cookie}})

	// Disabling ends sessions and refuses sign-in (after the password).
	cookie, _ = signIn(t, h, "ana@example.com", "correct horse")
	call(t, h, http.StatusOK, req{method: http.MethodPatch, path: "/api/v1/users/" + u.ID, body: `{"disabled": true}`})
	call(t, h, http.StatusUnauthorized, req{method: http.MethodGet, path: "/api/v1/me", noAuth: true, header: map[string]string{"Cookie": cookie}})
	rec = do(t, h, req{method: http.MethodPost, path: "/api/v1/auth/login", noAuth: true, body: `{"email": "ana@example.com", "password": "correct horse"}`})
	require.Equal(t, http.StatusForbidden, rec.Code, rec.Body.String())
	require.Contains(t, rec.Body.String(), "account_disabled")
	require.Empty(t, rec.Result().Cookies())
}

// createFlowID saves a one-node flow and returns its id.
func createFlowID(t *testing.T, h http.Handler) string {
	t.Helper()
	out := decode[struct {
		ID string `json:"id"`
	}](t, call(t, h, http.StatusCreated, req{method: http.MethodPost, path: "/api/v1/flows", body: `{"name": "f-` +
		time.Now().Format("150405.000000000") + `", "graph": {"nodes": [{"id": "ux", "type": "UX", "config": {}}], "edges": []}}`}))
	return out.ID
}

func TestSignInRefusals(t *testing.T) {
	st := storetest.TestTx(t)
	h, clock := peopleServer(t, st)
	call(t, h, http.StatusCreated, req{method: http.MethodPost, path: "/api/v1/users",
		body: `{"email": "bo@example.com", "name": "Bo", "role": "viewer", "password": "right password"}`})
	call(t, h, http.StatusCreated, req{method: http.MethodPost, path: "/api/v1/users",
		body: `{"email": "nopw@example.com", "name": "No password", "role": "viewer"}`})
	login := func(email, pw string, hdr map[string]string) (int, string) {
		rec := do(t, h, req{method: http.MethodPost, path: "/api/v1/auth/login", noAuth: true, header: hdr,
			body: `{"email": "` + email + `", "password": "` + pw + `"}`})
		return rec.Code, rec.Body.String()
	}
	// A wrong password, an unknown account and an account without a
	// password get the same answer.
	c1, b1 := login("bo@example.com", "wrong password", nil)
	c2, b2 := login("nobody@example.com", "wrong password", nil)
	c3, b3 := login("nopw@example.com", "wrong password", nil)
	require.Equal(t, http.StatusUnauthorized, c1)
	require.Equal(t, []int{c1, c1}, []int{c2, c3})
	require.Equal(t, b1, b2)
	require.Equal(t, b1, b3)
	require.Contains(t, b1, "wrong email or password")
	c, b := login("", "", nil)
	require.Equal(t, http.StatusBadRequest, c, b)
	// A cross-site form cannot sign a browser in: JSON only.
	rec := do(t, h, req{method: http.MethodPost, path: "/api/v1/auth/login", noAuth: true,
		header: map[string]string{"Content-Type": "text/plain"}, body: `{"email": "bo@example.com", "password": "right password"}`})
	require.Equal(t, http.StatusUnsupportedMediaType, rec.Code, rec.Body.String())
	require.Empty(t, rec.Result().Cookies())

	// Per account: after 10 failures even the right password waits.
	for range 9 {
		c, _ := login("bo@example.com", "wrong password", nil)
		require.Equal(t, http.StatusUnauthorized, c)
	}
	c, b = login("bo@example.com", "right password", nil)
	require.Equal(t, http.StatusTooManyRequests, c, b)
	require.Contains(t, b, "rate_limited")
	clock.Add(16 * time.Minute)
	c, b = login("bo@example.com", "right password", nil)
	require.Equal(t, http.StatusOK, c, b)

	// Per address: 50 failures over many accounts close the address.
	for i := range 50 {
		c, _ := login(fmt.Sprintf("x%d@example.com", i), "wrong password", nil)
		require.Equal(t, http.StatusUnauthorized, c)
	}
	c, _ = login("bo@example.com", "right password", nil)
	require.Equal(t, http.StatusTooManyRequests, c)

	// Bad users: every problem listed, nothing created.
	rec = do(t, h, req{method: http.MethodPost, path: "/api/v1/users",
		body: `{"email": "not an email", "name": "", "role": "boss", "password": "short", "groups": [""]}`})
	require.Equal(t, http.StatusBadRequest, rec.Code)
	for _, p := range []string{`"path":"email"`, `"path":"name"`, `"path":"role"`, `"path":"password"`, `"path":"groups[0]"`} {
		require.Contains(t, rec.Body.String(), p)
	}
	users, err := st.ListUsers(context.Background())
	require.NoError(t, err)
	require.Len(t, users, 2)
	// Paginated: one a page, by email.
	page := decode[struct {
		Users      []userJSON `json:"users"`
		NextCursor *string    `json:"next_cursor"`
	}](t, call(t, h, http.StatusOK, req{method: http.MethodGet, path: "/api/v1/users?limit=1"}))
	require.Len(t, page.Users, 1)
	require.Equal(t, "bo@example.com", page.Users[0].Email)
	require.NotNil(t, page.NextCursor)
	page2 := decode[struct {
		Users      []userJSON `json:"users"`
		NextCursor *string    `json:"next_cursor"`
	}](t, call(t, h, http.StatusOK, req{method: http.MethodGet, path: "/api/v1/users?limit=1&cursor=" + *page.NextCursor}))
	require.Len(t, page2.Users, 1)
	require.Equal(t, "nopw@example.com", page2.Users[0].Email)
	require.Nil(t, page2.NextCursor)
	call(t, h, http.StatusBadRequest, req{method: http.MethodGet, path: "/api/v1/users?cursor=bogus"})
}

func TestPersonalTokens(t *testing.T) {
	st := storetest.TestTx(t)
	h, _ := peopleServer(t, st)
	call(t, h, http.StatusCreated, req{method: http.MethodPost, path: "/api/v1/users",
		body: `{"email": "cy@example.com", "name": "Cy", "role": "viewer", "password": "cy password"}`})
	cookie, csrf := signIn(t, h, "cy@example.com", "cy password")
	sess := map[string]string{"Cookie": cookie, web.CSRFHeader: csrf}
	tok := decode[struct{ ID, Name, Token string }](t, call(t, h, http.StatusCreated, req{method: http.MethodPost,
		path: "/api/v1/tokens", noAuth: true, header: sess, body: `{"name": "laptop"}`}))
	require.True(t, strings.HasPrefix(tok.Token, "stp_"))
	bearer := map[string]string{"Authorization": "Bearer " + tok.Token}
	me := decode[map[string]any](t, call(t, h, http.StatusOK, req{method: http.MethodGet, path: "/api/v1/me", header: bearer}))
	require.Equal(t, "cy@example.com", me["email"])
	require.NotContains(t, me, "csrf_token")
	// The token acts with its user's role: a viewer cannot create flows.
	call(t, h, http.StatusForbidden, req{method: http.MethodPost, path: "/api/v1/flows", header: bearer, body: `{}`})
	list := string(call(t, h, http.StatusOK, req{method: http.MethodGet, path: "/api/v1/tokens", header: bearer}))
	require.Contains(t, list, `"name":"laptop"`)
	require.Contains(t, list, `"last_used_at":"2026-11-25T10:00:00Z"`)
	require.NotContains(t, list, tok.Token, "the token is shown only once")
	// A token does not make tokens (a stolen one would outlive its
	// revocation through them).
	require.Contains(t, string(call(t, h, http.StatusForbidden, req{method: http.MethodPost, path: "/api/v1/tokens", header: bearer,
		body: `{"name": "more"}`})), "session_required")
	// The admin token belongs to no user.
	call(t, h, http.StatusBadRequest, req{method: http.MethodPost, path: "/api/v1/tokens", body: `{"name": "x"}`})
	// A worker token: made by a person, it polls task queues and does
	// nothing else, whatever its person's role.
	wtok := decode[struct{ Token, Role string }](t, call(t, h, http.StatusCreated, req{method: http.MethodPost,
		path: "/api/v1/tokens", noAuth: true, header: sess, body: `{"name": "billing worker", "role": "worker"}`}))
	require.Equal(t, "worker", wtok.Role)
	wbearer := map[string]string{"Authorization": "Bearer " + wtok.Token}
	call(t, h, http.StatusForbidden, req{method: http.MethodGet, path: "/api/v1/me", header: wbearer})
	call(t, h, http.StatusForbidden, req{method: http.MethodGet, path: "/api/v1/runs", header: wbearer})
	call(t, h, http.StatusOK, req{method: http.MethodPost, path: "/api/v1/tasks/poll", header: wbearer, body: `{"queue": "billing", "worker": "w"}`})
	call(t, h, http.StatusBadRequest, req{method: http.MethodPost, path: "/api/v1/tokens", noAuth: true, header: sess,
		body: `{"name": "root", "role": "admin"}`})
	call(t, h, http.StatusBadRequest, req{method: http.MethodPost, path: "/api/v1/tokens", noAuth: true, header: sess, body: `{"name": ""}`})

	call(t, h, http.StatusNoContent, req{method: http.MethodDelete, path: "/api/v1/tokens/" + tok.ID, header: bearer})
	rec := do(t, h, req{method: http.MethodGet, path: "/api/v1/me", header: bearer})
	require.Equal(t, http.StatusUnauthorized, rec.Code)
	require.Contains(t, rec.Body.String(), "revoked")
	call(t, h, http.StatusNotFound, req{method: http.MethodDelete, path: "/api/v1/tokens/" + tok.ID})
}

func TestAuditTrail(t *testing.T) {
	st := storetest.TestTx(t)
	h, _ := peopleServer(t, st)
	u := decode[userJSON](t, call(t, h, http.StatusCreated, req{method: http.MethodPost, path: "/api/v1/users",
		body: `{"email": "op@example.com", "name": "Op", "role": "operator", "password": "op password"}`}))
	flowID := createFlowID(t, h)
	cookie, csrf := signIn(t, h, "op@example.com", "op password")
	run := decode[struct{ ID string }](t, call(t, h, http.StatusCreated, req{method: http.MethodPost,
		path: "/api/v1/flows/" + flowID + "/runs", noAuth: true, body: `{"input": {}}`,
		header: map[string]string{"Cookie": cookie, web.CSRFHeader: csrf, "X-Request-Id": "req-42"}}))
	call(t, h, http.StatusOK, req{method: http.MethodPost, path: "/api/v1/runs/" + run.ID + "/cancel", noAuth: true,
		header: map[string]string{"Cookie": cookie, web.CSRFHeader: csrf}})
	// A refused write is not audited.
	call(t, h, http.StatusConflict, req{method: http.MethodPost, path: "/api/v1/runs/" + run.ID + "/cancel", noAuth: true,
		header: map[string]string{"Cookie": cookie, web.CSRFHeader: csrf}})

	page := decode[struct {
		Entries []struct {
			Actor     string         `json:"actor"`
			Action    string         `json:"action"`
			Target    string         `json:"target"`
			RequestID string         `json:"request_id"`
			Status    int            `json:"status"`
			Details   map[string]any `json:"details"`
		} `json:"entries"`
		NextCursor *string `json:"next_cursor"`
	}](t, call(t, h, http.StatusOK, req{method: http.MethodGet, path: "/api/v1/audit?target=run:" + run.ID}))
	require.Len(t, page.Entries, 2)
	require.Equal(t, "op@example.com", page.Entries[0].Actor)
	require.Equal(t, "POST /api/v1/runs/:id/cancel", page.Entries[0].Action)
	require.Equal(t, "POST /api/v1/flows/:id/runs", page.Entries[1].Action)
	require.Equal(t, "req-42", page.Entries[1].RequestID)
	require.Equal(t, http.StatusCreated, page.Entries[1].Status)

	// A bare id finds the same entries.
	bare := string(call(t, h, http.StatusOK, req{method: http.MethodGet, path: "/api/v1/audit?target=" + run.ID}))
	require.Contains(t, bare, "POST /api/v1/runs/:id/cancel")
	require.Contains(t, bare, `"time":"`)
	byActor := string(call(t, h, http.StatusOK, req{method: http.MethodGet, path: "/api/v1/audit?actor=op@example.com"}))
	require.Contains(t, byActor, "POST /api/v1/auth/login")
	require.Contains(t, byActor, "user:"+u.ID)
	admin := string(call(t, h, http.StatusOK, req{method: http.MethodGet, path: "/api/v1/audit?actor=admin&limit=1"}))
	require.Contains(t, admin, `"next_cursor":"`)
	call(t, h, http.StatusBadRequest, req{method: http.MethodGet, path: "/api/v1/audit?since=yesterday"})
	call(t, h, http.StatusBadRequest, req{method: http.MethodGet, path: "/api/v1/audit?cursor=zz"})
	call(t, h, http.StatusBadRequest, req{method: http.MethodGet, path: "/api/v1/audit?actor=a%00b"})
}
