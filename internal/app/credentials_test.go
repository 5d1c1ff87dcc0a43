package app_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestCredentials: a stored credential is applied by the dispatcher as an
// HTTP step's request goes out and never shows — not in the API's
// answers, the run's output or its events; an OAuth2 credential's token is
// fetched once, kept, and fetched again after a 401; a credential bound to
// other hosts is refused with nothing sent; bad credentials are 400.
func TestCredentials(t *testing.T) {
	t.Parallel()
	h := newHarness(t, withSecretKey(t))
	const secret = "s3cr3t-bearer-token-4f9a"
	var mu sync.Mutex
	var auths []string
	var hits atomic.Int32
	var rejectNext atomic.Bool
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		mu.Lock()
		auths = append(auths, r.Header.Get("Authorization"))
		mu.Unlock()
		if rejectNext.CompareAndSwap(true, false) {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		// A careless API echoing the header: the echo is redacted.
		_, _ = w.Write([]byte(`{"ok": true, "echo": ` + strconvQuote(r.Header.Get("Authorization")) + `}`))
	}))
	t.Cleanup(api.Close)
	var tokenCalls atomic.Int32
	tokens := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := tokenCalls.Add(1)
		id, pw, ok := r.BasicAuth()
		if !ok || id != "client-1" || pw != "client-secret-77" || r.FormValue("grant_type") != "client_credentials" {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"access_token": "tok-` + strconv.Itoa(int(n)) + `", "expires_in": 3600}`))
	}))
	t.Cleanup(tokens.Close)
	host := strings.TrimPrefix(api.URL, "http://")
	tokenHost := strings.TrimPrefix(tokens.URL, "http://")

	var info map[string]any
	require.Equal(t, 201, h.do("POST", "/api/v1/credentials", map[string]any{"name": "crm", "type": "bearer",
		"data": map[string]any{"token": secret}, "allowed_hosts": []string{host}}, &info))
	require.Equal(t, "bearer", info["type"])
	require.NotContains(t, info, "data")
	code, body := h.raw("GET", "/api/v1/credentials")
	require.Equal(t, 200, code)
	require.NotContains(t, body, secret, "the list never shows data")
	code, body = h.raw("GET", "/api/v1/credentials/crm")
	require.Equal(t, 200, code)
	require.NotContains(t, body, secret)

	flow := h.createFlow([]map[string]any{node("call", "HTTP", map[string]any{"url": api.URL + "/leads", "credential": "crm"})}, nil)
	r := h.waitRun(h.startRun(flow, map[string]any{}).ID, "completed")
	mu.Lock()
	require.Equal(t, []string{"Bearer " + secret}, auths, "the header reached the API")
	mu.Unlock()
	require.NotContains(t, string(r.Nodes["call"].Output), secret, "the echo is redacted from the output")
	evs, err := h.app.Store.RunEvents(t.Context(), r.ID, 0, 1000)
	require.NoError(t, err)
	events, err := json.Marshal(evs)
	require.NoError(t, err)
	require.Contains(t, string(events), "dispatch.attempt", "the events read")
	require.NotContains(t, string(events), secret)
	_, run := h.raw("GET", "/api/v1/runs/"+r.ID)
	require.NotContains(t, run, secret)

	// Bound to another host: refused, nothing sent.
	require.Equal(t, 201, h.do("POST", "/api/v1/credentials", map[string]any{"name": "elsewhere", "type": "api_key",
		"data": map[string]any{"header": "X-Api-Key", "value": "k-123"}, "allowed_hosts": []string{"api.example.com"}}, nil))
	before := hits.Load()
	away := h.createFlow([]map[string]any{node("call", "HTTP", map[string]any{"url": api.URL + "/x", "credential": "elsewhere",
		"retry": map[string]any{"maxAttempts": 1}})}, nil)
	failed := h.waitRun(h.startRun(away, map[string]any{}).ID, "failed")
	require.Contains(t, *failed.Nodes["call"].Error, "credential_host_refused")
	require.Equal(t, before, hits.Load(), "nothing was sent")

	// OAuth2 client credentials: fetched once, kept, fetched again after a 401.
	require.Equal(t, 201, h.do("POST", "/api/v1/credentials", map[string]any{"name": "oauth", "type": "oauth2_client_credentials",
		"data":          map[string]any{"token_url": tokens.URL + "/token", "client_id": "client-1", "client_secret": "client-secret-77"},
		"allowed_hosts": []string{host, tokenHost}}, nil))
	oflow := h.createFlow([]map[string]any{node("call", "HTTP", map[string]any{"url": api.URL + "/o", "credential": "oauth"})}, nil)
	mu.Lock()
	auths = nil
	mu.Unlock()
	h.waitRun(h.startRun(oflow, map[string]any{}).ID, "completed")
	h.waitRun(h.startRun(oflow, map[string]any{}).ID, "completed")
	require.EqualValues(t, 1, tokenCalls.Load(), "the token is kept between requests")
	rejectNext.Store(true)
	h.waitRun(h.startRun(oflow, map[string]any{}).ID, "completed")
	require.EqualValues(t, 2, tokenCalls.Load(), "a 401 fetches a new token")
	mu.Lock()
	require.Equal(t, []string{"Bearer tok-1", "Bearer tok-1", "Bearer tok-1", "Bearer tok-2"}, auths)
	mu.Unlock()

	// Bad ones: every problem, nothing stored.
	var bad struct {
		Error struct {
			Details []struct {
				Path string `json:"path"`
			} `json:"details"`
		} `json:"error"`
	}
	require.Equal(t, 400, h.do("POST", "/api/v1/credentials", map[string]any{"name": "1x", "type": "basic",
		"data": map[string]any{"username": "u"}}, &bad))
	var paths []string
	for _, d := range bad.Error.Details {
		paths = append(paths, d.Path)
	}
	require.ElementsMatch(t, []string{"name", "data", "allowed_hosts"}, paths)
	bad.Error.Details = nil
	require.Equal(t, 400, h.do("POST", "/api/v1/credentials", map[string]any{"name": "magic", "type": "magic",
		"data": map[string]any{"token": "t"}, "allowed_hosts": []string{host}}, &bad))
	require.Len(t, bad.Error.Details, 1)
	require.Equal(t, "type", bad.Error.Details[0].Path, "an unknown type is the type's problem, not the data's")
	require.Equal(t, 404, h.do("PUT", "/api/v1/credentials/ghost", map[string]any{"type": "bearer", "data": map[string]any{"token": "t"},
		"allowed_hosts": []string{host}}, nil))
	require.Equal(t, 204, h.do("DELETE", "/api/v1/credentials/elsewhere", nil, nil))
	require.Equal(t, 404, h.do("GET", "/api/v1/credentials/elsewhere", nil, nil))
}

func strconvQuote(s string) string {
	b, _ := json.Marshal(s) // a string always marshals
	return string(b)
}

// TestCredentialsNoRequestCanCarry: data that no request or message could
// carry is refused at save, at its path, and nothing is stored — an
// api_key header that is not a header name or a value with a control
// character (each send failed, and was retried as a network failure), a
// basic user with a colon (the server reads another user), an smtp from
// that is not an address (each message failed).
func TestCredentialsNoRequestCanCarry(t *testing.T) {
	t.Parallel()
	h := newHarness(t, withSecretKey(t))
	hosts := []string{"api.example.com"}
	for name, c := range map[string]struct {
		typ  string
		data map[string]any
		want string
	}{
		"header-space": {"api_key", map[string]any{"header": "X Api Key", "value": "k"}, "not an HTTP header name"},
		"header-colon": {"api_key", map[string]any{"header": "X-Key:", "value": "k"}, "not an HTTP header name"},
		"value-del":    {"api_key", map[string]any{"header": "X-Key", "value": "k\u007f"}, "control character"},
		"user-colon":   {"basic", map[string]any{"username": "a:b", "password": "p"}, "colon"},
		"smtp-from": {"smtp", map[string]any{"host": "mail.example.com", "port": 587, "from": "not an address", "tls": "starttls"},
			"not an email address"},
	} {
		var bad struct {
			Error struct {
				Details []problem `json:"details"`
			} `json:"error"`
		}
		require.Equal(t, 400, h.do("POST", "/api/v1/credentials", map[string]any{"name": name, "type": c.typ, "data": c.data,
			"allowed_hosts": hosts}, &bad), name)
		require.Len(t, bad.Error.Details, 1, name)
		require.Equal(t, "data", bad.Error.Details[0].Path, name)
		require.Contains(t, bad.Error.Details[0].Message, c.want, name)
		require.Equal(t, 404, h.do("GET", "/api/v1/credentials/"+name, nil, nil), "%s: nothing stored", name)
	}
	// What a request can carry is kept: a tab in a value, a display name
	// in from.
	require.Equal(t, 201, h.do("POST", "/api/v1/credentials", map[string]any{"name": "fine", "type": "api_key",
		"data": map[string]any{"header": "X-Api_Key.v2", "value": "a\tb"}, "allowed_hosts": hosts}, nil))
	require.Equal(t, 201, h.do("POST", "/api/v1/credentials", map[string]any{"name": "mail", "type": "smtp",
		"data":          map[string]any{"host": "mail.example.com", "port": 587, "from": "Orders <orders@example.com>", "tls": "starttls"},
		"allowed_hosts": hosts}, nil))
}
