package web_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/stitchd/stitchd/store/storetest"
)

// webhookRead is a webhook trigger as the API shows it.
type webhookRead struct {
	ID          string          `json:"id"`
	Slug        string          `json:"slug"`
	URL         string          `json:"url"`
	HasSecret   bool            `json:"has_secret"`
	Entity      json.RawMessage `json:"entity"`
	InputSchema json.RawMessage `json:"input_schema"`
	Respond     json.RawMessage `json:"respond"`
}

// TestWebhookTriggerEdit: PATCH /api/v1/triggers/{id} changes a webhook's
// entity mapping, input_schema and respond — each alone or together, each
// read back, null removing it — checked as at create; the next POST
// /hooks/{slug} follows the new input_schema and entity mapping. An empty
// body, the slug, the secret or an unknown field is a 400; a bad schema
// (one that does not compile, or one too costly to check a body against),
// an unknown board, a board the flow's is not, a bad respond: refused, and
// nothing of the trigger changed even when the body's other fields were
// good. An unknown id is a 404. The slug stays throughout.
func TestWebhookTriggerEdit(t *testing.T) {
	t.Parallel()
	st, _ := storetest.IsolatedDB(t)
	h := newServer(t, st).Handler()
	f := createFlow(t, h, graphUX)
	board := decode[struct {
		ID string `json:"id"`
	}](t, call(t, h, http.StatusCreated, req{method: "POST", path: "/api/v1/boards",
		body: `{"name":"Purchases","sections":[{"id":"new","name":"New"}]}`}))
	other := decode[struct {
		ID string `json:"id"`
	}](t, call(t, h, http.StatusCreated, req{method: "POST", path: "/api/v1/boards", body: `{"name":"Other","sections":[]}`}))
	hook := decode[webhookRead](t, call(t, h, http.StatusCreated, req{method: "POST", path: "/api/v1/flows/" + f.ID + "/triggers",
		body: `{"slug":"purchase"}`}))
	require.JSONEq(t, "null", string(hook.InputSchema))
	require.JSONEq(t, "null", string(hook.Entity))

	patch := func(body string) *webhookRead {
		t.Helper()
		got := decode[webhookRead](t, call(t, h, http.StatusOK, req{method: "PATCH", path: "/api/v1/triggers/" + hook.ID, body: body}))
		return &got
	}
	read := func() webhookRead {
		t.Helper()
		return decode[webhookRead](t, call(t, h, http.StatusOK, req{method: "GET", path: "/api/v1/triggers/" + hook.ID}))
	}
	fire := func(body string) (int, string) {
		t.Helper()
		rec := do(t, h, req{method: "POST", path: "/hooks/purchase", body: body, noAuth: true})
		return rec.Code, rec.Body.String()
	}
	// Before: any JSON body starts a run.
	code, body := fire(`{"item":"laptop"}`)
	require.Equal(t, http.StatusAccepted, code, body)

	// input_schema alone: read back, and the next hook request meets it.
	const needsAmount = `{"type":"object","required":["amount"],"properties":{"amount":{"type":"number","minimum":0}}}`
	got := patch(`{"input_schema":` + needsAmount + `}`)
	require.JSONEq(t, needsAmount, string(got.InputSchema))
	require.Equal(t, "purchase", got.Slug)
	require.Equal(t, "/hooks/purchase", got.URL)
	require.JSONEq(t, needsAmount, string(read().InputSchema))
	e := requireError(t, http.StatusBadRequest, "invalid_request", do(t, h, req{method: "POST", path: "/hooks/purchase",
		body: `{"item":"laptop"}`, noAuth: true}))
	require.Equal(t, "$", e.Error.Details[0].Path)
	require.Contains(t, e.Error.Details[0].Message, "amount")
	code, body = fire(`{"item":"laptop","amount":1500}`)
	require.Equal(t, http.StatusAccepted, code, body)

	// entity alone: read back; the next request makes the entity on that board.
	ent := fmt.Sprintf(`{"board_id":%q,"type":"purchase","name_path":"item","email_path":"requester"}`, board.ID)
	got = patch(`{"entity":` + ent + `}`)
	require.JSONEq(t, ent, string(got.Entity))
	require.JSONEq(t, needsAmount, string(got.InputSchema), "the fields not sent stay")
	require.JSONEq(t, ent, string(read().Entity))
	code, body = fire(`{"item":"desk","amount":300,"requester":"ann@example.com"}`)
	require.Equal(t, http.StatusAccepted, code, body)
	started := decode[struct {
		EntityID *string `json:"entity_id"`
	}](t, []byte(body))
	require.NotNil(t, started.EntityID, "the mapping now makes an entity: %s", body)
	entity := decode[struct {
		Name    string `json:"name"`
		Email   string `json:"email"`
		Type    string `json:"type"`
		BoardID string `json:"board_id"`
	}](t, call(t, h, http.StatusOK, req{method: "GET", path: "/api/v1/entities/" + *started.EntityID}))
	require.Equal(t, "desk", entity.Name)
	require.Equal(t, "ann@example.com", entity.Email)
	require.Equal(t, "purchase", entity.Type)
	require.Equal(t, board.ID, entity.BoardID)

	// respond alone.
	got = patch(`{"respond":{"mode":"wait","timeout_seconds":5}}`)
	require.JSONEq(t, `{"mode":"wait","timeout_seconds":5}`, string(got.Respond))
	require.JSONEq(t, ent, string(got.Entity))
	require.JSONEq(t, `{"mode":"wait","timeout_seconds":5}`, string(read().Respond))

	// Refusals: each leaves the trigger as it was, even beside good fields.
	before := read()
	unchanged := func(what string) {
		t.Helper()
		now := read()
		require.Equal(t, before.Slug, now.Slug, what)
		require.JSONEq(t, string(before.InputSchema), string(now.InputSchema), what)
		require.JSONEq(t, string(before.Entity), string(now.Entity), what)
		require.JSONEq(t, string(before.Respond), string(now.Respond), what)
	}
	refused := func(status int, code, body string) errorBody {
		t.Helper()
		e := requireError(t, status, code, do(t, h, req{method: "PATCH", path: "/api/v1/triggers/" + hook.ID, body: body}))
		unchanged(body)
		return e
	}
	e = refused(http.StatusUnprocessableEntity, "invalid_schema",
		`{"respond":null,"entity":null,"input_schema":{"type":"object","properties":{"amount":{"type":"money"}}}}`)
	require.True(t, strings.HasPrefix(e.Error.Details[0].Path, "input_schema"), "%+v", e.Error.Details)
	bomb, err := json.Marshal(anyOfBomb(22))
	require.NoError(t, err)
	e = refused(http.StatusUnprocessableEntity, "invalid_schema", `{"respond":null,"input_schema":`+string(bomb)+`}`)
	require.Contains(t, e.Error.Details[0].Message, "subschemas")
	refused(http.StatusUnprocessableEntity, "invalid_schema", `{"input_schema":[1,2]}`)
	refused(http.StatusBadRequest, "invalid_request", `{}`)
	e = refused(http.StatusBadRequest, "invalid_request", `{"slug":"renamed","respond":null}`)
	require.Contains(t, e.Error.Message, "slug")
	refused(http.StatusBadRequest, "invalid_request", `{"secret":"a-new-secret-0123456789"}`)
	refused(http.StatusBadRequest, "invalid_request", `{"rate":5}`)
	refused(http.StatusBadRequest, "invalid_request", `{"respond":{"mode":"wait","timeout_seconds":61},"input_schema":null}`)
	refused(http.StatusBadRequest, "invalid_request", `{"entity":"purchase","input_schema":null}`)
	refused(http.StatusBadRequest, "invalid_request", `{"entity":{"board_id":"nope","type":"purchase"}}`)
	refused(http.StatusBadRequest, "invalid_request", fmt.Sprintf(`{"entity":{"board_id":%q}}`, board.ID))
	refused(http.StatusBadRequest, "invalid_request", fmt.Sprintf(`{"entity":{"board_id":%q,"type":"x"}}`, uuid.NewString()))
	refused(http.StatusBadRequest, "invalid_request", `[]`)
	requireError(t, http.StatusNotFound, "not_found", do(t, h, req{method: "PATCH", path: "/api/v1/triggers/" + uuid.NewString(),
		body: `{"respond":null}`}))
	unchanged("an unknown id")

	// A flow on a board takes entities on that board only, as at create.
	onBoard := decode[flowResp](t, call(t, h, http.StatusCreated, req{method: "POST", path: "/api/v1/flows",
		body: fmt.Sprintf(`{"name":"on a board","board_id":%q,"graph":%s}`, board.ID, graphUX)}))
	boardHook := decode[webhookRead](t, call(t, h, http.StatusCreated, req{method: "POST", path: "/api/v1/flows/" + onBoard.ID + "/triggers",
		body: `{"slug":"on-board"}`}))
	requireError(t, http.StatusUnprocessableEntity, "entity_board_mismatch", do(t, h, req{method: "PATCH", path: "/api/v1/triggers/" + boardHook.ID,
		body: fmt.Sprintf(`{"entity":{"board_id":%q,"type":"x"}}`, other.ID)}))
	call(t, h, http.StatusOK, req{method: "PATCH", path: "/api/v1/triggers/" + boardHook.ID,
		body: fmt.Sprintf(`{"entity":{"board_id":%q,"type":"x"}}`, board.ID)})

	// All three at once; then each removed with null.
	const needsItem = `{"type":"object","required":["item"]}`
	got = patch(fmt.Sprintf(`{"input_schema":%s,"entity":{"board_id":%q,"type":"order"},"respond":{"mode":"none"}}`, needsItem, board.ID))
	require.JSONEq(t, needsItem, string(got.InputSchema))
	require.JSONEq(t, fmt.Sprintf(`{"board_id":%q,"type":"order","name_path":"","email_path":""}`, board.ID), string(got.Entity))
	require.JSONEq(t, "null", string(got.Respond))
	code, body = fire(`{"amount":1}`)
	require.Equal(t, http.StatusBadRequest, code, body)
	got = patch(`{"input_schema":null,"entity":null}`)
	require.JSONEq(t, "null", string(got.InputSchema))
	require.JSONEq(t, "null", string(got.Entity))
	code, body = fire(`{"amount":1}`)
	require.Equal(t, http.StatusAccepted, code, body)
	require.Contains(t, body, `"entity_id":null`, "no mapping: no entity")
	final := read()
	require.Equal(t, "purchase", final.Slug)
	require.False(t, final.HasSecret)
}

// anyOfBomb is n levels of anyOf:[{$ref next},{$ref next}] over a string:
// a schema whose $refs multiply past engine.MaxFormExpansion at 22.
func anyOfBomb(n int) map[string]any {
	defs := map[string]any{}
	for k := range n {
		next := map[string]any{"$ref": fmt.Sprintf("#/$defs/s%d", k+1)}
		defs[fmt.Sprintf("s%d", k)] = map[string]any{"anyOf": []any{next, next}}
	}
	defs[fmt.Sprintf("s%d", n)] = map[string]any{"type": "string"}
	return map[string]any{"$defs": defs, "$ref": "#/$defs/s0"}
}
