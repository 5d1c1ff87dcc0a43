package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/lib/pq"
	"github.com/tidwall/gjson"
	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/stitchd/stitchd/engine"
)

// activeRunStatuses are the statuses of a run that may still move its
// entity: deleting the entity (or its section or board) under it is
// refused.
const activeRunStatuses = `('running', 'paused')`

// UpdateBoardParams changes a board; nil fields are left as they are.
type UpdateBoardParams struct {
	ID   string
	Name *string
	// CardFields replaces the metadata keys the board's cards show.
	CardFields *[]string
}

// UpdateBoard renames a board or sets its card fields.
func (s *Store) UpdateBoard(ctx context.Context, p UpdateBoardParams) (*Board, error) {
	set := map[string]any{"updated_at": gorm.Expr("now()")}
	if p.Name != nil {
		set["name"] = *p.Name
	}
	if p.CardFields != nil {
		b, _ := json.Marshal(*p.CardFields)
		set["card_fields"] = json.RawMessage(b)
	}
	res := s.db.WithContext(ctx).Model(&boardRow{}).Where("id = ?", p.ID).Updates(set)
	if err := interpretError(res.Error); err != nil {
		return nil, fmt.Errorf("error updating board %s: %w", p.ID, err)
	}
	if res.RowsAffected == 0 {
		return nil, fmt.Errorf("board %s: %w", p.ID, engine.ErrNotFound)
	}
	return s.GetBoard(ctx, p.ID)
}

// AddSectionParams adds a section to a board.
type AddSectionParams struct {
	BoardID string
	ID      string
	Name    string
	// SLASeconds is how long an entity may stay (nil: no limit).
	SLASeconds *int
	// Position is the section's 0-based place among the board's sections
	// (nil or past the end: last).
	Position *int
}

// AddSection adds a section; a section id the board has is ErrConflict.
func (s *Store) AddSection(ctx context.Context, p AddSectionParams) (*Board, error) {
	err := s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		ids, err := lockSections(tx, p.BoardID)
		if err != nil {
			return err
		}
		if slices.Contains(ids, p.ID) {
			return fmt.Errorf("%w: board %s already has a section %q", engine.ErrConflict, p.BoardID, p.ID)
		}
		if len(ids) >= MaxSections {
			return fmt.Errorf("%w: board %s has %d sections, the most a board may have", engine.ErrInvalidRequest, p.BoardID, len(ids))
		}
		pos := len(ids)
		if p.Position != nil && *p.Position >= 0 && *p.Position < pos {
			pos = *p.Position
		}
		ids = slices.Insert(ids, pos, p.ID)
		if err := tx.Create(&sectionRow{BoardID: p.BoardID, ID: p.ID, Name: p.Name, Position: pos, SLASeconds: p.SLASeconds}).Error; err != nil {
			return err
		}
		return renumberSections(tx, p.BoardID, ids)
	})
	if err != nil {
		return nil, fmt.Errorf("error adding section %q to board %s: %w", p.ID, p.BoardID, interpretError(err))
	}
	return s.GetBoard(ctx, p.BoardID)
}

// MaxSections bounds a board's sections: each is a column of the board's
// page and of every answer that reads it.
const MaxSections = 500

// UpdateSectionParams renames or moves a section; nil fields are left.
type UpdateSectionParams struct {
	BoardID  string
	ID       string
	Name     *string
	Position *int
	// SLASeconds sets the section's SLA (0 removes it).
	SLASeconds *int
}

// UpdateSection renames a section or moves it to another place.
func (s *Store) UpdateSection(ctx context.Context, p UpdateSectionParams) (*Board, error) {
	err := s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		ids, err := lockSections(tx, p.BoardID)
		if err != nil {
			return err
		}
		at := slices.Index(ids, p.ID)
		if at < 0 {
			return fmt.Errorf("board %s has no section %q: %w", p.BoardID, p.ID, engine.ErrNotFound)
		}
		if p.Name != nil {
			if err := tx.Model(&sectionRow{}).Where("board_id = ? AND id = ?", p.BoardID, p.ID).Update("name", *p.Name).Error; err != nil {
				return err
			}
		}
		if p.SLASeconds != nil {
			var sla any
			if *p.SLASeconds > 0 {
				sla = *p.SLASeconds
			}
			if err := tx.Model(&sectionRow{}).Where("board_id = ? AND id = ?", p.BoardID, p.ID).Update("sla_seconds", sla).Error; err != nil {
				return err
			}
		}
		if p.Position == nil {
			return nil
		}
		pos := min(max(*p.Position, 0), len(ids)-1)
		ids = slices.Insert(slices.Delete(ids, at, at+1), pos, p.ID)
		return renumberSections(tx, p.BoardID, ids)
	})
	if err != nil {
		return nil, fmt.Errorf("error updating section %q of board %s: %w", p.ID, p.BoardID, interpretError(err))
	}
	return s.GetBoard(ctx, p.BoardID)
}

// DeleteSectionParams removes a section from a board.
type DeleteSectionParams struct {
	BoardID string
	ID      string
	// MoveTo is the section the deleted one's entities move to (each with
	// a manual_move journey event by Actor). Empty: a section holding
	// entities is not deleted (ErrConflict).
	MoveTo string
	Actor  string
}

// DeleteSection removes a section. It is refused (ErrConflict) while a
// flow could still move an entity into it — the current version of a
// live flow on the board, or the version of an unfinished run of one of
// the board's entities — so that no entity lands in a section that is
// gone; and while it holds entities, unless p.MoveTo says where they go.
func (s *Store) DeleteSection(ctx context.Context, p DeleteSectionParams) (*Board, error) {
	err := s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		ids, err := lockSections(tx, p.BoardID)
		if err != nil {
			return err
		}
		if !slices.Contains(ids, p.ID) {
			return fmt.Errorf("board %s has no section %q: %w", p.BoardID, p.ID, engine.ErrNotFound)
		}
		if p.MoveTo == p.ID || (p.MoveTo != "" && !slices.Contains(ids, p.MoveTo)) {
			return fmt.Errorf("%w: move_to must be another section of board %s", engine.ErrInvalidRequest, p.BoardID)
		}
		if err := sectionInUse(tx, p.BoardID, p.ID); err != nil {
			return err
		}
		// Entities are locked as a move locks them (NO KEY UPDATE), so a
		// run moving one into the section waits for this to commit.
		var n int
		if err := tx.Raw(`SELECT count(*) FROM (SELECT 1 FROM entities WHERE board_id = ? AND section_id = ?
			FOR NO KEY UPDATE) e`, p.BoardID, p.ID).Row().Scan(&n); err != nil {
			return err
		}
		if n > 0 && p.MoveTo == "" {
			return fmt.Errorf("%w: section %q holds %d %s: say where they go (move_to) or move them first",
				engine.ErrConflict, p.ID, n, pluralWord(n, "entity", "entities"))
		}
		if n > 0 {
			// The journey's insert trigger counts each move (entity_seq).
			if err := tx.Exec(`INSERT INTO journey_events (id, entity_id, kind, from_section_id, to_section_id, actor)
				SELECT gen_random_uuid(), id, ?, section_id, ?, nullif(?, '') FROM entities
				WHERE board_id = ? AND section_id = ? ORDER BY id`,
				engine.JourneyManualMove, p.MoveTo, p.Actor, p.BoardID, p.ID).Error; err != nil {
				return err
			}
			if err := tx.Exec(`UPDATE entities SET section_id = ?, section_since = now(), updated_at = now()
				WHERE board_id = ? AND section_id = ?`, p.MoveTo, p.BoardID, p.ID).Error; err != nil {
				return err
			}
		}
		if err := tx.Exec(`DELETE FROM sections WHERE board_id = ? AND id = ?`, p.BoardID, p.ID).Error; err != nil {
			return err
		}
		return renumberSections(tx, p.BoardID, slices.DeleteFunc(ids, func(id string) bool { return id == p.ID }))
	})
	if err != nil {
		return nil, fmt.Errorf("error deleting section %q of board %s: %w", p.ID, p.BoardID, interpretError(err))
	}
	return s.GetBoard(ctx, p.BoardID)
}

// DeleteBoard deletes a board with its sections and entities (and their
// journeys). It is refused (ErrConflict) while something live uses the
// board: a flow that is not deleted, a webhook trigger of such a flow that
// creates entities on it, or an unfinished (running, paused) run of one
// of its entities. Finished runs of its entities are kept, detached from
// them (entity_id null); deleted flows forget it.
func (s *Store) DeleteBoard(ctx context.Context, id string) error {
	err := s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		if err := lockBoard(tx, id); err != nil {
			return err
		}
		var flows []string
		if err := tx.Model(&flowRow{}).Where("board_id = ?", id).Order("name").Pluck("name", &flows).Error; err != nil {
			return err
		}
		if len(flows) > 0 {
			return fmt.Errorf("%w: flows use this board (%s): give them another board or delete them first",
				engine.ErrConflict, strings.Join(flows, ", "))
		}
		var slugs []string
		if err := tx.Raw(`SELECT t.slug FROM triggers t JOIN flows f ON f.id = t.flow_id
			WHERE f.deleted_at IS NULL AND t.entity->>'board_id' = ? ORDER BY t.slug`, id).Scan(&slugs).Error; err != nil {
			return err
		}
		if len(slugs) > 0 {
			return fmt.Errorf("%w: webhook triggers create entities on this board (%s): delete them first",
				engine.ErrConflict, strings.Join(slugs, ", "))
		}
		if err := detachRuns(tx, `SELECT id FROM entities WHERE board_id = ?`, id); err != nil {
			return err
		}
		// Bulk statements, deleted flows included (they still refer to
		// the board).
		for _, q := range []string{
			`UPDATE flows SET board_id = NULL WHERE board_id = ?`,
			`DELETE FROM entities WHERE board_id = ?`,
			`DELETE FROM boards WHERE id = ?`, // sections cascade
		} {
			if err := tx.Exec(q, id).Error; err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("error deleting board %s: %w", id, interpretError(err))
	}
	return nil
}

// UpdateEntityParams edits an entity; nil fields are left as they are.
type UpdateEntityParams struct {
	ID    string
	Type  *string
	Name  *string
	Email *string // "" clears it
	// Metadata replaces the entity's metadata (an object).
	Metadata json.RawMessage
}

// UpdateEntity edits an entity. An email another entity of the board has
// is ErrConflict.
func (s *Store) UpdateEntity(ctx context.Context, p UpdateEntityParams) (*engine.Entity, error) {
	set := map[string]any{"updated_at": gorm.Expr("now()")}
	if p.Type != nil {
		set["type"] = *p.Type
	}
	if p.Name != nil {
		set["name"] = *p.Name
	}
	if p.Email != nil {
		var email *string // "" clears it
		if *p.Email != "" {
			email = p.Email
		}
		set["email"] = email
	}
	if len(p.Metadata) > 0 {
		set["metadata"] = p.Metadata
	}
	res := s.db.WithContext(ctx).Model(&entityRow{}).Where("id = ?", p.ID).Updates(set)
	if err := interpretError(res.Error); err != nil {
		if errors.Is(err, engine.ErrConflict) {
			return nil, fmt.Errorf("%w: another entity on the board has this email", engine.ErrConflict)
		}
		return nil, fmt.Errorf("error updating entity %s: %w", p.ID, err)
	}
	if res.RowsAffected == 0 {
		return nil, fmt.Errorf("entity %s: %w", p.ID, engine.ErrNotFound)
	}
	return s.GetEntity(ctx, p.ID)
}

// DeleteEntity deletes an entity and its journey. It is refused
// (ErrConflict) while an unfinished (running, paused) run has it: that
// run would move it. Its finished runs are kept, detached (entity_id
// null).
func (s *Store) DeleteEntity(ctx context.Context, id string) error {
	err := s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		// FOR UPDATE conflicts with the KEY SHARE lock a run starting for
		// the entity takes: that run waits, then finds it gone.
		if err := tx.Clauses(clause.Locking{Strength: "UPDATE"}).Select("id").Take(&entityRow{}, "id = ?", id).Error; err != nil {
			return err
		}
		if err := detachRuns(tx, `SELECT ?::uuid`, id); err != nil {
			return err
		}
		return tx.Delete(&entityRow{}, "id = ?", id).Error
	})
	if err != nil {
		return fmt.Errorf("error deleting entity %s: %w", id, interpretError(err))
	}
	return nil
}

// detachRuns refuses (ErrConflict) when an unfinished run has one of the
// entities entitiesQuery (with arg) selects, and otherwise detaches their
// runs from them.
func detachRuns(tx *gorm.DB, entitiesQuery string, arg any) error {
	var active []string
	if err := tx.Raw(`SELECT id::text FROM runs WHERE entity_id IN (`+entitiesQuery+`)
		AND status IN `+activeRunStatuses+` ORDER BY created_at LIMIT 5 FOR UPDATE`, arg).Scan(&active).Error; err != nil {
		return err
	}
	if len(active) > 0 {
		return fmt.Errorf("%w: unfinished runs have the entity (%s): cancel them or let them finish first",
			engine.ErrConflict, strings.Join(active, ", "))
	}
	return tx.Exec(`UPDATE runs SET entity_id = NULL WHERE entity_id IN (`+entitiesQuery+`)`, arg).Error
}

// lockSections locks a board (against concurrent section edits) and
// returns its section ids in order.
func lockSections(tx *gorm.DB, boardID string) ([]string, error) {
	if err := lockBoard(tx, boardID); err != nil {
		return nil, err
	}
	var ids []string
	err := tx.Model(&sectionRow{}).Where("board_id = ?", boardID).Order("position, id").Pluck("id", &ids).Error
	return ids, err
}

// lockBoard takes a board's row lock (ErrRecordNotFound: no board).
func lockBoard(tx *gorm.DB, boardID string) error {
	return tx.Clauses(clause.Locking{Strength: "UPDATE"}).Select("id").Take(&boardRow{}, "id = ?", boardID).Error
}

// renumberSections stores ids' order as the sections' positions.
func renumberSections(tx *gorm.DB, boardID string, ids []string) error {
	if len(ids) == 0 {
		return nil
	}
	return tx.Exec(`UPDATE sections s SET position = o.n - 1 FROM unnest(?::text[]) WITH ORDINALITY AS o(id, n)
		WHERE s.board_id = ? AND s.id = o.id`, pq.StringArray(ids), boardID).Error
}

// sectionInUse is ErrConflict when a flow may move an entity into section
// sectionID of the board: a live flow on the board (its current version),
// or an unfinished run of an entity of the board (its version).
func sectionInUse(tx *gorm.DB, boardID, sectionID string) error {
	rows, err := tx.Raw(`SELECT 'flow ' || f.name, v.execution_graph FROM flows f
			JOIN flow_versions v ON v.id = f.current_version_id
			WHERE f.board_id = ? AND f.deleted_at IS NULL
		UNION ALL
		SELECT DISTINCT 'run ' || r.id::text, v.execution_graph FROM runs r
			JOIN entities e ON e.id = r.entity_id JOIN flow_versions v ON v.id = r.flow_version_id
			WHERE e.board_id = ? AND r.status IN `+activeRunStatuses, boardID, boardID).Rows()
	if err != nil {
		return err
	}
	defer rows.Close()
	var users []string
	for rows.Next() {
		var who string
		var exec []byte
		if err := rows.Scan(&who, &exec); err != nil {
			return err
		}
		if movesTo(exec, sectionID) && !slices.Contains(users, who) {
			users = append(users, who)
		}
	}
	if err := rows.Err(); err != nil {
		return err
	}
	if len(users) > 0 {
		return fmt.Errorf("%w: %s move entities to section %q: change them first", engine.ErrConflict,
			strings.Join(users, ", "), sectionID)
	}
	return nil
}

// movesTo reports whether an execution graph's entityMovement (onSuccess,
// onFailure, onOutcome.*) names section.
func movesTo(exec []byte, section string) bool {
	found := false
	gjson.GetBytes(exec, "nodes").ForEach(func(_, n gjson.Result) bool {
		m := n.Get("config.entityMovement")
		check := func(mv gjson.Result) {
			found = found || mv.Get("targetSectionId").Str == section
		}
		check(m.Get("onSuccess"))
		check(m.Get("onFailure"))
		m.Get("onOutcome").ForEach(func(_, v gjson.Result) bool { check(v); return true })
		return !found
	})
	return found
}

func pluralWord(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
