package app_test

import (
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stitchd/stitchd/callbacks"
)

// TestPublicTriggerOnlyCreatesEntities: a request to a trigger without a
// secret never changes an existing entity — not its name, not its current
// run, not its journey — whatever the email's case, with or without an
// Idempotency-Key, and when several race with a new email only one
// creates it. A signed trigger still updates it.
func TestPublicTriggerOnlyCreatesEntities(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	board := h.createBoard("new", "done")
	flow := h.createBoardFlow(board, []map[string]any{node("u", "UX", nil)}, nil)
	mapping := map[string]any{"board_id": board, "type": "lead", "name_path": "name", "email_path": "email"}
	require.Equal(t, 201, h.do("POST", "/api/v1/flows/"+flow+"/triggers", map[string]any{"slug": "pub", "entity": mapping}, nil))
	const secret = "hook-secret-signing"
	require.Equal(t, 201, h.do("POST", "/api/v1/flows/"+flow+"/triggers", map[string]any{"slug": "signed", "secret": secret,
		"entity": mapping}, nil))

	var ada entityJSON
	require.Equal(t, 201, h.do("POST", "/api/v1/entities", map[string]any{"board_id": board, "type": "lead", "name": "Ada",
		"email": "ada@example.com"}, &ada))
	var run1 runJSON
	require.Equal(t, 201, h.do("POST", "/api/v1/flows/"+flow+"/runs", map[string]any{"input": map[string]any{}, "entity_id": ada.ID}, &run1))
	before := h.entity(ada.ID)
	require.Equal(t, run1.ID, *before.CurrentRunID)
	runs := h.runCount(flow)

	for i, hdr := range []map[string]string{nil, {"Idempotency-Key": "take-over"}} {
		body := []byte(`{"name":"Mallory","email":"ADA@example.com"}`)
		code, out := h.postHook("pub", body, hdr)
		require.Equal(t, 409, code, "%d: %v", i, out)
		require.Equal(t, "entity_exists", as[map[string]any](t, out["error"])["code"])
	}
	require.Equal(t, before, h.entity(ada.ID), "the entity is untouched: name, current run, journey")
	require.Equal(t, runs, h.runCount(flow), "no run started")

	// A new email is created; sent again, it is not updated.
	code, out := h.postHook("pub", []byte(`{"name":"Bo","email":"bo@example.com"}`), nil)
	require.Equal(t, 202, code, "%v", out)
	bo := h.entity(as[string](t, out["entity_id"]))
	code, _ = h.postHook("pub", []byte(`{"name":"Not Bo","email":"bo@example.com"}`), nil)
	require.Equal(t, 409, code)
	require.Equal(t, bo, h.entity(bo.ID))

	// Racing requests with one new email: one creates, the others change
	// nothing.
	const racers = 8
	codes := make([]int, racers)
	var wg sync.WaitGroup
	for i := range racers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			codes[i], _ = h.postHook("pub", []byte(`{"name":"Racer `+strconv.Itoa(i)+`","email":"race@example.com"}`), nil)
		}()
	}
	wg.Wait()
	won := 0
	for _, c := range codes {
		require.Contains(t, []int{202, 409}, c)
		if c == 202 {
			won++
		}
	}
	require.Equal(t, 1, won, "codes %v", codes)
	var entities int
	require.NoError(t, h.app.Store.Gorm().Raw(`SELECT count(*) FROM entities WHERE lower(email) = 'race@example.com'`).Row().Scan(&entities))
	require.Equal(t, 1, entities)
	var journeys int
	require.NoError(t, h.app.Store.Gorm().Raw(`SELECT count(*) FROM journey_events j JOIN entities e ON e.id = j.entity_id
		WHERE lower(e.email) = 'race@example.com'`).Row().Scan(&journeys))
	require.Equal(t, 2, journeys, "created and run_started, once")

	// A signed request may update the entity (its sender holds the secret).
	body := []byte(`{"name":"Ada Lovelace","email":"ada@example.com"}`)
	now := time.Now().Unix()
	code, out = h.postHook("signed", body, map[string]string{"webhook-id": "msg_1", "webhook-timestamp": strconv.FormatInt(now, 10),
		"webhook-signature": callbacks.SignWebhook([]byte(secret), "msg_1", now, body)})
	require.Equal(t, 202, code, "%v", out)
	require.Equal(t, ada.ID, out["entity_id"])
	after := h.entity(ada.ID)
	require.Equal(t, "Ada Lovelace", after.Name)
	// Ada's first run still goes: the new one waits its turn
	// (entityConcurrency queue) and takes the card when it begins.
	require.Equal(t, "queued", out["status"])
	require.Equal(t, run1.ID, *after.CurrentRunID)
	require.Equal(t, 200, h.do("POST", "/api/v1/runs/"+run1.ID+"/cancel", nil, nil))
	h.eventually(func() bool { return *h.entity(ada.ID).CurrentRunID == out["run_id"] }, "the queued run to take the card")
}

// TestRunEntityBoards: a run whose entity is on another board than the
// flow's, or whose flow (without a board) moves entities to a section the
// entity's board lacks, is refused with 422 and starts nothing — from the
// API, a trigger's creation and a hook; a fitting entity runs.
func TestRunEntityBoards(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	boardA := h.createBoard("new", "done")
	boardB := h.createBoard("inbox")
	mover := func() map[string]any {
		w := wnode(h, "w")
		as[map[string]any](t, w["data"])["entityMovement"] = movement("done", "", nil)
		return w
	}
	onA := h.createBoardFlow(boardA, []map[string]any{mover()}, nil)
	boardless := h.createFlow([]map[string]any{mover()}, nil)
	newEntity := func(board, name string) string {
		var e entityJSON
		require.Equal(t, 201, h.do("POST", "/api/v1/entities", map[string]any{"board_id": board, "type": "lead", "name": name}, &e))
		return e.ID
	}
	onB, alsoOnA := newEntity(boardB, "B"), newEntity(boardA, "A")

	type apiErr struct {
		Error struct {
			Code    string `json:"code"`
			Details []struct {
				Code   string `json:"code"`
				NodeID string `json:"node_id"`
				Path   string `json:"path"`
			} `json:"details"`
		} `json:"error"`
	}
	start := func(flow, entity string) (int, apiErr) {
		var e apiErr
		code := h.do("POST", "/api/v1/flows/"+flow+"/runs", map[string]any{"input": map[string]any{}, "entity_id": entity}, &e)
		return code, e
	}
	code, e := start(onA, onB)
	require.Equal(t, 422, code)
	require.Equal(t, "entity_board_mismatch", e.Error.Code)
	code, e = start(boardless, onB)
	require.Equal(t, 422, code)
	require.Equal(t, "unknown_section", e.Error.Code)
	require.Len(t, e.Error.Details, 1)
	require.Equal(t, "w", e.Error.Details[0].NodeID)
	require.Equal(t, "entityMovement.onSuccess.targetSectionId", e.Error.Details[0].Path)
	require.Equal(t, 0, h.runCount(onA)+h.runCount(boardless), "nothing started")
	require.Equal(t, "inbox", *h.entity(onB).SectionID)

	// Triggers: a mapping onto a board the flow's nodes do not fit is
	// refused when created.
	require.Equal(t, 422, h.do("POST", "/api/v1/flows/"+onA+"/triggers", map[string]any{"slug": "wrong-board",
		"entity": map[string]any{"board_id": boardB, "type": "lead", "email_path": "email"}}, nil))
	require.Equal(t, 422, h.do("POST", "/api/v1/flows/"+boardless+"/triggers", map[string]any{"slug": "no-done",
		"entity": map[string]any{"board_id": boardB, "type": "lead", "email_path": "email"}}, nil))
	// A fitting trigger, whose flow later moves to a section board A lacks:
	// its hook is refused and creates no entity.
	require.Equal(t, 201, h.do("POST", "/api/v1/flows/"+boardless+"/triggers", map[string]any{"slug": "fits",
		"entity": map[string]any{"board_id": boardA, "type": "lead", "email_path": "email"}}, nil))
	code, out := h.postHook("fits", []byte(`{"email":"first@example.com"}`), nil)
	require.Equal(t, 202, code, "%v", out)
	w := wnode(h, "w")
	as[map[string]any](t, w["data"])["entityMovement"] = movement("archived", "", nil)
	require.Equal(t, 200, h.do("PUT", "/api/v1/flows/"+boardless, map[string]any{"graph": map[string]any{
		"nodes": []map[string]any{w}, "edges": []map[string]any{}}}, nil))
	code, out = h.postHook("fits", []byte(`{"email":"second@example.com"}`), nil)
	require.Equal(t, 422, code, "%v", out)
	var n int
	require.NoError(t, h.app.Store.Gorm().Raw(`SELECT count(*) FROM entities WHERE email = 'second@example.com'`).Row().Scan(&n))
	require.Zero(t, n)
	require.Equal(t, 1, h.runCount(boardless))

	// An entity that fits runs and moves.
	var r runJSON
	require.Equal(t, 201, h.do("POST", "/api/v1/flows/"+onA+"/runs", map[string]any{"input": map[string]any{}, "entity_id": alsoOnA}, &r))
	h.complete(h.waitDispatch(r.ID, "w", 1), `{}`)
	h.waitRun(r.ID, "completed")
	h.eventually(func() bool { s := h.entity(alsoOnA).SectionID; return s != nil && *s == "done" }, "the entity in done")
}
