package app_test

import (
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
)

// internals are fragments of driver and database errors that must never
// reach an answer.
var internals = []string{"sql:", "SQLSTATE", "no rows", "invalid input syntax", "out of range for type",
	"violates", "constraint", "pq:", "pgx", "gorm", "relation ", "syntax error"}

// requireClearError requires a 4xx in the contract's error shape with the
// given code, whose message carries no database internals.
func requireClearError(t *testing.T, what string, wantStatus int, wantCode string, status int, body []byte) apiErrorJSON {
	t.Helper()
	require.Equal(t, wantStatus, status, "%s: %s", what, body)
	var e apiErrorJSON
	require.NoError(t, json.Unmarshal(body, &e), "%s: %s", what, body)
	require.Equal(t, wantCode, e.Error.Code, "%s: %s", what, body)
	require.NotEmpty(t, e.Error.Message, what)
	for _, bad := range internals {
		require.NotContains(t, strings.ToLower(string(body)), strings.ToLower(bad), "%s leaks internals: %s", what, body)
	}
	return e
}

// TestOddRequestsGetClearErrors: requests that answered 500 or carried
// database text (issue 33, item 7) get a clear 4xx without internals.
func TestOddRequestsGetClearErrors(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	flow := h.createFlow([]map[string]any{wnode(h, "a")}, nil)
	r := h.startRun(flow, map[string]any{})
	d := h.waitDispatch(r.ID, "a", 1)
	api := h.app.URL + "/api/v1"
	cursor := func(s string) string { return base64.RawURLEncoding.EncodeToString([]byte(s)) }
	later := time.Now().Add(time.Hour)

	cases := []struct {
		name, method, url, body string
		auth                    bool
		status                  int
		code                    string
	}{
		{"version past int4", "GET", api + "/flows/" + flow + "/versions/2147483648", "", true, 404, "not_found"},
		{"version far past int64", "GET", api + "/flows/" + flow + "/versions/99999999999999999999", "", true, 404, "not_found"},
		{"run start at version past int4", "POST", api + "/flows/" + flow + "/runs", `{"version":2147483648}`, true, 400, "invalid_request"},
		{"callback token with attempt 2^62", "POST", h.mint(r.ID, "a", 1<<62, later), `{"status":"completed","output":{}}`, false, 401, "unauthorized"},
		{"cursor with a bad id", "GET", api + "/runs?cursor=" + cursor("2026-01-01T00:00:00Z|x'; select 1"), "", true, 400, "invalid_request"},
		{"cursor with a bad time", "GET", api + "/runs?cursor=" + cursor("yesterday|"+uuid.NewString()), "", true, 400, "invalid_request"},
		{"cursor not base64", "GET", api + "/runs?cursor=!!!", "", true, 400, "invalid_request"},
		{"flow_id not a uuid", "GET", api + "/runs?flow_id=nope", "", true, 400, "invalid_request"},
		{"unknown hook", "POST", h.app.URL + "/hooks/nope", `{}`, false, 404, "not_found"},
		{"taken trigger slug", "POST", api + "/flows/" + flow + "/triggers", `{"slug":"taken"}`, true, 409, "conflict"},
		{"duplicate status in a callback", "POST", d.Payload.CallbackURL, `{"status":"completed","status":"failed"}`, false, 400, "invalid_request"},
		{"duplicate status in a callback, other case", "POST", d.Payload.CallbackURL, `{"status":"failed","Status":"completed","output":1}`, false, 400, "invalid_request"},
	}
	require.Equal(t, 201, h.do("POST", "/api/v1/flows/"+flow+"/triggers", map[string]any{"slug": "taken"}, nil))
	for _, c := range cases {
		code, body := h.rawRequest(c.method, c.url, c.body, c.auth)
		requireClearError(t, c.name, c.status, c.code, code, body)
	}
	// The node was not touched by the duplicate-key callbacks.
	require.Equal(t, "running", h.run(r.ID).Nodes["a"].Status)
	h.complete(d, `{}`)
	h.waitRun(r.ID, "completed")
}
