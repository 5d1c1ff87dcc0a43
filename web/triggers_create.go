package web

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"regexp"
	"strings"

	"github.com/google/uuid"
	"github.com/labstack/echo/v4"

	"github.com/stitchd/stitchd/engine"
	"github.com/stitchd/stitchd/internal/broker"
	"github.com/stitchd/stitchd/store"
)

var slugPattern = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,99}$`)

// createTrigger is POST /api/v1/flows/:id/triggers: its kind picks the
// trigger made — a webhook (the default), a schedule, an event trigger or
// a broker trigger (nats, amqp).
func (s *Server) createTrigger(c echo.Context) error {
	flowID, err := s.pathUUID(c, "id", "flow")
	if err != nil {
		return err
	}
	var b struct {
		Kind        string          `json:"kind"`
		Name        string          `json:"name"`
		Slug        string          `json:"slug"`
		Secret      string          `json:"secret"`
		Entity      *webhookEntity  `json:"entity"`
		InputSchema json.RawMessage `json:"input_schema"`
		Respond     json.RawMessage `json:"respond"`
		scheduleBody
		brokerBody
	}
	if err := bind(c, &b); err != nil {
		return err
	}
	switch b.Kind {
	case broker.KindNATS, broker.KindAMQP:
		return s.createBrokerTrigger(c, flowID, b.Kind, b.brokerBody, b.Name, b.Enabled)
	case "schedule":
		return s.createSchedule(c, flowID, b.scheduleBody)
	case "event":
		return s.createEventTrigger(c, flowID, b.Name, b.Enabled)
	case "", "webhook":
	default:
		return badRequest(`kind must be "webhook" (the default), "schedule", "event", "nats" or "amqp"`)
	}
	if !slugPattern.MatchString(b.Slug) {
		return badRequest("slug must be 1-100 lowercase letters, digits, '-' or '_'")
	}
	ctx := c.Request().Context()
	f, err := s.cfg.Store.GetFlow(ctx, flowID)
	if err != nil {
		return err
	}
	t := store.Trigger{ID: uuid.NewString(), FlowID: flowID, Slug: b.Slug}
	if t.InputSchema, err = webhookInputSchema(b.InputSchema); err != nil {
		return err
	}
	if b.Secret != "" {
		// As a rotation's: a short secret is guessed, a long one is a
		// body mistaken for it.
		if len(b.Secret) < 16 || len(b.Secret) > 256 {
			return badRequest("secret must be 16 to 256 characters")
		}
		t.Secret = &b.Secret
	}
	if t.Respond, err = triggerRespond(b.Respond); err != nil {
		return err
	}
	if b.Entity != nil {
		if t.Entity, err = s.checkWebhookEntity(ctx, f, *b.Entity); err != nil {
			return err
		}
	}
	created, err := s.cfg.Store.CreateTrigger(ctx, t)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusCreated, webhookJSON(created))
}

// webhookEntity is a webhook trigger's entity mapping: each request's
// body creates or updates an entity of type Type on board BoardID, named
// and found by email at the gjson paths NamePath and EmailPath.
type webhookEntity struct {
	BoardID   string `json:"board_id"`
	Type      string `json:"type"`
	NamePath  string `json:"name_path"`
	EmailPath string `json:"email_path"`
}

// checkWebhookEntity checks a webhook trigger's entity mapping for flow f
// (a 400 for a missing or unknown board or type; a 422 for a board the
// flow cannot move entities on) and returns it as stored.
func (s *Server) checkWebhookEntity(ctx context.Context, f *store.Flow, e webhookEntity) (json.RawMessage, error) {
	if !validUUID(e.BoardID) {
		return nil, badRequest("entity.board_id must be a UUID")
	}
	if strings.TrimSpace(e.Type) == "" {
		return nil, badRequest("entity.type is required")
	}
	if _, err := s.cfg.Store.GetBoard(ctx, e.BoardID); err != nil {
		if errors.Is(err, engine.ErrNotFound) {
			return nil, badRequest("board " + e.BoardID + " does not exist")
		}
		return nil, err
	}
	if err := s.checkEntityBoard(ctx, entityBoardCheck{Workspace: f.Workspace, FlowBoardID: f.BoardID, EntityBoardID: e.BoardID,
		Execution: f.Execution, NotFound: "board " + e.BoardID + " does not exist"}); err != nil {
		return nil, err
	}
	return json.Marshal(e)
}

// webhookInputSchema checks a webhook trigger's input_schema as given
// (absent or null: none) — a 422 listing every problem, a schema too
// costly to check a body against among them — and returns it as stored.
func webhookInputSchema(raw json.RawMessage) (json.RawMessage, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	if _, err := engine.CompileForm(raw); err != nil {
		return nil, schemaError("input_schema", err)
	}
	return raw, nil
}

func orEmpty(b json.RawMessage) json.RawMessage {
	if len(b) == 0 {
		return json.RawMessage("null")
	}
	return b
}

// schemaError is a 422 listing what is wrong with a JSON Schema given in
// field (every issue at its path: input_schema.properties.email.format).
func schemaError(field string, err error) error {
	var fe *engine.FormSchemaError
	if !errors.As(err, &fe) {
		return err
	}
	ps := make([]engine.Problem, len(fe.Issues))
	for i, is := range fe.Issues {
		ps[i] = engine.Problem{Code: "invalid_schema", Path: field + is.Path, Message: is.Message}
	}
	return &apiError{Status: http.StatusUnprocessableEntity, Code: "invalid_schema",
		Message: field + " is not a usable JSON Schema (draft 2020-12): " + plural(len(ps), "problem"), Details: ps}
}
