package app_test

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/tidwall/gjson"

	"github.com/stitchd/stitchd/engine"
	"github.com/stitchd/stitchd/internal/app"
	"github.com/stitchd/stitchd/internal/secretbox"
	"github.com/stitchd/stitchd/internal/syncbuf"
)

// withSecretKey gives a harness a random secret key.
func withSecretKey(t *testing.T) func(*app.Config) {
	key := make([]byte, secretbox.KeySize)
	_, err := rand.Read(key)
	require.NoError(t, err)
	return func(c *app.Config) { c.SecretKey = key }
}

// withLog sends a harness's log, debug level and up, to buf.
func withLog(buf *syncbuf.Buffer) func(*app.Config) {
	return func(c *app.Config) {
		c.Logger = slog.New(slog.NewTextHandler(buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
}

// setSecret stores a secret through the API and returns the status.
func (h *harness) setSecret(name, value string) int {
	h.t.Helper()
	return h.do("POST", "/api/v1/secrets", map[string]any{"name": name, "value": value}, nil)
}

// raw sends an API request and returns the status and the body as text.
func (h *harness) raw(method, path string) (int, string) {
	h.t.Helper()
	req, err := http.NewRequestWithContext(h.t.Context(), method, h.app.URL+path, nil)
	require.NoError(h.t, err)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := h.client.Do(req)
	require.NoError(h.t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(h.t, err)
	return resp.StatusCode, string(b)
}

// sseText reads an event stream from the start (Last-Event-ID 0) until an
// event's data holds each of until, and returns all it said.
func (h *harness) sseText(path string, until ...string) string {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, h.app.URL+path, nil)
	require.NoError(h.t, err)
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Last-Event-ID", "0")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(h.t, err)
	defer resp.Body.Close()
	require.Equal(h.t, http.StatusOK, resp.StatusCode)
	var b strings.Builder
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	found := false
	for !found && sc.Scan() {
		line := sc.Text()
		b.WriteString(line + "\n")
		found = strings.HasPrefix(line, "data: ")
		for _, u := range until {
			found = found && strings.Contains(line, u)
		}
	}
	require.True(h.t, found, "the stream ended before an event with %q: %s", until, b.String())
	return b.String()
}

// rowsHolding lists the tables (and bytea columns) of the database with a
// row whose text holds s.
func (h *harness) rowsHolding(s string) []string {
	h.t.Helper()
	db := h.app.Store.Gorm()
	var tables []string
	require.NoError(h.t, db.Raw(`SELECT table_name FROM information_schema.tables
		WHERE table_schema = 'public' AND table_type = 'BASE TABLE' ORDER BY 1`).Scan(&tables).Error)
	require.Contains(h.t, tables, "dispatches")
	var out []string
	for _, tb := range tables {
		var n int
		require.NoError(h.t, db.Raw(fmt.Sprintf(`SELECT count(*) FROM %q t WHERE strpos(row_to_json(t)::text, ?) > 0`, tb), s).Scan(&n).Error)
		if n > 0 {
			out = append(out, tb)
		}
		// bytea (dispatches.body) shows as hex in JSON: read it as text.
		var cols []string
		require.NoError(h.t, db.Raw(`SELECT column_name FROM information_schema.columns
			WHERE table_schema = 'public' AND table_name = ? AND data_type = 'bytea'`, tb).Scan(&cols).Error)
		for _, c := range cols {
			require.NoError(h.t, db.Raw(fmt.Sprintf(`SELECT count(*) FROM %q WHERE strpos(encode(%q, 'escape'), ?) > 0`, tb, c), s).Scan(&n).Error)
			if n > 0 {
				out = append(out, tb+"."+c)
			}
		}
	}
	return out
}

// secretForms are the forms a value is sent in (as it is, query- and
// path-escaped, JSON-escaped).
func secretForms(v string) []string {
	j, _ := json.Marshal(v)
	return []string{v, url.QueryEscape(v), url.PathEscape(v), string(j[1 : len(j)-1])}
}

// TestSecretInHeaderReachesOnlyTheRequest: an HTTP node's request carries
// a secret in its Authorization header, its query and its JSON body: the
// server receives the real value, and the value is in no API answer (the
// run and its node states, the run list, the flow and its version, both
// event streams, the secrets list, the audit log), no log line, no row of
// any table (run_events, node_states, dispatches' url, request, body and
// last_error among them). A server echoing the header back — in its body
// and a header of a success, in the body of a failure — and an error
// quoting the URL are stored with [redacted] in its place.
func TestSecretInHeaderReachesOnlyTheRequest(t *testing.T) {
	t.Parallel()
	logs := &syncbuf.Buffer{}
	h := newHarness(t, withSecretKey(t), withLog(logs))
	rnd := make([]byte, 8)
	_, _ = rand.Read(rnd)
	value := "s3cr3t/" + hex.EncodeToString(rnd) + "+&x"
	api := newAPIServer(t, func(_ int, w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/echo":
			w.Header().Set("X-Echo", r.Header.Get("Authorization"))
			b, _ := json.Marshal(map[string]string{"you_sent": r.Header.Get("Authorization"), "query": r.URL.RawQuery})
			jsonAnswer(w, 200, string(b))
		case "/deny":
			w.WriteHeader(http.StatusUnauthorized)
			_, _ = io.WriteString(w, "bad token "+r.Header.Get("Authorization"))
		default:
			jsonAnswer(w, 200, `{"ok": true}`)
		}
	})
	require.Equal(t, http.StatusCreated, h.setSecret("API_TOKEN", value))

	bearer := map[string]any{"Authorization": `Bearer {{ secret "API_TOKEN" }}`}
	flow := h.createFlow([]map[string]any{
		node("call", "HTTP", map[string]any{"method": "POST", "url": api.url + `/plain/{{ secret("API_TOKEN") }}?k={{ secret "API_TOKEN" }}&n={{ input.n }}`,
			"headers": bearer, "body": map[string]any{"token": `{{ secret "API_TOKEN" }}`, "note": "n={{ input.n }}"}}),
		node("echo", "HTTP", map[string]any{"url": api.url + "/echo?k={{ secret 'API_TOKEN' }}", "headers": bearer}),
	}, []map[string]any{edge("call", "echo", nil)})
	r := h.startRun(flow, map[string]any{"n": 7})
	fin := h.waitRun(r.ID, "completed")

	got := api.requests()
	require.Len(t, got, 2)
	require.Equal(t, "Bearer "+value, got[0].Header.Get("Authorization"), "the server saw the real value")
	require.Equal(t, "/plain/"+url.PathEscape(value), got[0].Path)
	q, err := url.ParseQuery(got[0].Query)
	require.NoError(t, err)
	require.Equal(t, value, q.Get("k"))
	require.Equal(t, "7", q.Get("n"))
	require.JSONEq(t, `{"token": "`+value+`", "note": "n=7"}`, got[0].Body)
	require.Equal(t, "Bearer "+value, got[1].Header.Get("Authorization"))

	// The echo is stored redacted.
	out := fin.Nodes["echo"].Output
	require.Equal(t, "Bearer [redacted]", gjson.GetBytes(out, "body.you_sent").String(), "%s", out)
	require.Equal(t, "k=[redacted]", gjson.GetBytes(out, "body.query").String(), "%s", out)
	require.Equal(t, "Bearer [redacted]", gjson.GetBytes(out, "headers.x-echo").String(), "%s", out)

	// A failure's reason quoting the echo, and an error quoting the URL.
	closed, err := (&net.ListenConfig{}).Listen(t.Context(), "tcp", "127.0.0.1:0")
	require.NoError(t, err)
	gone := "http://" + closed.Addr().String()
	require.NoError(t, closed.Close())
	failing := h.createFlow([]map[string]any{
		node("deny", "HTTP", map[string]any{"url": api.url + "/deny", "headers": bearer}),
		node("down", "HTTP", map[string]any{"url": gone + "/x?k={{ secret \"API_TOKEN\" }}", "retry": map[string]any{"maxAttempts": 1}}),
	}, nil)
	rf := h.startRun(failing, map[string]any{})
	ff := h.waitRun(rf.ID, "failed")
	require.Equal(t, "HTTP 401: bad token Bearer [redacted]", *ff.Nodes["deny"].Error)
	require.Contains(t, *ff.Nodes["down"].Error, "k=[redacted]")
	require.Contains(t, *ff.Nodes["down"].Error, "request failed")

	// Nowhere else.
	answers := map[string]string{
		"run stream":        h.sseText("/api/v1/runs/"+r.ID+"/events", `"type":"run.completed"`),
		"all events stream": h.sseText("/api/v1/events", rf.ID, `"type":"run.failed"`),
	}
	for _, p := range []string{"/api/v1/runs/" + r.ID, "/api/v1/runs/" + rf.ID, "/api/v1/runs?flow_id=" + flow, "/api/v1/runs",
		"/api/v1/flows/" + flow, "/api/v1/flows/" + flow + "/versions/1", "/api/v1/secrets", "/api/v1/audit"} {
		code, body := h.raw("GET", p)
		require.Equal(t, http.StatusOK, code, "%s: %s", p, body)
		answers[p] = body
	}
	require.Contains(t, answers["/api/v1/secrets"], `"API_TOKEN"`)
	require.Contains(t, answers["run stream"], `"key":"echo"`)
	require.Contains(t, answers["all events stream"], r.ID)
	require.Contains(t, logs.String(), "request failed", "the log was captured")
	for _, form := range secretForms(value) {
		for what, body := range answers {
			require.NotContains(t, body, form, "the value in %s", what)
		}
		require.NotContains(t, logs.String(), form, "the value in the log")
		require.Empty(t, h.rowsHolding(form), "the value in the database")
	}
	// The check itself finds what is there: the API server's copy would.
	require.NotEmpty(t, h.rowsHolding("API_TOKEN"))
}

// TestSecretsAPI: create (201), list (names and times, never values),
// replace (200), delete (204, then 404); bad names and values are 400 in
// the error shape and change nothing; writes are audited without the
// value; an editor may manage secrets, an operator and a viewer may not.
// A server without a key answers POST 503 and still lists and deletes.
func TestSecretsAPI(t *testing.T) {
	t.Parallel()
	h := newHarness(t, withSecretKey(t))
	const v1, v2 = "first-value-91ab", "second-value-27cd"
	require.Equal(t, http.StatusCreated, h.setSecret("API_TOKEN", v1))
	require.Equal(t, http.StatusCreated, h.setSecret("b-2", "other-value"))
	var info map[string]any
	require.Equal(t, http.StatusOK, h.do("POST", "/api/v1/secrets", map[string]any{"name": "API_TOKEN", "value": v2}, &info), "a replacement")
	require.Equal(t, "API_TOKEN", info["name"])
	require.Equal(t, "admin", info["updated_by"])
	require.NotContains(t, fmt.Sprint(info), v2)

	var list struct {
		Secrets []map[string]any `json:"secrets"`
		Next    *string          `json:"next_cursor"`
	}
	require.Equal(t, http.StatusOK, h.do("GET", "/api/v1/secrets?limit=1", nil, &list))
	require.Len(t, list.Secrets, 1)
	require.NotNil(t, list.Next)
	first := list.Secrets[0]
	var second struct {
		Secrets []map[string]any `json:"secrets"`
		Next    *string          `json:"next_cursor"`
	}
	require.Equal(t, http.StatusOK, h.do("GET", "/api/v1/secrets?limit=1&cursor="+url.QueryEscape(*list.Next), nil, &second))
	require.Equal(t, []string{"API_TOKEN", "b-2"}, []string{as[string](t, first["name"]), as[string](t, second.Secrets[0]["name"])})
	require.Nil(t, second.Next)
	keys := []string{}
	for k := range first {
		keys = append(keys, k)
	}
	require.ElementsMatch(t, []string{"name", "allowed_hosts", "created_by", "updated_by", "created_at", "updated_at"}, keys, "names, hosts and times only")
	_, body := h.raw("GET", "/api/v1/secrets")
	require.NotContains(t, body, v1)
	require.NotContains(t, body, v2)

	// Refused, changing nothing.
	for _, b := range []map[string]any{
		{"name": "has space", "value": "x"}, {"name": "1starts-with-digit", "value": "x"}, {"name": strings.Repeat("a", 101), "value": "x"},
		{"name": "API_TOKEN", "value": ""}, {"name": "API_TOKEN", "value": strings.Repeat("x", 8<<10+1)}, {"name": "API_TOKEN"},
		{"value": "x"}, {"name": "API_TOKEN", "value": 42}, {"name": "API_TOKEN", "value": "nul\x00"},
	} {
		code, _ := h.refused(http.StatusBadRequest, "POST", "/api/v1/secrets", b)
		require.Equal(t, "invalid_request", code, "%v", b)
	}
	_, details := h.refused(http.StatusBadRequest, "POST", "/api/v1/secrets", map[string]any{"name": "bad name", "value": ""})
	require.Equal(t, map[string]string{"name": engine.SecretNameRule, "value": "value must be 1 to 8192 bytes of text (UTF-8, no NUL)"},
		byPath(details), "every problem, each at its field")
	got, err := h.app.Store.RevealSecrets(context.Background(), h.app.SecretBox, "", []string{"API_TOKEN"})
	require.NoError(t, err)
	require.Equal(t, v2, got["API_TOKEN"], "refused writes changed nothing")
	require.Equal(t, http.StatusOK, h.do("GET", "/api/v1/secrets", nil, &list))
	require.Len(t, list.Secrets, 2)

	require.Equal(t, http.StatusNoContent, h.do("DELETE", "/api/v1/secrets/b-2", nil, nil))
	require.Equal(t, http.StatusNotFound, h.do("DELETE", "/api/v1/secrets/b-2", nil, nil))
	require.Equal(t, http.StatusNotFound, h.do("DELETE", "/api/v1/secrets/no%20such", nil, nil))

	// The audit log names each write, never the value.
	var audit struct {
		Entries []struct {
			Action, Target string
		} `json:"entries"`
	}
	require.Equal(t, http.StatusOK, h.do("GET", "/api/v1/audit", nil, &audit))
	var actions []string
	for _, e := range audit.Entries {
		if strings.Contains(e.Action, "secrets") {
			actions = append(actions, e.Action+" "+e.Target)
		}
	}
	require.ElementsMatch(t, []string{"POST /api/v1/secrets secret:API_TOKEN", "POST /api/v1/secrets secret:b-2",
		"POST /api/v1/secrets secret:API_TOKEN", "DELETE /api/v1/secrets/:name secret:b-2"}, actions)
	_, body = h.raw("GET", "/api/v1/audit")
	require.NotContains(t, body, v1)
	require.NotContains(t, body, v2)

	// Roles: editors manage secrets; operators and viewers may not.
	editor := h.tokenFor("ed@example.com", "editor")
	require.Equal(t, http.StatusCreated, h.doAs(editor, "POST", "/api/v1/secrets", map[string]any{"name": "ED", "value": "e"}, nil))
	require.Equal(t, http.StatusOK, h.doAs(editor, "GET", "/api/v1/secrets", nil, nil))
	require.Equal(t, http.StatusNoContent, h.doAs(editor, "DELETE", "/api/v1/secrets/ED", nil, nil))
	for _, role := range []string{"operator", "viewer", "approver"} {
		tok := h.tokenFor(role+"@example.com", role)
		require.Equal(t, http.StatusForbidden, h.doAs(tok, "POST", "/api/v1/secrets", map[string]any{"name": "X", "value": "x"}, nil), role)
		require.Equal(t, http.StatusForbidden, h.doAs(tok, "GET", "/api/v1/secrets", nil, nil), role)
		require.Equal(t, http.StatusForbidden, h.doAs(tok, "DELETE", "/api/v1/secrets/API_TOKEN", nil, nil), role)
	}

	// Without a key: writes refused with the reason; names still listed
	// and deleted.
	off := newHarnessOn(t, h.dbURL)
	var e struct {
		Error struct{ Code, Message string } `json:"error"`
	}
	require.Equal(t, http.StatusServiceUnavailable, off.do("POST", "/api/v1/secrets", map[string]any{"name": "X", "value": "x"}, &e))
	require.Equal(t, "unavailable", e.Error.Code)
	require.Contains(t, e.Error.Message, "STITCHD_SECRET_KEY")
	require.Equal(t, http.StatusOK, off.do("GET", "/api/v1/secrets", nil, &list))
	require.Len(t, list.Secrets, 1)
	require.Equal(t, http.StatusNoContent, off.do("DELETE", "/api/v1/secrets/API_TOKEN", nil, nil))
}

// TestSecretUnknownOrMisused: a flow naming a secret no one set is saved
// with an unknown_secret warning at the string's path, and its node fails
// when it runs — at once, not retried, nothing sent — saying which secret
// is missing; set later, the next run works. A computed name, a secret
// inside an expression and one giving the method are refused at save
// (422 invalid_expression at their paths). On a server without a key the
// flow is saved with a secrets_off warning and the node fails saying so.
func TestSecretUnknownOrMisused(t *testing.T) {
	t.Parallel()
	h := newHarness(t, withSecretKey(t))
	api := newAPIServer(t, func(_ int, w http.ResponseWriter, _ *http.Request) { jsonAnswer(w, 200, `{}`) })
	graph := map[string]any{"nodes": []map[string]any{node("call", "HTTP", map[string]any{"url": api.url + "/x",
		"headers": map[string]any{"X-Key": `{{ secret "NOT_YET" }}`}, "retry": fastRetry})}, "edges": []any{}}
	var f struct {
		ID       string    `json:"id"`
		Warnings []problem `json:"warnings"`
	}
	require.Equal(t, http.StatusCreated, h.do("POST", "/api/v1/flows", map[string]any{"name": "unknown", "graph": graph}, &f))
	require.Len(t, f.Warnings, 1)
	require.Equal(t, "unknown_secret", f.Warnings[0].Code)
	require.Equal(t, "call", f.Warnings[0].NodeID)
	require.Equal(t, `nodes[0].data.headers["X-Key"]`, f.Warnings[0].Path)
	require.Contains(t, f.Warnings[0].Message, `"NOT_YET"`)
	r := h.startRun(f.ID, map[string]any{})
	fin := h.waitRun(r.ID, "failed")
	require.Contains(t, *fin.Nodes["call"].Error, `secret "NOT_YET" is not set`)
	require.Equal(t, 1, fin.Nodes["call"].Attempt, "not retried: another try would not find it either")
	require.Empty(t, api.requests(), "nothing was sent")

	require.Equal(t, http.StatusCreated, h.setSecret("NOT_YET", "now-set"))
	h.waitRun(h.startRun(f.ID, map[string]any{}).ID, "completed")
	require.Equal(t, "now-set", api.requests()[0].Header.Get("X-Key"))

	bad := map[string]any{"nodes": []map[string]any{
		node("a", "HTTP", map[string]any{"url": api.url + "/{{ secret(input.name) }}"}),
		node("b", "HTTP", map[string]any{"url": api.url, "headers": map[string]any{"X": `{{ "k" + secret("NOT_YET") }}`}}),
		node("c", "HTTP", map[string]any{"url": api.url, "method": `{{ secret "NOT_YET" }}`}),
		node("d", "HTTP", map[string]any{"url": api.url, "body": map[string]any{"k": `{{ secret "no way" }}`}}),
	}, "edges": []any{}}
	code, details := h.refused(http.StatusUnprocessableEntity, "POST", "/api/v1/flows", map[string]any{"name": "bad", "graph": bad})
	require.Equal(t, "invalid_graph", code)
	got := byPath(details)
	require.Len(t, got, 4, "%+v", details)
	require.Contains(t, got["nodes[0].data.url"], "secret must stand alone")
	require.Contains(t, got["nodes[1].data.headers.X"], "secret must stand alone", "%+v", details)
	require.Contains(t, got["nodes[2].data.method"], "a secret cannot give the method")
	require.Contains(t, got["nodes[3].data.body.k"], "is not a secret name")
	for _, p := range details {
		require.Equal(t, "invalid_expression", p.Code, p.Path)
	}

	// No key on this server.
	off := newHarness(t)
	require.Equal(t, http.StatusCreated, off.do("POST", "/api/v1/flows", map[string]any{"name": "off", "graph": graph}, &f))
	require.Len(t, f.Warnings, 1)
	require.Equal(t, "secrets_off", f.Warnings[0].Code)
	fin = off.waitRun(off.startRun(f.ID, map[string]any{}).ID, "failed")
	require.Contains(t, *fin.Nodes["call"].Error, "STITCHD_SECRET_KEY is not set")
	require.Equal(t, 1, fin.Nodes["call"].Attempt)
}

// TestSecretGoesOnlyWhereTheFlowSays: a secret never reaches a host
// chosen by whoever supplies the input. A url whose host part is a
// template cannot carry a secret anywhere in its request (422 at save),
// unless the secret has allowed_hosts; then each request is checked as it
// is sent — to another host, the node fails with secret_host_refused and
// nothing is sent — and a secret whose allowed_hosts are later removed is
// refused again at send time. allowed_hosts also binds a fixed host.
func TestSecretGoesOnlyWhereTheFlowSays(t *testing.T) {
	t.Parallel()
	h := newHarness(t, withSecretKey(t))
	good := newAPIServer(t, func(_ int, w http.ResponseWriter, _ *http.Request) { jsonAnswer(w, 200, `{}`) })
	evil := newAPIServer(t, func(_ int, w http.ResponseWriter, _ *http.Request) { jsonAnswer(w, 200, `{}`) })
	goodHost, evilHost := strings.TrimPrefix(good.url, "http://"), strings.TrimPrefix(evil.url, "http://")
	const value = "sk_live_SUPERSECRET_1234567890"
	require.Equal(t, http.StatusCreated, h.setSecret("ACME_KEY", value))

	nodes := func(data map[string]any) []map[string]any {
		data["retry"] = map[string]any{"maxAttempts": 1}
		return []map[string]any{node("call", "HTTP", data)}
	}
	one := func(data map[string]any) map[string]any {
		return map[string]any{"nodes": nodes(data), "edges": []any{}}
	}
	templated := map[string]map[string]any{
		`nodes[0].data.url`: {"url": "http://{{ input.region }}.api.acme.test/v1/ping?key={{ secret \"ACME_KEY\" }}"},
		`nodes[0].data.headers["X-Key"]`: {"url": "{{ input.apiBase }}/v1/leads",
			"headers": map[string]any{"X-Key": `{{ secret "ACME_KEY" }}`}},
		`nodes[0].data.body.key`: {"url": "http://127.0.0.1:{{ input.port }}/x", "body": map[string]any{"key": `{{ secret "ACME_KEY" }}`}},
	}
	for path, data := range templated {
		code, details := h.refused(http.StatusUnprocessableEntity, "POST", "/api/v1/flows", map[string]any{"name": "t", "graph": one(data)})
		require.Equal(t, "invalid_graph", code, path)
		require.Len(t, details, 1, "%+v", details)
		require.Equal(t, "secret_host", details[0].Code)
		require.Equal(t, path, details[0].Path)
		require.Contains(t, details[0].Message, "allowed_hosts")
	}

	// Bad hosts are refused and change nothing.
	_, details := h.refused(http.StatusBadRequest, "PUT", "/api/v1/secrets/ACME_KEY",
		map[string]any{"allowed_hosts": []string{"ok.example", "http://x/", "*.example.com", "h:0"}})
	require.Equal(t, []string{"allowed_hosts[1]", "allowed_hosts[2]", "allowed_hosts[3]"}, paths(details))
	var list struct {
		Secrets []struct {
			Name         string   `json:"name"`
			AllowedHosts []string `json:"allowed_hosts"`
		} `json:"secrets"`
	}
	require.Equal(t, http.StatusOK, h.do("GET", "/api/v1/secrets", nil, &list))
	require.Len(t, list.Secrets, 1)
	require.Empty(t, list.Secrets[0].AllowedHosts)

	// With allowed_hosts, a templated host saves; the check is at send time.
	var info struct {
		AllowedHosts []string `json:"allowed_hosts"`
	}
	require.Equal(t, http.StatusOK, h.do("PUT", "/api/v1/secrets/ACME_KEY", map[string]any{"allowed_hosts": []string{goodHost}}, &info))
	require.Equal(t, []string{goodHost}, info.AllowedHosts)
	require.Equal(t, http.StatusOK, h.do("GET", "/api/v1/secrets", nil, &list))
	require.Equal(t, []string{goodHost}, list.Secrets[0].AllowedHosts)
	flow := h.createFlow(nodes(map[string]any{"url": "{{ input.apiBase }}/v1/leads",
		"headers": map[string]any{"X-Key": `{{ secret "ACME_KEY" }}`}}), nil)
	h.waitRun(h.startRun(flow, map[string]any{"apiBase": good.url}).ID, "completed")
	require.Equal(t, value, good.requests()[0].Header.Get("X-Key"))
	fin := h.waitRun(h.startRun(flow, map[string]any{"apiBase": evil.url}).ID, "failed")
	require.True(t, strings.HasPrefix(*fin.Nodes["call"].Error, "secret_host_refused: "), *fin.Nodes["call"].Error)
	require.Contains(t, *fin.Nodes["call"].Error, evilHost)
	require.Empty(t, evil.requests(), "nothing reached the other host")

	// allowed_hosts removed after the flow was saved: refused when sent.
	require.Equal(t, http.StatusOK, h.do("PUT", "/api/v1/secrets/ACME_KEY", map[string]any{"allowed_hosts": []string{}}, &info))
	require.Empty(t, info.AllowedHosts)
	fin = h.waitRun(h.startRun(flow, map[string]any{"apiBase": good.url}).ID, "failed")
	require.Contains(t, *fin.Nodes["call"].Error, "secret_host_refused: ")
	require.Len(t, good.requests(), 1, "nothing more was sent")

	// Set again with its value (POST keeps allowed_hosts when it omits
	// them): a host fixed in a flow but not allowed is refused too.
	require.Equal(t, http.StatusOK, h.do("PUT", "/api/v1/secrets/ACME_KEY", map[string]any{"allowed_hosts": []string{goodHost}}, nil))
	require.Equal(t, http.StatusOK, h.setSecret("ACME_KEY", value))
	require.Equal(t, http.StatusOK, h.do("GET", "/api/v1/secrets", nil, &list))
	require.Equal(t, []string{goodHost}, list.Secrets[0].AllowedHosts)
	fixed := h.createFlow(nodes(map[string]any{"url": evil.url + "/x?key={{ secret \"ACME_KEY\" }}"}), nil)
	fin = h.waitRun(h.startRun(fixed, map[string]any{}).ID, "failed")
	require.Contains(t, *fin.Nodes["call"].Error, "secret_host_refused: ")
	require.Empty(t, evil.requests())
	require.Equal(t, http.StatusNotFound, h.do("PUT", "/api/v1/secrets/NOPE", map[string]any{"allowed_hosts": []string{goodHost}}, nil))
}
