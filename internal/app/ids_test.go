package app_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestNodeIDsAreSafe: a graph whose node id holds a newline (every callback
// was a 401: the node could only time out), a space or one of / ; = ' < >
// (it could not be approved or retried: 404), or is over 64 characters is
// refused with 422 at the id's path; labels over 200 characters and names
// over 200 are refused too. A node whose id uses every allowed kind of
// character is dispatched, called back, failed, retried and approved
// through its URLs.
func TestNodeIDsAreSafe(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	api := h.app.URL + "/api/v1"
	flowBody := func(name string, nodes ...map[string]any) string {
		b, err := json.Marshal(map[string]any{"name": name, "graph": map[string]any{"nodes": nodes, "edges": []any{}}})
		require.NoError(t, err)
		return string(b)
	}
	existing := h.createFlow([]map[string]any{wnode(h, "a")}, nil)
	for _, id := range []string{"a\nb", "a b", "a/b", "a;b", "a=b", "a'b", "a<b", "a>b", "_a", strings.Repeat("x", 65)} {
		for _, rq := range []struct{ method, url string }{{"POST", api + "/flows"}, {"PUT", api + "/flows/" + existing}} {
			code, body := h.rawRequest(rq.method, rq.url, flowBody("ids", wnode(h, "ok"), node(id, "UX", nil)), true)
			require.Equal(t, 422, code, "%q: %s", id, body)
			var e struct {
				Error struct {
					Code    string `json:"code"`
					Details []struct {
						Code   string `json:"code"`
						Path   string `json:"path"`
						NodeID string `json:"node_id"`
					} `json:"details"`
				} `json:"error"`
			}
			require.NoError(t, json.Unmarshal(body, &e))
			require.Equal(t, "invalid_graph", e.Error.Code)
			require.Len(t, e.Error.Details, 1, "%s", body)
			require.Equal(t, "invalid_id", e.Error.Details[0].Code)
			require.Equal(t, "nodes[1].id", e.Error.Details[0].Path)
		}
	}
	long := strings.Repeat("é", 201)
	code, body := h.rawRequest("POST", api+"/flows", flowBody("labels", node("u", "UX", map[string]any{"label": long})), true)
	require.Equal(t, 422, code, "%s", body)
	require.Contains(t, string(body), `"path":"nodes[0].data.label"`)
	require.Contains(t, string(body), `"code":"too_long"`)
	code, body = h.rawRequest("POST", api+"/flows", flowBody(long, node("u", "UX", nil)), true)
	require.Equal(t, 400, code, "%s", body)
	require.Contains(t, string(body), "name is 201 characters long (at most 200)")
	code, body = h.rawRequest("POST", api+"/boards", `{"name":"b","sections":[{"id":"s","name":"`+long+`"}]}`, true)
	require.Equal(t, 400, code, "%s", body)
	require.Contains(t, string(body), "sections[0].name is 201 characters long")
	board := h.createBoard("new")
	code, body = h.rawRequest("POST", api+"/entities", `{"board_id":"`+board+`","type":"lead","name":"`+long+`"}`, true)
	require.Equal(t, 400, code, "%s", body)
	bflow := h.createBoardFlow(board, []map[string]any{node("u", "UX", nil)}, nil)
	require.Equal(t, 201, h.do("POST", "/api/v1/flows/"+bflow+"/triggers", map[string]any{"slug": "names",
		"entity": map[string]any{"board_id": board, "type": "lead", "name_path": "who"}}, nil))
	code, out := h.postHook("names", []byte(`{"who":"`+long+`"}`), nil)
	require.Equal(t, 400, code, "%v", out)
	require.Contains(t, as[map[string]any](t, out["error"])["message"], "the entity name at who is 201 characters long")

	// Every allowed kind of character, in the URLs that approve and retry.
	w, u := "W.1-x_Y", "ok.UX-2"
	flow := h.createFlow([]map[string]any{wnode(h, w), node(u, "UX", nil)}, []map[string]any{edge(w, u, nil)})
	r := h.startRun(flow, map[string]any{})
	code, body = h.rawRequest("POST", h.waitDispatch(r.ID, w, 1).Payload.CallbackURL, `{"status":"failed","error":"once"}`, false)
	require.Equal(t, 200, code, "%s", body)
	h.waitRun(r.ID, "failed")
	require.Equal(t, 200, h.do("POST", "/api/v1/runs/"+r.ID+"/nodes/"+w+"/retry", nil, nil))
	h.complete(h.waitDispatch(r.ID, w, 2), `{"v":1}`)
	h.waitNode(r.ID, u, "waiting_for_user")
	require.Equal(t, 200, h.do("POST", "/api/v1/runs/"+r.ID+"/nodes/"+u+"/complete", map[string]any{"status": "completed"}, nil))
	h.waitRun(r.ID, "completed")
}
