package web_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/stitchd/stitchd/internal/secretbox"
	"github.com/stitchd/stitchd/store"
	"github.com/stitchd/stitchd/store/storetest"
	"github.com/stitchd/stitchd/web"
)

// wsObjects are one workspace's objects, made through the API.
type wsObjects struct {
	flow, run, board, entity, trigger string
}

// inWorkspace is the header that makes a request act in ws, with auth as
// its credential ("": the admin token).
func inWorkspace(ws, auth string) map[string]string {
	h := map[string]string{web.WorkspaceHeader: ws}
	if auth != "" {
		h["Authorization"] = "Bearer " + auth
	}
	return h
}

// makeWorkspaceObjects makes, as the admin token in workspace ws, a board
// with an entity, a flow whose approval waits (a run of it), a webhook and
// an event trigger, a secret API_KEY and a credential CRM.
func makeWorkspaceObjects(t *testing.T, h http.Handler, ws string) wsObjects {
	t.Helper()
	hd := inWorkspace(ws, "")
	var o wsObjects
	o.board = decode[struct{ ID string }](t, call(t, h, http.StatusCreated, req{method: "POST", path: "/api/v1/boards", header: hd,
		body: `{"name":"Deals","sections":[{"id":"todo","name":"To do"}]}`})).ID
	o.entity = decode[struct{ ID string }](t, call(t, h, http.StatusCreated, req{method: "POST", path: "/api/v1/entities", header: hd,
		body: `{"board_id":"` + o.board + `","type":"deal","name":"Acme","section_id":"todo"}`})).ID
	o.flow = decode[flowResp](t, call(t, h, http.StatusCreated, req{method: "POST", path: "/api/v1/flows", header: hd,
		body: flowBody("Onboarding", graphUX, "v1")})).ID
	o.run = decode[runResp](t, call(t, h, http.StatusCreated, req{method: "POST", path: "/api/v1/flows/" + o.flow + "/runs", header: hd,
		body: `{"input":{"n":1}}`})).ID
	o.trigger = decode[struct{ ID string }](t, call(t, h, http.StatusCreated, req{method: "POST", path: "/api/v1/flows/" + o.flow + "/triggers",
		header: hd, body: `{"slug":"` + ws + `-hook"}`})).ID
	call(t, h, http.StatusCreated, req{method: "POST", path: "/api/v1/flows/" + o.flow + "/triggers", header: hd,
		body: `{"kind":"event","name":"invoice.paid"}`})
	call(t, h, http.StatusCreated, req{method: "POST", path: "/api/v1/secrets", header: hd, body: `{"name":"API_KEY","value":"` + ws + `-value"}`})
	call(t, h, http.StatusCreated, req{method: "POST", path: "/api/v1/credentials", header: hd,
		body: `{"name":"CRM","type":"bearer","data":{"token":"t-` + ws + `"},"allowed_hosts":["crm.example.com"]}`})
	return o
}

// workspaceServer is a server with secrets on.
func workspaceServer(t *testing.T, st *store.Store) *web.Server {
	t.Helper()
	box, err := secretbox.New(bytes.Repeat([]byte{7}, secretbox.KeySize))
	require.NoError(t, err)
	return newServer(t, st, func(c *web.Config) { c.Secrets = box })
}

// member makes a user (a viewer of the default workspace) with role in
// workspace ws, and returns their token.
func member(t *testing.T, st *store.Store, h http.Handler, ws, role string) (*store.User, string) {
	t.Helper()
	u, tok := addUser(t, st, store.RoleViewer)
	call(t, h, http.StatusCreated, req{method: "PUT", path: "/api/v1/workspaces/" + ws + "/members/" + u.Email, body: `{"role":"` + role + `"}`})
	return u, tok
}

// TestWorkspaceIsolation: an admin of sales reaches nothing of finance —
// every route naming one of finance's objects answers 404, route by route
// (a route added later with a path parameter fails here until it is
// walked); finance's objects are in none of sales' lists; an event posted
// in sales wakes and starts nothing of finance; the same names live in
// both.
func TestWorkspaceIsolation(t *testing.T) {
	t.Parallel()
	st, _ := storetest.IsolatedDB(t)
	srv := workspaceServer(t, st)
	h := srv.Handler()
	for _, ws := range []string{"sales", "finance"} {
		call(t, h, http.StatusCreated, req{method: "POST", path: "/api/v1/workspaces", body: `{"slug":"` + ws + `","name":"` + ws + `"}`})
	}
	fin := makeWorkspaceObjects(t, h, "finance")
	u, tok := member(t, st, h, "sales", store.RoleAdmin)
	sales := inWorkspace("sales", tok)

	// Every route with a path parameter, given finance's objects.
	bodies := map[string]string{
		"PUT /api/v1/secrets/:name":                   `{"value":"x"}`,
		"PUT /api/v1/credentials/:name":               `{"type":"bearer","data":{"token":"x"},"allowed_hosts":["crm.example.com"]}`,
		"PUT /api/v1/workspaces/:slug/members/:email": `{"role":"viewer"}`,
	}
	notWorkspaced := map[string]string{
		"/api/v1/tokens/:id":      "a person's own tokens",
		"/api/v1/users/:id":       "users are the server's (server admins only)",
		"/api/v1/nodes/:key/test": "a step of a flow not saved yet: the body is the flow, nothing stored is named",
	}
	walked := 0
	for _, r := range srv.Routes() {
		if !strings.HasPrefix(r.Path, "/api/v1/") || !strings.Contains(r.Path, ":") {
			continue
		}
		if _, ok := notWorkspaced[r.Path]; ok {
			continue
		}
		key := r.Method + " " + r.Path
		path := finObjectPath(t, r.Path, fin, u.Email)
		body, ok := bodies[key]
		if !ok {
			body = "{}"
		}
		rec := do(t, h, req{method: r.Method, path: path, body: body, header: sales})
		require.Equal(t, http.StatusNotFound, rec.Code, "%s as sales' admin on finance's object: %s", key, rec.Body)
		walked++
	}
	require.Greater(t, walked, 40, "the routes with path parameters were walked")

	// Lists show nothing of finance.
	for _, path := range []string{"/api/v1/flows", "/api/v1/runs", "/api/v1/boards", "/api/v1/secrets", "/api/v1/credentials",
		"/api/v1/approvals", "/api/v1/queues", "/api/v1/audit", "/api/v1/workspaces"} {
		b := string(call(t, h, http.StatusOK, req{method: "GET", path: path, header: sales}))
		for _, id := range []string{fin.flow, fin.run, fin.board, "API_KEY", "CRM", "finance"} {
			require.NotContains(t, b, id, "GET %s in sales", path)
		}
	}
	// An event posted in sales reaches no trigger of finance.
	ev := decode[struct {
		Started []string `json:"started"`
	}](t, call(t, h, http.StatusAccepted, req{method: "POST", path: "/api/v1/events", header: sales,
		body: `{"name":"invoice.paid","key":"1"}`}))
	require.Empty(t, ev.Started, "finance's event trigger did not fire from sales")
	// Nor is an entity of finance's board made from sales.
	requireError(t, http.StatusBadRequest, "invalid_request", do(t, h, req{method: "POST", path: "/api/v1/entities", header: sales,
		body: `{"board_id":"` + fin.board + `","type":"deal","name":"Mole"}`}))

	// The same names in both: sales' own flow "Onboarding", secret API_KEY
	// and credential CRM, each distinct from finance's.
	mine := makeWorkspaceObjects(t, h, "sales")
	require.NotEqual(t, fin.flow, mine.flow)
	// Finance's entity or board named in a body answers as an id that
	// does not exist: the answer tells nothing of finance's (it was a 422
	// naming the entity's board).
	unknown := uuid.NewString()
	for _, c := range []struct{ path, body string }{
		{"/api/v1/flows/" + mine.flow + "/runs", `{"entity_id":"%s"}`},
		{"/api/v1/flows/" + mine.flow + "/triggers", `{"slug":"probe-%.8s","entity":{"board_id":"%[1]s","type":"deal"}}`},
	} {
		theirs, none := fin.entity, unknown
		if strings.Contains(c.body, "board_id") {
			theirs = fin.board
		}
		got := requireError(t, http.StatusBadRequest, "invalid_request",
			do(t, h, req{method: "POST", path: c.path, header: sales, body: fmt.Sprintf(c.body, theirs)}))
		want := requireError(t, http.StatusBadRequest, "invalid_request",
			do(t, h, req{method: "POST", path: c.path, header: sales, body: fmt.Sprintf(c.body, none)}))
		require.Equal(t, strings.ReplaceAll(want.Error.Message, none, "ID"), strings.ReplaceAll(got.Error.Message, theirs, "ID"), c.path)
		if theirs == fin.entity {
			require.NotContains(t, got.Error.Message, fin.board, "the entity's board is not told")
		}
	}
	for _, ws := range []string{"sales", "finance"} {
		flows := decode[struct {
			Flows []flowResp `json:"flows"`
		}](t, call(t, h, http.StatusOK, req{method: "GET", path: "/api/v1/flows", header: inWorkspace(ws, "")}))
		require.Len(t, flows.Flows, 1, ws)
		require.Equal(t, "Onboarding", flows.Flows[0].Name)
		secrets := string(call(t, h, http.StatusOK, req{method: "GET", path: "/api/v1/secrets", header: inWorkspace(ws, "")}))
		require.Equal(t, 1, strings.Count(secrets, `"API_KEY"`), ws)
	}
	values, err := st.RevealSecrets(context.Background(), nil, "sales", []string{"API_KEY"})
	require.Error(t, err, "no box: the store refuses; the values are checked below")
	require.Nil(t, values)
	// The default workspace has none of them.
	require.NotContains(t, string(call(t, h, http.StatusOK, req{method: "GET", path: "/api/v1/flows"})), "Onboarding")
}

// finObjectPath fills a route's path parameters with finance's objects.
func finObjectPath(t *testing.T, route string, o wsObjects, email string) string {
	t.Helper()
	parts := strings.Split(route, "/")
	for i, p := range parts {
		if !strings.HasPrefix(p, ":") {
			continue
		}
		switch {
		case p == ":id" && parts[i-1] == "flows":
			parts[i] = o.flow
		case p == ":id" && parts[i-1] == "runs":
			parts[i] = o.run
		case p == ":id" && parts[i-1] == "boards":
			parts[i] = o.board
		case p == ":id" && parts[i-1] == "entities":
			parts[i] = o.entity
		case p == ":id" && parts[i-1] == "triggers":
			parts[i] = o.trigger
		case p == ":key":
			parts[i] = "approve"
		case p == ":number":
			parts[i] = "1"
		case p == ":section":
			parts[i] = "todo"
		case p == ":name" && parts[i-1] == "secrets":
			parts[i] = "API_KEY"
		case p == ":name" && parts[i-1] == "credentials":
			parts[i] = "CRM"
		case p == ":slug" && parts[i-1] == "workspaces":
			parts[i] = "finance"
		case p == ":email":
			parts[i] = email
		default:
			t.Fatalf("route %s: the isolation walk does not know what %s of finance is (add it to finObjectPath)", route, p)
		}
	}
	return strings.Join(parts, "/")
}

// TestWorkspaceSecretsStayApart: a secret of one name in two workspaces
// keeps two values, each opened only as its workspace's (sealed with the
// workspace's slug), and a credential likewise.
func TestWorkspaceSecretsStayApart(t *testing.T) {
	t.Parallel()
	st, _ := storetest.IsolatedDB(t)
	box, err := secretbox.New(bytes.Repeat([]byte{7}, secretbox.KeySize))
	require.NoError(t, err)
	h := newServer(t, st, func(c *web.Config) { c.Secrets = box }).Handler()
	call(t, h, http.StatusCreated, req{method: "POST", path: "/api/v1/workspaces", body: `{"slug":"sales","name":"Sales"}`})
	for _, ws := range []string{"sales", "default"} {
		call(t, h, http.StatusCreated, req{method: "POST", path: "/api/v1/secrets", header: inWorkspace(ws, ""),
			body: `{"name":"API_KEY","value":"` + ws + `-value"}`})
		call(t, h, http.StatusCreated, req{method: "POST", path: "/api/v1/credentials", header: inWorkspace(ws, ""),
			body: `{"name":"CRM","type":"bearer","data":{"token":"t-` + ws + `"},"allowed_hosts":["crm.example.com"]}`})
	}
	ctx := context.Background()
	for _, ws := range []string{"sales", "default"} {
		v, err := st.RevealSecrets(ctx, box, ws, []string{"API_KEY"})
		require.NoError(t, err)
		require.Equal(t, ws+"-value", v["API_KEY"])
		c, err := (&store.CredentialReader{Store: st, Box: box}).Credential(ctx, ws, "", "CRM")
		require.NoError(t, err)
		require.Equal(t, "t-"+ws, c.Data.Token)
	}
	// A value moved to the other workspace's row does not open there: the
	// seal is bound to its workspace.
	require.NoError(t, st.Gorm().Exec(`UPDATE secrets s SET ciphertext = o.ciphertext, nonce = o.nonce
		FROM secrets o WHERE s.workspace = 'default' AND o.workspace = 'sales' AND s.name = o.name`).Error)
	_, err = st.RevealSecrets(ctx, box, "default", []string{"API_KEY"})
	require.Error(t, err, "sales' sealed value does not open as the default workspace's")
}

// TestWorkspaceMembershipAndTokens: a person acts with their role in the
// workspace the header names; in one they are no member of, every
// workspace route is 404 while their own account still answers; a token
// bound to sales refuses another workspace in the header (403) and acts in
// sales without it; a workspace admin manages members but not the server.
func TestWorkspaceMembershipAndTokens(t *testing.T) {
	t.Parallel()
	st, _ := storetest.IsolatedDB(t)
	h := workspaceServer(t, st).Handler()
	call(t, h, http.StatusCreated, req{method: "POST", path: "/api/v1/workspaces", body: `{"slug":"sales","name":"Sales"}`})
	call(t, h, http.StatusCreated, req{method: "POST", path: "/api/v1/workspaces", body: `{"slug":"finance","name":"Finance"}`})
	requireError(t, http.StatusConflict, "conflict", do(t, h, req{method: "POST", path: "/api/v1/workspaces", body: `{"slug":"sales","name":"Again"}`}))
	requireError(t, http.StatusBadRequest, "invalid_request", do(t, h, req{method: "POST", path: "/api/v1/workspaces", body: `{"slug":"Sales!","name":"x"}`}))

	u, tok := member(t, st, h, "sales", store.RoleEditor)
	me := decode[map[string]any](t, call(t, h, http.StatusOK, req{method: "GET", path: "/api/v1/me", header: inWorkspace("sales", tok)}))
	require.Equal(t, "editor", me["role"])
	require.Equal(t, "sales", me["workspace"])
	me = decode[map[string]any](t, call(t, h, http.StatusOK, req{method: "GET", path: "/api/v1/me", header: inWorkspace("", tok)}))
	require.Equal(t, "viewer", me["role"], "the default workspace's role")
	// An editor of sales makes flows there; a viewer of default may not.
	call(t, h, http.StatusCreated, req{method: "POST", path: "/api/v1/flows", header: inWorkspace("sales", tok), body: flowBody("f", graphUX, "")})
	requireError(t, http.StatusForbidden, "forbidden", do(t, h, req{method: "POST", path: "/api/v1/flows", header: inWorkspace("", tok),
		body: flowBody("f", graphUX, "")}))
	// Finance: no member — 404 on its routes, their own account answers.
	requireError(t, http.StatusNotFound, "not_found", do(t, h, req{method: "GET", path: "/api/v1/flows", header: inWorkspace("finance", tok)}))
	requireError(t, http.StatusNotFound, "not_found", do(t, h, req{method: "GET", path: "/api/v1/flows", header: inWorkspace("nowhere", tok)}))
	me = decode[map[string]any](t, call(t, h, http.StatusOK, req{method: "GET", path: "/api/v1/me", header: inWorkspace("finance", tok)}))
	require.Empty(t, me["role"])
	ws := decode[struct {
		Workspaces []store.Workspace `json:"workspaces"`
	}](t, call(t, h, http.StatusOK, req{method: "GET", path: "/api/v1/workspaces", header: inWorkspace("", tok)}))
	require.Len(t, ws.Workspaces, 2)
	require.Equal(t, "default", ws.Workspaces[0].Slug)
	require.Equal(t, "sales", ws.Workspaces[1].Slug)
	require.Equal(t, "editor", ws.Workspaces[1].Role)
	requireError(t, http.StatusBadRequest, "invalid_request", do(t, h, req{method: "GET", path: "/api/v1/flows", header: inWorkspace("NOT A SLUG", tok)}))

	// A token bound to sales.
	bound := "stp_" + uuid.NewString()
	sum := sha256.Sum256([]byte(bound))
	sales := "sales"
	require.NoError(t, st.CreateToken(context.Background(), store.APIToken{ID: uuid.NewString(), UserID: u.ID, Name: "bound",
		CreatedAt: time.Now(), Workspace: &sales}, sum[:]))
	requireError(t, http.StatusForbidden, "workspace_mismatch", do(t, h, req{method: "GET", path: "/api/v1/flows", header: inWorkspace("default", bound)}))
	// A header that is not a slug is a 400 for every token.
	requireError(t, http.StatusBadRequest, "invalid_request", do(t, h, req{method: "GET", path: "/api/v1/flows", header: inWorkspace("NOT A SLUG", bound)}))
	// The routes about the caller answer in any workspace; a bound token's
	// in its own.
	boundMe := decode[struct {
		Workspace string `json:"workspace"`
	}](t, call(t, h, http.StatusOK, req{method: "GET", path: "/api/v1/me", header: inWorkspace("default", bound)}))
	require.Equal(t, "sales", boundMe.Workspace)
	call(t, h, http.StatusOK, req{method: "GET", path: "/api/v1/workspaces", header: inWorkspace("default", bound)})
	flows := decode[struct {
		Flows []flowResp `json:"flows"`
	}](t, call(t, h, http.StatusOK, req{method: "GET", path: "/api/v1/flows", header: map[string]string{"Authorization": "Bearer " + bound}}))
	require.Len(t, flows.Flows, 1, "without the header, a bound token acts in its workspace")

	// A workspace's admin adds members but is no server admin.
	_, admTok := member(t, st, h, "sales", store.RoleAdmin)
	other, _ := addUser(t, st, store.RoleViewer)
	call(t, h, http.StatusCreated, req{method: "PUT", path: "/api/v1/workspaces/sales/members/" + other.Email, header: inWorkspace("", admTok),
		body: `{"role":"approver"}`})
	call(t, h, http.StatusOK, req{method: "PUT", path: "/api/v1/workspaces/sales/members/" + other.Email, header: inWorkspace("", admTok),
		body: `{"role":"operator"}`})
	requireError(t, http.StatusNotFound, "not_found", do(t, h, req{method: "PUT", path: "/api/v1/workspaces/finance/members/" + other.Email,
		header: inWorkspace("", admTok), body: `{"role":"operator"}`}))
	requireError(t, http.StatusForbidden, "forbidden", do(t, h, req{method: "GET", path: "/api/v1/users", header: inWorkspace("sales", admTok)}))
	requireError(t, http.StatusForbidden, "forbidden", do(t, h, req{method: "POST", path: "/api/v1/workspaces", header: inWorkspace("sales", admTok),
		body: `{"slug":"mine","name":"Mine"}`}))
	requireError(t, http.StatusForbidden, "forbidden", do(t, h, req{method: "PATCH", path: "/api/v1/workspaces/sales", header: inWorkspace("sales", admTok),
		body: `{"max_running_runs":1000}`}))
	members := decode[struct {
		Members []store.Member `json:"members"`
	}](t, call(t, h, http.StatusOK, req{method: "GET", path: "/api/v1/workspaces/sales/members", header: inWorkspace("", admTok)}))
	require.Len(t, members.Members, 3)
	// The email may come escaped, as a browser sends it.
	call(t, h, http.StatusNoContent, req{method: "DELETE", path: "/api/v1/workspaces/sales/members/" + strings.Replace(other.Email, "@", "%40", 1),
		header: inWorkspace("", admTok)})
	requireError(t, http.StatusNotFound, "not_found", do(t, h, req{method: "DELETE", path: "/api/v1/workspaces/sales/members/" + other.Email,
		header: inWorkspace("", admTok)}))
	// The audit of sales holds its member changes, not the default's.
	audit := string(call(t, h, http.StatusOK, req{method: "GET", path: "/api/v1/audit", header: inWorkspace("sales", admTok)}))
	require.Contains(t, audit, "workspace:sales")
	require.NotContains(t, string(call(t, h, http.StatusOK, req{method: "GET", path: "/api/v1/audit"})), `"workspace":"sales"`)
}

// TestWorkspaceLimits: a workspace's max_running_runs and
// max_starts_per_second refuse starts past them with 429 and Retry-After,
// counted in the database, so two servers on one database (each with its
// own connections) share them;
// another workspace is not limited; removing a limit lifts it.
func TestWorkspaceLimits(t *testing.T) {
	t.Parallel()
	st, url := storetest.IsolatedDB(t)
	// Two servers, each with its own engine and connection pool, as two
	// processes have.
	st2, err := store.Open(context.Background(), url, store.Options{MaxOpenConns: 8})
	require.NoError(t, err)
	t.Cleanup(func() { _ = st2.Close() })
	one, two := workspaceServer(t, st).Handler(), workspaceServer(t, st2).Handler()
	call(t, one, http.StatusCreated, req{method: "POST", path: "/api/v1/workspaces", body: `{"slug":"sales","name":"Sales","max_running_runs":3}`})
	hd := inWorkspace("sales", "")
	flow := decode[flowResp](t, call(t, one, http.StatusCreated, req{method: "POST", path: "/api/v1/flows", header: hd,
		body: flowBody("waits", graphUX, "")})).ID
	// Eight starts at once, four through each server: three run.
	codes := make(chan *struct {
		code  int
		after string
	}, 8)
	for i := range 8 {
		h := one
		if i%2 == 1 {
			h = two
		}
		go func() {
			rec := do(t, h, req{method: "POST", path: "/api/v1/flows/" + flow + "/runs", header: hd, body: `{}`})
			codes <- &struct {
				code  int
				after string
			}{rec.Code, rec.Header().Get("Retry-After")}
		}()
	}
	started, refused := 0, 0
	for range 8 {
		c := <-codes
		switch c.code {
		case http.StatusCreated:
			started++
		case http.StatusTooManyRequests:
			refused++
			require.Equal(t, "1", c.after)
		default:
			t.Fatalf("a start answered %d", c.code)
		}
	}
	require.Equal(t, 3, started)
	require.Equal(t, 5, refused)
	// The default workspace is not limited by sales'.
	other := createFlow(t, one, graphUX)
	for range 4 {
		startRun(t, two, other.ID, `{}`, nil)
	}
	// A cancelled run frees its place.
	runs := decode[struct {
		Runs []runResp `json:"runs"`
	}](t, call(t, one, http.StatusOK, req{method: "GET", path: "/api/v1/runs?status=running", header: hd}))
	require.Len(t, runs.Runs, 3)
	call(t, one, http.StatusOK, req{method: "POST", path: "/api/v1/runs/" + runs.Runs[0].ID + "/cancel", header: hd, body: `{}`})
	call(t, two, http.StatusCreated, req{method: "POST", path: "/api/v1/flows/" + flow + "/runs", header: hd, body: `{}`})
	requireError(t, http.StatusTooManyRequests, "rate_limited", do(t, one, req{method: "POST", path: "/api/v1/flows/" + flow + "/runs", header: hd, body: `{}`}))

	// A rate of one start a minute: the bucket holds one.
	call(t, one, http.StatusOK, req{method: "PATCH", path: "/api/v1/workspaces/sales", body: `{"max_running_runs":null,"max_starts_per_second":0.0166}`})
	call(t, two, http.StatusCreated, req{method: "POST", path: "/api/v1/flows/" + flow + "/runs", header: hd, body: `{}`})
	rec := do(t, one, req{method: "POST", path: "/api/v1/flows/" + flow + "/runs", header: hd, body: `{}`})
	requireError(t, http.StatusTooManyRequests, "rate_limited", rec)
	require.Contains(t, []string{"59", "60", "61"}, rec.Header().Get("Retry-After"))
	// An idempotent repeat of a start that ran gets its run back though
	// the bucket is empty.
	call(t, one, http.StatusOK, req{method: "PATCH", path: "/api/v1/workspaces/sales", body: `{"max_starts_per_second":0.0166}`})
	keyed := map[string]string{web.WorkspaceHeader: "sales", "Idempotency-Key": "order-1"}
	first := startRun(t, one, flow, `{}`, keyed)
	again := startRun(t, two, flow, `{}`, keyed)
	require.Equal(t, first.ID, again.ID)
	requireError(t, http.StatusTooManyRequests, "rate_limited", do(t, two, req{method: "POST", path: "/api/v1/flows/" + flow + "/runs", header: hd, body: `{}`}))
	// Without limits, starts go on.
	call(t, one, http.StatusOK, req{method: "PATCH", path: "/api/v1/workspaces/sales", body: `{"max_starts_per_second":null}`})
	for range 3 {
		call(t, two, http.StatusCreated, req{method: "POST", path: "/api/v1/flows/" + flow + "/runs", header: hd, body: `{}`})
	}
}

// TestBoundTokenMadeThroughTheAPI: a person signed in makes a token bound
// to a workspace they belong to (and not to one they do not); it acts
// there without the header.
func TestBoundTokenMadeThroughTheAPI(t *testing.T) {
	t.Parallel()
	st, _ := storetest.IsolatedDB(t)
	h, _ := peopleServer(t, st)
	call(t, h, http.StatusCreated, req{method: "POST", path: "/api/v1/workspaces", body: `{"slug":"sales","name":"Sales"}`})
	call(t, h, http.StatusCreated, req{method: "POST", path: "/api/v1/workspaces", body: `{"slug":"finance","name":"Finance"}`})
	call(t, h, http.StatusCreated, req{method: "POST", path: "/api/v1/users",
		body: `{"email":"ana@example.com","name":"Ana","role":"viewer","password":"a long enough password"}`})
	call(t, h, http.StatusCreated, req{method: "PUT", path: "/api/v1/workspaces/sales/members/ana@example.com", body: `{"role":"editor"}`})
	call(t, h, http.StatusCreated, req{method: "POST", path: "/api/v1/flows", header: inWorkspace("sales", ""), body: flowBody("s", graphUX, "")})
	cookie, csrf := signIn(t, h, "ana@example.com", "a long enough password")
	session := map[string]string{"Cookie": cookie, "X-CSRF-Token": csrf, "Authorization": ""}
	requireError(t, http.StatusNotFound, "not_found", do(t, h, req{method: "POST", path: "/api/v1/tokens", header: session,
		body: `{"name":"t","workspace":"finance"}`}))
	requireError(t, http.StatusNotFound, "not_found", do(t, h, req{method: "POST", path: "/api/v1/tokens", header: session,
		body: `{"name":"t","workspace":"nowhere"}`}))
	tok := decode[struct {
		Token     string `json:"token"`
		Workspace string `json:"workspace"`
	}](t, call(t, h, http.StatusCreated, req{method: "POST", path: "/api/v1/tokens", header: session, body: `{"name":"t","workspace":"sales"}`}))
	require.Equal(t, "sales", tok.Workspace)
	flows := decode[struct {
		Flows []flowResp `json:"flows"`
	}](t, call(t, h, http.StatusOK, req{method: "GET", path: "/api/v1/flows", header: map[string]string{"Authorization": "Bearer " + tok.Token}}))
	require.Len(t, flows.Flows, 1, "the bound token acts in sales")
	requireError(t, http.StatusForbidden, "workspace_mismatch", do(t, h, req{method: "GET", path: "/api/v1/flows",
		header: inWorkspace("default", tok.Token)}))
}
