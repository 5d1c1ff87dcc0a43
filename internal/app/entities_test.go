package app_test

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stitchd/stitchd/callbacks"
)

type boardJSON struct {
	ID       string `json:"id"`
	Sections []struct {
		ID       string       `json:"id"`
		Count    int          `json:"count"`
		Entities []entityJSON `json:"entities"`
		Stats    struct {
			Exits int `json:"exits"`
		} `json:"stats"`
	} `json:"sections"`
}

type entityJSON struct {
	ID             string         `json:"id"`
	Metadata       map[string]any `json:"metadata"`
	Type           string         `json:"type"`
	Name           string         `json:"name"`
	SectionID      *string        `json:"section_id"`
	CurrentRunID   *string        `json:"current_run_id"`
	CurrentNodeKey *string        `json:"current_node_key"`
	Journey        []struct {
		Kind       string  `json:"kind"`
		From       *string `json:"from_section_id"`
		To         *string `json:"to_section_id"`
		RunID      *string `json:"run_id"`
		NodeKey    *string `json:"node_key"`
		CompleteAs *string `json:"complete_as"`
		EntitySeq  int64   `json:"entity_seq"`
		Actor      *string `json:"actor"`
		Comment    *string `json:"comment"`
	} `json:"journey"`
}

func (h *harness) createBoard(sections ...string) string {
	h.t.Helper()
	var secs []map[string]string
	for _, s := range sections {
		secs = append(secs, map[string]string{"id": s, "name": s})
	}
	var b boardJSON
	require.Equal(h.t, 201, h.do("POST", "/api/v1/boards", map[string]any{"name": "Leads", "sections": secs}, &b))
	return b.ID
}

func (h *harness) entity(id string) entityJSON {
	h.t.Helper()
	var e entityJSON
	require.Equal(h.t, 200, h.do("GET", "/api/v1/entities/"+id, nil, &e))
	return e
}

func movement(success, failure string, extra map[string]any) map[string]any {
	m := map[string]any{}
	if success != "" {
		s := map[string]any{"targetSectionId": success, "completeAs": "success"}
		for k, v := range extra {
			s[k] = v
		}
		m["onSuccess"] = s
	}
	if failure != "" {
		m["onFailure"] = map[string]any{"targetSectionId": failure, "completeAs": "failure"}
	}
	return m
}

func (h *harness) createBoardFlow(board string, nodes []map[string]any, edges []map[string]any) string {
	h.t.Helper()
	if edges == nil {
		edges = []map[string]any{}
	}
	var raw map[string]any
	code := h.do("POST", "/api/v1/flows", map[string]any{"name": "board flow", "board_id": board,
		"graph": map[string]any{"nodes": nodes, "edges": edges}}, &raw)
	require.Equal(h.t, 201, code, "%v", raw)
	return as[string](h.t, raw["id"])
}

func TestEntityMovesThroughSections(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	board := h.createBoard("new", "enriched", "qualified", "customers", "nurture")
	enrich := wnode(h, "enrich")
	as[map[string]any](t, enrich["data"])["entityMovement"] = movement("enriched", "nurture", nil)
	qualify := wnode(h, "qualify")
	as[map[string]any](t, qualify["data"])["entityMovement"] = movement("qualified", "nurture", nil)
	approve := node("approve", "UX", map[string]any{"prompt": "Customer?", "entityMovement": movement("customers", "nurture",
		map[string]any{"setEntityType": "customer"})})
	flow := h.createBoardFlow(board, []map[string]any{enrich, qualify, approve},
		[]map[string]any{edge("enrich", "qualify", nil), edge("qualify", "approve", nil)})

	var e entityJSON
	require.Equal(t, 201, h.do("POST", "/api/v1/entities", map[string]any{"board_id": board, "type": "lead", "name": "Ada",
		"email": "ada@example.com"}, &e))
	require.Equal(t, "new", *e.SectionID, "a new entity starts in the first section")
	var r runJSON
	require.Equal(t, 201, h.do("POST", "/api/v1/flows/"+flow+"/runs", map[string]any{"entity_id": e.ID, "input": map[string]any{}}, &r))

	h.complete(h.waitDispatch(r.ID, "enrich", 1), `{}`)
	h.eventually(func() bool { return *h.entity(e.ID).SectionID == "enriched" }, "enriched")
	h.complete(h.waitDispatch(r.ID, "qualify", 1), `{}`)
	h.waitNode(r.ID, "approve", "waiting_for_user")
	require.Equal(t, "qualified", *h.entity(e.ID).SectionID)
	// The approvals inbox names the entity the person decides about.
	var ap struct {
		Approvals []struct {
			RunID  string `json:"run_id"`
			Entity struct {
				ID, Name, Type, Email string
				BoardID               string `json:"board_id"`
			} `json:"entity"`
		} `json:"approvals"`
	}
	require.Equal(t, 200, h.do("GET", "/api/v1/approvals", nil, &ap))
	require.Len(t, ap.Approvals, 1)
	require.Equal(t, r.ID, ap.Approvals[0].RunID)
	require.Equal(t, e.ID, ap.Approvals[0].Entity.ID)
	require.Equal(t, "Ada", ap.Approvals[0].Entity.Name)
	require.Equal(t, "lead", ap.Approvals[0].Entity.Type)
	require.Equal(t, "ada@example.com", ap.Approvals[0].Entity.Email)
	require.Equal(t, board, ap.Approvals[0].Entity.BoardID)
	require.Equal(t, 200, h.do("POST", "/api/v1/runs/"+r.ID+"/nodes/approve/complete", map[string]any{"status": "completed"}, nil))
	h.waitRun(r.ID, "completed")

	got := h.entity(e.ID)
	require.Equal(t, "customers", *got.SectionID)
	require.Equal(t, "customer", got.Type, "setEntityType converts lead → customer")
	require.Equal(t, r.ID, *got.CurrentRunID)
	require.Equal(t, "approve", *got.CurrentNodeKey)
	var kinds, tos []string
	var seqs []int64
	for _, j := range got.Journey {
		kinds = append(kinds, j.Kind)
		tos = append(tos, *j.To)
		seqs = append(seqs, j.EntitySeq)
	}
	require.Equal(t, []string{"created", "run_started", "moved", "moved", "moved"}, kinds)
	require.Equal(t, []int64{1, 2, 3, 4, 5}, seqs, "each move counted, in the order applied")
	require.Equal(t, []string{"new", "new", "enriched", "qualified", "customers"}, tos)
	require.Equal(t, "qualified", *got.Journey[4].From)
	require.Equal(t, "success", *got.Journey[4].CompleteAs)

	var b boardJSON
	require.Equal(t, 200, h.do("GET", "/api/v1/boards/"+board, nil, &b))
	counts := map[string]int{}
	for _, s := range b.Sections {
		counts[s.ID] = s.Count
	}
	require.Equal(t, map[string]int{"new": 0, "enriched": 0, "qualified": 0, "customers": 1, "nurture": 0}, counts)
	require.Equal(t, 1, b.Sections[2].Stats.Exits, "one stay in qualified ended")
	require.Equal(t, 1, b.Sections[0].Stats.Exits, "one stay in new ended: the run starting in new continues it")

	// A manual move is a journey event too.
	require.Equal(t, 200, h.do("POST", "/api/v1/entities/"+e.ID+"/move", map[string]any{"section_id": "nurture"}, nil))
	got = h.entity(e.ID)
	require.Equal(t, "nurture", *got.SectionID)
	require.Equal(t, "manual_move", got.Journey[len(got.Journey)-1].Kind)
	require.Equal(t, int64(6), got.Journey[len(got.Journey)-1].EntitySeq)
	require.NotNil(t, got.Journey[len(got.Journey)-1].Actor, "the manual move names who moved it")
	require.Equal(t, "admin", *got.Journey[len(got.Journey)-1].Actor, "the admin token")
	require.Equal(t, 400, h.do("POST", "/api/v1/entities/"+e.ID+"/move", map[string]any{"section_id": "nowhere"}, nil))
}

func TestEntityFailureSection(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	board := h.createBoard("new", "won", "nurture")
	w := wnode(h, "w")
	as[map[string]any](t, w["data"])["entityMovement"] = movement("won", "nurture", nil)
	flow := h.createBoardFlow(board, []map[string]any{w}, nil)
	var e entityJSON
	require.Equal(t, 201, h.do("POST", "/api/v1/entities", map[string]any{"board_id": board, "type": "lead", "name": "Bob"}, &e))
	var r runJSON
	require.Equal(t, 201, h.do("POST", "/api/v1/flows/"+flow+"/runs", map[string]any{"entity_id": e.ID}, &r))
	d := h.waitDispatch(r.ID, "w", 1)
	code, _ := h.post(d.Payload.CallbackURL, `{"status":"failed","error":"no budget"}`)
	require.Equal(t, 200, code)
	h.waitRun(r.ID, "failed")
	got := h.entity(e.ID)
	require.Equal(t, "nurture", *got.SectionID)
	last := got.Journey[len(got.Journey)-1]
	require.Equal(t, "failure", *last.CompleteAs)
	require.Equal(t, "w", *last.NodeKey)
}

func TestCompilerRejectsUnknownSection(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	board := h.createBoard("new", "won")
	w := wnode(h, "w")
	as[map[string]any](t, w["data"])["entityMovement"] = movement("lost", "", nil)
	var e struct {
		Error struct {
			Code    string `json:"code"`
			Details []struct {
				Code   string `json:"code"`
				NodeID string `json:"node_id"`
				Path   string `json:"path"`
			} `json:"details"`
		} `json:"error"`
	}
	require.Equal(t, 422, h.do("POST", "/api/v1/flows", map[string]any{"name": "x", "board_id": board,
		"graph": map[string]any{"nodes": []any{w}, "edges": []any{}}}, &e))
	require.Equal(t, "invalid_graph", e.Error.Code)
	require.Len(t, e.Error.Details, 1)
	require.Equal(t, "w", e.Error.Details[0].NodeID)
	require.Contains(t, e.Error.Details[0].Path, "targetSectionId")
}

func (h *harness) postHook(slug string, body []byte, headers map[string]string) (int, map[string]any) {
	h.t.Helper()
	req, err := http.NewRequestWithContext(h.t.Context(), http.MethodPost, h.app.URL+"/hooks/"+slug, bytes.NewReader(body))
	require.NoError(h.t, err)
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := h.client.Do(req)
	require.NoError(h.t, err)
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var out map[string]any
	_ = jsonUnmarshal(b, &out)
	return resp.StatusCode, out
}

func TestTriggerSignatures(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	board := h.createBoard("new", "done")
	flow := h.createBoardFlow(board, []map[string]any{node("u", "UX", nil)}, nil)
	secret := "s3cr3t-hook-signing"
	require.Equal(t, 201, h.do("POST", "/api/v1/flows/"+flow+"/triggers", map[string]any{"slug": "leads", "secret": secret,
		"entity": map[string]any{"board_id": board, "type": "lead", "name_path": "person.name", "email_path": "person.email"}}, nil))
	require.Equal(t, 409, h.do("POST", "/api/v1/flows/"+flow+"/triggers", map[string]any{"slug": "leads"}, nil), "slug taken")
	body := []byte(`{"person":{"name":"Ada","email":"ada@example.com"}}`)
	now := time.Now()
	sw := func(id string, ts time.Time, b []byte) map[string]string {
		return map[string]string{"webhook-id": id, "webhook-timestamp": strconv.FormatInt(ts.Unix(), 10),
			"webhook-signature": callbacks.SignWebhook([]byte(secret), id, ts.Unix(), b)}
	}
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write(body)
	gh := map[string]string{"X-Hub-Signature-256": "sha256=" + hex.EncodeToString(mac.Sum(nil))}

	count := func() int {
		var n int
		require.NoError(t, h.app.Store.Gorm().Raw(`SELECT (SELECT count(*) FROM runs) + (SELECT count(*) FROM entities)`).Row().Scan(&n))
		return n
	}
	for name, hdr := range map[string]map[string]string{
		"missing":       {},
		"bad":           sw("m1", now, []byte(`{"other":1}`)),
		"old timestamp": sw("m2", now.Add(-10*time.Minute), body),
		"bad github":    {"X-Hub-Signature-256": "sha256=00"},
	} {
		code, _ := h.postHook("leads", body, hdr)
		require.Equal(t, 401, code, name)
	}
	require.Zero(t, count(), "nothing created by rejected hooks")
	code, _ := h.postHook("nope", body, sw("m3", now, body))
	require.Equal(t, 404, code)

	code, out := h.postHook("leads", body, sw("m4", now, body))
	require.Equal(t, 202, code, "%v", out)
	require.NotNil(t, out["entity_id"])
	// Replaying the same signed delivery starts no second run.
	code, again := h.postHook("leads", body, sw("m4", now, body))
	require.Equal(t, 202, code)
	require.Equal(t, out["run_id"], again["run_id"])
	code, gout := h.postHook("leads", body, gh)
	require.Equal(t, 202, code)
	require.Equal(t, out["entity_id"], gout["entity_id"], "the same email updates the same entity")
	require.NotEqual(t, out["run_id"], gout["run_id"])
	e := h.entity(as[string](t, out["entity_id"]))
	require.Equal(t, "Ada", e.Name)
	r := h.run(as[string](t, out["run_id"]))
	require.JSONEq(t, string(body), string(r.Input))
}

// Test200EntitiesThroughTrigger: 200 leads fired concurrently through a
// trigger all end in the right sections with complete journeys.
func Test200EntitiesThroughTrigger(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	board := h.createBoard("new", "scored", "won", "lost")
	score := wnode(h, "score")
	as[map[string]any](t, score["data"])["entityMovement"] = movement("scored", "lost", nil)
	decide := wnode(h, "decide")
	as[map[string]any](t, decide["data"])["entityMovement"] = movement("won", "lost", nil)
	flow := h.createBoardFlow(board, []map[string]any{score, decide}, []map[string]any{edge("score", "decide", nil)})
	require.Equal(t, 201, h.do("POST", "/api/v1/flows/"+flow+"/triggers", map[string]any{"slug": "bulk",
		"entity": map[string]any{"board_id": board, "type": "lead", "name_path": "name", "email_path": "email"}}, nil))
	const n = 200
	runs := make([]string, n)
	ents := make([]string, n)
	var wg sync.WaitGroup
	sem := make(chan struct{}, 32)
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			code, out := h.postHook("bulk", []byte(fmt.Sprintf(`{"name":"L%d","email":"l%d@example.com"}`, i, i)), nil)
			if code == 202 {
				// Not as (require): this is not the test's goroutine; a
				// missing id fails the NotEmpty checks below.
				runs[i], _ = out["run_id"].(string)
				ents[i], _ = out["entity_id"].(string)
			}
		}()
	}
	wg.Wait()
	for i := 0; i < n; i++ {
		require.NotEmpty(t, runs[i], "lead %d accepted", i)
	}
	// Even leads win, odd leads fail at decide.
	for i := 0; i < n; i++ {
		h.complete(h.waitDispatch(runs[i], "score", 1), `{}`)
	}
	for i := 0; i < n; i++ {
		d := h.waitDispatch(runs[i], "decide", 1)
		if i%2 == 0 {
			h.complete(d, `{}`)
		} else {
			code, _ := h.post(d.Payload.CallbackURL, `{"status":"failed","error":"no"}`)
			require.Equal(t, 200, code)
		}
	}
	for i := 0; i < n; i++ {
		want := "won"
		if i%2 == 1 {
			want = "lost"
		}
		h.eventually(func() bool { e := h.entity(ents[i]); return e.SectionID != nil && *e.SectionID == want }, "lead %d in %s", i, want)
		e := h.entity(ents[i])
		var tos []string
		for _, j := range e.Journey {
			tos = append(tos, *j.To)
		}
		require.Equal(t, []string{"new", "new", "scored", want}, tos, "lead %d journey", i)
	}
	var b boardJSON
	require.Equal(t, 200, h.do("GET", "/api/v1/boards/"+board, nil, &b))
	counts := map[string]int{}
	for _, s := range b.Sections {
		counts[s.ID] = s.Count
	}
	require.Equal(t, map[string]int{"new": 0, "scored": 0, "won": n / 2, "lost": n / 2}, counts)
}

func TestBoardMovesStreamLive(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	board := h.createBoard("new", "done")
	w := wnode(h, "w")
	as[map[string]any](t, w["data"])["entityMovement"] = movement("done", "", nil)
	flow := h.createBoardFlow(board, []map[string]any{w}, nil)
	var e entityJSON
	require.Equal(t, 201, h.do("POST", "/api/v1/entities", map[string]any{"board_id": board, "type": "lead", "name": "Eve"}, &e))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	stream := h.readSSE(ctx, "/api/v1/events", "")
	var r runJSON
	require.Equal(t, 201, h.do("POST", "/api/v1/flows/"+flow+"/runs", map[string]any{"entity_id": e.ID}, &r))
	h.complete(h.waitDispatch(r.ID, "w", 1), `{}`)
	require.Equal(t, 200, h.do("POST", "/api/v1/entities/"+e.ID+"/move", map[string]any{"section_id": "new"}, nil))
	var moves []string
	for len(moves) < 3 {
		select {
		case ev := <-stream:
			if ev.typ == "entity.moved" {
				moves = append(moves, fmt.Sprintf("%d:%s>%s", ev.ev.Payload.EntitySeq, ev.kind, ev.to))
			}
		case <-ctx.Done():
			t.Fatalf("saw moves %v", moves)
		}
	}
	// entity_seq counts the entity's moves (created is 1): a consumer
	// applies a move only if it is newer than the last it applied.
	require.Equal(t, []string{"2:run_started>", "3:moved>done", "4:manual_move>new"}, moves)
}

// TestConcurrentMovesAreCounted: moves of one entity made at once, by hand
// and by runs starting, are counted under the entity's row lock: its
// journey's entity_seq runs 1, 2, 3, … without a gap or a repeat, and the
// entity is where its last counted move put it (a stream consumer keeping
// the highest entity_seq it saw ends where the database did).
func TestConcurrentMovesAreCounted(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	board := h.createBoard("a", "b", "c")
	// Runs of the flow start at once for one entity (allow): each moves it.
	var raw map[string]any
	require.Equal(t, 201, h.do("POST", "/api/v1/flows", map[string]any{"name": "moves", "board_id": board, "graph": map[string]any{
		"nodes": []map[string]any{wnode(h, "w")}, "edges": []any{}, "settings": map[string]any{"entityConcurrency": "allow"}}}, &raw))
	flow := as[string](t, raw["id"])
	var e entityJSON
	require.Equal(t, 201, h.do("POST", "/api/v1/entities", map[string]any{"board_id": board, "type": "lead", "name": "Lin"}, &e))

	const manual, runs = 24, 8
	var wg sync.WaitGroup
	type answer struct {
		code int
		body map[string]any
	}
	answers := make(chan answer, manual+runs)
	for i := range manual {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var a answer
			a.code = h.do("POST", "/api/v1/entities/"+e.ID+"/move", map[string]any{"section_id": []string{"a", "b", "c"}[i%3]}, &a.body)
			answers <- a
		}()
	}
	for range runs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var a answer
			a.code = h.do("POST", "/api/v1/flows/"+flow+"/runs", map[string]any{"entity_id": e.ID}, &a.body)
			answers <- a
		}()
	}
	wg.Wait()
	close(answers)
	for a := range answers {
		require.Contains(t, []int{200, 201}, a.code, "%v", a.body)
	}

	got := h.entity(e.ID)
	require.Len(t, got.Journey, 1+manual+runs)
	for i, j := range got.Journey {
		require.Equal(t, int64(i+1), j.EntitySeq, "journey event %d (%s)", i, j.Kind)
		if i > 0 {
			// Each move read the entity as the move before left it.
			require.NotNil(t, j.From, "journey event %d (%s)", i, j.Kind)
			require.Equal(t, *got.Journey[i-1].To, *j.From, "journey event %d (%s) starts where %d ended", i, j.Kind, i-1)
		}
	}
	last := got.Journey[len(got.Journey)-1]
	require.NotNil(t, last.To)
	require.Equal(t, *last.To, *got.SectionID, "the entity is where its last counted move put it")
}
