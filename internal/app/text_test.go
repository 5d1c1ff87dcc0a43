package app_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestUnstorableTextRefused sends invalid UTF-8 and NUL, which Postgres
// text refuses (SQLSTATE 22021), in the headers, query parameters and path
// parameters that reach the database: each is a 400 in the error shape
// naming the parameter or header, and nothing is stored. Without the guard
// they answered 500.
func TestUnstorableTextRefused(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	board := h.createBoard("new", "done")
	flow := h.createBoardFlow(board, []map[string]any{node("u", "UX", nil)}, nil)
	require.Equal(t, 201, h.do("POST", "/api/v1/flows/"+flow+"/triggers", map[string]any{"slug": "lead"}, nil))
	r := h.startRun(flow, map[string]any{})

	api := h.app.URL + "/api/v1"
	tests := []struct {
		name, method, url, body string
		header                  []string
		auth                    bool
		names                   string // what the message must name
	}{
		{"run start key", "POST", api + "/flows/" + flow + "/runs", `{"input":{}}`, []string{"Idempotency-Key", "caf\xe9"}, true, `header "Idempotency-Key"`},
		{"hook key", "POST", h.app.URL + "/hooks/lead", `{}`, []string{"Idempotency-Key", "caf\xe9"}, false, `header "Idempotency-Key"`},
		{"request id", "POST", api + "/runs/" + r.ID + "/pause", `{}`, []string{"X-Request-Id", "\xff\xfe"}, true, `header "X-Request-Id"`},
		{"runs by node", "GET", api + "/runs?node=%B1", ``, nil, true, `query parameter "node"`},
		{"runs by error", "GET", api + "/runs?error=%00", ``, nil, true, `query parameter "error"`},
		{"board search", "GET", api + "/boards/" + board + "?q=%00", ``, nil, true, `query parameter "q"`},
		{"audit actor", "GET", api + "/audit?actor=%C3", ``, nil, true, `query parameter "actor"`},
		{"query name", "GET", api + "/runs?%B1=1", ``, nil, true, `query parameter name "\xb1"`},
		{"hook slug", "POST", h.app.URL + "/hooks/%B1", `{}`, nil, false, `path parameter "slug"`},
		{"node key", "POST", api + "/runs/" + r.ID + "/nodes/u%00/skip", `{}`, nil, true, `path parameter "key"`},
		{"section", "PATCH", api + "/boards/" + board + "/sections/%E9", `{"name":"x"}`, nil, true, `path parameter "section"`},
		{"secret name", "DELETE", api + "/secrets/%00", ``, nil, true, `path parameter "name"`},
	}
	for _, tt := range tests {
		code, body := h.rawRequest(tt.method, tt.url, tt.body, tt.auth, tt.header...)
		require.Equal(t, 400, code, "%s: %s", tt.name, body)
		var e apiErrorJSON
		require.NoError(t, json.Unmarshal(body, &e), tt.name)
		require.Equal(t, "invalid_request", e.Error.Code, tt.name)
		require.Contains(t, e.Error.Message, tt.names, tt.name)
	}

	// Nothing was stored: one run, still waiting, not paused.
	var runs struct {
		Runs []any `json:"runs"`
	}
	require.Equal(t, 200, h.do("GET", "/api/v1/runs?flow_id="+flow, nil, &runs))
	require.Len(t, runs.Runs, 1)
	require.Equal(t, "running", h.run(r.ID).Status)
}
