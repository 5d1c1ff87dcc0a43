package app_test

import (
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/stitchd/stitchd/store"
)

type boardView struct {
	ID         string   `json:"id"`
	Name       string   `json:"name"`
	CardFields []string `json:"card_fields"`
	Sections   []struct {
		ID       string       `json:"id"`
		Name     string       `json:"name"`
		Count    int          `json:"count"`
		Entities []entityJSON `json:"entities"`
	} `json:"sections"`
}

func (h *harness) board(id, query string) boardView {
	h.t.Helper()
	var b boardView
	require.Equal(h.t, http.StatusOK, h.do("GET", "/api/v1/boards/"+id+query, nil, &b))
	return b
}

// layout is a board's sections as "id:name" and, by section, its entities'
// names.
func (b boardView) layout() ([]string, map[string][]string) {
	var secs []string
	ents := map[string][]string{}
	for _, s := range b.Sections {
		secs = append(secs, s.ID+":"+s.Name)
		for _, e := range s.Entities {
			ents[s.ID] = append(ents[s.ID], e.Name)
		}
	}
	return secs, ents
}

// TestBoardEditing covers boards, sections and entities edited and
// deleted through the API (issue 34): renames, card fields, sections
// added, moved, renamed and deleted (their entities moved on), search by
// name or email, entity edits; each refusal (bad input 400, a clash 409,
// something live using what would go 409) in the contract's error shape
// and changing nothing; runs of a deleted entity kept, detached; every
// write in the audit trail.
func TestBoardEditing(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	board := h.createBoard("new", "mid", "done")
	mk := func(name, email, section string) string {
		var e entityJSON
		require.Equal(t, 201, h.do("POST", "/api/v1/entities", map[string]any{"board_id": board, "type": "lead", "name": name,
			"email": email, "section_id": section}, &e))
		return e.ID
	}
	ada, bob := mk("Ada Lovelace", "ada@example.com", "new"), mk("Bob", "bob_99@example.com", "mid")
	before := h.board(board, "")

	// Bad input: 400, nothing changed.
	for _, c := range []struct {
		method, path string
		body         any
	}{
		{"PATCH", "/api/v1/boards/" + board, map[string]any{"name": "  "}},
		{"PATCH", "/api/v1/boards/" + board, map[string]any{}},
		{"PATCH", "/api/v1/boards/" + board, map[string]any{"card_fields": []string{"score", ""}}},
		{"PATCH", "/api/v1/boards/" + board, map[string]any{"card_fields": []string{"a", "a"}}},
		{"PATCH", "/api/v1/boards/" + board, map[string]any{"card_fields": []string{"1", "2", "3", "4", "5", "6", "7", "8", "9", "10", "11"}}},
		{"POST", "/api/v1/boards/" + board + "/sections", map[string]any{"id": "bad id"}},
		{"POST", "/api/v1/boards/" + board + "/sections", map[string]any{"id": "x", "position": -1}},
		{"PATCH", "/api/v1/boards/" + board + "/sections/mid", map[string]any{"name": ""}},
		{"PATCH", "/api/v1/boards/" + board + "/sections/mid", map[string]any{"id": "other", "name": "M"}},
		{"DELETE", "/api/v1/boards/" + board + "/sections/mid?move_to=mid", nil},
		{"DELETE", "/api/v1/boards/" + board + "/sections/mid?move_to=nowhere", nil},
		{"PATCH", "/api/v1/entities/" + ada, map[string]any{"name": ""}},
		{"PATCH", "/api/v1/entities/" + ada, map[string]any{"metadata": []int{1}}},
		{"PATCH", "/api/v1/entities/" + ada, map[string]any{}},
		{"GET", "/api/v1/boards/" + board + "?q=" + url.QueryEscape(string(make([]byte, 201))), nil},
	} {
		code, _ := h.refused(http.StatusBadRequest, c.method, c.path, c.body)
		require.Equal(t, "invalid_request", code, "%s %s %v", c.method, c.path, c.body)
	}
	// Clashes: 409, nothing changed.
	for _, c := range []struct {
		method, path string
		body         any
	}{
		{"POST", "/api/v1/boards/" + board + "/sections", map[string]any{"id": "mid"}},
		{"DELETE", "/api/v1/boards/" + board + "/sections/mid", nil}, // holds Bob
		{"PATCH", "/api/v1/entities/" + ada, map[string]any{"email": "BOB_99@example.com"}},
	} {
		code, _ := h.refused(http.StatusConflict, c.method, c.path, c.body)
		require.Equal(t, "conflict", code, "%s %s", c.method, c.path)
	}
	h.refused(http.StatusNotFound, "PATCH", "/api/v1/boards/"+board+"/sections/nope", map[string]any{"name": "N"})
	h.refused(http.StatusNotFound, "DELETE", "/api/v1/boards/"+bob, nil)
	require.Equal(t, before, h.board(board, ""), "refusals change nothing")

	// Edits.
	var b boardView
	require.Equal(t, 200, h.do("PATCH", "/api/v1/boards/"+board, map[string]any{"name": "Pipeline", "card_fields": []string{"score"}}, &b))
	require.Equal(t, "Pipeline", b.Name)
	require.Equal(t, []string{"score"}, b.CardFields)
	require.Equal(t, 201, h.do("POST", "/api/v1/boards/"+board+"/sections", map[string]any{"id": "later", "name": "Later", "position": 1}, nil))
	require.Equal(t, 200, h.do("PATCH", "/api/v1/boards/"+board+"/sections/mid", map[string]any{"name": "Middle", "position": 0}, nil))
	secs, ents := h.board(board, "").layout()
	require.Equal(t, []string{"mid:Middle", "new:new", "later:Later", "done:done"}, secs)
	require.Equal(t, map[string][]string{"new": {"Ada Lovelace"}, "mid": {"Bob"}}, ents)
	var e entityJSON
	require.Equal(t, 200, h.do("PATCH", "/api/v1/entities/"+ada, map[string]any{"name": "Ada King", "type": "customer",
		"metadata": map[string]any{"score": 87}}, &e))
	require.Equal(t, "Ada King", e.Name)
	require.Equal(t, "customer", e.Type)
	require.Equal(t, "new", *e.SectionID, "an edit moves nothing")

	// Search: name or email, case-insensitive, the text literal (no
	// wildcards); counts are the matches'.
	for q, want := range map[string]map[string][]string{
		"king":     {"new": {"Ada King"}},
		"BOB_99@":  {"mid": {"Bob"}},
		"ada@":     {"new": {"Ada King"}},
		"%":        {},
		"b_b":      {},
		"example.": {"new": {"Ada King"}, "mid": {"Bob"}},
	} {
		got := h.board(board, "?q="+url.QueryEscape(q))
		_, ents := got.layout()
		if len(want) == 0 {
			want = map[string][]string{}
		}
		require.Equal(t, want, ents, "q=%s", q)
		for _, s := range got.Sections {
			require.Equal(t, len(want[s.ID]), s.Count, "q=%s: section %s counts the matches", q, s.ID)
		}
	}

	// A section deleted with move_to: its entities move on, each with a
	// manual move in its journey.
	require.Equal(t, 200, h.do("DELETE", "/api/v1/boards/"+board+"/sections/mid?move_to=done", nil, &b))
	secs, ents = b.layout()
	require.Equal(t, []string{"new:new", "later:Later", "done:done"}, secs)
	require.Equal(t, []string{"Bob"}, ents["done"])
	j := h.entity(bob).Journey
	last := j[len(j)-1]
	require.Equal(t, "manual_move", last.Kind)
	require.Equal(t, "mid", *last.From)
	require.Equal(t, "done", *last.To)

	// A flow on the board moving entities to "done", and a run of Ada's
	// that is still running: the section, the board and Ada stay.
	w := wnode(h, "work")
	as[map[string]any](t, w["data"])["entityMovement"] = movement("done", "", nil)
	flow := h.createBoardFlow(board, []map[string]any{w}, nil)
	var r runJSON
	require.Equal(t, 201, h.do("POST", "/api/v1/flows/"+flow+"/runs", map[string]any{"entity_id": ada, "input": map[string]any{}}, &r))
	d := h.waitDispatch(r.ID, "work", 1)
	h.refused(http.StatusConflict, "DELETE", "/api/v1/boards/"+board+"/sections/done?move_to=new", nil)
	h.refused(http.StatusConflict, "DELETE", "/api/v1/entities/"+ada, nil)
	h.refused(http.StatusConflict, "DELETE", "/api/v1/boards/"+board, nil)
	// A section no flow moves to goes (it is empty).
	require.Equal(t, 200, h.do("DELETE", "/api/v1/boards/"+board+"/sections/later", nil, nil))
	h.complete(d, `{}`)
	h.waitRun(r.ID, "completed")
	require.Equal(t, "done", *h.entity(ada).SectionID)

	// Finished: Ada goes; her run stays, without her.
	require.Equal(t, http.StatusNoContent, h.do("DELETE", "/api/v1/entities/"+ada, nil, nil))
	h.refused(http.StatusNotFound, "GET", "/api/v1/entities/"+ada, nil)
	var rr struct {
		Status   string  `json:"status"`
		EntityID *string `json:"entity_id"`
	}
	require.Equal(t, 200, h.do("GET", "/api/v1/runs/"+r.ID, nil, &rr))
	require.Equal(t, "completed", rr.Status)
	require.Nil(t, rr.EntityID, "the run is detached from the deleted entity")

	// The flow still names the board; once it is deleted, the board goes
	// with its sections and entities.
	h.refused(http.StatusConflict, "DELETE", "/api/v1/boards/"+board, nil)
	require.Equal(t, http.StatusNoContent, h.do("DELETE", "/api/v1/flows/"+flow, nil, nil))
	require.Equal(t, http.StatusNoContent, h.do("DELETE", "/api/v1/boards/"+board, nil, nil))
	h.refused(http.StatusNotFound, "GET", "/api/v1/boards/"+board, nil)
	h.refused(http.StatusNotFound, "GET", "/api/v1/entities/"+bob, nil)
	h.refused(http.StatusNotFound, "DELETE", "/api/v1/boards/"+board, nil)

	// Every write is in the audit trail, by its route.
	var audit struct {
		Entries []struct {
			Action string `json:"action"`
			Target string `json:"target"`
		} `json:"entries"`
	}
	require.Equal(t, 200, h.do("GET", "/api/v1/audit?target=board:"+board, nil, &audit))
	var actions []string
	for _, a := range audit.Entries {
		actions = append(actions, a.Action)
	}
	for _, want := range []string{"PATCH /api/v1/boards/:id", "POST /api/v1/boards/:id/sections",
		"PATCH /api/v1/boards/:id/sections/:section", "DELETE /api/v1/boards/:id/sections/:section", "DELETE /api/v1/boards/:id"} {
		require.True(t, slices.Contains(actions, want), "audit has %s: %v", want, actions)
	}
	require.Equal(t, 200, h.do("GET", "/api/v1/audit?target=entity:"+ada, nil, &audit))
	actions = actions[:0]
	for _, a := range audit.Entries {
		actions = append(actions, a.Action)
	}
	require.Contains(t, actions, "PATCH /api/v1/entities/:id")
	require.Contains(t, actions, "DELETE /api/v1/entities/:id")
}

// TestSetMetadata: a node's entityMovement.onSuccess.setMetadata writes
// values of its output into its entity's metadata, in the completing
// transaction with the move: keys it names are replaced, others kept, a
// path the output lacks leaves its key alone; the entity.moved event
// carries what was set. A bad setMetadata is refused when the flow is
// saved, at its path.
func TestSetMetadata(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	board := h.createBoard("new", "scored")
	w := wnode(h, "score")
	as[map[string]any](t, w["data"])["entityMovement"] = movement("scored", "", map[string]any{
		"setMetadata": map[string]any{"score": "score", "tier": "result.tier", "missing": "nothere"}})
	flow := h.createBoardFlow(board, []map[string]any{w}, nil)
	var e struct {
		ID string `json:"id"`
	}
	require.Equal(t, 201, h.do("POST", "/api/v1/entities", map[string]any{"board_id": board, "type": "lead", "name": "Ada",
		"metadata": map[string]any{"source": "web", "score": 1, "missing": "kept"}}, &e))
	var r runJSON
	require.Equal(t, 201, h.do("POST", "/api/v1/flows/"+flow+"/runs", map[string]any{"entity_id": e.ID, "input": map[string]any{}}, &r))
	h.complete(h.waitDispatch(r.ID, "score", 1), `{"score": 87, "result": {"tier": "gold"}}`)
	h.waitRun(r.ID, "completed")
	var got struct {
		SectionID string         `json:"section_id"`
		Metadata  map[string]any `json:"metadata"`
	}
	require.Equal(t, 200, h.do("GET", "/api/v1/entities/"+e.ID, nil, &got))
	require.Equal(t, "scored", got.SectionID)
	require.Equal(t, map[string]any{"source": "web", "score": float64(87), "tier": "gold", "missing": "kept"}, got.Metadata)
	// The board's card data has it too.
	b := h.board(board, "")
	require.InDelta(t, float64(87), b.Sections[1].Entities[0].Metadata["score"], 0)
	code, ps := h.refused(http.StatusUnprocessableEntity, "POST", "/api/v1/flows", map[string]any{"name": "bad", "graph": map[string]any{
		"nodes": []map[string]any{node("x", "Worker", map[string]any{"webhookUrl": h.worker.URL + "/x",
			"entityMovement": map[string]any{"onSuccess": map[string]any{"targetSectionId": "scored", "setMetadata": map[string]any{"score": ""}}}})},
		"edges": []map[string]any{}}})
	require.Equal(t, "invalid_graph", code)
	require.Contains(t, byPath(ps), "nodes[0].data.entityMovement.onSuccess.setMetadata.score")
}

// TestApprovalSummaryAndReason (issue 34): a UX node's summary — gjson
// paths into its input, plain or labelled — comes with its approval as
// labelled values (null for a path the input lacks); a bad summary is
// refused when the flow is saved, at its path; a rejection's reason is
// kept in the entity's journey, with who gave it.
func TestApprovalSummaryAndReason(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	board := h.createBoard("new", "review", "nurture")
	ask := node("ask", "UX", map[string]any{"prompt": "Call them?",
		"summary": []any{map[string]any{"label": "Email", "path": "email"}, "company.size", map[string]any{"path": "nope"}},
		"entityMovement": map[string]any{"onSuccess": map[string]any{"targetSectionId": "review"},
			"onOutcome": map[string]any{"reject": map[string]any{"targetSectionId": "nurture", "completeAs": "neutral"}}}})
	flow := h.createBoardFlow(board, []map[string]any{ask, node("later", "Condition", nil)},
		[]map[string]any{redge("ask", "later", map[string]any{"outcome": "reject"})})
	var e entityJSON
	require.Equal(t, 201, h.do("POST", "/api/v1/entities", map[string]any{"board_id": board, "type": "lead", "name": "Ada"}, &e))
	var r runJSON
	require.Equal(t, 201, h.do("POST", "/api/v1/flows/"+flow+"/runs", map[string]any{"entity_id": e.ID,
		"input": map[string]any{"email": "ada@example.com", "company": map[string]any{"size": 120}}}, &r))
	h.waitNode(r.ID, "ask", "waiting_for_user")
	var inbox struct {
		Approvals []struct {
			Summary []struct {
				Label string `json:"label"`
				Path  string `json:"path"`
				Value any    `json:"value"`
			} `json:"summary"`
			Entity struct{ Name string } `json:"entity"`
		} `json:"approvals"`
	}
	require.Equal(t, 200, h.do("GET", "/api/v1/approvals", nil, &inbox))
	require.Len(t, inbox.Approvals, 1)
	s := inbox.Approvals[0].Summary
	require.Len(t, s, 3)
	require.Equal(t, []any{"Email", "email", "ada@example.com"}, []any{s[0].Label, s[0].Path, s[0].Value})
	require.Equal(t, []any{"company.size", "company.size", float64(120)}, []any{s[1].Label, s[1].Path, s[1].Value})
	require.Equal(t, []any{"nope", nil}, []any{s[2].Label, s[2].Value})
	require.Equal(t, "Ada", inbox.Approvals[0].Entity.Name)

	require.Equal(t, 200, h.do("POST", "/api/v1/runs/"+r.ID+"/nodes/ask/complete", map[string]any{"outcome": "reject",
		"comment": "budget frozen until Q3"}, nil))
	h.waitRun(r.ID, "completed")
	got := h.entity(e.ID)
	require.Equal(t, "nurture", *got.SectionID)
	last := got.Journey[len(got.Journey)-1]
	require.Equal(t, "moved", last.Kind)
	require.NotNil(t, last.Comment, "the rejection's reason is in the journey")
	require.Equal(t, "budget frozen until Q3", *last.Comment)
	require.Equal(t, "admin", *last.Actor)

	for _, c := range []struct {
		summary any
		path    string
	}{
		{"email", "nodes[0].data.summary"},
		{[]any{""}, `nodes[0].data.summary["0"]`},
		{[]any{7}, `nodes[0].data.summary["0"]`},
		{[]any{map[string]any{"label": "L"}}, `nodes[0].data.summary["0"].path`},
		{[]any{map[string]any{"path": "a", "label": 3}}, `nodes[0].data.summary["0"].label`},
		{[]any{map[string]any{"path": "a", "lable": "x"}}, `nodes[0].data.summary["0"].lable`},
	} {
		code, ps := h.refused(http.StatusUnprocessableEntity, "POST", "/api/v1/flows", map[string]any{"name": "bad", "graph": map[string]any{
			"nodes": []map[string]any{node("x", "UX", map[string]any{"summary": c.summary})}, "edges": []map[string]any{}}})
		require.Equal(t, "invalid_graph", code)
		require.Contains(t, byPath(ps), c.path, "%v: %v", c.summary, ps)
	}
}

// TestBoardWithManySections: a board created with 20,000 sections keeps
// them all, in order (one INSERT of them passed Postgres's 65,535
// parameters: a 500).
func TestBoardWithManySections(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	n := store.MaxSections
	ids := make([]string, n)
	for i := range ids {
		ids[i] = "s" + strconv.Itoa(n-i) // not in id order
	}
	board := h.createBoard(ids...)
	var got []string
	require.NoError(t, h.app.Store.Gorm().Raw(`SELECT id FROM sections WHERE board_id = ? ORDER BY position`, board).Scan(&got).Error)
	require.Equal(t, ids, got)
	// Past the bound: refused, nothing made (a 20,000-section board was
	// made, every answer reading it a column each).
	secs := make([]map[string]any, n+1)
	for i := range secs {
		secs[i] = map[string]any{"id": "x" + strconv.Itoa(i)}
	}
	var e apiErrorJSON
	require.Equal(t, 400, h.do("POST", "/api/v1/boards", map[string]any{"name": "Too many", "sections": secs}, &e))
	require.Contains(t, e.Error.Message, "at most 500 sections")
	require.Equal(t, 400, h.do("POST", "/api/v1/boards/"+board+"/sections", map[string]any{"id": "one-more"}, &e))
	require.Contains(t, e.Error.Message, "the most a board may have")
	var boards int
	require.NoError(t, h.app.Store.Gorm().Raw(`SELECT count(*) FROM boards`).Scan(&boards).Error)
	require.Equal(t, 1, boards)
}
