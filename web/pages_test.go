package web_test

import (
	"encoding/base64"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/stitchd/stitchd/store/storetest"
)

// garbageCursor is a cursor the server never gave out.
var garbageCursor = base64.RawURLEncoding.EncodeToString([]byte("2026-01-01T00:00:00Z\x1fx\x1fnot-a-uuid"))

// page is the part of a paginated answer the tests read.
type page struct {
	Flows     []struct{ ID, Name string } `json:"flows"`
	Boards    []struct{ ID, Name string } `json:"boards"`
	Versions  []struct{ Number int }      `json:"versions"`
	Approvals []approvalItem              `json:"approvals"`
	Sections  []sectionPage               `json:"sections"`
	Next      *string                     `json:"next_cursor"`
}

type approvalItem struct {
	RunID string `json:"run_id"`
	Key   string `json:"key"`
}

type sectionPage struct {
	ID       string                      `json:"id"`
	Count    int                         `json:"count"`
	Entities []struct{ ID, Name string } `json:"entities"`
	Next     *string                     `json:"next_cursor"`
}

// walk follows next_cursor from path (which has a ? already) and returns
// every page.
func walk(t *testing.T, h http.Handler, path string) []page {
	t.Helper()
	var pages []page
	cursor := ""
	for {
		p := path
		if cursor != "" {
			p += "&cursor=" + url.QueryEscape(cursor)
		}
		pg := decode[page](t, call(t, h, http.StatusOK, req{method: "GET", path: p}))
		pages = append(pages, pg)
		if pg.Next == nil {
			return pages
		}
		require.NotEmpty(t, *pg.Next)
		cursor = *pg.Next
		require.Less(t, len(pages), 50, "pages never end")
	}
}

// TestListsArePaginated: flows, a flow's versions, boards, approvals, an
// entity's journey and each section of a board answer at most ?limit= items (default 100, at
// most 500) with a next_cursor that walks through every item once, in
// order; a cursor the server did not give out is a 400 without the
// database's words.
func TestListsArePaginated(t *testing.T) {
	t.Parallel()
	st, _ := storetest.IsolatedDB(t)
	h := newServer(t, st).Handler()

	// Flows, by name.
	var flowIDs []string
	for i := 0; i < 7; i++ {
		f := createFlow(t, h, graphUX)
		call(t, h, http.StatusOK, req{method: "PUT", path: "/api/v1/flows/" + f.ID, body: fmt.Sprintf(`{"name":"flow %02d"}`, 6-i)})
		flowIDs = append(flowIDs, f.ID)
	}
	pages := walk(t, h, "/api/v1/flows?limit=3")
	require.Len(t, pages, 3)
	var names []string
	for _, p := range pages {
		require.LessOrEqual(t, len(p.Flows), 3)
		for _, f := range p.Flows {
			names = append(names, f.Name)
		}
	}
	require.Equal(t, []string{"flow 00", "flow 01", "flow 02", "flow 03", "flow 04", "flow 05", "flow 06"}, names)
	require.Len(t, walk(t, h, "/api/v1/flows?x=1"), 1, "the default page holds 7")

	// A flow's versions, newest first.
	for i := 0; i < 4; i++ {
		g := strings.Replace(graphUX, "Approve the batch", fmt.Sprintf("Approve %d", i), 1)
		call(t, h, http.StatusOK, req{method: "PUT", path: "/api/v1/flows/" + flowIDs[0], body: `{"graph":` + g + `}`})
	}
	var numbers []int
	for _, p := range walk(t, h, "/api/v1/flows/"+flowIDs[0]+"/versions?limit=2") {
		require.LessOrEqual(t, len(p.Versions), 2)
		for _, v := range p.Versions {
			numbers = append(numbers, v.Number)
		}
	}
	require.Equal(t, []int{5, 4, 3, 2, 1}, numbers)

	// Boards, by name; one with two sections of entities.
	var boardID string
	for i := 0; i < 5; i++ {
		b := decode[struct{ ID string }](t, call(t, h, http.StatusCreated, req{method: "POST", path: "/api/v1/boards",
			body: fmt.Sprintf(`{"name":"board %d","sections":[{"id":"a","name":"A"},{"id":"b","name":"B"}]}`, i)}))
		boardID = b.ID
	}
	var boards []string
	for _, p := range walk(t, h, "/api/v1/boards?limit=2") {
		for _, b := range p.Boards {
			boards = append(boards, b.Name)
		}
	}
	require.Equal(t, []string{"board 0", "board 1", "board 2", "board 3", "board 4"}, boards)

	for i := 0; i < 7; i++ {
		call(t, h, http.StatusCreated, req{method: "POST", path: "/api/v1/entities",
			body: fmt.Sprintf(`{"board_id":%q,"type":"lead","name":"a%d","section_id":"a"}`, boardID, i)})
	}
	for i := 0; i < 2; i++ {
		call(t, h, http.StatusCreated, req{method: "POST", path: "/api/v1/entities",
			body: fmt.Sprintf(`{"board_id":%q,"type":"lead","name":"b%d","section_id":"b"}`, boardID, i)})
	}
	first := decode[page](t, call(t, h, http.StatusOK, req{method: "GET", path: "/api/v1/boards/" + boardID + "?limit=3"}))
	require.Len(t, first.Sections, 2)
	a, b := first.Sections[0], first.Sections[1]
	require.Equal(t, 7, a.Count, "the count is the section's, not the page's")
	require.Len(t, a.Entities, 3)
	require.NotNil(t, a.Next)
	require.Equal(t, 2, b.Count)
	require.Len(t, b.Entities, 2)
	require.Nil(t, b.Next)
	var inA []string
	for _, e := range a.Entities {
		inA = append(inA, e.Name)
	}
	cursor := *a.Next
	for cursor != "" {
		p := decode[page](t, call(t, h, http.StatusOK, req{method: "GET",
			path: "/api/v1/boards/" + boardID + "?limit=3&section_id=a&cursor=" + url.QueryEscape(cursor)}))
		require.Len(t, p.Sections, 1, "only the section asked for")
		require.Equal(t, "a", p.Sections[0].ID)
		require.Equal(t, 7, p.Sections[0].Count)
		for _, e := range p.Sections[0].Entities {
			inA = append(inA, e.Name)
		}
		cursor = ""
		if p.Sections[0].Next != nil {
			cursor = *p.Sections[0].Next
		}
	}
	require.Equal(t, []string{"a0", "a1", "a2", "a3", "a4", "a5", "a6"}, inA, "oldest in section first, each once")

	// An entity's journey, oldest first: created, then moved 6 times.
	ent := decode[struct{ ID string }](t, call(t, h, http.StatusCreated, req{method: "POST", path: "/api/v1/entities",
		body: fmt.Sprintf(`{"board_id":%q,"type":"lead","name":"mover","section_id":"a"}`, boardID)}))
	for i := 0; i < 6; i++ {
		call(t, h, http.StatusOK, req{method: "POST", path: "/api/v1/entities/" + ent.ID + "/move",
			body: fmt.Sprintf(`{"section_id":%q}`, []string{"b", "a"}[i%2])})
	}
	type journeyPage struct {
		Journey []struct {
			ID        string `json:"id"`
			EntitySeq int64  `json:"entity_seq"`
		} `json:"journey"`
		Next *string `json:"journey_next_cursor"`
	}
	all := decode[journeyPage](t, call(t, h, http.StatusOK, req{method: "GET", path: "/api/v1/entities/" + ent.ID}))
	require.Nil(t, all.Next)
	require.GreaterOrEqual(t, len(all.Journey), 6)
	var walked []string
	jc := ""
	for n := 0; ; n++ {
		require.Less(t, n, 10)
		p := "/api/v1/entities/" + ent.ID + "?limit=2"
		if jc != "" {
			p += "&cursor=" + url.QueryEscape(jc)
		}
		pg := decode[journeyPage](t, call(t, h, http.StatusOK, req{method: "GET", path: p}))
		require.LessOrEqual(t, len(pg.Journey), 2)
		for _, j := range pg.Journey {
			walked = append(walked, j.ID)
		}
		if pg.Next == nil {
			break
		}
		jc = *pg.Next
	}
	var whole []string
	for _, j := range all.Journey {
		whole = append(whole, j.ID)
	}
	require.Equal(t, whole, walked, "the pages walk the whole journey once, oldest first")
	requireError(t, http.StatusBadRequest, "invalid_request", do(t, h, req{method: "GET",
		path: "/api/v1/entities/" + ent.ID + "?cursor=" + url.QueryEscape(garbageCursor)}))

	// Approvals, oldest first.
	var want []string
	for i := 0; i < 7; i++ {
		r := decode[struct{ ID string }](t, call(t, h, http.StatusCreated, req{method: "POST",
			path: "/api/v1/flows/" + flowIDs[1] + "/runs", body: `{}`}))
		want = append(want, r.ID)
	}
	var got []string
	approvalPages := walk(t, h, "/api/v1/approvals?limit=3")
	require.Len(t, approvalPages, 3)
	for _, p := range approvalPages {
		for _, a := range p.Approvals {
			got = append(got, a.RunID)
		}
	}
	require.ElementsMatch(t, want, got)
	require.Len(t, got, 7, "each once")
	require.Len(t, walk(t, h, "/api/v1/approvals?x=1")[0].Approvals, 7)

	// Refusals: a clear 400 without the database's words.
	garbage := []string{"nope", base64.RawURLEncoding.EncodeToString([]byte("2026-01-01T00:00:00Z\x1fnot-a-uuid\x1fk")),
		base64.RawURLEncoding.EncodeToString([]byte("x'; DROP TABLE runs; --")), strings.Repeat("A", 5000)}
	for _, path := range []string{"/api/v1/flows?", "/api/v1/boards?", "/api/v1/approvals?",
		"/api/v1/flows/" + flowIDs[0] + "/versions?", "/api/v1/boards/" + boardID + "?section_id=a&"} {
		for _, c := range garbage {
			e := requireError(t, http.StatusBadRequest, "invalid_request", do(t, h, req{method: "GET", path: path + "cursor=" + url.QueryEscape(c)}))
			require.Contains(t, e.Error.Message, "cursor", path)
			for _, leak := range []string{"SQL", "sql", "ERROR", "syntax", "pq:", "pgx"} {
				require.NotContains(t, e.Error.Message, leak, path)
			}
		}
		for _, l := range []string{"0", "501", "x", "-1"} {
			requireError(t, http.StatusBadRequest, "invalid_request", do(t, h, req{method: "GET", path: path + "limit=" + l}))
		}
	}
	requireError(t, http.StatusBadRequest, "invalid_request", do(t, h, req{method: "GET",
		path: "/api/v1/boards/" + boardID + "?cursor=" + url.QueryEscape(*a.Next)}))
	// Section a's cursor for section b: refused, not b's entities after a's
	// place (a wrong page answered as a right one).
	e := requireError(t, http.StatusBadRequest, "invalid_request", do(t, h, req{method: "GET",
		path: "/api/v1/boards/" + boardID + "?section_id=b&cursor=" + url.QueryEscape(*a.Next)}))
	require.Contains(t, e.Error.Message, `section "a"`)
	requireError(t, http.StatusBadRequest, "invalid_request", do(t, h, req{method: "GET",
		path: "/api/v1/boards/" + boardID + "?section_id=nope"}))
}
