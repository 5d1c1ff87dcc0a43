package web_test

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/labstack/echo/v4"
	"github.com/stretchr/testify/require"

	"github.com/stitchd/stitchd/internal/contracttest"
	"github.com/stitchd/stitchd/store"
	"github.com/stitchd/stitchd/store/storetest"
)

// permissions is who may call each route, written out independently of
// web/access.go: a letter per role allowed (a admin, e editor, o
// operator, p approver, v viewer, w a worker token), "P" an approver only for runs they are
// part of (others: 404), "*" no credential needed. A route registered
// without a line here fails TestRoleRouteTable.
var permissions = map[string]string{
	"GET /healthz":                 "*",
	"GET /readyz":                  "*",
	"POST /callbacks/:token":       "*",
	"POST /hooks/:slug":            "*",
	"GET /approve/:token":          "*",
	"POST /approve/:token":         "*",
	"GET /*":                       "*",
	"POST /api/v1/auth/login":      "*",
	"GET /openapi.yaml":            "*",
	"GET /api/v1/openapi.yaml":     "*",
	"POST /api/v1/auth/logout":     "aeopv",
	"GET /api/v1/me":               "aeopv",
	"POST /api/v1/tokens":          "aeopv",
	"GET /api/v1/tokens":           "aeopv",
	"DELETE /api/v1/tokens/:id":    "aeopv",
	"GET /api/v1/node-types":       "aeopv",
	"GET /api/v1/approvals":        "aeopv",
	"GET /api/v1/approvals/stream": "aeopv",
	"POST /api/v1/users":           "a",
	"GET /api/v1/users":            "a",
	"GET /api/v1/users/:id":        "a",
	"PATCH /api/v1/users/:id":      "a",
	"DELETE /api/v1/users/:id":     "a",
	"GET /api/v1/audit":            "a",

	"GET /api/v1/workspaces":                         "aeopv",
	"POST /api/v1/workspaces":                        "a",
	"GET /api/v1/workspaces/:slug":                   "aeopv",
	"PATCH /api/v1/workspaces/:slug":                 "a",
	"GET /api/v1/workspaces/:slug/members":           "a",
	"PUT /api/v1/workspaces/:slug/members/:email":    "a",
	"DELETE /api/v1/workspaces/:slug/members/:email": "a",

	"GET /api/v1/auth/providers":     "*",
	"GET /api/v1/auth/oidc/login":    "*",
	"GET /api/v1/auth/oidc/callback": "*",

	"POST /api/v1/flows":                           "ae",
	"GET /api/v1/flows":                            "aeov",
	"GET /api/v1/flows/:id":                        "aeov",
	"GET /api/v1/flows/:id/analytics":              "aeov",
	"PUT /api/v1/flows/:id":                        "ae",
	"DELETE /api/v1/flows/:id":                     "ae",
	"GET /api/v1/flows/:id/versions":               "aeov",
	"GET /api/v1/flows/:id/versions/:number":       "aeov",
	"GET /api/v1/flows/:id/webhook-secret":         "ae",
	"POST /api/v1/flows/:id/webhook-secret/rotate": "ae",
	"DELETE /api/v1/flows/:id/webhook-secret":      "ae",
	"POST /api/v1/flows/:id/triggers":              "ae",
	"GET /api/v1/flows/:id/triggers":               "aeov",
	"GET /api/v1/triggers/:id":                     "aeov",
	"PATCH /api/v1/triggers/:id":                   "ae",
	"DELETE /api/v1/triggers/:id":                  "ae",
	"POST /api/v1/triggers/:id/rotate-secret":      "ae",
	"GET /api/v1/webhook-secret":                   "a",
	"POST /api/v1/webhook-secret/rotate":           "a",
	"POST /api/v1/secrets":                         "ae",
	"GET /api/v1/secrets":                          "ae",
	"PUT /api/v1/secrets/:name":                    "ae",
	"DELETE /api/v1/secrets/:name":                 "ae",

	"POST /api/v1/flows/:id/runs":               "ao",
	"POST /api/v1/flows/:id/nodes/:key/test":    "ae",
	"POST /api/v1/nodes/:key/test":              "ae",
	"POST /api/v1/tasks/poll":                   "aow",
	"GET /api/v1/queues":                        "aeov",
	"POST /api/v1/credentials":                  "ae",
	"GET /api/v1/credentials":                   "ae",
	"GET /api/v1/credentials/:name":             "ae",
	"PUT /api/v1/credentials/:name":             "ae",
	"DELETE /api/v1/credentials/:name":          "ae",
	"GET /api/v1/runs":                          "aeov",
	"GET /api/v1/runs/:id":                      "aeovP",
	"GET /api/v1/runs/:id/events":               "aeovP",
	"GET /api/v1/events":                        "aeov",
	"POST /api/v1/events":                       "ao",
	"POST /api/v1/runs/:id/cancel":              "ao",
	"POST /api/v1/runs/bulk":                    "ao",
	"POST /api/v1/runs/:id/pause":               "ao",
	"POST /api/v1/runs/:id/resume":              "ao",
	"POST /api/v1/runs/:id/migrate":             "ao",
	"POST /api/v1/runs/:id/nodes/:key/skip":     "ao",
	"POST /api/v1/runs/:id/nodes/:key/rerun":    "ao",
	"POST /api/v1/runs/:id/nodes/:key/retry":    "ao",
	"POST /api/v1/runs/:id/nodes/:key/complete": "aP",
	"POST /api/v1/runs/:id/nodes/:key/claim":    "aP",
	"POST /api/v1/runs/:id/nodes/:key/unclaim":  "aoP",
	"POST /api/v1/runs/:id/nodes/:key/reassign": "aoP",
	"POST /api/v1/runs/:id/nodes/:key/delegate": "aP",
	"GET /api/v1/runs/:id/nodes/:key/task":      "aeovP",

	"POST /api/v1/boards":              "ae",
	"GET /api/v1/boards":               "aeov",
	"GET /api/v1/boards/:id":           "aeov",
	"GET /api/v1/boards/:id/analytics": "aeov",
	"POST /api/v1/entities":            "aeo",
	"GET /api/v1/entities/:id":         "aeov",
	"POST /api/v1/entities/:id/move":   "aeo",

	"PATCH /api/v1/boards/:id":                    "ae",
	"DELETE /api/v1/boards/:id":                   "ae",
	"POST /api/v1/boards/:id/sections":            "ae",
	"PATCH /api/v1/boards/:id/sections/:section":  "ae",
	"DELETE /api/v1/boards/:id/sections/:section": "ae",
	"PATCH /api/v1/entities/:id":                  "aeo",
	"DELETE /api/v1/entities/:id":                 "aeo",
}

var roleLetters = map[string]string{"a": store.RoleAdmin, "e": store.RoleEditor, "o": store.RoleOperator,
	"p": store.RoleApprover, "v": store.RoleViewer, "w": store.RoleWorker}

// addUser makes a user of role with a personal token, straight in the
// store, and returns the token.
func addUser(t *testing.T, st *store.Store, role string, groups ...string) (*store.User, string) {
	t.Helper()
	ctx := context.Background()
	u, err := st.CreateUser(ctx, store.CreateUserParams{ID: uuid.NewString(), Email: role + "-" + uuid.NewString()[:8] + "@example.com",
		Name: role, Role: role, Groups: groups, Now: time.Now()})
	require.NoError(t, err)
	tok := "stp_" + uuid.NewString()
	h := sha256.Sum256([]byte(tok))
	require.NoError(t, st.CreateToken(ctx, store.APIToken{ID: uuid.NewString(), UserID: u.ID, Name: "test", CreatedAt: time.Now()}, h[:]))
	return u, tok
}

// addWorkerToken makes a worker token (role "worker") of an admin: it
// acts with the token's role, not the person's.
func addWorkerToken(t *testing.T, st *store.Store) string {
	t.Helper()
	u, _ := addUser(t, st, store.RoleAdmin)
	tok := "stp_" + uuid.NewString()
	h := sha256.Sum256([]byte(tok))
	role := store.RoleWorker
	require.NoError(t, st.CreateToken(context.Background(), store.APIToken{ID: uuid.NewString(), UserID: u.ID, Name: "worker",
		CreatedAt: time.Now(), Role: &role}, h[:]))
	return tok
}

// TestRoleRouteTable walks the router: every route has a line in
// permissions, and each role's request is let through or refused as the
// line says (403 forbidden; 404 for an approver and a run they are not
// part of; public routes answer without a credential).
func TestRoleRouteTable(t *testing.T) {
	st, _ := storetest.IsolatedDB(t)
	srv := newServer(t, st)
	ts := httptest.NewServer(srv.Handler())
	defer ts.Close()
	tokens := map[string]string{}
	for _, r := range store.Roles {
		_, tokens[r] = addUser(t, st, r)
	}
	tokens[store.RoleWorker] = addWorkerToken(t, st)
	// Every answer, each role's refusal included, is one its operation lists.
	client := contracttest.Client(t, ts.Client())
	send := func(method, path, auth string) (int, []byte) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		var body io.Reader
		if method != http.MethodGet && method != http.MethodDelete {
			body = strings.NewReader(`{}`)
		}
		hr, err := http.NewRequestWithContext(ctx, method, ts.URL+path, body)
		require.NoError(t, err)
		if body != nil {
			hr.Header.Set("Content-Type", "application/json")
		}
		if auth != "" {
			hr.Header.Set("Authorization", "Bearer "+auth)
		}
		resp, err := client.Do(hr)
		require.NoError(t, err)
		defer resp.Body.Close()
		if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
			return resp.StatusCode, nil // a stream: its status is the answer
		}
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, b
	}
	seen := 0
	for _, r := range srv.Routes() {
		if r.Method == echo.RouteNotFound {
			continue // the group's catch-all: behind auth, tested by TestAPIRequiresAuth
		}
		key := r.Method + " " + r.Path
		allowed, ok := permissions[key]
		require.True(t, ok, "route %s has no line in the permissions table (and none in web/access.go?)", key)
		seen++
		path := concretePath(r.Path)
		if allowed == "*" {
			// The handler answers (a made-up callback token is its own 401).
			code, b := send(r.Method, path, "")
			// The auth middleware's refusal (the spec, served here, mentions API tokens).
			require.NotContains(t, string(b), "missing or invalid API token", "%s is public", key)
			require.NotEqual(t, http.StatusForbidden, code, "%s is public: %s", key, b)
			continue
		}
		for letter, role := range roleLetters {
			code, b := send(r.Method, path, tokens[role])
			var e struct {
				Error struct {
					Code string `json:"code"`
				} `json:"error"`
			}
			_ = json.Unmarshal(b, &e)
			switch {
			case strings.Contains(allowed, letter):
				// Let past the role rule (a handler may still refuse the
				// credential's kind: a token making a token).
				require.NotEqual(t, "forbidden", e.Error.Code, "%s as %s: %s", key, role, b)
				require.NotEqual(t, http.StatusUnauthorized, code, "%s as %s: %s", key, role, b)
			case letter == "p" && strings.Contains(allowed, "P"):
				require.Equal(t, http.StatusNotFound, code, "%s as %s, not part of the run: %s", key, role, b)
			default:
				require.Equal(t, http.StatusForbidden, code, "%s as %s: %s", key, role, b)
				require.Equal(t, "forbidden", e.Error.Code, "%s as %s", key, role)
			}
		}
	}
	require.Len(t, permissions, seen, "the permissions table names a route that is not registered")
	// A path no route matches is a 404 for every role, not a 403.
	for _, role := range roleLetters {
		code, b := send(http.MethodGet, "/api/v1/no/such/route", tokens[role])
		require.Equal(t, http.StatusNotFound, code, "%s: %s", role, b)
	}
}

// TestAdminTokenIsBootstrap: the admin token acts as admin with no user.
func TestAdminTokenIsBootstrap(t *testing.T) {
	h := newServer(t, storetest.TestTx(t)).Handler()
	rec := do(t, h, req{method: http.MethodGet, path: "/api/v1/me"})
	require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
	require.JSONEq(t, `{"role": "admin", "bootstrap": true, "workspace": "default", "server_admin": true}`, rec.Body.String())
}
