package app_test

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestLoneSurrogateRefused sends valid JSON holding a lone surrogate escape
// (what a worker that cuts an emoji in half then encodes sends), which
// Postgres jsonb refuses, to every kind of route that stores a body: each
// is a 400 naming the string's JSON path, and nothing is stored. Without
// the check the hook, run start, event and UX answer were 404 "malformed
// id" and the callback a 500, which a worker retries forever.
func TestLoneSurrogateRefused(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	board := h.createBoard("new", "done")
	flow := h.createBoardFlow(board, []map[string]any{wnode(h, "a"), node("u", "UX", nil)},
		[]map[string]any{edge("a", "u", nil)})
	require.Equal(t, 201, h.do("POST", "/api/v1/flows/"+flow+"/triggers", map[string]any{"slug": "lead",
		"entity": map[string]any{"board_id": board, "type": "lead", "name_path": "name"}}, nil))
	r := h.startRun(flow, map[string]any{})
	d := h.waitDispatch(r.ID, "a", 1)

	api := h.app.URL + "/api/v1"
	for _, s := range []string{`\ud800`, `Zoe \ud83d`, `\ud83d\ud83d`, `\ud83dx\ude00`, `caf\uDC00`} {
		routes := []struct {
			name, method, url, body, path string
			auth                          bool
		}{
			{"hook", "POST", h.app.URL + "/hooks/lead", `{"name":"` + s + `","email":"zoe@example.com"}`, "$.name", false},
			{"run start", "POST", api + "/flows/" + flow + "/runs", `{"input":{"x":["ok","` + s + `"]}}`, "$.input.x[1]", true},
			{"event", "POST", api + "/events", `{"name":"lead.seen","key":"k1","payload":{"who":"` + s + `"}}`, "$.payload.who", true},
			{"node complete", "POST", api + "/runs/" + r.ID + "/nodes/u/complete", `{"status":"completed","output":{"note":"` + s + `"}}`, "$.output.note", true},
			{"callback", "POST", d.Payload.CallbackURL, `{"status":"completed","output":{"name":"` + s + `"}}`, "$.output.name", false},
			{"callback key", "POST", d.Payload.CallbackURL, `{"status":"completed","output":{"o":{"` + s + `":1}}}`, "$.output.o", false},
		}
		for _, rt := range routes {
			h.refusedAtPath(rt.method, rt.url, rt.body, rt.auth, rt.name+" with "+s, "lone_surrogate", rt.path)
		}
	}

	// Nothing was stored: one run (the hook starts one), its worker still
	// running.
	var runs struct {
		Runs []any `json:"runs"`
	}
	require.Equal(t, 200, h.do("GET", "/api/v1/runs?flow_id="+flow, nil, &runs))
	require.Len(t, runs.Runs, 1)
	require.Equal(t, "running", h.run(r.ID).Nodes["a"].Status)

	// A surrogate pair (an emoji) is stored as sent.
	code, body := h.rawRequest("POST", d.Payload.CallbackURL, `{"status":"completed","output":{"name":"caf\ud83d\ude00"}}`, false)
	require.Equal(t, 200, code, "%s", body)
	require.JSONEq(t, `{"name":"caf😀"}`, string(h.run(r.ID).Nodes["a"].Output))
}
