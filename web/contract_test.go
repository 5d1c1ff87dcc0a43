package web_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stitchd/stitchd/internal/contracttest"
	"github.com/stitchd/stitchd/store/storetest"
)

// contractClient sends requests to a test server through the contract
// check (internal/contracttest): a status the operation does not list, a
// body its schema refuses or a content type it does not name fails the
// test.
type contractClient struct {
	t      *testing.T
	base   string
	client *http.Client
}

func newContractClient(t *testing.T, ts *httptest.Server) *contractClient {
	t.Helper()
	return &contractClient{t: t, base: ts.URL, client: contracttest.Client(t, ts.Client())}
}

// do sends method path (body JSON when set) with the bearer token auth
// ("" none) and returns the status and body.
func (cc *contractClient) do(method, path, body, auth string) (int, []byte) {
	cc.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	rq, err := http.NewRequestWithContext(ctx, method, cc.base+path, rd)
	require.NoError(cc.t, err)
	if body != "" {
		rq.Header.Set("Content-Type", "application/json")
	}
	if auth != "" {
		rq.Header.Set("Authorization", "Bearer "+auth)
	}
	resp, err := cc.client.Do(rq)
	require.NoError(cc.t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(cc.t, err)
	return resp.StatusCode, b
}

// TestResponsesMatchContract drives a flow through its life — created,
// listed, run, the run read, listed and cancelled — and the common
// refusals, validating every answer against openapi.yaml.
func TestResponsesMatchContract(t *testing.T) {
	t.Parallel()
	st, _ := storetest.IsolatedDB(t)
	ts := httptest.NewServer(newServer(t, st).Handler())
	t.Cleanup(ts.Close)
	cc := newContractClient(t, ts)

	graph := `{"nodes":[{"id":"ask","type":"UX","position":{"x":0,"y":0},"data":{"label":"Approve?"}}],"edges":[]}`
	code, b := cc.do(http.MethodPost, "/api/v1/flows", `{"name":"contract","graph":`+graph+`}`, token)
	require.Equal(t, http.StatusCreated, code, "%s", b)
	var flow struct {
		ID string `json:"id"`
	}
	require.NoError(t, json.Unmarshal(b, &flow))

	code, _ = cc.do(http.MethodGet, "/api/v1/flows", "", token)
	require.Equal(t, http.StatusOK, code)
	code, _ = cc.do(http.MethodGet, "/api/v1/flows/"+flow.ID, "", token)
	require.Equal(t, http.StatusOK, code)

	code, b = cc.do(http.MethodPost, "/api/v1/flows/"+flow.ID+"/runs", `{"input":{"amount":5}}`, token)
	require.Equal(t, http.StatusCreated, code, "%s", b)
	var run struct {
		ID string `json:"id"`
	}
	require.NoError(t, json.Unmarshal(b, &run))

	require.Eventually(t, func() bool {
		code, b := cc.do(http.MethodGet, "/api/v1/runs/"+run.ID, "", token)
		return code == http.StatusOK && bytes.Contains(b, []byte(`"waiting_for_user"`))
	}, 10*time.Second, 50*time.Millisecond, "the UX node never waited")
	code, _ = cc.do(http.MethodGet, "/api/v1/runs?flow_id="+flow.ID, "", token)
	require.Equal(t, http.StatusOK, code)
	code, _ = cc.do(http.MethodGet, "/api/v1/approvals", "", token)
	require.Equal(t, http.StatusOK, code)
	code, _ = cc.do(http.MethodPost, "/api/v1/runs/"+run.ID+"/cancel", "", token)
	require.Equal(t, http.StatusOK, code)
	// A board and an entity on it, read back one and all.
	code, b = cc.do(http.MethodPost, "/api/v1/boards", `{"name":"Leads","sections":[{"id":"new","name":"New"},{"id":"won","name":"Won"}]}`, token)
	require.Equal(t, http.StatusCreated, code, "%s", b)
	var board struct {
		ID string `json:"id"`
	}
	require.NoError(t, json.Unmarshal(b, &board))
	code, b = cc.do(http.MethodPost, "/api/v1/entities", `{"board_id":"`+board.ID+`","type":"lead","name":"Ada","metadata":{"tier":"gold"}}`, token)
	require.Equal(t, http.StatusCreated, code, "%s", b)
	var entity struct {
		ID string `json:"id"`
	}
	require.NoError(t, json.Unmarshal(b, &entity))
	code, _ = cc.do(http.MethodPost, "/api/v1/entities/"+entity.ID+"/move", `{"section_id":"won"}`, token)
	require.Equal(t, http.StatusOK, code)
	code, _ = cc.do(http.MethodGet, "/api/v1/entities/"+entity.ID, "", token)
	require.Equal(t, http.StatusOK, code)
	code, _ = cc.do(http.MethodGet, "/api/v1/boards/"+board.ID, "", token)
	require.Equal(t, http.StatusOK, code)
	code, _ = cc.do(http.MethodGet, "/api/v1/boards", "", token)
	require.Equal(t, http.StatusOK, code)

	// Its triggers: a webhook and a schedule, each read back, then listed.
	for _, body := range []string{`{"slug":"contract-hook"}`, `{"kind":"schedule","cron":"0 9 * * *","timezone":"Europe/Paris"}`} {
		code, b = cc.do(http.MethodPost, "/api/v1/flows/"+flow.ID+"/triggers", body, token)
		require.Equal(t, http.StatusCreated, code, "%s", b)
		var trigger struct {
			ID string `json:"id"`
		}
		require.NoError(t, json.Unmarshal(b, &trigger))
		code, _ = cc.do(http.MethodGet, "/api/v1/triggers/"+trigger.ID, "", token)
		require.Equal(t, http.StatusOK, code)
	}
	code, _ = cc.do(http.MethodGet, "/api/v1/flows/"+flow.ID+"/triggers", "", token)
	require.Equal(t, http.StatusOK, code)

	code, _ = cc.do(http.MethodGet, "/api/v1/me", "", token)
	require.Equal(t, http.StatusOK, code)
	code, _ = cc.do(http.MethodGet, "/api/v1/node-types", "", token)
	require.Equal(t, http.StatusOK, code)

	// The refusals every client meets: each status listed, each body an Error.
	const unknown = "0b6e2f43-2f1c-4c55-9d0b-6f0e8b0a8c11"
	for _, c := range []struct {
		method, path, body, auth string
		want                     int
	}{
		{http.MethodGet, "/api/v1/runs", "", "", http.StatusUnauthorized},
		{http.MethodGet, "/api/v1/runs/" + unknown, "", token, http.StatusNotFound},
		{http.MethodPost, "/api/v1/runs/" + unknown + "/cancel", "", token, http.StatusNotFound},
		{http.MethodPost, "/api/v1/runs/" + unknown + "/nodes/ask/complete", `{"outcome":"approve"}`, token, http.StatusNotFound},
		{http.MethodPost, "/api/v1/flows/" + unknown + "/triggers", `{"slug":"nope"}`, token, http.StatusNotFound},
		{http.MethodGet, "/api/v1/approvals?assigned=", "", token, http.StatusBadRequest},
		{http.MethodGet, "/api/v1/runs?status=", "", token, http.StatusBadRequest},
		{http.MethodPut, "/api/v1/flows/" + flow.ID, `{"name":"","graph":` + graph + `}`, token, http.StatusBadRequest},
	} {
		code, b := cc.do(c.method, c.path, c.body, c.auth)
		require.Equal(t, c.want, code, "%s %s: %s", c.method, c.path, b)
	}
}

// TestGraphListsAnsweredAsLists: a graph saved without edges, or with
// edges null (taken as none), is answered with edges [] — the contract's
// Graph has them as an array — on create, update and read.
func TestGraphListsAnsweredAsLists(t *testing.T) {
	t.Parallel()
	st, _ := storetest.IsolatedDB(t)
	h := newServer(t, st).Handler()
	// Outside the contract (it asks for both lists), on purpose.
	lenient := map[string]string{contracttest.InvalidRequestHeader: "1"}
	type graphOnly struct {
		ID    string `json:"id"`
		Graph map[string]json.RawMessage
	}
	f := decode[graphOnly](t, call(t, h, http.StatusCreated, req{method: http.MethodPost, path: "/api/v1/flows", header: lenient,
		body: `{"name":"lists","graph":{"nodes":[{"id":"ask","type":"UX","position":{"x":0,"y":0},"data":{}}]}}`}))
	require.JSONEq(t, `[]`, string(f.Graph["edges"]))
	u := decode[graphOnly](t, call(t, h, http.StatusOK, req{method: http.MethodPut, path: "/api/v1/flows/" + f.ID, header: lenient,
		body: `{"graph":{"nodes":[{"id":"ask2","type":"UX","position":{"x":0,"y":0},"data":{}}],"edges":null}}`}))
	require.JSONEq(t, `[]`, string(u.Graph["edges"]))
	g := decode[graphOnly](t, call(t, h, http.StatusOK, req{method: http.MethodGet, path: "/api/v1/flows/" + f.ID}))
	require.JSONEq(t, `[]`, string(g.Graph["edges"]))
}

// TestContractStatesServerRefusals: what the server refuses as a bad
// request (400) for its shape — an empty or blank name, a PATCH naming no
// field, a repeated card field, a dispatch secret that is no whsec_ key, a
// trigger secret under 16 bytes, a bulk action on every run without
// "all": true, a user's email changed — openapi.yaml refuses too (JSON
// Schema: minLength, pattern, anyOf, uniqueItems, not), so a client that
// validates against the contract is not surprised. What the contract
// allows of the same operations the server takes.
func TestContractStatesServerRefusals(t *testing.T) {
	t.Parallel()
	st, _ := storetest.IsolatedDB(t)
	h := newServer(t, st).Handler()
	// The requests below are refused on purpose: the harness's check is
	// told so, and the test checks the contract itself.
	onPurpose := map[string]string{contracttest.InvalidRequestHeader: "1"}

	graph := `{"nodes":[{"id":"ask","type":"UX","position":{"x":0,"y":0},"data":{}}],"edges":[]}`
	flow := createFlow(t, h, graph)
	run := startRun(t, h, flow.ID, `{"input":{}}`, nil)
	board := decode[struct{ ID string }](t, call(t, h, http.StatusCreated, req{method: http.MethodPost, path: "/api/v1/boards",
		body: `{"name":"Leads","sections":[{"id":"new"},{"id":"won"}]}`}))
	entity := decode[struct{ ID string }](t, call(t, h, http.StatusCreated, req{method: http.MethodPost, path: "/api/v1/entities",
		body: `{"board_id":"` + board.ID + `","type":"lead","name":"Ada"}`}))
	trigger := decode[struct{ ID string }](t, call(t, h, http.StatusCreated, req{method: http.MethodPost,
		path: "/api/v1/flows/" + flow.ID + "/triggers", body: `{"slug":"signed","secret":"0123456789abcdef0123"}`}))
	user := decode[struct{ ID string }](t, call(t, h, http.StatusCreated, req{method: http.MethodPost, path: "/api/v1/users",
		body: `{"email":"ann@example.com","name":"Ann","role":"viewer"}`}))

	for _, c := range []struct {
		what, method, path, body string
		noAuth                   bool
	}{
		{"a board's blank name", http.MethodPost, "/api/v1/boards", `{"name":"   ","sections":[]}`, false},
		{"a section id of the wrong form", http.MethodPost, "/api/v1/boards", `{"name":"B","sections":[{"id":"-x"}]}`, false},
		{"a board PATCH naming nothing", http.MethodPatch, "/api/v1/boards/" + board.ID, `{}`, false},
		{"a repeated card field", http.MethodPatch, "/api/v1/boards/" + board.ID, `{"card_fields":["tier","tier"]}`, false},
		{"a section PATCH naming nothing", http.MethodPatch, "/api/v1/boards/" + board.ID + "/sections/new", `{}`, false},
		{"an entity PATCH naming nothing", http.MethodPatch, "/api/v1/entities/" + entity.ID, `{}`, false},
		{"an entity's empty type", http.MethodPost, "/api/v1/entities", `{"board_id":"` + board.ID + `","type":"","name":"x"}`, false},
		{"a move to no section", http.MethodPost, "/api/v1/entities/" + entity.ID + "/move", `{"section_id":""}`, false},
		{"a flow's empty name", http.MethodPost, "/api/v1/flows", `{"name":"","graph":` + graph + `}`, false},
		{"a flow renamed blank", http.MethodPut, "/api/v1/flows/" + flow.ID, `{"name":"  "}`, false},
		{"a decision without outcome or status", http.MethodPost, "/api/v1/runs/" + run.ID + "/nodes/ask/complete", `{}`, false},
		{"a dispatch secret that is no whsec_ key", http.MethodPost, "/api/v1/webhook-secret/rotate", `{"secret":"hunter2hunter2hunter2"}`, false},
		{"a whsec_ key under 16 bytes", http.MethodPost, "/api/v1/webhook-secret/rotate", `{"secret":"whsec_AAAAAAAAAAAAAAAAAAAA"}`, false},
		{"a flow's empty secret", http.MethodPost, "/api/v1/flows/" + flow.ID + "/webhook-secret/rotate", `{"secret":""}`, false},
		{"a trigger secret under 16 bytes", http.MethodPost, "/api/v1/triggers/" + trigger.ID + "/rotate-secret", `{"secret":"short"}`, false},
		{"a bulk action on every run", http.MethodPost, "/api/v1/runs/bulk", `{"action":"cancel"}`, false},
		{"a bulk action with an empty filter", http.MethodPost, "/api/v1/runs/bulk", `{"action":"cancel","filter":{"flow_id":""}}`, false},
		{"a new user disabled", http.MethodPost, "/api/v1/users", `{"email":"bo@example.com","name":"Bo","role":"viewer","disabled":true}`, false},
		{"a user's blank name", http.MethodPost, "/api/v1/users", `{"email":"bo@example.com","name":"  ","role":"viewer"}`, false},
		{"a user's blank group", http.MethodPost, "/api/v1/users", `{"email":"bo@example.com","name":"Bo","role":"viewer","groups":[" "]}`, false},
		{"a user's email changed", http.MethodPatch, "/api/v1/users/" + user.ID, `{"email":"ann2@example.com"}`, false},
		{"a sign-in without a password", http.MethodPost, "/api/v1/auth/login", `{"email":"ann@example.com","password":""}`, true},
	} {
		rq := httptest.NewRequestWithContext(t.Context(), c.method, c.path, strings.NewReader(c.body))
		rq.Header.Set("Content-Type", "application/json")
		require.Error(t, contracttest.RequestProblems(rq, []byte(c.body)), "openapi.yaml allows %s", c.what)
		requireError(t, http.StatusBadRequest, "invalid_request",
			do(t, h, req{method: c.method, path: c.path, body: c.body, header: onPurpose, noAuth: c.noAuth}))
	}

	// The same operations, as the contract allows them: taken.
	key := base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{7}, 16))
	for _, c := range []struct{ method, path, body string }{
		{http.MethodPost, "/api/v1/webhook-secret/rotate", `{"secret":"whsec_` + key + `","grace_seconds":0}`},
		{http.MethodPost, "/api/v1/triggers/" + trigger.ID + "/rotate-secret", `{"secret":"0123456789abcdef"}`},
		{http.MethodPost, "/api/v1/runs/bulk", `{"action":"pause","dry_run":true}`},
		{http.MethodPost, "/api/v1/runs/bulk", `{"action":"pause","all":true,"dry_run":true}`},
		{http.MethodPost, "/api/v1/runs/bulk", `{"action":"pause","filter":{"flow_id":"` + flow.ID + `"}}`},
		{http.MethodPatch, "/api/v1/boards/" + board.ID, `{"card_fields":["tier","owner"]}`},
		{http.MethodPatch, "/api/v1/boards/" + board.ID + "/sections/won", `{"sla_seconds":3600}`},
		{http.MethodPatch, "/api/v1/entities/" + entity.ID, `{"email":""}`},
		{http.MethodPatch, "/api/v1/users/" + user.ID, `{"disabled":true}`},
		{http.MethodPost, "/api/v1/runs/" + run.ID + "/nodes/ask/complete", `{"outcome":"approve"}`},
	} {
		rq := httptest.NewRequestWithContext(t.Context(), c.method, c.path, strings.NewReader(c.body))
		rq.Header.Set("Content-Type", "application/json")
		require.NoError(t, contracttest.RequestProblems(rq, []byte(c.body)), "%s %s %s", c.method, c.path, c.body)
		rec := do(t, h, req{method: c.method, path: c.path, body: c.body})
		require.Less(t, rec.Code, 300, "%s %s %s: %s", c.method, c.path, c.body, rec.Body.String())
	}
}
