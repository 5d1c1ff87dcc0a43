package app_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// apiErrorJSON is the contract's error body.
type apiErrorJSON struct {
	Error struct {
		Code    string `json:"code"`
		Message string `json:"message"`
		Details []struct {
			Code string `json:"code"`
			Path string `json:"path"`
		} `json:"details"`
	} `json:"error"`
}

// rawRequest sends body verbatim (numbers as written) with the API token
// when auth is set, and the header pairs given (name, value, …) as they
// are; it returns the status and the answer.
// refusedAtPath sends a raw body and requires a 400 invalid_request with
// one detail: code at the JSON path, which the message names too.
func (h *harness) refusedAtPath(method, url, body string, auth bool, what, code, path string) {
	h.t.Helper()
	status, got := h.rawRequest(method, url, body, auth)
	require.Equal(h.t, 400, status, "%s: %s", what, got)
	var e apiErrorJSON
	require.NoError(h.t, json.Unmarshal(got, &e), what)
	require.Equal(h.t, "invalid_request", e.Error.Code, what)
	require.Len(h.t, e.Error.Details, 1, what)
	require.Equal(h.t, code, e.Error.Details[0].Code, what)
	require.Equal(h.t, path, e.Error.Details[0].Path, what)
	require.Contains(h.t, e.Error.Message, path, what)
}

func (h *harness) rawRequest(method, url, body string, auth bool, header ...string) (int, []byte) {
	h.t.Helper()
	req, err := http.NewRequestWithContext(h.t.Context(), method, url, strings.NewReader(body))
	require.NoError(h.t, err)
	req.Header.Set("Content-Type", "application/json")
	if auth {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header[header[i]] = []string{header[i+1]}
	}
	resp, err := h.client.Do(req)
	require.NoError(h.t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(h.t, err)
	return resp.StatusCode, b
}

// TestHostileNumbersRefused sends numbers that Postgres would print as
// 100,001 digits (1e100000), that overflow its numeric (1e1000000), that
// are outside float64's range (1.8e308, -1e-400) or would print as 65
// characters (0e-63) to every route that takes a body: each is a 400 naming
// the number's JSON path, and nothing is stored. Without the check the
// first was stored (a 9 KB hook body made a 200 MB answer) and the second
// answered 500.
func TestHostileNumbersRefused(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	board := h.createBoard("new", "done")
	flow := h.createBoardFlow(board, []map[string]any{wnode(h, "a"), node("u", "UX", nil)},
		[]map[string]any{edge("a", "u", nil)})
	require.Equal(t, 201, h.do("POST", "/api/v1/flows/"+flow+"/triggers", map[string]any{"slug": "numbers",
		"entity": map[string]any{"board_id": board, "type": "lead", "name_path": "name"}}, nil))
	var ent entityJSON
	require.Equal(t, 201, h.do("POST", "/api/v1/entities", map[string]any{"board_id": board, "type": "lead", "name": "Ada"}, &ent))
	r := h.startRun(flow, map[string]any{})
	d := h.waitDispatch(r.ID, "a", 1)

	api := h.app.URL + "/api/v1"
	graph := func(n string) string {
		return `{"nodes":[{"id":"a","type":"Worker","data":{"webhookUrl":"http://127.0.0.1:1/a","weight":` + n + `}}],"edges":[]}`
	}
	for _, n := range []string{"1e100000", "1e1000000", "1.8e308", "-1e-400", "0e-63"} {
		routes := []struct {
			name, method, url, body, path string
			auth                          bool
		}{
			{"hook", "POST", h.app.URL + "/hooks/numbers", `{"name":"Bo","scores":[1,` + n + `]}`, "$.scores[1]", false},
			{"run start", "POST", api + "/flows/" + flow + "/runs", `{"input":{"x":` + n + `}}`, "$.input.x", true},
			{"flow create", "POST", api + "/flows", `{"name":"n","graph":` + graph(n) + `}`, "$.graph.nodes[0].data.weight", true},
			{"flow save", "PUT", api + "/flows/" + flow, `{"graph":` + graph(n) + `}`, "$.graph.nodes[0].data.weight", true},
			{"entity create", "POST", api + "/entities", `{"board_id":"` + board + `","type":"lead","name":"Cy","metadata":{"n":` + n + `}}`, "$.metadata.n", true},
			{"entity move", "POST", api + "/entities/" + ent.ID + "/move", `{"section_id":"done","n":` + n + `}`, "$.n", true},
			{"board create", "POST", api + "/boards", `{"name":"b","sections":[{"id":"s","name":"s","n":` + n + `}]}`, "$.sections[0].n", true},
			{"trigger create", "POST", api + "/flows/" + flow + "/triggers", `{"slug":"other","n":` + n + `}`, "$.n", true},
			{"node complete", "POST", api + "/runs/" + r.ID + "/nodes/u/complete", `{"status":"completed","output":{"n":` + n + `}}`, "$.output.n", true},
			{"callback", "POST", d.Payload.CallbackURL, `{"status":"completed","output":{"rows":[[` + n + `]]}}`, "$.output.rows[0][0]", false},
		}
		for _, rt := range routes {
			h.refusedAtPath(rt.method, rt.url, rt.body, rt.auth, fmt.Sprintf("%s with %s", rt.name, n), "number_out_of_range", rt.path)
		}
	}

	// Nothing was stored: one run, its worker still running, one version,
	// one entity where it was.
	var runs struct {
		Runs []any `json:"runs"`
	}
	require.Equal(t, 200, h.do("GET", "/api/v1/runs?flow_id="+flow, nil, &runs))
	require.Len(t, runs.Runs, 1)
	require.Equal(t, "running", h.run(r.ID).Nodes["a"].Status)
	var versions struct {
		Versions []any `json:"versions"`
	}
	require.Equal(t, 200, h.do("GET", "/api/v1/flows/"+flow+"/versions", nil, &versions))
	require.Len(t, versions.Versions, 1)
	require.Equal(t, "new", *h.entity(ent.ID).SectionID)
}

// TestNumbersAtTheBoundStayBounded stores numbers just within the bound
// (1e63 prints as 64 digits): they are kept as Postgres prints them, and a
// run's answer stays within a small factor of what was sent.
func TestNumbersAtTheBoundStayBounded(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	flow := h.createFlow([]map[string]any{node("u", "UX", nil)}, nil)
	nums := strings.TrimSuffix(strings.Repeat("1e63,", 20_000), ",")
	body := `{"input":{"big":[` + nums + `],"small":1.2345678901234567e-45,"neg":-9.9e62}}`
	code, resp := h.rawRequest("POST", h.app.URL+"/api/v1/flows/"+flow+"/runs", body, true)
	require.Equal(t, 201, code, "%.300s", resp)
	var r runJSON
	require.NoError(t, json.Unmarshal(resp, &r))
	code, got := h.rawRequest("GET", h.app.URL+"/api/v1/runs/"+r.ID, "", true)
	require.Equal(t, 200, code)
	// The input is in the answer twice (the run's and the UX node's).
	require.Less(t, len(got), 2*14*len(body)+4096, "answer %d bytes for a body of %d", len(got), len(body))
	var in struct {
		Big   []json.Number `json:"big"`
		Small json.Number   `json:"small"`
		Neg   json.Number   `json:"neg"`
	}
	require.NoError(t, json.Unmarshal(r.Input, &in))
	require.Len(t, in.Big, 20_000)
	require.Equal(t, "1"+strings.Repeat("0", 63), string(in.Big[0]))
	require.Equal(t, "0."+strings.Repeat("0", 44)+"12345678901234567", string(in.Small))
	require.Equal(t, "-99"+strings.Repeat("0", 61), string(in.Neg))
}
