package web

import (
	"encoding/json"
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/stitchd/stitchd/store"
)

// maxCardFields bounds the metadata keys a board's cards show.
const maxCardFields = 10

// patchBoard renames a board or sets the metadata keys its cards show.
func (s *Server) patchBoard(c echo.Context) error {
	id, err := s.pathUUID(c, "id", "board")
	if err != nil {
		return err
	}
	var b struct {
		Name       *string   `json:"name"`
		CardFields *[]string `json:"card_fields"`
	}
	if err := bind(c, &b); err != nil {
		return err
	}
	if b.Name == nil && b.CardFields == nil {
		return badRequest("send name or card_fields")
	}
	if b.Name != nil {
		n, err := newName(*b.Name)
		if err != nil {
			return err
		}
		b.Name = n
	}
	if b.CardFields != nil {
		if len(*b.CardFields) > maxCardFields {
			return badRequest("card_fields lists at most " + itoa(maxCardFields) + " metadata keys")
		}
		seen := map[string]bool{}
		for i, f := range *b.CardFields {
			field := "card_fields[" + itoa(i) + "]"
			if strings.TrimSpace(f) == "" {
				return badRequest(field + " must not be empty")
			}
			if seen[f] {
				return badRequest(field + " " + f + " is repeated")
			}
			seen[f] = true
			if err := checkName(field, f); err != nil {
				return err
			}
		}
	}
	board, err := s.cfg.Store.UpdateBoard(c.Request().Context(), store.UpdateBoardParams{ID: id, Name: b.Name, CardFields: b.CardFields})
	if err != nil {
		return err
	}
	return s.writeBoard(c, board, http.StatusOK, store.BoardEntitiesParams{BoardID: id})
}

// deleteBoard deletes a board, its sections and entities; refused (409)
// while a flow, a webhook trigger or an unfinished run uses it.
func (s *Server) deleteBoard(c echo.Context) error {
	id, err := s.pathUUID(c, "id", "board")
	if err != nil {
		return err
	}
	if err := s.cfg.Store.DeleteBoard(c.Request().Context(), id); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}

// maxSLASeconds bounds a section's SLA: a year.
const maxSLASeconds = 365 * 24 * 3600

// sectionBody is a section to add or change.
type sectionBody struct {
	ID       string  `json:"id"`
	Name     *string `json:"name"`
	Position *int    `json:"position"`
	// SLASeconds is how long an entity may stay before it is overdue (0
	// removes the SLA).
	SLASeconds *int `json:"sla_seconds"`
}

func (b sectionBody) check() error {
	if b.Name != nil {
		if strings.TrimSpace(*b.Name) == "" {
			return badRequest("name must not be empty")
		}
		if err := checkName("name", *b.Name); err != nil {
			return err
		}
	}
	if b.Position != nil && *b.Position < 0 {
		return badRequest("position must be 0 or more")
	}
	if b.SLASeconds != nil && (*b.SLASeconds < 0 || *b.SLASeconds > maxSLASeconds) {
		return badRequest("sla_seconds must be from 1 to 31536000 (a year), or 0 to remove the SLA")
	}
	return nil
}

// addSection adds a section to a board (last, or at position).
func (s *Server) addSection(c echo.Context) error {
	id, err := s.pathUUID(c, "id", "board")
	if err != nil {
		return err
	}
	var b sectionBody
	if err := bind(c, &b); err != nil {
		return err
	}
	if !sectionIDPattern.MatchString(b.ID) {
		return badRequest("id must be 1-64 letters, digits, '_', '-', '.', ':'")
	}
	if err := b.check(); err != nil {
		return err
	}
	name := b.ID
	if b.Name != nil {
		name = *b.Name
	}
	var sla *int
	if b.SLASeconds != nil && *b.SLASeconds > 0 {
		sla = b.SLASeconds
	}
	board, err := s.cfg.Store.AddSection(c.Request().Context(), store.AddSectionParams{BoardID: id, ID: b.ID, Name: name,
		Position: b.Position, SLASeconds: sla})
	if err != nil {
		return err
	}
	return s.writeBoard(c, board, http.StatusCreated, store.BoardEntitiesParams{BoardID: id})
}

// patchSection renames a section or moves it to another position.
func (s *Server) patchSection(c echo.Context) error {
	id, err := s.pathUUID(c, "id", "board")
	if err != nil {
		return err
	}
	var b sectionBody
	if err := bind(c, &b); err != nil {
		return err
	}
	if b.ID != "" && b.ID != c.Param("section") {
		return badRequest("a section's id does not change (add a section and delete this one)")
	}
	if b.Name == nil && b.Position == nil && b.SLASeconds == nil {
		return badRequest("send name, position or sla_seconds")
	}
	if err := b.check(); err != nil {
		return err
	}
	board, err := s.cfg.Store.UpdateSection(c.Request().Context(), store.UpdateSectionParams{BoardID: id, ID: c.Param("section"),
		Name: b.Name, Position: b.Position, SLASeconds: b.SLASeconds})
	if err != nil {
		return err
	}
	return s.writeBoard(c, board, http.StatusOK, store.BoardEntitiesParams{BoardID: id})
}

// deleteSection removes a section, its entities going to ?move_to=; 409
// while it holds entities and no move_to is given, or a flow or an
// unfinished run may move entities into it.
func (s *Server) deleteSection(c echo.Context) error {
	id, err := s.pathUUID(c, "id", "board")
	if err != nil {
		return err
	}
	sec := c.Param("section")
	board, err := s.cfg.Store.DeleteSection(c.Request().Context(), store.DeleteSectionParams{BoardID: id, ID: sec,
		MoveTo: c.QueryParam("move_to"), Actor: principalOf(c).Email()})
	if err != nil {
		return err
	}
	c.Set(auditDetailsKey, map[string]any{"section_id": sec, "move_to": c.QueryParam("move_to")})
	return s.writeBoard(c, board, http.StatusOK, store.BoardEntitiesParams{BoardID: id})
}

// patchEntity edits an entity's type, name, email or metadata (replaced
// whole).
func (s *Server) patchEntity(c echo.Context) error {
	id, err := s.pathUUID(c, "id", "entity")
	if err != nil {
		return err
	}
	var b struct {
		Type     *string         `json:"type"`
		Name     *string         `json:"name"`
		Email    *string         `json:"email"`
		Metadata json.RawMessage `json:"metadata"`
	}
	if err := bind(c, &b); err != nil {
		return err
	}
	if b.Type == nil && b.Name == nil && b.Email == nil && len(b.Metadata) == 0 {
		return badRequest("send type, name, email or metadata")
	}
	for _, f := range []struct {
		name     string
		v        *string
		required bool
	}{{"type", b.Type, true}, {"name", b.Name, true}, {"email", b.Email, false}} {
		if f.v == nil {
			continue
		}
		if f.required && strings.TrimSpace(*f.v) == "" {
			return badRequest(f.name + " must not be empty")
		}
		if err := checkName(f.name, *f.v); err != nil {
			return err
		}
	}
	if len(b.Metadata) > 0 && !strings.HasPrefix(strings.TrimSpace(string(b.Metadata)), "{") {
		return badRequest("metadata must be an object")
	}
	e, err := s.cfg.Store.UpdateEntity(c.Request().Context(), store.UpdateEntityParams{ID: id, Type: b.Type, Name: b.Name,
		Email: b.Email, Metadata: b.Metadata})
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, s.toEntityJSON(*e))
}

// deleteEntity deletes an entity and its journey; 409 while an unfinished
// run has it (its finished runs are kept, without it).
func (s *Server) deleteEntity(c echo.Context) error {
	id, err := s.pathUUID(c, "id", "entity")
	if err != nil {
		return err
	}
	if err := s.cfg.Store.DeleteEntity(c.Request().Context(), id); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}
