package web_test

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	_ "github.com/jackc/pgx/v5/stdlib"
	"github.com/labstack/echo/v4"
	"github.com/stretchr/testify/require"

	"github.com/stitchd/stitchd/callbacks"
	"github.com/stitchd/stitchd/engine"
	"github.com/stitchd/stitchd/handlers"
	"github.com/stitchd/stitchd/internal/contracttest"
	"github.com/stitchd/stitchd/store"
	"github.com/stitchd/stitchd/store/localpg"
	"github.com/stitchd/stitchd/store/storetest"
	"github.com/stitchd/stitchd/web"
)

func TestMain(m *testing.M) { storetest.Main(m) }

const token = "secret"

// newServer builds a real server (engine, handlers, keyring) on st.
func newServer(t *testing.T, st *store.Store, mod ...func(*web.Config)) *web.Server {
	t.Helper()
	ring, err := callbacks.NewKeyring(callbacks.Key{ID: "k1", Secret: bytes.Repeat([]byte{0x5a}, 32)})
	require.NoError(t, err)
	eng, err := engine.New(engine.Config{
		Store:  st,
		Types:  handlers.Types(handlers.Options{}),
		Minter: &callbacks.Minter{Keys: ring, BaseURL: "http://x", Clock: engine.SystemClock{}},
		NewID:  uuid.NewString,
		Logger: slog.New(slog.DiscardHandler),
	})
	require.NoError(t, err)
	require.NoError(t, eng.Start(context.Background()))
	t.Cleanup(eng.Stop)
	cfg := web.Config{Store: st, Engine: eng, Keys: ring, Hub: web.NewHub(), AuthToken: token, NodeTypes: handlers.Types(handlers.Options{}),
		Logger: slog.New(slog.DiscardHandler)}
	for _, m := range mod {
		m(&cfg)
	}
	return web.New(cfg)
}

// req describes one request; Auth defaults to the right bearer token.
// Each request do sends, and its answer, is checked against openapi.yaml
// (internal/contracttest): a request the contract refuses sent on purpose,
// and accepted, sets contracttest.InvalidRequestHeader.
type req struct {
	method, path, body string
	header             map[string]string
	noAuth             bool
}

func do(t *testing.T, h http.Handler, r req) *httptest.ResponseRecorder {
	t.Helper()
	var body io.Reader
	if r.body != "" {
		body = strings.NewReader(r.body)
	}
	// Not t.Context(): Cleanup functions check the stored state with do,
	// after the test's context is done.
	hr := httptest.NewRequestWithContext(context.Background(), r.method, r.path, body)
	if r.body != "" {
		hr.Header.Set("Content-Type", "application/json")
	}
	if !r.noAuth {
		hr.Header.Set("Authorization", "Bearer "+token)
	}
	for k, v := range r.header {
		hr.Header.Set(k, v)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, hr)
	contracttest.Check(t, contracttest.Exchange{Request: hr, RequestBody: []byte(r.body), Status: rec.Code,
		Header: rec.Header(), Body: rec.Body.Bytes(), Partial: strings.HasPrefix(rec.Header().Get("Content-Type"), "text/event-stream")})
	return rec
}

// call sends r and requires status want; it returns the body.
func call(t *testing.T, h http.Handler, want int, r req) []byte {
	t.Helper()
	rec := do(t, h, r)
	require.Equal(t, want, rec.Code, "%s %s: %s", r.method, r.path, rec.Body.String())
	return rec.Body.Bytes()
}

func decode[T any](t *testing.T, b []byte) T {
	t.Helper()
	var v T
	require.NoError(t, json.Unmarshal(b, &v), string(b))
	return v
}

type problem struct {
	Code    string `json:"code"`
	NodeID  string `json:"node_id"`
	EdgeID  string `json:"edge_id"`
	Path    string `json:"path"`
	Message string `json:"message"`
}

type errorBody struct {
	Error struct {
		Code    string    `json:"code"`
		Message string    `json:"message"`
		Details []problem `json:"details"`
	} `json:"error"`
}

// requireError checks the contract's error shape and returns it.
func requireError(t *testing.T, status int, code string, rec *httptest.ResponseRecorder) errorBody {
	t.Helper()
	require.Equal(t, status, rec.Code, rec.Body.String())
	require.Contains(t, rec.Header().Get("Content-Type"), "application/json")
	var raw map[string]map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &raw), rec.Body.String())
	require.Contains(t, raw, "error", rec.Body.String())
	require.Len(t, raw, 1, "the error body has only the error object: %s", rec.Body.String())
	e := decode[errorBody](t, rec.Body.Bytes())
	require.Equal(t, code, e.Error.Code, rec.Body.String())
	require.NotEmpty(t, e.Error.Message, rec.Body.String())
	return e
}

func isUUID(s string) bool {
	_, err := uuid.Parse(s)
	return err == nil && len(s) == 36
}

// requireUTC checks an RFC 3339 UTC timestamp.
func requireUTC(t *testing.T, s string) time.Time {
	t.Helper()
	ts, err := time.Parse(time.RFC3339Nano, s)
	require.NoError(t, err, "timestamp %q", s)
	require.True(t, strings.HasSuffix(s, "Z"), "timestamp %q is not UTC", s)
	return ts
}

// ---------------------------------------------------------------- auth

// documentedRoutes are the /api/v1 routes of openapi.yaml implemented so far;
// the server must register at least these.
var documentedRoutes = []string{
	"POST /api/v1/flows", "GET /api/v1/flows", "GET /api/v1/flows/:id", "PUT /api/v1/flows/:id",
	"DELETE /api/v1/flows/:id", "GET /api/v1/flows/:id/versions", "GET /api/v1/flows/:id/versions/:number",
	"POST /api/v1/flows/:id/runs", "GET /api/v1/runs", "GET /api/v1/runs/:id", "POST /api/v1/runs/:id/cancel",
	"POST /api/v1/runs/:id/nodes/:key/retry", "POST /api/v1/runs/:id/nodes/:key/complete",
	"GET /api/v1/runs/:id/events", "GET /api/v1/events", "GET /api/v1/approvals",
}

// concretePath fills a route's parameters: ":id" with a random UUID, any
// other parameter or wildcard with "x".
func concretePath(p string) string {
	parts := strings.Split(p, "/")
	for i, s := range parts {
		switch {
		case s == ":id":
			parts[i] = uuid.NewString()
		case s == ":slug" && i > 0 && parts[i-1] == "workspaces":
			parts[i] = "default" // every server has it
		case strings.HasPrefix(s, ":"), s == "*":
			parts[i] = "x"
		}
	}
	return strings.Join(parts, "/")
}

// TestAPIRequiresAuth sends every registered /api/v1 route a request
// without credentials or with wrong ones: a route added without the auth
// middleware fails here.
func TestAPIRequiresAuth(t *testing.T) {
	t.Parallel()
	st, _ := storetest.IsolatedDB(t)
	srv := newServer(t, st)
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(ts.Close)

	registered := map[string]bool{}
	type route struct{ method, path string }
	var routes []route
	for _, r := range srv.Routes() {
		if r.Path != "/api/v1" && !strings.HasPrefix(r.Path, "/api/v1/") || r.Path == "/api/v1/auth/login" ||
			r.Path == "/api/v1/auth/providers" || strings.HasPrefix(r.Path, "/api/v1/auth/oidc/") ||
			r.Path == "/api/v1/openapi.yaml" {
			continue // signing in is how a credential is got, the contract how a client is (TestRoleRouteTable: public)
		}
		m := r.Method
		if m == echo.RouteNotFound {
			m = http.MethodGet // the group's catch-all
		}
		registered[r.Method+" "+r.Path] = true
		routes = append(routes, route{m, r.Path})
	}
	for _, d := range documentedRoutes {
		require.True(t, registered[d], "route %s is not registered", d)
	}
	// A path no route matches is behind the same middleware.
	routes = append(routes, route{http.MethodGet, "/api/v1/no/such/route"})

	credentials := []struct {
		name   string
		header string // "" = no Authorization header
	}{
		{"no header", ""},
		{"unknown personal token", "Bearer stp_nope"},
		{"wrong token", "Bearer wrong"},
		{"token with a suffix", "Bearer " + token + "x"},
		{"token prefix", "Bearer " + token[:3]},
		{"empty bearer", "Bearer "},
		{"no scheme", token},
		{"basic scheme", "Basic " + token},
	}
	client := ts.Client()
	send := func(ctx context.Context, rt route, path, auth string) *http.Response {
		var body io.Reader
		if rt.method == http.MethodPost || rt.method == http.MethodPut {
			body = strings.NewReader(`{}`)
		}
		hr, err := http.NewRequestWithContext(ctx, rt.method, ts.URL+path, body)
		require.NoError(t, err)
		if body != nil {
			hr.Header.Set("Content-Type", "application/json")
		}
		if auth != "" {
			hr.Header.Set("Authorization", auth)
		}
		resp, err := client.Do(hr)
		require.NoError(t, err)
		return resp
	}
	for _, rt := range routes {
		path := concretePath(rt.path)
		for _, c := range credentials {
			resp := send(context.Background(), rt, path, c.header)
			b, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			require.NoError(t, err)
			require.Equal(t, http.StatusUnauthorized, resp.StatusCode, "%s %s (%s): %s", rt.method, rt.path, c.name, b)
			var e errorBody
			require.NoError(t, json.Unmarshal(b, &e), "%s %s: %s", rt.method, rt.path, b)
			require.Equal(t, "unauthorized", e.Error.Code, "%s %s: %s", rt.method, rt.path, b)
			require.NotEmpty(t, e.Error.Message, "%s %s", rt.method, rt.path)
		}
		// The right token gets past the middleware (streams answer with
		// their headers; the request is then abandoned).
		ctx, cancel := context.WithCancel(context.Background())
		resp := send(ctx, rt, path, "Bearer "+token)
		require.NotEqual(t, http.StatusUnauthorized, resp.StatusCode, "%s %s with the right token", rt.method, rt.path)
		resp.Body.Close()
		cancel()
	}
}

// ---------------------------------------------------------------- flows

// graphA is a valid flow using unknown visual fields (kept) and a
// lower-case node type (matched case-insensitively).
const (
	graphA = `{"nodes":[` +
		`{"id":"fetch","type":"worker","position":{"x":0,"y":0},"selected":true,"style":{"width":120},` +
		`"data":{"label":"Fetch","webhookUrl":"http://worker.local/fetch"}},` +
		`{"id":"approve","type":"UX","position":{"x":200,"y":0},"data":{"label":"Approve","prompt":"Ship it?"}}],` +
		`"edges":[{"id":"e1","source":"fetch","target":"approve","animated":true}]}`
	graphAReordered = `{
	  "edges": [ {"animated": true, "target": "approve", "source": "fetch", "id": "e1"} ],
	  "nodes": [
	    {"style": {"width": 120}, "selected": true, "data": {"webhookUrl": "http://worker.local/fetch", "label": "Fetch"},
	     "position": {"y": 0, "x": 0}, "type": "worker", "id": "fetch"},
	    {"position": {"y": 0, "x": 200}, "type": "UX", "id": "approve", "data": {"prompt": "Ship it?", "label": "Approve"}}
	  ]
	}`
	graphAMoved = `{"nodes":[` +
		`{"id":"fetch","type":"worker","position":{"x":0,"y":0},"selected":true,"style":{"width":120},` +
		`"data":{"label":"Fetch","webhookUrl":"http://worker.local/fetch"}},` +
		`{"id":"approve","type":"UX","position":{"x":260,"y":40},"data":{"label":"Approve","prompt":"Ship it?"}}],` +
		`"edges":[{"id":"e1","source":"fetch","target":"approve","animated":true}]}`
	// graphTwoProblems has an unknown node type (nodes[1]) and an edge to a
	// node that does not exist (edges[1]).
	graphTwoProblems = `{"nodes":[` +
		`{"id":"fetch","type":"Worker","data":{"webhookUrl":"http://worker.local/fetch"}},` +
		`{"id":"mystery","type":"Teleporter","data":{}}],` +
		`"edges":[{"id":"e1","source":"fetch","target":"mystery"},{"id":"e2","source":"fetch","target":"ghost"}]}`
	graphUX = `{"nodes":[{"id":"approve","type":"UX","data":{"label":"Approve the batch","prompt":"Send these leads to sales?"}}],"edges":[]}`
)

type versionRef struct {
	ID     string `json:"id"`
	Number int    `json:"number"`
}

type flowResp struct {
	ID             string          `json:"id"`
	Name           string          `json:"name"`
	BoardID        *string         `json:"board_id"`
	Version        versionRef      `json:"version"`
	Warnings       []problem       `json:"warnings"`
	Graph          json.RawMessage `json:"graph"`
	CreatedAt      string          `json:"created_at"`
	UpdatedAt      string          `json:"updated_at"`
	VersionCreated *bool           `json:"version_created"`
}

func flowBody(name, graph, message string) string {
	b, err := json.Marshal(map[string]any{"name": name, "graph": json.RawMessage(graph), "message": message})
	if err != nil {
		panic(fmt.Sprintf("flowBody: the graph is not JSON: %v", err))
	}
	return string(b)
}

func createFlow(t *testing.T, h http.Handler, graph string) flowResp {
	t.Helper()
	b := call(t, h, http.StatusCreated, req{method: "POST", path: "/api/v1/flows", body: flowBody("flow", graph, "v1")})
	return decode[flowResp](t, b)
}

func TestFlowsAPI(t *testing.T) {
	t.Parallel()
	st, _ := storetest.IsolatedDB(t)
	h := newServer(t, st).Handler()

	// Create.
	b := call(t, h, http.StatusCreated, req{method: "POST", path: "/api/v1/flows", body: flowBody("Leads", graphA, "first")})
	var shape map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(b, &shape))
	for _, k := range []string{"id", "name", "board_id", "version", "warnings", "created_at", "updated_at", "graph"} {
		require.Contains(t, shape, k, "flow field %s", k)
	}
	require.JSONEq(t, `null`, string(shape["board_id"]))
	require.JSONEq(t, `[]`, string(shape["warnings"]))
	f := decode[flowResp](t, b)
	require.True(t, isUUID(f.ID), f.ID)
	require.Equal(t, "Leads", f.Name)
	require.Equal(t, 1, f.Version.Number)
	require.True(t, isUUID(f.Version.ID), f.Version.ID)
	require.JSONEq(t, graphA, string(f.Graph), "the visual graph is kept, unknown fields included")
	requireUTC(t, f.CreatedAt)
	requireUTC(t, f.UpdatedAt)
	base := "/api/v1/flows/" + f.ID

	// List and get.
	list := decode[struct {
		Flows []flowResp `json:"flows"`
	}](t, call(t, h, http.StatusOK, req{method: "GET", path: "/api/v1/flows"}))
	require.Len(t, list.Flows, 1)
	require.Equal(t, f.ID, list.Flows[0].ID)
	require.Equal(t, f.Version, list.Flows[0].Version)
	require.Equal(t, "Leads", list.Flows[0].Name)

	got := decode[flowResp](t, call(t, h, http.StatusOK, req{method: "GET", path: base}))
	require.Equal(t, f.ID, got.ID)
	require.Equal(t, f.Version, got.Version)
	require.JSONEq(t, graphA, string(got.Graph))

	// The same graph with reordered keys: no new version.
	up := decode[flowResp](t, call(t, h, http.StatusOK, req{method: "PUT", path: base,
		body: `{"graph":` + graphAReordered + `,"message":"noop"}`}))
	require.Equal(t, f.Version, up.Version, "an unchanged graph creates no version")
	require.Equal(t, "Leads", up.Name)
	if up.VersionCreated != nil {
		require.False(t, *up.VersionCreated)
	}

	// A moved node: version 2.
	up = decode[flowResp](t, call(t, h, http.StatusOK, req{method: "PUT", path: base, body: `{"graph":` + graphAMoved + `,"message":"moved"}`}))
	require.Equal(t, 2, up.Version.Number)
	require.NotEqual(t, f.Version.ID, up.Version.ID)
	require.JSONEq(t, graphAMoved, string(up.Graph))
	if up.VersionCreated != nil {
		require.True(t, *up.VersionCreated)
	}
	v2 := up.Version

	// Name only.
	up = decode[flowResp](t, call(t, h, http.StatusOK, req{method: "PUT", path: base, body: `{"name":"Renamed"}`}))
	require.Equal(t, "Renamed", up.Name)
	require.Equal(t, v2, up.Version)
	require.JSONEq(t, graphAMoved, string(up.Graph))
	got = decode[flowResp](t, call(t, h, http.StatusOK, req{method: "GET", path: base}))
	require.Equal(t, "Renamed", got.Name)
	require.Equal(t, v2, got.Version)

	// Versions, newest first.
	type versionItem struct {
		ID        string `json:"id"`
		Number    int    `json:"number"`
		Message   string `json:"message"`
		CreatedAt string `json:"created_at"`
	}
	vs := decode[struct {
		Versions []versionItem `json:"versions"`
	}](t, call(t, h, http.StatusOK, req{method: "GET", path: base + "/versions"}))
	require.Len(t, vs.Versions, 2)
	require.Equal(t, []int{2, 1}, []int{vs.Versions[0].Number, vs.Versions[1].Number})
	require.Equal(t, []string{v2.ID, f.Version.ID}, []string{vs.Versions[0].ID, vs.Versions[1].ID})
	require.Equal(t, []string{"moved", "first"}, []string{vs.Versions[0].Message, vs.Versions[1].Message})
	for _, v := range vs.Versions {
		requireUTC(t, v.CreatedAt)
	}

	type versionFull struct {
		ID             string          `json:"id"`
		Number         int             `json:"number"`
		Message        string          `json:"message"`
		Graph          json.RawMessage `json:"graph"`
		ExecutionGraph json.RawMessage `json:"execution_graph"`
		CreatedAt      string          `json:"created_at"`
	}
	v1 := decode[versionFull](t, call(t, h, http.StatusOK, req{method: "GET", path: base + "/versions/1"}))
	require.Equal(t, f.Version.ID, v1.ID)
	require.Equal(t, 1, v1.Number)
	require.Equal(t, "first", v1.Message)
	require.JSONEq(t, graphA, string(v1.Graph))
	requireUTC(t, v1.CreatedAt)
	var eg engine.ExecutionGraph
	require.NoError(t, json.Unmarshal(v1.ExecutionGraph, &eg), string(v1.ExecutionGraph))
	require.Equal(t, []string{"fetch"}, eg.EntryNodes)
	require.Equal(t, []string{"approve"}, eg.TerminalNodes)
	require.Equal(t, engine.NodeTypeWorker, eg.Nodes["fetch"].Type, "type matched case-insensitively")
	require.Equal(t, []string{"approve"}, eg.Adjacency["fetch"])
	vv2 := decode[versionFull](t, call(t, h, http.StatusOK, req{method: "GET", path: base + "/versions/2"}))
	require.JSONEq(t, graphAMoved, string(vv2.Graph))
	for _, n := range []string{"3", "0", "-1", "two"} {
		requireError(t, http.StatusNotFound, "not_found", do(t, h, req{method: "GET", path: base + "/versions/" + n}))
	}

	// Delete.
	rec := do(t, h, req{method: "DELETE", path: base})
	require.Equal(t, http.StatusNoContent, rec.Code, rec.Body.String())
	require.Empty(t, rec.Body.String())
	requireError(t, http.StatusNotFound, "not_found", do(t, h, req{method: "GET", path: base}))
	requireError(t, http.StatusNotFound, "not_found", do(t, h, req{method: "DELETE", path: base}))
	requireError(t, http.StatusNotFound, "not_found", do(t, h, req{method: "GET", path: base + "/versions"}))
	requireError(t, http.StatusNotFound, "not_found", do(t, h, req{method: "PUT", path: base, body: `{"name":"x"}`}))
	requireError(t, http.StatusNotFound, "not_found", do(t, h, req{method: "POST", path: base + "/runs", body: `{}`}))
	list = decode[struct {
		Flows []flowResp `json:"flows"`
	}](t, call(t, h, http.StatusOK, req{method: "GET", path: "/api/v1/flows"}))
	require.NotNil(t, list.Flows)
	require.Empty(t, list.Flows)
}

func TestInvalidGraphListsEveryProblem(t *testing.T) {
	t.Parallel()
	h := newServer(t, storetest.TestTx(t)).Handler()
	check := func(rec *httptest.ResponseRecorder) {
		t.Helper()
		e := requireError(t, http.StatusUnprocessableEntity, "invalid_graph", rec)
		for _, d := range e.Error.Details {
			require.NotEmpty(t, d.Path, "every detail has a path: %+v", d)
			require.NotEmpty(t, d.Message, "every detail has a message: %+v", d)
		}
		type key struct{ nodeID, edgeID, path string }
		got := map[key]bool{}
		for _, d := range e.Error.Details {
			got[key{d.NodeID, d.EdgeID, d.Path}] = true
		}
		require.True(t, got[key{"mystery", "", "nodes[1].type"}], "unknown type missing from %+v", e.Error.Details)
		require.True(t, got[key{"", "e2", "edges[1].target"}], "missing node missing from %+v", e.Error.Details)
		require.Len(t, e.Error.Details, 2, "exactly the two problems: %+v", e.Error.Details)
	}
	check(do(t, h, req{method: "POST", path: "/api/v1/flows", body: flowBody("bad", graphTwoProblems, "")}))

	// An update with an invalid graph is rejected the same way and changes
	// nothing.
	f := createFlow(t, h, graphUX)
	check(do(t, h, req{method: "PUT", path: "/api/v1/flows/" + f.ID, body: `{"name":"new name","graph":` + graphTwoProblems + `}`}))
	got := decode[flowResp](t, call(t, h, http.StatusOK, req{method: "GET", path: "/api/v1/flows/" + f.ID}))
	require.Equal(t, f.Version, got.Version)
	require.Equal(t, f.Name, got.Name)
}

func TestAPIRequestErrors(t *testing.T) {
	t.Parallel()
	st, _ := storetest.IsolatedDB(t)
	h := newServer(t, st).Handler()
	f := createFlow(t, h, graphUX)
	fp := "/api/v1/flows/" + f.ID
	unknown := uuid.NewString()
	tests := []struct {
		name   string
		r      req
		status int
		code   string
	}{
		{"create: malformed JSON", req{method: "POST", path: "/api/v1/flows", body: `{"name": "x", "graph": {`}, 400, "invalid_request"},
		{"create: not an object", req{method: "POST", path: "/api/v1/flows", body: `"flow"`}, 400, "invalid_request"},
		{"create: empty body", req{method: "POST", path: "/api/v1/flows"}, 400, "invalid_request"},
		{"create: no name", req{method: "POST", path: "/api/v1/flows", body: `{"graph":` + graphUX + `}`}, 400, "invalid_request"},
		{"create: blank name", req{method: "POST", path: "/api/v1/flows", body: flowBody("  ", graphUX, "")}, 400, "invalid_request"},
		{"create: no graph", req{method: "POST", path: "/api/v1/flows", body: `{"name":"x"}`}, 400, "invalid_request"},
		{"create: graph not an object", req{method: "POST", path: "/api/v1/flows", body: `{"name":"x","graph":[1,2]}`}, 400, "invalid_request"},
		{"create: board_id not a uuid", req{method: "POST", path: "/api/v1/flows", body: `{"name":"x","board_id":"b1","graph":` + graphUX + `}`}, 400, "invalid_request"},
		{"create: empty graph", req{method: "POST", path: "/api/v1/flows", body: `{"name":"x","graph":{"nodes":[],"edges":[]}}`}, 422, "invalid_graph"},
		{"update: malformed JSON", req{method: "PUT", path: fp, body: `{"name":`}, 400, "invalid_request"},
		{"update: empty name", req{method: "PUT", path: fp, body: `{"name":""}`}, 400, "invalid_request"},
		{"get: unknown uuid", req{method: "GET", path: "/api/v1/flows/" + unknown}, 404, "not_found"},
		{"get: not a uuid", req{method: "GET", path: "/api/v1/flows/not-a-uuid"}, 404, "not_found"},
		{"get: uuid without dashes", req{method: "GET", path: "/api/v1/flows/" + strings.ReplaceAll(unknown, "-", "")}, 404, "not_found"},
		{"update: unknown uuid", req{method: "PUT", path: "/api/v1/flows/" + unknown, body: `{"name":"x"}`}, 404, "not_found"},
		{"update: not a uuid", req{method: "PUT", path: "/api/v1/flows/123", body: `{"name":"x"}`}, 404, "not_found"},
		{"delete: unknown uuid", req{method: "DELETE", path: "/api/v1/flows/" + unknown}, 404, "not_found"},
		{"delete: not a uuid", req{method: "DELETE", path: "/api/v1/flows/abc"}, 404, "not_found"},
		{"versions: unknown uuid", req{method: "GET", path: "/api/v1/flows/" + unknown + "/versions"}, 404, "not_found"},
		{"versions: not a uuid", req{method: "GET", path: "/api/v1/flows/abc/versions/1"}, 404, "not_found"},
		{"start run: unknown flow", req{method: "POST", path: "/api/v1/flows/" + unknown + "/runs", body: `{}`}, 404, "not_found"},
		{"start run: not a uuid", req{method: "POST", path: "/api/v1/flows/abc/runs", body: `{}`}, 404, "not_found"},
		{"start run: malformed JSON", req{method: "POST", path: fp + "/runs", body: `{"input":`}, 400, "invalid_request"},
		{"start run: unknown version", req{method: "POST", path: fp + "/runs", body: `{"version":9}`}, 400, "invalid_request"},
		{"start run: entity_id not a uuid", req{method: "POST", path: fp + "/runs", body: `{"entity_id":"e"}`}, 400, "invalid_request"},
		{"run: unknown uuid", req{method: "GET", path: "/api/v1/runs/" + unknown}, 404, "not_found"},
		{"run: not a uuid", req{method: "GET", path: "/api/v1/runs/xyz"}, 404, "not_found"},
		{"cancel: unknown run", req{method: "POST", path: "/api/v1/runs/" + unknown + "/cancel"}, 404, "not_found"},
		{"retry: unknown run", req{method: "POST", path: "/api/v1/runs/" + unknown + "/nodes/a/retry"}, 404, "not_found"},
		{"complete: unknown run", req{method: "POST", path: "/api/v1/runs/" + unknown + "/nodes/a/complete", body: `{"status":"completed"}`}, 404, "not_found"},
		{"events: unknown run", req{method: "GET", path: "/api/v1/runs/" + unknown + "/events"}, 404, "not_found"},
		{"list runs: invalid status", req{method: "GET", path: "/api/v1/runs?status=finished"}, 400, "invalid_request"},
		{"list runs: limit 0", req{method: "GET", path: "/api/v1/runs?limit=0"}, 400, "invalid_request"},
		{"list runs: limit too big", req{method: "GET", path: "/api/v1/runs?limit=501"}, 400, "invalid_request"},
		{"list runs: limit not a number", req{method: "GET", path: "/api/v1/runs?limit=ten"}, 400, "invalid_request"},
		{"list runs: flow_id not a uuid", req{method: "GET", path: "/api/v1/runs?flow_id=abc"}, 400, "invalid_request"},
		{"list runs: bad cursor", req{method: "GET", path: "/api/v1/runs?cursor=%21%21%21"}, 400, "invalid_request"},
		{"complete: malformed JSON", req{method: "POST", path: "/api/v1/runs/" + unknown + "/nodes/a/complete", body: `{"status":`}, 400, "invalid_request"},
		{"start run: Idempotency-Key too long", req{method: "POST", path: fp + "/runs", body: `{}`,
			header: map[string]string{"Idempotency-Key": strings.Repeat("k", 256)}}, 400, "invalid_request"},
		{"create: over the default 1 MiB limit", req{method: "POST", path: "/api/v1/flows",
			body: flowBody(strings.Repeat("n", 1<<20), graphUX, "")}, 413, "payload_too_large"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			requireError(t, tt.status, tt.code, do(t, h, tt.r))
		})
	}
}

// chunked hides a body's length so the request is sent without
// Content-Length.
type chunked struct{ r io.Reader }

func (c chunked) Read(p []byte) (int, error) { return c.r.Read(p) }

func TestBodyLimit(t *testing.T) {
	t.Parallel()
	const limit = 1024
	st, _ := storetest.IsolatedDB(t)
	h := newServer(t, st, func(c *web.Config) { c.BodyLimit = limit }).Handler()
	f := createFlow(t, h, graphUX) // a small body still passes
	big := flowBody(strings.Repeat("n", 2*limit), graphUX, "")
	require.Greater(t, len(big), limit)
	bigInput := `{"input":{"pad":"` + strings.Repeat("x", 2*limit) + `"}}`

	tests := []struct {
		name, method, path, body string
		chunked                  bool
	}{
		{"create with Content-Length", "POST", "/api/v1/flows", big, false},
		{"create chunked", "POST", "/api/v1/flows", big, true},
		{"update with Content-Length", "PUT", "/api/v1/flows/" + f.ID, big, false},
		{"update chunked", "PUT", "/api/v1/flows/" + f.ID, big, true},
		{"start run with Content-Length", "POST", "/api/v1/flows/" + f.ID + "/runs", bigInput, false},
		{"start run chunked", "POST", "/api/v1/flows/" + f.ID + "/runs", bigInput, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var body io.Reader = strings.NewReader(tt.body)
			if tt.chunked {
				body = chunked{body}
			}
			hr := httptest.NewRequestWithContext(t.Context(), tt.method, tt.path, body)
			if tt.chunked {
				hr.ContentLength = -1
			}
			hr.Header.Set("Authorization", "Bearer "+token)
			hr.Header.Set("Content-Type", "application/json")
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, hr)
			requireError(t, http.StatusRequestEntityTooLarge, "payload_too_large", rec)
		})
	}
	t.Cleanup(func() {
		// Nothing over the limit was stored.
		got := decode[flowResp](t, call(t, h, http.StatusOK, req{method: "GET", path: "/api/v1/flows/" + f.ID}))
		require.Equal(t, "flow", got.Name)
		runs := decode[struct {
			Runs []json.RawMessage `json:"runs"`
		}](t, call(t, h, http.StatusOK, req{method: "GET", path: "/api/v1/runs"}))
		require.Empty(t, runs.Runs)
	})
}

func TestFlowWarningsAndSeveralTerminals(t *testing.T) {
	t.Parallel()
	st, _ := storetest.IsolatedDB(t)
	h := newServer(t, st).Handler()
	// Two unconnected UX nodes: valid, with an isolated-node warning each.
	f := createFlow(t, h, `{"nodes":[{"id":"a","type":"UX","data":{}},{"id":"b","type":"ux","data":{}}],"edges":[]}`)
	require.Len(t, f.Warnings, 2, "%+v", f.Warnings)
	warned := map[string]bool{}
	for _, w := range f.Warnings {
		require.NotEmpty(t, w.Code)
		require.NotEmpty(t, w.Path)
		require.NotEmpty(t, w.Message)
		warned[w.NodeID] = true
	}
	require.Equal(t, map[string]bool{"a": true, "b": true}, warned)
	got := decode[flowResp](t, call(t, h, http.StatusOK, req{method: "GET", path: "/api/v1/flows/" + f.ID}))
	require.Equal(t, f.Warnings, got.Warnings)

	run := startRun(t, h, f.ID, `{"input":{"v":1}}`, nil)
	require.Equal(t, "waiting_for_user", run.Nodes["a"].Status)
	require.Equal(t, "waiting_for_user", run.Nodes["b"].Status)
	rp := "/api/v1/runs/" + run.ID
	mid := decode[runResp](t, call(t, h, http.StatusOK, req{method: "POST", path: rp + "/nodes/a/complete",
		body: `{"status":"completed","output":{"from":"a"}}`}))
	require.Equal(t, "running", mid.Status, "b is still waiting")
	require.JSONEq(t, `null`, string(mid.Output))
	done := decode[runResp](t, call(t, h, http.StatusOK, req{method: "POST", path: rp + "/nodes/b/complete",
		body: `{"status":"completed","output":[1,2]}`}))
	require.Equal(t, "completed", done.Status)
	// Several terminals: keyed by node id. A UX node's output is its input
	// with the person's decision (their answer in it) added.
	var out map[string]struct {
		V        int `json:"v"`
		Decision struct {
			Outcome string          `json:"outcome"`
			Answer  json.RawMessage `json:"answer"`
		} `json:"decision"`
	}
	require.NoError(t, json.Unmarshal(done.Output, &out))
	require.Len(t, out, 2)
	require.Equal(t, 1, out["a"].V)
	require.Equal(t, "approve", out["a"].Decision.Outcome)
	require.JSONEq(t, `{"from":"a"}`, string(out["a"].Decision.Answer))
	require.JSONEq(t, `[1,2]`, string(out["b"].Decision.Answer))
}

// ---------------------------------------------------------------- runs

type nodeResp struct {
	Key        string          `json:"key"`
	NodeID     string          `json:"node_id"`
	Type       string          `json:"type"`
	Index      []int           `json:"index"`
	Status     string          `json:"status"`
	Input      json.RawMessage `json:"input"`
	Output     json.RawMessage `json:"output"`
	Error      *string         `json:"error"`
	Attempt    int             `json:"attempt"`
	StartedAt  *string         `json:"started_at"`
	FinishedAt *string         `json:"finished_at"`
}

type runResp struct {
	ID            string              `json:"id"`
	FlowID        string              `json:"flow_id"`
	FlowVersionID string              `json:"flow_version_id"`
	Status        string              `json:"status"`
	Input         json.RawMessage     `json:"input"`
	Output        json.RawMessage     `json:"output"`
	Error         *string             `json:"error"`
	EntityID      *string             `json:"entity_id"`
	CreatedAt     string              `json:"created_at"`
	FinishedAt    *string             `json:"finished_at"`
	Nodes         map[string]nodeResp `json:"nodes"`
}

func startRun(t *testing.T, h http.Handler, flowID, body string, header map[string]string) runResp {
	t.Helper()
	return decode[runResp](t, call(t, h, http.StatusCreated, req{method: "POST", path: "/api/v1/flows/" + flowID + "/runs", body: body, header: header}))
}

type approval struct {
	RunID        string          `json:"run_id"`
	Key          string          `json:"key"`
	NodeID       string          `json:"node_id"`
	FlowID       string          `json:"flow_id"`
	Label        string          `json:"label"`
	Prompt       string          `json:"prompt"`
	Input        json.RawMessage `json:"input"`
	Entity       json.RawMessage `json:"entity"`
	WaitingSince string          `json:"waiting_since"`
}

func approvals(t *testing.T, h http.Handler) []approval {
	t.Helper()
	b := call(t, h, http.StatusOK, req{method: "GET", path: "/api/v1/approvals"})
	var raw map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(b, &raw))
	require.NotEqual(t, "null", string(raw["approvals"]), "approvals is a list, never null")
	return decode[struct {
		Approvals []approval `json:"approvals"`
	}](t, b).Approvals
}

func TestRunUXLifecycle(t *testing.T) {
	t.Parallel()
	st, _ := storetest.IsolatedDB(t)
	h := newServer(t, st).Handler()
	f := createFlow(t, h, graphUX)
	require.Empty(t, approvals(t, h))

	b := call(t, h, http.StatusCreated, req{method: "POST", path: "/api/v1/flows/" + f.ID + "/runs", body: `{"input":{"leads":[1,2]}}`})
	var shape map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(b, &shape))
	for _, k := range []string{"id", "flow_id", "flow_version_id", "status", "input", "output", "error", "entity_id",
		"created_at", "finished_at", "nodes"} {
		require.Contains(t, shape, k, "run field %s", k)
	}
	run := decode[runResp](t, b)
	require.True(t, isUUID(run.ID))
	require.Equal(t, f.ID, run.FlowID)
	require.Equal(t, f.Version.ID, run.FlowVersionID)
	require.Equal(t, "running", run.Status)
	require.JSONEq(t, `{"leads":[1,2]}`, string(run.Input))
	require.JSONEq(t, `null`, string(run.Output))
	require.Nil(t, run.Error)
	require.Nil(t, run.EntityID)
	require.Nil(t, run.FinishedAt)
	requireUTC(t, run.CreatedAt)
	require.Len(t, run.Nodes, 1)
	n := run.Nodes["approve"]
	require.Equal(t, "approve", n.Key)
	require.Equal(t, "approve", n.NodeID)
	require.Equal(t, "UX", n.Type)
	require.NotNil(t, n.Index)
	require.Empty(t, n.Index)
	require.Equal(t, "waiting_for_user", n.Status)
	require.JSONEq(t, `{"leads":[1,2]}`, string(n.Input), "an entry node gets the run input")
	require.Equal(t, 1, n.Attempt)
	require.NotNil(t, n.StartedAt)
	require.Nil(t, n.FinishedAt)

	as := approvals(t, h)
	require.Len(t, as, 1)
	a := as[0]
	require.Equal(t, run.ID, a.RunID)
	require.Equal(t, "approve", a.Key)
	require.Equal(t, "approve", a.NodeID)
	require.Equal(t, f.ID, a.FlowID)
	require.Equal(t, "Approve the batch", a.Label)
	require.Equal(t, "Send these leads to sales?", a.Prompt)
	require.JSONEq(t, `{"leads":[1,2]}`, string(a.Input))
	require.JSONEq(t, `null`, string(a.Entity))
	requireUTC(t, a.WaitingSince)

	rp := "/api/v1/runs/" + run.ID
	done := decode[runResp](t, call(t, h, http.StatusOK, req{method: "POST", path: rp + "/nodes/approve/complete",
		body: `{"status":"completed","output":{"ok":true}}`}))
	require.Equal(t, "completed", done.Status)
	var out struct {
		Leads    []int `json:"leads"`
		Decision struct {
			Outcome string          `json:"outcome"`
			Answer  json.RawMessage `json:"answer"`
			By      string          `json:"by"`
			At      time.Time       `json:"at"`
		} `json:"decision"`
	}
	require.NoError(t, json.Unmarshal(done.Output, &out), "the single terminal node's output")
	require.Equal(t, []int{1, 2}, out.Leads, "a UX node's output keeps its input")
	require.Equal(t, "approve", out.Decision.Outcome, "status completed is approve")
	require.JSONEq(t, `{"ok":true}`, string(out.Decision.Answer))
	require.Equal(t, "admin", out.Decision.By)
	require.False(t, out.Decision.At.IsZero())
	require.NotNil(t, done.FinishedAt)
	requireUTC(t, *done.FinishedAt)
	require.Equal(t, "completed", done.Nodes["approve"].Status)
	require.JSONEq(t, string(done.Output), string(done.Nodes["approve"].Output))
	require.NotNil(t, done.Nodes["approve"].FinishedAt)

	got := decode[runResp](t, call(t, h, http.StatusOK, req{method: "GET", path: rp}))
	require.Equal(t, "completed", got.Status)
	require.JSONEq(t, string(done.Output), string(got.Output))
	require.Empty(t, approvals(t, h))

	requireError(t, http.StatusConflict, "conflict", do(t, h, req{method: "POST", path: rp + "/nodes/approve/complete",
		body: `{"status":"completed","output":{"ok":false}}`}))
	requireError(t, http.StatusConflict, "conflict", do(t, h, req{method: "POST", path: rp + "/cancel"}))
	requireError(t, http.StatusConflict, "conflict", do(t, h, req{method: "POST", path: rp + "/nodes/approve/retry"}))
	got = decode[runResp](t, call(t, h, http.StatusOK, req{method: "GET", path: rp}))
	require.Equal(t, "completed", got.Status)
	require.JSONEq(t, string(done.Output), string(got.Output), "a rejected second answer changes nothing")
}

func TestRunRejectRetryCancel(t *testing.T) {
	t.Parallel()
	st, _ := storetest.IsolatedDB(t)
	h := newServer(t, st).Handler()
	f := createFlow(t, h, graphUX)

	// No body at all: the input defaults to {}.
	run := decode[runResp](t, call(t, h, http.StatusCreated, req{method: "POST", path: "/api/v1/flows/" + f.ID + "/runs"}))
	require.JSONEq(t, `{}`, string(run.Input))
	rp := "/api/v1/runs/" + run.ID

	requireError(t, http.StatusBadRequest, "invalid_request", do(t, h, req{method: "POST", path: rp + "/nodes/approve/complete",
		body: `{"status":"done"}`}))
	requireError(t, http.StatusNotFound, "not_found", do(t, h, req{method: "POST", path: rp + "/nodes/ghost/complete",
		body: `{"status":"completed"}`}))
	requireError(t, http.StatusConflict, "conflict", do(t, h, req{method: "POST", path: rp + "/nodes/approve/retry"}))

	failed := decode[runResp](t, call(t, h, http.StatusOK, req{method: "POST", path: rp + "/nodes/approve/complete",
		body: `{"status":"failed","error":"not today"}`}))
	require.Equal(t, "failed", failed.Status)
	require.NotNil(t, failed.Error)
	require.Contains(t, *failed.Error, "not today")
	require.Equal(t, "failed", failed.Nodes["approve"].Status)
	require.NotNil(t, failed.Nodes["approve"].Error)
	require.Equal(t, "not today", *failed.Nodes["approve"].Error)

	retried := decode[runResp](t, call(t, h, http.StatusOK, req{method: "POST", path: rp + "/nodes/approve/retry"}))
	require.Equal(t, "running", retried.Status)
	require.Nil(t, retried.Error)
	require.Equal(t, "waiting_for_user", retried.Nodes["approve"].Status)
	require.Equal(t, 2, retried.Nodes["approve"].Attempt)
	require.Len(t, approvals(t, h), 1)

	cancelled := decode[runResp](t, call(t, h, http.StatusOK, req{method: "POST", path: rp + "/cancel"}))
	require.Equal(t, "cancelled", cancelled.Status)
	require.NotNil(t, cancelled.FinishedAt)
	require.Equal(t, "cancelled", cancelled.Nodes["approve"].Status)
	require.Empty(t, approvals(t, h))
	requireError(t, http.StatusConflict, "conflict", do(t, h, req{method: "POST", path: rp + "/cancel"}))
	requireError(t, http.StatusConflict, "conflict", do(t, h, req{method: "POST", path: rp + "/nodes/approve/complete",
		body: `{"status":"completed"}`}))
}

func TestCompleteNonUXNode(t *testing.T) {
	t.Parallel()
	st, _ := storetest.IsolatedDB(t)
	h := newServer(t, st).Handler()
	f := createFlow(t, h, graphA) // fetch (Worker) → approve (UX); no worker answers
	run := startRun(t, h, f.ID, `{"input":{"q":1}}`, nil)
	require.Equal(t, "running", run.Nodes["fetch"].Status)
	require.Equal(t, "pending", run.Nodes["approve"].Status)
	rp := "/api/v1/runs/" + run.ID
	requireError(t, http.StatusBadRequest, "invalid_request", do(t, h, req{method: "POST", path: rp + "/nodes/fetch/complete",
		body: `{"status":"completed","output":{}}`}))
	requireError(t, http.StatusConflict, "conflict", do(t, h, req{method: "POST", path: rp + "/nodes/approve/complete",
		body: `{"status":"completed","output":{}}`}))
	got := decode[runResp](t, call(t, h, http.StatusOK, req{method: "GET", path: rp}))
	require.Equal(t, "running", got.Nodes["fetch"].Status)
	require.Equal(t, "pending", got.Nodes["approve"].Status)
}

func TestRunIdempotencyAndListing(t *testing.T) {
	t.Parallel()
	st, _ := storetest.IsolatedDB(t)
	h := newServer(t, st).Handler()
	f := createFlow(t, h, graphUX)
	other := createFlow(t, h, graphUX)

	key := map[string]string{"Idempotency-Key": "order-42"}
	r1 := startRun(t, h, f.ID, `{"input":{"n":1}}`, key)
	r2 := startRun(t, h, f.ID, `{"input":{"n":1}}`, key)
	require.Equal(t, r1.ID, r2.ID, "a repeated Idempotency-Key returns the same run")
	r2b := startRun(t, h, f.ID, `{ "input" : { "n" : 1 } }`, key)
	require.Equal(t, r1.ID, r2b.ID, "the same request however formatted")
	// The same key with another request: 409, nothing started.
	rec := do(t, h, req{method: "POST", path: "/api/v1/flows/" + f.ID + "/runs", body: `{"input":{"n":2}}`, header: key})
	require.Equal(t, http.StatusConflict, rec.Code, rec.Body.String())
	reused := decode[struct {
		Error struct {
			Code    string            `json:"code"`
			Details map[string]string `json:"details"`
		} `json:"error"`
	}](t, rec.Body.Bytes())
	require.Equal(t, "idempotency_key_reused", reused.Error.Code)
	require.Equal(t, r1.ID, reused.Error.Details["run_id"])
	r3 := startRun(t, h, f.ID, `{"input":{"n":1}}`, map[string]string{"Idempotency-Key": "order-43"})
	require.NotEqual(t, r1.ID, r3.ID)
	o1 := startRun(t, h, other.ID, `{}`, key)
	require.NotEqual(t, r1.ID, o1.ID, "keys are scoped to their flow")
	r4 := startRun(t, h, f.ID, `{"version":1}`, nil)
	require.Equal(t, f.Version.ID, r4.FlowVersionID)
	call(t, h, http.StatusOK, req{method: "POST", path: "/api/v1/runs/" + r4.ID + "/nodes/approve/complete", body: `{"status":"completed"}`})

	want := map[string]bool{r1.ID: true, r3.ID: true, r4.ID: true}

	// Page through with limit=1.
	seen := map[string]bool{}
	var order []time.Time
	path := "/api/v1/runs?flow_id=" + f.ID + "&limit=1"
	for page := 0; ; page++ {
		require.Less(t, page, 10, "pagination does not end")
		b := call(t, h, http.StatusOK, req{method: "GET", path: path})
		var raw struct {
			Runs       []map[string]json.RawMessage `json:"runs"`
			NextCursor *string                      `json:"next_cursor"`
		}
		require.NoError(t, json.Unmarshal(b, &raw))
		var shape map[string]json.RawMessage
		require.NoError(t, json.Unmarshal(b, &shape))
		require.Contains(t, shape, "next_cursor")
		require.Len(t, raw.Runs, 1, string(b))
		require.NotContains(t, raw.Runs[0], "nodes", "listed runs carry no nodes")
		r := decode[runResp](t, mustJSON(t, raw.Runs[0]))
		require.Equal(t, f.ID, r.FlowID)
		require.False(t, seen[r.ID], "run listed twice")
		seen[r.ID] = true
		order = append(order, requireUTC(t, r.CreatedAt))
		if raw.NextCursor == nil {
			break
		}
		require.NotEmpty(t, *raw.NextCursor)
		path = "/api/v1/runs?flow_id=" + f.ID + "&limit=1&cursor=" + url.QueryEscape(*raw.NextCursor)
	}
	require.Equal(t, want, seen)
	require.True(t, sort.SliceIsSorted(order, func(i, j int) bool { return order[i].After(order[j]) }), "newest first: %v", order)

	completed := decode[struct {
		Runs       []runResp `json:"runs"`
		NextCursor *string   `json:"next_cursor"`
	}](t, call(t, h, http.StatusOK, req{method: "GET", path: "/api/v1/runs?status=completed"}))
	require.Len(t, completed.Runs, 1)
	require.Equal(t, r4.ID, completed.Runs[0].ID)
	require.Nil(t, completed.NextCursor)

	all := decode[struct {
		Runs []runResp `json:"runs"`
	}](t, call(t, h, http.StatusOK, req{method: "GET", path: "/api/v1/runs"}))
	require.Len(t, all.Runs, 4)
}

func TestPreferReturnMinimal(t *testing.T) {
	t.Parallel()
	st, _ := storetest.IsolatedDB(t)
	h := newServer(t, st).Handler()
	f := createFlow(t, h, graphUX)

	shape := func(rec *httptest.ResponseRecorder) map[string]json.RawMessage {
		t.Helper()
		var m map[string]json.RawMessage
		require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &m), rec.Body.String())
		return m
	}
	rec := do(t, h, req{method: "POST", path: "/api/v1/flows/" + f.ID + "/runs", body: `{"input":{"n":1}}`,
		header: map[string]string{"Prefer": "return=minimal"}})
	require.Equal(t, http.StatusCreated, rec.Code, rec.Body.String())
	require.Equal(t, "return=minimal", rec.Header().Get("Preference-Applied"))
	require.Contains(t, rec.Header().Values("Vary"), "Prefer")
	started := shape(rec)
	require.NotContains(t, started, "nodes")
	for _, k := range []string{"id", "flow_id", "flow_version_id", "status", "input", "output", "error", "entity_id",
		"created_at", "finished_at"} {
		require.Contains(t, started, k, "run field %s", k)
	}
	run := decode[runResp](t, rec.Body.Bytes())
	require.Equal(t, "running", run.Status)
	require.JSONEq(t, `{"n":1}`, string(run.Input))

	// The nodes are there for a request without the preference.
	full := decode[runResp](t, call(t, h, http.StatusOK, req{method: "GET", path: "/api/v1/runs/" + run.ID}))
	require.Equal(t, run.ID, full.ID)
	require.Equal(t, "waiting_for_user", full.Nodes["approve"].Status)

	for _, tc := range []struct {
		prefer  string
		minimal bool
	}{
		{"return=minimal", true},
		{"respond-async, Return=Minimal; foo=bar", true},
		{`return="minimal"`, true},
		{"return=representation", false},
		{"return=representation, return=minimal", false}, // the first counts
		{"return=minimal, return=representation", true},
		{"handling=strict", false},
		{"", false},
	} {
		rec := do(t, h, req{method: "GET", path: "/api/v1/runs/" + run.ID, header: map[string]string{"Prefer": tc.prefer}})
		require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
		if tc.minimal {
			require.NotContains(t, shape(rec), "nodes", "Prefer: %s", tc.prefer)
			require.Equal(t, "return=minimal", rec.Header().Get("Preference-Applied"), "Prefer: %s", tc.prefer)
		} else {
			require.Contains(t, shape(rec), "nodes", "Prefer: %s", tc.prefer)
			require.Empty(t, rec.Header().Get("Preference-Applied"), "Prefer: %s", tc.prefer)
		}
	}
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return b
}

// ---------------------------------------------------------------- health

func TestHealth(t *testing.T) {
	t.Parallel()
	h := newServer(t, storetest.Store(t)).Handler()
	b := call(t, h, http.StatusOK, req{method: "GET", path: "/healthz", noAuth: true})
	require.JSONEq(t, `{"status":"ok"}`, string(b))
	call(t, h, http.StatusOK, req{method: "GET", path: "/readyz", noAuth: true})
}

func TestReadyzUnmigrated(t *testing.T) {
	t.Parallel()
	st, err := store.Open(context.Background(), storetest.EmptyDB(t), store.Options{MaxOpenConns: 2})
	require.NoError(t, err)
	t.Cleanup(func() { st.Close() })
	h := newServer(t, st).Handler()
	call(t, h, http.StatusOK, req{method: "GET", path: "/healthz", noAuth: true})
	requireError(t, http.StatusServiceUnavailable, "unavailable", do(t, h, req{method: "GET", path: "/readyz", noAuth: true}))
}

func TestReadyzDatabaseGone(t *testing.T) {
	t.Parallel()
	st, dbURL := storetest.IsolatedDB(t)
	h := newServer(t, st).Handler()
	call(t, h, http.StatusOK, req{method: "GET", path: "/readyz", noAuth: true})
	// Touch the API so the pool holds open connections when the database
	// goes away.
	call(t, h, http.StatusOK, req{method: "GET", path: "/api/v1/flows"})

	u, err := url.Parse(dbURL)
	require.NoError(t, err)
	name := strings.TrimPrefix(u.Path, "/")
	require.NotEmpty(t, name)
	admin, err := sql.Open("pgx", storetest.ServerURL(t))
	require.NoError(t, err)
	defer admin.Close()
	_, err = admin.ExecContext(t.Context(), `DROP DATABASE `+localpg.QuoteIdent(name)+` WITH (FORCE)`)
	require.NoError(t, err)

	e := requireError(t, http.StatusServiceUnavailable, "unavailable", do(t, h, req{method: "GET", path: "/readyz", noAuth: true}))
	require.NotEmpty(t, e.Error.Message)
	// Still not ready on the next probe (the pool does not recover a
	// database that no longer exists).
	requireError(t, http.StatusServiceUnavailable, "unavailable", do(t, h, req{method: "GET", path: "/readyz", noAuth: true}))
	call(t, h, http.StatusOK, req{method: "GET", path: "/healthz", noAuth: true})
	// The API reports the database as unavailable too, not as an internal
	// error.
	requireError(t, http.StatusServiceUnavailable, "unavailable", do(t, h, req{method: "GET", path: "/api/v1/flows"}))
}

func TestAPIDatabaseDown(t *testing.T) {
	t.Parallel()
	l, err := (&net.ListenConfig{}).Listen(t.Context(), "tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	require.NoError(t, l.Close())
	st, err := store.Open(context.Background(), "postgres://postgres@"+addr+"/stitchd?sslmode=disable", store.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { st.Close() })
	h := newServer(t, st).Handler()
	call(t, h, http.StatusOK, req{method: "GET", path: "/healthz", noAuth: true})
	requireError(t, http.StatusServiceUnavailable, "unavailable", do(t, h, req{method: "GET", path: "/readyz", noAuth: true}))
	requireError(t, http.StatusServiceUnavailable, "unavailable", do(t, h, req{method: "GET", path: "/api/v1/flows"}))
	requireError(t, http.StatusServiceUnavailable, "unavailable", do(t, h, req{method: "GET", path: "/api/v1/flows/" + uuid.NewString()}))
}

// ---------------------------------------------------------------- concurrency

func TestConcurrentIdempotentStarts(t *testing.T) {
	t.Parallel()
	const n = 6
	st, _ := storetest.IsolatedDB(t)
	h := newServer(t, st).Handler()
	f := createFlow(t, h, graphUX)
	ids := make([]string, n)
	recs := make([]*httptest.ResponseRecorder, n)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			hr := httptest.NewRequestWithContext(t.Context(), http.MethodPost, "/api/v1/flows/"+f.ID+"/runs", strings.NewReader(`{"input":{"i":1}}`))
			hr.Header.Set("Authorization", "Bearer "+token)
			hr.Header.Set("Idempotency-Key", "same-key")
			recs[i] = httptest.NewRecorder()
			h.ServeHTTP(recs[i], hr)
		}()
	}
	close(start)
	wg.Wait()
	for i, rec := range recs {
		require.Equal(t, http.StatusCreated, rec.Code, "request %d: %s", i, rec.Body.String())
		ids[i] = decode[runResp](t, rec.Body.Bytes()).ID
	}
	for i := range ids {
		require.Equal(t, ids[0], ids[i], "request %d got another run", i)
	}
	runs := decode[struct {
		Runs []runResp `json:"runs"`
	}](t, call(t, h, http.StatusOK, req{method: "GET", path: "/api/v1/runs?flow_id=" + f.ID}))
	require.Len(t, runs.Runs, 1)
	require.Len(t, approvals(t, h), 1, "the entry node fired once")
}

func TestConcurrentFlowUpdates(t *testing.T) {
	t.Parallel()
	const n = 5
	st, _ := storetest.IsolatedDB(t)
	h := newServer(t, st).Handler()
	f := createFlow(t, h, graphUX)
	recs := make([]*httptest.ResponseRecorder, n)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			// Each update moves the node somewhere else: n distinct graphs.
			g := fmt.Sprintf(`{"nodes":[{"id":"approve","type":"UX","position":{"x":%d,"y":0},"data":{}}],"edges":[]}`, i+1)
			hr := httptest.NewRequestWithContext(t.Context(), http.MethodPut, "/api/v1/flows/"+f.ID, strings.NewReader(`{"graph":`+g+`}`))
			hr.Header.Set("Authorization", "Bearer "+token)
			recs[i] = httptest.NewRecorder()
			h.ServeHTTP(recs[i], hr)
		}()
	}
	close(start)
	wg.Wait()
	numbers := map[int]bool{}
	for i, rec := range recs {
		require.Equal(t, http.StatusOK, rec.Code, "update %d: %s", i, rec.Body.String())
		numbers[decode[flowResp](t, rec.Body.Bytes()).Version.Number] = true
	}
	require.Len(t, numbers, n, "each update made its own version: %v", numbers)
	vs := decode[struct {
		Versions []versionRef `json:"versions"`
	}](t, call(t, h, http.StatusOK, req{method: "GET", path: "/api/v1/flows/" + f.ID + "/versions"}))
	require.Len(t, vs.Versions, n+1)
	for i, v := range vs.Versions {
		require.Equal(t, n+1-i, v.Number, "versions are numbered without gaps, newest first")
	}
	got := decode[flowResp](t, call(t, h, http.StatusOK, req{method: "GET", path: "/api/v1/flows/" + f.ID}))
	require.Equal(t, n+1, got.Version.Number)
}

// TestMalformedJSONSaysWhere: a body that does not decode is a 400 naming
// the line and column where the decoder stopped, and changes nothing.
func TestMalformedJSONSaysWhere(t *testing.T) {
	t.Parallel()
	st := storetest.TestTx(t)
	h := newServer(t, st).Handler()
	for _, tc := range []struct{ body, where string }{
		{"{\n  \"name\": \"leads\",\n  \"graph\": {\"nodes\": [}\n}", "line 3, column 23"},
		{"{\"name\": \"é\", \"graph\": 1,}", "line 1, column 26"},
		{"{\n\t\"name\": \"x\",\n\t\"graph\": {\"nodes\": [], \"edges\": []}\n", "line 4, column 1"},
		{"{\"name\": 7}\n", "line 1, column 10"},
		{"{\"name\": \"x\" é}", "line 1, column 14"},
	} {
		var p struct {
			Error problem `json:"error"`
		}
		b := call(t, h, http.StatusBadRequest, req{method: "POST", path: "/api/v1/flows", body: tc.body})
		require.NoError(t, json.Unmarshal(b, &p), string(b))
		require.Equal(t, "invalid_request", p.Error.Code, tc.body)
		require.Contains(t, p.Error.Message, "malformed JSON at "+tc.where+": ", tc.body)
	}
	// A value of the wrong kind is said in JSON's words, not Go's.
	for body, want := range map[string]string{
		`{"name": "x", "graph": {"nodes": {}, "edges": []}}`: "graph: error parsing visual graph: nodes must be an array, not an object",
		`{"name": 7}`: "name must be a string, not a number",
		`{"name": "x", "graph": {"nodes": [{"id": 5}]}}`: "nodes[0]: id must be a string, not a number",
	} {
		var p struct {
			Error problem `json:"error"`
		}
		b := call(t, h, http.StatusBadRequest, req{method: "POST", path: "/api/v1/flows", body: body})
		require.NoError(t, json.Unmarshal(b, &p), string(b))
		require.Contains(t, p.Error.Message, want, body)
		require.NotContains(t, p.Error.Message, "Go ", body)
	}
	require.Equal(t, "[]", strings.TrimSpace(string(decode[struct {
		Flows json.RawMessage `json:"flows"`
	}](t, call(t, h, http.StatusOK, req{method: "GET", path: "/api/v1/flows"})).Flows)), "no flow was made")
}
