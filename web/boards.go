package web

import (
	"encoding/json"
	"net/http"
	"regexp"
	"strconv"
	"strings"

	"github.com/google/uuid"
	"github.com/labstack/echo/v4"

	"github.com/stitchd/stitchd/engine"
	"github.com/stitchd/stitchd/store"
)

type sectionJSON struct {
	ID   string `json:"id"`
	Name string `json:"name"`
	// SLASeconds: how long an entity may stay before it is overdue.
	SLASeconds *int            `json:"sla_seconds"`
	Entities   []entityJSON    `json:"entities"`
	Count      int             `json:"count"`
	Stats      sectionStatJSON `json:"stats"`
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
	TimeInSectionSeconds float64 `json:"time_in_section_seconds"`
	// Overdue: longer in its section than the section's sla_seconds.
	Overdue bool                  `json:"overdue"`
	Journey []engine.JourneyEvent `json:"journey,omitempty"`
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
	if len(b.Sections) > store.MaxSections {
		return badRequest("a board has at most " + itoa(store.MaxSections) + " sections, not " + itoa(len(b.Sections)))
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
	board, err := s.cfg.Store.CreateBoard(c.Request().Context(), workspaceOf(c), uuid.NewString(), strings.TrimSpace(b.Name), secs)
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
			es[i].Overdue = sec.SLASeconds != nil && es[i].TimeInSectionSeconds > float64(*sec.SLASeconds)
		}
		st := sectionStatJSON{Exits: stats[sec.ID].Exits, AvgSecondsBeforeExit: stats[sec.ID].AvgSeconds,
			AvgCurrentSeconds: pg.AvgCurrentSeconds}
		secs = append(secs, sectionJSON{ID: sec.ID, Name: sec.Name, SLASeconds: sec.SLASeconds, Entities: es, Count: pg.Count, Stats: st,
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
	if err := s.boardHere(c, b.BoardID); err != nil {
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
