package web

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/labstack/echo/v4"
	"github.com/tidwall/gjson"

	"github.com/stitchd/stitchd/callbacks"
	"github.com/stitchd/stitchd/engine"
	"github.com/stitchd/stitchd/internal/broker"
	"github.com/stitchd/stitchd/internal/jsonlimit"
	"github.com/stitchd/stitchd/store"
)

type sectionJSON struct {
	ID       string          `json:"id"`
	Name     string          `json:"name"`
	Entities []entityJSON    `json:"entities"`
	Count    int             `json:"count"`
	Stats    sectionStatJSON `json:"stats"`
	// NextCursor pages through the section's entities (GET
	// /boards/{id}?section_id=&cursor=); null on the last page.
	NextCursor *string `json:"next_cursor"`
}

type sectionStatJSON struct {
	// AvgCurrentSeconds is the average time the entities now in the
	// section have spent there.
	AvgCurrentSeconds float64 `json:"avg_current_seconds"`
	// Exits and AvgSecondsBeforeExit describe past stays (from journeys).
	Exits                int     `json:"exits"`
	AvgSecondsBeforeExit float64 `json:"avg_seconds_before_exit"`
}

type entityJSON struct {
	engine.Entity
	TimeInSectionSeconds float64               `json:"time_in_section_seconds"`
	Journey              []engine.JourneyEvent `json:"journey,omitempty"`
	// JourneyNextCursor pages through a long journey (GET
	// /entities/{id}?cursor=, oldest first); null on the last page.
	JourneyNextCursor *string `json:"journey_next_cursor,omitempty"`
}

func (s *Server) toEntityJSON(e engine.Entity) entityJSON {
	out := entityJSON{Entity: e}
	if e.SectionSince != nil {
		out.TimeInSectionSeconds = s.cfg.Clock.Now().Sub(*e.SectionSince).Seconds()
	}
	if out.Metadata == nil {
		out.Metadata = json.RawMessage("{}")
	}
	return out
}

var sectionIDPattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.:-]{0,63}$`)

func (s *Server) createBoard(c echo.Context) error {
	var b struct {
		Name     string `json:"name"`
		Sections []struct {
			ID   string `json:"id"`
			Name string `json:"name"`
		} `json:"sections"`
	}
	if err := bind(c, &b); err != nil {
		return err
	}
	if strings.TrimSpace(b.Name) == "" {
		return badRequest("name is required")
	}
	if err := checkName("name", strings.TrimSpace(b.Name)); err != nil {
		return err
	}
	seen := map[string]bool{}
	secs := make([]store.Section, 0, len(b.Sections))
	for i, sec := range b.Sections {
		if !sectionIDPattern.MatchString(sec.ID) {
			return badRequest("sections[" + itoa(i) + "].id must be 1-64 letters, digits, '_', '-', '.', ':'")
		}
		if seen[sec.ID] {
			return badRequest("sections[" + itoa(i) + "].id " + sec.ID + " is repeated")
		}
		seen[sec.ID] = true
		if err := checkName("sections["+itoa(i)+"].name", sec.Name); err != nil {
			return err
		}
		name := sec.Name
		if name == "" {
			name = sec.ID
		}
		secs = append(secs, store.Section{ID: sec.ID, Name: name})
	}
	board, err := s.cfg.Store.CreateBoard(c.Request().Context(), uuid.NewString(), strings.TrimSpace(b.Name), secs)
	if err != nil {
		return err
	}
	return s.writeBoard(c, board, http.StatusCreated, store.BoardEntitiesParams{BoardID: board.ID})
}

func (s *Server) getBoard(c echo.Context) error {
	id, err := s.pathUUID(c, "id", "board")
	if err != nil {
		return err
	}
	p, err := pageParams(c)
	if err != nil {
		return err
	}
	board, err := s.cfg.Store.GetBoard(c.Request().Context(), id)
	if err != nil {
		return err
	}
	bp := store.BoardEntitiesParams{BoardID: id, SectionID: c.QueryParam("section_id"), Query: strings.TrimSpace(c.QueryParam("q")),
		PageParams: p}
	if err := checkName("q", bp.Query); err != nil {
		return err
	}
	if bp.SectionID != "" {
		found := false
		for _, sec := range board.Sections {
			found = found || sec.ID == bp.SectionID
		}
		if !found {
			return badRequest("board " + id + " has no section " + strconv.Quote(bp.SectionID))
		}
	}
	return s.writeBoard(c, board, http.StatusOK, bp)
}

// writeBoard answers a board with a page of each section's entities (every
// section's first page, or the page bp asks for of one section), each
// section's count and stats over all its entities, and its next_cursor.
func (s *Server) writeBoard(c echo.Context, board *store.Board, status int, bp store.BoardEntitiesParams) error {
	ctx := c.Request().Context()
	pages, err := s.cfg.Store.BoardEntitiesPage(ctx, bp)
	if err != nil {
		return err
	}
	stats, err := s.cfg.Store.BoardSectionStats(ctx, board.ID)
	if err != nil {
		return err
	}
	secs := make([]sectionJSON, 0, len(board.Sections))
	for _, sec := range board.Sections {
		if bp.SectionID != "" && sec.ID != bp.SectionID {
			continue
		}
		pg := pages[sec.ID]
		if pg == nil {
			pg = &store.SectionPage{}
		}
		es := make([]entityJSON, len(pg.Entities))
		for i, e := range pg.Entities {
			es[i] = s.toEntityJSON(e)
		}
		st := sectionStatJSON{Exits: stats[sec.ID].Exits, AvgSecondsBeforeExit: stats[sec.ID].AvgSeconds,
			AvgCurrentSeconds: pg.AvgCurrentSeconds}
		secs = append(secs, sectionJSON{ID: sec.ID, Name: sec.Name, Entities: es, Count: pg.Count, Stats: st,
			NextCursor: nextCursor(pg.Next)})
	}
	fields := board.CardFields
	if fields == nil {
		fields = []string{}
	}
	return c.JSON(status, map[string]any{"id": board.ID, "name": board.Name, "sections": secs, "card_fields": fields,
		"created_at": board.CreatedAt})
}

func (s *Server) createEntity(c echo.Context) error {
	var b struct {
		BoardID   string          `json:"board_id"`
		Type      string          `json:"type"`
		Name      string          `json:"name"`
		Email     *string         `json:"email"`
		Metadata  json.RawMessage `json:"metadata"`
		SectionID *string         `json:"section_id"`
	}
	if err := bind(c, &b); err != nil {
		return err
	}
	switch {
	case !validUUID(b.BoardID):
		return badRequest("board_id must be a UUID")
	case strings.TrimSpace(b.Type) == "":
		return badRequest("type is required")
	case strings.TrimSpace(b.Name) == "":
		return badRequest("name is required")
	case len(b.Metadata) > 0 && string(b.Metadata) != "null" && !strings.HasPrefix(strings.TrimSpace(string(b.Metadata)), "{"):
		return badRequest("metadata must be an object")
	}
	email := ""
	if b.Email != nil {
		email = *b.Email
	}
	for _, f := range [][2]string{{"name", b.Name}, {"type", b.Type}, {"email", email}} {
		if err := checkName(f[0], f[1]); err != nil {
			return err
		}
	}
	if string(b.Metadata) == "null" {
		b.Metadata = nil
	}
	ctx := c.Request().Context()
	if _, err := s.cfg.Store.GetBoard(ctx, b.BoardID); err != nil {
		if errors.Is(err, engine.ErrNotFound) {
			return badRequest("board " + b.BoardID + " does not exist")
		}
		return err
	}
	e, err := s.cfg.Store.CreateEntity(ctx, store.NewEntity{ID: uuid.NewString(), BoardID: b.BoardID, Type: b.Type,
		Name: b.Name, Email: b.Email, Metadata: b.Metadata, SectionID: b.SectionID}, uuid.NewString())
	if err != nil {
		return err
	}
	return c.JSON(http.StatusCreated, s.toEntityJSON(*e))
}

func (s *Server) getEntity(c echo.Context) error {
	id, err := s.pathUUID(c, "id", "entity")
	if err != nil {
		return err
	}
	p, err := pageParams(c)
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	e, err := s.cfg.Store.GetEntity(ctx, id)
	if err != nil {
		return err
	}
	j, next, err := s.cfg.Store.JourneyPage(ctx, id, p)
	if err != nil {
		return err
	}
	out := s.toEntityJSON(*e)
	out.Journey = j
	out.JourneyNextCursor = nextCursor(next)
	return c.JSON(http.StatusOK, out)
}

func (s *Server) moveEntity(c echo.Context) error {
	id, err := s.pathUUID(c, "id", "entity")
	if err != nil {
		return err
	}
	var b struct {
		SectionID string `json:"section_id"`
	}
	if err := bind(c, &b); err != nil {
		return err
	}
	if b.SectionID == "" {
		return badRequest("section_id is required")
	}
	if err := s.cfg.Store.MoveEntityManually(c.Request().Context(), id, b.SectionID, uuid.NewString(), principalOf(c).Email()); err != nil {
		return err
	}
	if s.cfg.Notify != nil {
		s.cfg.Notify("entity:" + id)
	}
	return s.getEntity(c)
}

var slugPattern = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,99}$`)

func (s *Server) createTrigger(c echo.Context) error {
	flowID, err := s.pathUUID(c, "id", "flow")
	if err != nil {
		return err
	}
	var b struct {
		Kind   string `json:"kind"`
		Name   string `json:"name"`
		Slug   string `json:"slug"`
		Secret string `json:"secret"`
		Entity *struct {
			BoardID   string `json:"board_id"`
			Type      string `json:"type"`
			NamePath  string `json:"name_path"`
			EmailPath string `json:"email_path"`
		} `json:"entity"`
		InputSchema json.RawMessage `json:"input_schema"`
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
	if len(b.InputSchema) > 0 && string(b.InputSchema) != "null" {
		if _, err := engine.CompileForm(b.InputSchema); err != nil {
			return schemaError("input_schema", err)
		}
		t.InputSchema = b.InputSchema
	}
	if b.Secret != "" {
		t.Secret = &b.Secret
	}
	if b.Entity != nil {
		if !validUUID(b.Entity.BoardID) {
			return badRequest("entity.board_id must be a UUID")
		}
		if strings.TrimSpace(b.Entity.Type) == "" {
			return badRequest("entity.type is required")
		}
		if _, err := s.cfg.Store.GetBoard(ctx, b.Entity.BoardID); err != nil {
			if errors.Is(err, engine.ErrNotFound) {
				return badRequest("board " + b.Entity.BoardID + " does not exist")
			}
			return err
		}
		if err := s.checkEntityBoard(ctx, entityBoardCheck{FlowBoardID: f.BoardID, EntityBoardID: b.Entity.BoardID,
			Execution: f.Execution}); err != nil {
			return err
		}
		t.Entity, _ = json.Marshal(b.Entity)
	}
	created, err := s.cfg.Store.CreateTrigger(ctx, t)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusCreated, webhookJSON(created))
}

func orEmpty(b json.RawMessage) json.RawMessage {
	if len(b) == 0 {
		return json.RawMessage("null")
	}
	return b
}

// webhookTolerance bounds the age of a signed inbound webhook (replays).
const webhookTolerance = 5 * time.Minute

// hook is the inbound trigger endpoint: verify, upsert the entity (only
// create it, for a trigger without a secret), start a run with the body as
// input.
func (s *Server) hook(c echo.Context) error {
	ctx := c.Request().Context()
	body, err := io.ReadAll(c.Request().Body)
	if err != nil {
		var he *echo.HTTPError
		if errors.As(err, &he) {
			return he
		}
		return badRequest("error reading body")
	}
	t, err := s.cfg.Store.TriggerBySlug(ctx, c.Param("slug"))
	if err != nil {
		return err
	}
	if t.Secret != nil {
		err := verifyInbound([]byte(*t.Secret), c.Request().Header, body, s.cfg.Clock.Now())
		if err != nil && t.PreviousSecret != nil {
			// A rotation's overlap: the replaced secret until it expires.
			if verifyInbound([]byte(*t.PreviousSecret), c.Request().Header, body, s.cfg.Clock.Now()) == nil {
				err = nil
			}
		}
		if err != nil {
			return errorf(http.StatusUnauthorized, "unauthorized", "bad signature: "+err.Error())
		}
	}
	if err := jsonlimit.Check(body, jsonlimit.MaxDepth); err != nil {
		return bodyError(err)
	}
	if !json.Valid(body) {
		return badRequest("body must be JSON")
	}
	if len(t.InputSchema) > 0 {
		if err := s.checkInput(t.InputSchema, body); err != nil {
			return err
		}
	}
	f, err := s.cfg.Store.GetFlow(ctx, t.FlowID)
	if err != nil {
		return err
	}
	p := engine.StartRunParams{FlowID: f.ID, VersionID: f.VersionID, Input: body,
		Trigger: webhookTrigger(t.Slug, t.ID)}
	if len(t.Entity) > 0 && string(t.Entity) != "null" {
		var m struct {
			BoardID   string `json:"board_id"`
			Type      string `json:"type"`
			NamePath  string `json:"name_path"`
			EmailPath string `json:"email_path"`
		}
		_ = json.Unmarshal(t.Entity, &m)
		up := engine.EntityUpsert{BoardID: m.BoardID, Type: m.Type}
		if m.EmailPath != "" {
			up.Email = gjson.GetBytes(body, m.EmailPath).String()
		}
		if m.NamePath != "" {
			up.Name = gjson.GetBytes(body, m.NamePath).String()
		}
		if err := checkName("the entity name at "+m.NamePath, up.Name); err != nil {
			return err
		}
		if err := checkName("the entity email at "+m.EmailPath, up.Email); err != nil {
			return err
		}
		if up.Name == "" {
			up.Name = up.Email
		}
		if up.Name == "" {
			up.Name = m.Type
		}
		if err := s.checkEntityBoard(ctx, entityBoardCheck{FlowBoardID: f.BoardID, EntityBoardID: m.BoardID,
			Execution: f.Execution}); err != nil {
			return err
		}
		p.Entity = &up
		if t.Secret == nil {
			// Unauthenticated: anyone who knows an email could otherwise
			// rename its entity and take over its current run.
			ctx = store.CreateEntitiesOnly(ctx)
		}
	}
	if p.IdempotencyKey, err = hookIdempotencyKey(t, c.Request().Header); err != nil {
		return err
	}
	// Counted once the request is known good (signed, valid): unsigned
	// junk sent to a signed trigger spends none of its senders' rate. A
	// loop through a name of stitchd the dispatch guard does not know is
	// slowed to the rate.
	if ok, wait := s.hookRate.take(t.ID, s.cfg.Clock.Now()); !ok {
		c.Response().Header().Set("Retry-After", strconv.Itoa(retryAfterSeconds(wait)))
		return errorf(http.StatusTooManyRequests, "rate_limited", "trigger "+t.Slug+" starts at most "+
			strconv.FormatFloat(s.cfg.TriggerRate, 'f', -1, 64)+" runs a second; retry later")
	}
	run, _, err := s.cfg.Engine.StartRun(ctx, p)
	if eb, ok := engine.IsEntityBusy(err); ok {
		// entityConcurrency skip: the sender did nothing wrong and must not
		// retry — a 200 that says the start was skipped for the run going.
		return c.JSON(http.StatusOK, map[string]any{"skipped": true, "run_id": eb.RunID, "entity_id": eb.EntityID,
			"reason": eb.Error()})
	}
	if err != nil {
		return entityExists(err)
	}
	return c.JSON(http.StatusAccepted, map[string]any{"run_id": run.ID, "entity_id": run.EntityID, "status": run.Status})
}

// verifyInbound accepts Standard Webhooks (webhook-id, webhook-timestamp,
// webhook-signature) or GitHub's X-Hub-Signature-256.
func verifyInbound(secret []byte, h http.Header, body []byte, now time.Time) error {
	if sig := h.Get("webhook-signature"); sig != "" {
		return callbacks.VerifyWebhook(secret, h.Get("webhook-id"), h.Get("webhook-timestamp"), sig, body, now, webhookTolerance)
	}
	if sig := h.Get("X-Hub-Signature-256"); sig != "" {
		hexSig, ok := strings.CutPrefix(sig, "sha256=")
		want, err := hex.DecodeString(hexSig)
		if !ok || err != nil {
			return errors.New("malformed X-Hub-Signature-256")
		}
		m := hmac.New(sha256.New, secret)
		m.Write(body)
		if !hmac.Equal(want, m.Sum(nil)) {
			return errors.New("signature mismatch")
		}
		return nil
	}
	return errors.New("missing webhook-signature or X-Hub-Signature-256")
}

// webhookTrigger is a run's trigger when a webhook started it.
func webhookTrigger(slug, id string) json.RawMessage {
	b, _ := json.Marshal(map[string]string{"type": "webhook", "slug": slug, "trigger_id": id})
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

// checkInput checks a hook's body against its trigger's input_schema: a
// 400 listing every way it breaks it ($.email, $.items[2]).
func (s *Server) checkInput(schema, body json.RawMessage) error {
	f, err := s.inputSchemas.Get(schema)
	if err != nil {
		return fmt.Errorf("error compiling a trigger's input_schema: %w", err)
	}
	issues := f.Check(body)
	if len(issues) == 0 {
		return nil
	}
	ps := make([]engine.Problem, len(issues))
	for i, is := range issues {
		ps[i] = engine.Problem{Code: "input_invalid", Path: "$" + is.Path, Message: is.Message}
	}
	return &apiError{Status: http.StatusBadRequest, Code: "invalid_request",
		Message: "the body does not fit the trigger's input_schema: " + plural(len(ps), "problem"), Details: ps}
}
