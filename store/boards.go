package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/stitchd/stitchd/engine"
)

// Section is a column of a board.
type Section struct {
	ID   string
	Name string
	// SLASeconds is how long an entity may stay in the section before it
	// is overdue (nil: no limit).
	SLASeconds *int
}

// Board is a board with its ordered sections.
type Board struct {
	ID       string
	Name     string
	Sections []Section
	// CardFields are the metadata keys the board's cards show (empty: the
	// first few keys of each entity's metadata).
	CardFields []string
	CreatedAt  time.Time
}

// boardRow is a boards row; Sections are its sections when preloaded
// (withSections). Times are the database's (now()).
type boardRow struct {
	ID         string          `gorm:"primaryKey;type:uuid"`
	Name       string          ``
	Workspace  string          `gorm:"default:default"`
	CardFields json.RawMessage `gorm:"type:jsonb"`
	Sections   []sectionRow    `gorm:"foreignKey:BoardID"`
	CreatedAt  time.Time       `gorm:"default:now();autoCreateTime:false"`
	UpdatedAt  time.Time       `gorm:"default:now();autoUpdateTime:false"`
}

// TableName is the boards table.
func (boardRow) TableName() string { return "boards" }

func (r *boardRow) board() (Board, error) {
	b := Board{ID: r.ID, Name: r.Name, Sections: make([]Section, len(r.Sections)), CreatedAt: r.CreatedAt.UTC()}
	for i, sec := range r.Sections {
		b.Sections[i] = Section{ID: sec.ID, Name: sec.Name, SLASeconds: sec.SLASeconds}
	}
	if err := json.Unmarshal(r.CardFields, &b.CardFields); err != nil {
		return Board{}, fmt.Errorf("error reading the card fields of board %s: %w", r.ID, err)
	}
	return b, nil
}

// sectionRow is a sections row: a board's column at Position (from 0).
type sectionRow struct {
	BoardID    string `gorm:"primaryKey;type:uuid"`
	ID         string `gorm:"primaryKey"`
	Name       string ``
	Position   int    ``
	SLASeconds *int   `gorm:"column:sla_seconds"`
}

// TableName is the sections table.
func (sectionRow) TableName() string { return "sections" }

// withSections loads boards with their sections in order.
func withSections(db *gorm.DB) *gorm.DB {
	return db.Preload("Sections", func(db *gorm.DB) *gorm.DB { return db.Order("position") })
}

// listBoards lists the boards q selects by name, with their sections.
func listBoards(q *gorm.DB) ([]Board, error) {
	var rows []boardRow
	if err := withSections(q).Order("name, id").Find(&rows).Error; err != nil {
		return nil, interpretError(err)
	}
	out := make([]Board, len(rows))
	for i := range rows {
		b, err := rows[i].board()
		if err != nil {
			return nil, err
		}
		out[i] = b
	}
	return out, nil
}

// CreateBoard stores a board of workspace ws ("": DefaultWorkspace) and its
// sections in order.
func (s *Store) CreateBoard(ctx context.Context, ws, id, name string, sections []Section) (*Board, error) {
	err := s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		// Sections inserted by hand: gorm's association save would skip a
		// repeated section id (ON CONFLICT DO NOTHING) where it must fail.
		if err := tx.Omit(clause.Associations).Create(&boardRow{ID: id, Name: name, Workspace: workspaceOr(ws), CardFields: json.RawMessage("[]")}).Error; err != nil {
			return err
		}
		if len(sections) == 0 {
			return nil
		}
		rows := make([]sectionRow, len(sections))
		for i, sec := range sections {
			rows[i] = sectionRow{BoardID: id, ID: sec.ID, Name: sec.Name, Position: i}
		}
		// In batches: one INSERT of every section passed Postgres's 65,535
		// parameters at about 13,000 sections (a 500).
		return tx.CreateInBatches(&rows, sectionBatch).Error
	})
	if err != nil {
		return nil, fmt.Errorf("error creating board: %w", interpretError(err))
	}
	return s.GetBoard(ctx, id)
}

// sectionBatch is how many sections one INSERT writes (five parameters
// each).
const sectionBatch = 1000

// GetBoard loads a board and its sections.
func (s *Store) GetBoard(ctx context.Context, id string) (*Board, error) {
	var r boardRow
	if err := withSections(s.db.WithContext(ctx)).Take(&r, "id = ?", id).Error; err != nil {
		return nil, fmt.Errorf("error loading board %s: %w", id, interpretError(err))
	}
	b, err := r.board()
	if err != nil {
		return nil, err
	}
	return &b, nil
}

// BoardSections returns the section ids of a board (nil error, empty slice
// for a board without sections; ErrNotFound for no board).
func (s *Store) BoardSections(ctx context.Context, id string) ([]string, error) {
	b, err := s.GetBoard(ctx, id)
	if err != nil {
		return nil, err
	}
	ids := make([]string, len(b.Sections))
	for i, sec := range b.Sections {
		ids[i] = sec.ID
	}
	return ids, nil
}

// entityRow is an entities row. The engine moves entities (MoveEntity,
// UpsertEntity: pgx, in its transactions); the API creates, reads, edits
// and deletes them through this model.
type entityRow struct {
	ID             string          `gorm:"primaryKey;type:uuid"`
	BoardID        string          `gorm:"type:uuid"`
	Type           string          ``
	Name           string          ``
	Email          *string         ``
	Metadata       json.RawMessage `gorm:"type:jsonb"`
	SectionID      *string         ``
	SectionSince   *time.Time      ``
	CurrentRunID   *string         `gorm:"type:uuid"`
	CurrentNodeKey *string         ``
	CreatedAt      time.Time       `gorm:"default:now();autoCreateTime:false"`
	UpdatedAt      time.Time       `gorm:"default:now();autoUpdateTime:false"`
}

// TableName is the entities table.
func (entityRow) TableName() string { return "entities" }

func (r *entityRow) entity() engine.Entity {
	e := engine.Entity{ID: r.ID, BoardID: r.BoardID, Type: r.Type, Name: r.Name, Email: r.Email, Metadata: r.Metadata,
		SectionID: r.SectionID, CurrentRunID: r.CurrentRunID, CurrentNodeKey: r.CurrentNodeKey,
		CreatedAt: r.CreatedAt.UTC(), UpdatedAt: r.UpdatedAt.UTC()}
	if r.SectionSince != nil {
		since := r.SectionSince.UTC()
		e.SectionSince = &since
	}
	return e
}

// entityCols are the columns scanEntity reads (the sections page's
// lateral join).
const entityCols = `id::text, board_id::text, type, name, email, metadata, section_id, section_since, current_run_id::text,
	current_node_key, created_at, updated_at`

func scanEntity(row scanner) (*engine.Entity, error) {
	var e engine.Entity
	var email, section, run, node sql.NullString
	var since sql.NullTime
	var meta []byte
	if err := row.Scan(&e.ID, &e.BoardID, &e.Type, &e.Name, &email, &meta, &section, &since, &run, &node,
		&e.CreatedAt, &e.UpdatedAt); err != nil {
		return nil, interpretError(err)
	}
	e.Email, e.SectionID, e.CurrentRunID, e.CurrentNodeKey = nullStr(email), nullStr(section), nullStr(run), nullStr(node)
	e.SectionSince = nullTime(since)
	e.Metadata = meta
	e.CreatedAt, e.UpdatedAt = e.CreatedAt.UTC(), e.UpdatedAt.UTC()
	return &e, nil
}

// BoardEntities lists a board's entities by section, oldest in section first.
func (s *Store) BoardEntities(ctx context.Context, boardID string) ([]engine.Entity, error) {
	var rows []entityRow
	if err := s.db.WithContext(ctx).Where("board_id = ?", boardID).Order("section_id, section_since, id").
		Find(&rows).Error; err != nil {
		return nil, fmt.Errorf("error listing entities of board %s: %w", boardID, interpretError(err))
	}
	out := make([]engine.Entity, len(rows))
	for i := range rows {
		out[i] = rows[i].entity()
	}
	return out, nil
}

// SectionStats is the historical time entities spent in a section (moves
// out of it recorded in the journey).
type SectionStats struct {
	SectionID  string
	Exits      int
	AvgSeconds float64
}

// BoardSectionStats computes, per section, how many times entities left it
// and their average stay, from the journey log.
func (s *Store) BoardSectionStats(ctx context.Context, boardID string) (map[string]SectionStats, error) {
	// A stay starts with the first journey event that enters a section (a
	// run starting or a repeated move into the same section continues it)
	// and ends at the next event that enters another section.
	rows, err := s.db.WithContext(ctx).Raw(`WITH j AS (
		SELECT je.entity_id, je.id, je.to_section_id, je.created_at,
			lag(je.to_section_id) OVER (PARTITION BY je.entity_id ORDER BY je.created_at, je.id) AS prev_section
		FROM journey_events je JOIN entities e ON e.id = je.entity_id
		WHERE e.board_id = ? AND je.to_section_id IS NOT NULL),
	stays AS (
		SELECT to_section_id, created_at,
			lead(created_at) OVER (PARTITION BY entity_id ORDER BY created_at, id) AS left_at
		FROM j WHERE prev_section IS DISTINCT FROM to_section_id)
		SELECT to_section_id, count(*), coalesce(avg(extract(epoch FROM left_at - created_at)), 0)
		FROM stays WHERE left_at IS NOT NULL GROUP BY to_section_id`, boardID).Rows()
	if err != nil {
		return nil, fmt.Errorf("error computing section stats: %w", interpretError(err))
	}
	defer rows.Close()
	out := map[string]SectionStats{}
	for rows.Next() {
		var st SectionStats
		if err := rows.Scan(&st.SectionID, &st.Exits, &st.AvgSeconds); err != nil {
			return nil, interpretError(err)
		}
		out[st.SectionID] = st
	}
	return out, interpretError(rows.Err())
}

// NewEntity is an entity to create.
type NewEntity struct {
	ID        string
	BoardID   string
	Type      string
	Name      string
	Email     *string
	Metadata  json.RawMessage
	SectionID *string
}

// CreateEntity stores an entity (in the board's first section unless one
// is given) and its "created" journey event.
func (s *Store) CreateEntity(ctx context.Context, e NewEntity, journeyID string) (*engine.Entity, error) {
	meta := e.Metadata
	if len(meta) == 0 {
		meta = json.RawMessage("{}")
	}
	err := s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		section := e.SectionID
		if section != nil {
			var n int64
			if err := tx.Model(&sectionRow{}).Where("board_id = ? AND id = ?", e.BoardID, *section).Count(&n).Error; err != nil {
				return err
			}
			if n == 0 {
				return fmt.Errorf("%w: section %q is not on board %s", engine.ErrInvalidRequest, *section, e.BoardID)
			}
		} else {
			var first []string
			if err := tx.Model(&sectionRow{}).Where("board_id = ?", e.BoardID).Order("position").Limit(1).
				Pluck("id", &first).Error; err != nil {
				return err
			}
			if len(first) > 0 {
				section = &first[0]
			}
		}
		// A map, for section_since to be the database's now().
		if err := tx.Model(&entityRow{}).Create(map[string]any{"id": e.ID, "board_id": e.BoardID, "type": e.Type,
			"name": e.Name, "email": e.Email, "metadata": meta, "section_id": section,
			"section_since": gorm.Expr("now()")}).Error; err != nil {
			return err
		}
		// The journey is the engine's (migration 4's trigger counts it).
		return tx.Exec(`INSERT INTO journey_events (id, entity_id, kind, to_section_id) VALUES (?, ?, 'created', ?)`,
			journeyID, e.ID, section).Error
	})
	if err != nil {
		return nil, fmt.Errorf("error creating entity: %w", interpretError(err))
	}
	return s.GetEntity(ctx, e.ID)
}

// GetEntity loads an entity.
func (s *Store) GetEntity(ctx context.Context, id string) (*engine.Entity, error) {
	var r entityRow
	if err := s.db.WithContext(ctx).Take(&r, "id = ?", id).Error; err != nil {
		return nil, fmt.Errorf("error loading entity %s: %w", id, interpretError(err))
	}
	e := r.entity()
	return &e, nil
}

// Journey lists an entity's journey, oldest first.
func (s *Store) Journey(ctx context.Context, entityID string) ([]engine.JourneyEvent, error) {
	rows, err := s.db.WithContext(ctx).Raw(`SELECT id::text, kind, from_section_id, to_section_id, run_id::text, node_key,
		complete_as, entity_seq, created_at, actor, comment, details FROM journey_events WHERE entity_id = ? ORDER BY entity_seq, created_at, id`, entityID).Rows()
	if err != nil {
		return nil, fmt.Errorf("error loading journey of %s: %w", entityID, interpretError(err))
	}
	defer rows.Close()
	out := []engine.JourneyEvent{}
	for rows.Next() {
		var j engine.JourneyEvent
		var from, to, run, node, as, actor, comment sql.NullString
		var details []byte
		if err := rows.Scan(&j.ID, &j.Kind, &from, &to, &run, &node, &as, &j.EntitySeq, &j.CreatedAt, &actor, &comment, &details); err != nil {
			return nil, interpretError(err)
		}
		j.FromSectionID, j.ToSectionID, j.RunID, j.NodeKey, j.CompleteAs = nullStr(from), nullStr(to), nullStr(run), nullStr(node), nullStr(as)
		j.Actor, j.Comment = nullStr(actor), nullStr(comment)
		if details != nil {
			j.Details = details
		}
		j.CreatedAt = j.CreatedAt.UTC()
		out = append(out, j)
	}
	return out, interpretError(rows.Err())
}

// MoveEntityManually moves an entity to a section of its board and records
// a manual_move journey event naming actor (who moved it). The caller notifies board listeners after
// it (a Notifier's "entity:<id>" key), in the same coalesced stream of
// notifications as the runs' changes, so that streams see the two in
// order.
func (s *Store) MoveEntityManually(ctx context.Context, entityID, sectionID, journeyID, actor string) error {
	err := s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		var ok bool
		if err := tx.Raw(`SELECT EXISTS (SELECT 1 FROM entities e JOIN sections s ON s.board_id = e.board_id
			WHERE e.id = ? AND s.id = ?)`, entityID, sectionID).Row().Scan(&ok); err != nil {
			return err
		}
		if !ok {
			if _, err := s.GetEntity(ctx, entityID); err != nil {
				return err
			}
			return fmt.Errorf("%w: section %q is not on the entity's board", engine.ErrInvalidRequest, sectionID)
		}
		q := &sqlQuerier{conn: tx.Statement.ConnPool}
		_, err := (&pgTx{q: q, binds: s.binds}).MoveEntity(ctx, engine.EntityMove{ID: journeyID, EntityID: entityID,
			Kind: engine.JourneyManualMove, ToSection: sectionID, Actor: actor})
		if err != nil {
			return err
		}
		return q.flush(ctx)
	})
	return interpretError(err)
}

// ErrEntityExists means an entity upsert under CreateEntitiesOnly found an
// entity with the same email on the board (and changed nothing).
var ErrEntityExists = errors.New("an entity with this email is already on the board")

type createOnlyKey struct{}

// CreateEntitiesOnly marks ctx so that an entity upsert made with it (an
// unauthenticated hook starting a run) only creates: an entity with the
// same email on the board is left as it is — not renamed, not attached to
// the run — and the upsert fails with ErrEntityExists. A context value
// because the upsert runs inside the engine's run-start transaction.
func CreateEntitiesOnly(ctx context.Context) context.Context {
	return context.WithValue(ctx, createOnlyKey{}, true)
}

func createOnly(ctx context.Context) bool { v, _ := ctx.Value(createOnlyKey{}).(bool); return v }

func (t *pgTx) UpsertEntity(ctx context.Context, id string, e engine.EntityUpsert) (string, error) {
	meta := e.Metadata
	if len(meta) == 0 {
		meta = json.RawMessage("{}")
	}
	var email any
	if e.Email != "" {
		email = e.Email
	}
	// Create only: DO NOTHING returns no row for an existing email, and
	// waits for a concurrent insert of it, so of two requests racing with
	// a new email one creates and the other changes nothing.
	onConflict := `DO UPDATE SET name = EXCLUDED.name, metadata = entities.metadata || EXCLUDED.metadata, updated_at = now()`
	if createOnly(ctx) {
		onConflict = `DO NOTHING`
	}
	var out string
	var inserted bool
	err := t.raw(ctx, `INSERT INTO entities (id, board_id, type, name, email, metadata, section_id, section_since)
		VALUES (?, ?, ?, ?, ?, ?::jsonb, (SELECT id FROM sections WHERE board_id = ? ORDER BY position LIMIT 1), now())
		ON CONFLICT (board_id, lower(email)) WHERE email IS NOT NULL `+onConflict+`
		RETURNING id::text, (xmax = 0)`, id, e.BoardID, e.Type, e.Name, email, string(meta), e.BoardID).Row().Scan(&out, &inserted)
	if errors.Is(err, sql.ErrNoRows) && createOnly(ctx) {
		return "", ErrEntityExists
	}
	if err != nil {
		return "", interpretError(err)
	}
	if inserted {
		t.later(`INSERT INTO journey_events (id, entity_id, kind, to_section_id)
			SELECT gen_random_uuid(), id, 'created', section_id FROM entities WHERE id = ?`, nil, out)
	}
	return out, nil
}

// MoveEntity applies a move under the entity's row lock. A move with a
// Kind is recorded in the entity's journey, whose insert counts it
// (migration 4's trigger: the entity's moves, the event's entity_seq).
// The lock is taken by a statement of its own (sent with the UPDATE, one
// round trip): FOR NO KEY UPDATE waits for a concurrent move and then
// reads the entity as that move left it. An UPDATE joined to a locking
// subquery of the same row deadlocked under concurrent moves: the
// subquery locked the newest version while the UPDATE, reading its
// snapshot's, queued behind another waiter for it. NO KEY UPDATE, not
// UPDATE: a run starting for the entity holds KEY SHARE (the runs row's
// foreign key) before its move, and two such runs upgrading to FOR UPDATE
// deadlocked.
func (t *pgTx) MoveEntity(ctx context.Context, m engine.EntityMove) (engine.EntityMoved, error) {
	var from sql.NullString
	var out engine.EntityMoved
	t.later(`SELECT section_id FROM entities WHERE id = ? FOR NO KEY UPDATE`,
		func(row scanner) error { return row.Scan(&from) }, m.EntityID)
	err := t.raw(ctx, `UPDATE entities e SET
		section_id = coalesce(nullif(?, ''), e.section_id),
		section_since = CASE WHEN ? <> '' AND e.section_id IS DISTINCT FROM ? THEN now() ELSE e.section_since END,
		type = coalesce(nullif(?, ''), e.type),
		current_run_id = coalesce(nullif(?, '')::uuid, e.current_run_id),
		current_node_key = CASE WHEN ? <> '' THEN ? ELSE e.current_node_key END,
		metadata = e.metadata || coalesce(?::jsonb, '{}'),
		updated_at = now()
		WHERE e.id = ? RETURNING e.board_id::text, e.moves`,
		m.ToSection, m.ToSection, m.ToSection, m.SetType, m.RunID, m.NodeKey, m.NodeKey, metaArg(m.Metadata), m.EntityID).
		Row().Scan(&out.BoardID, &out.Seq)
	if err != nil {
		return engine.EntityMoved{}, interpretError(err)
	}
	if m.Kind == "" {
		return out, nil
	}
	to := from
	if m.ToSection != "" {
		to = sql.NullString{String: m.ToSection, Valid: true}
	}
	// This transaction holds the entity's lock: its journey event is the
	// next move. The insert's answer is checked, so a count that differs
	// fails the transaction rather than reach a stream.
	out.Seq++
	want := out.Seq
	t.later(`INSERT INTO journey_events (id, entity_id, kind, from_section_id, to_section_id, run_id,
		node_key, complete_as, actor, comment, details) VALUES (?, ?, ?, ?, ?, nullif(?, '')::uuid, nullif(?, ''), nullif(?, ''), nullif(?, ''),
		nullif(?, ''), ?::jsonb) RETURNING entity_seq`,
		func(row scanner) error {
			var got int64
			if err := row.Scan(&got); err != nil {
				return err
			}
			if got != want {
				return fmt.Errorf("error counting a move of entity %s: the journey counted %d, expected %d", m.EntityID, got, want)
			}
			return nil
		}, m.ID, m.EntityID, m.Kind, from, to, m.RunID, m.NodeKey, m.CompleteAs, m.Actor, m.Comment, metaArg(m.Details))
	return out, nil
}

// metaArg is a move's metadata as a query argument (nil: none).
func metaArg(m json.RawMessage) any {
	if len(m) == 0 {
		return nil
	}
	return string(m)
}

// Trigger is an inbound webhook that starts runs of a flow.
type Trigger struct {
	ID     string
	FlowID string
	Slug   string
	Secret *string
	Entity json.RawMessage
	// InputSchema, when set, is the JSON Schema request bodies must meet.
	InputSchema json.RawMessage
	CreatedAt   time.Time
	// PreviousSecret is the secret a rotation replaced, while it still
	// verifies (nil once PreviousSecretExpiresAt has passed, database time).
	PreviousSecret          *string
	PreviousSecretExpiresAt *time.Time
	// Respond, when set, is how POST /hooks/{slug} answers its caller:
	// {"mode": "wait", "timeout_seconds": 1–60} waits for the run.
	Respond *TriggerRespond
}

// TriggerRespond is a webhook trigger's respond setting: mode "wait"
// makes its hook wait up to TimeoutSeconds for the run (or a Respond
// node) to answer.
type TriggerRespond struct {
	Mode           string `json:"mode"`
	TimeoutSeconds int    `json:"timeout_seconds"`
}

// triggerRow is a triggers row (a webhook trigger). Reads go through
// triggerCols instead: whether the previous secret still verifies is
// decided by the database's clock.
type triggerRow struct {
	ID                      string          `gorm:"primaryKey;type:uuid"`
	FlowID                  string          `gorm:"type:uuid"`
	Slug                    string          ``
	Secret                  *string         ``
	Entity                  json.RawMessage `gorm:"type:jsonb"`
	InputSchema             json.RawMessage `gorm:"type:jsonb"`
	CreatedAt               time.Time       `gorm:"default:now();autoCreateTime:false"`
	PreviousSecret          *string         ``
	PreviousSecretExpiresAt *time.Time      ``
	Respond                 json.RawMessage `gorm:"type:jsonb"`
}

// TableName is the triggers table.
func (triggerRow) TableName() string { return "triggers" }

// jsonOrNull is m, or nil (SQL NULL) when it is empty.
func jsonOrNull(m json.RawMessage) json.RawMessage {
	if len(m) == 0 {
		return nil
	}
	return m
}

// CreateTrigger stores a trigger; a taken slug is ErrConflict.
func (s *Store) CreateTrigger(ctx context.Context, t Trigger) (*Trigger, error) {
	r := triggerRow{ID: t.ID, FlowID: t.FlowID, Slug: t.Slug, Secret: t.Secret, Entity: jsonOrNull(t.Entity),
		InputSchema: jsonOrNull(t.InputSchema)}
	if t.Respond != nil {
		r.Respond, _ = json.Marshal(t.Respond) // plain fields always encode
	}
	if err := s.db.WithContext(ctx).Create(&r).Error; err != nil {
		return nil, fmt.Errorf("error creating trigger %q: %w", t.Slug, interpretError(err))
	}
	t.CreatedAt = r.CreatedAt.UTC()
	return &t, nil
}

// TriggerSettings are the settings of a webhook trigger a PATCH may
// change: each Set* says whether its field is written (a nil or empty
// value then clears it).
type TriggerSettings struct {
	SetEntity      bool
	Entity         json.RawMessage
	SetInputSchema bool
	InputSchema    json.RawMessage
	SetRespond     bool
	Respond        *TriggerRespond
}

// UpdateTriggerSettings writes the settings u sets of webhook trigger id
// in one statement (its slug and secret stay), and returns the trigger as
// saved.
func (s *Store) UpdateTriggerSettings(ctx context.Context, id string, u TriggerSettings) (*Trigger, error) {
	var sets []string
	var args []any
	col := func(name string, v json.RawMessage) {
		sets = append(sets, name+" = ?::jsonb")
		if len(v) == 0 || string(v) == "null" {
			args = append(args, nil)
		} else {
			args = append(args, string(v))
		}
	}
	if u.SetEntity {
		col("entity", u.Entity)
	}
	if u.SetInputSchema {
		col("input_schema", u.InputSchema)
	}
	if u.SetRespond {
		var raw json.RawMessage
		if u.Respond != nil {
			raw, _ = json.Marshal(u.Respond) // plain fields always encode
		}
		col("respond", raw)
	}
	if len(sets) > 0 {
		res := s.db.WithContext(ctx).Exec(`UPDATE triggers SET `+strings.Join(sets, ", ")+` WHERE id = ?`, append(args, id)...)
		if res.Error != nil {
			return nil, fmt.Errorf("error saving trigger %s: %w", id, interpretError(res.Error))
		}
		if res.RowsAffected == 0 {
			return nil, fmt.Errorf("trigger %s: %w", id, engine.ErrNotFound)
		}
	}
	return s.TriggerByID(ctx, id)
}

// TriggerBySlug loads a trigger whose flow is not deleted.
func (s *Store) TriggerBySlug(ctx context.Context, slug string) (*Trigger, error) {
	t, err := scanTrigger(s.db.WithContext(ctx).Raw(`SELECT `+triggerCols+`
		FROM triggers t JOIN flows f ON f.id = t.flow_id WHERE t.slug = ? AND f.deleted_at IS NULL`, slug).Row())
	if err != nil {
		return nil, fmt.Errorf("error loading trigger %q: %w", slug, err)
	}
	return t, nil
}

// triggerCols are the triggers columns scanTrigger reads (alias t).
const triggerCols = `t.id::text, t.flow_id::text, t.slug, t.secret, t.entity, t.input_schema, t.created_at,
	CASE WHEN t.previous_secret_expires_at > now() THEN t.previous_secret END,
	CASE WHEN t.previous_secret_expires_at > now() THEN t.previous_secret_expires_at END, t.respond`

func scanTrigger(row scanner) (*Trigger, error) {
	var t Trigger
	var secret, prev sql.NullString
	var prevUntil sql.NullTime
	var ent []byte
	var schema, respond []byte
	if err := row.Scan(&t.ID, &t.FlowID, &t.Slug, &secret, &ent, &schema, &t.CreatedAt, &prev, &prevUntil, &respond); err != nil {
		return nil, interpretError(err)
	}
	if len(respond) > 0 {
		t.Respond = &TriggerRespond{}
		if err := json.Unmarshal(respond, t.Respond); err != nil {
			return nil, fmt.Errorf("error reading trigger %s's respond: %w", t.ID, err)
		}
	}
	t.InputSchema = schema
	t.Secret, t.Entity, t.CreatedAt = nullStr(secret), ent, t.CreatedAt.UTC()
	t.PreviousSecret = nullStr(prev)
	if prevUntil.Valid {
		u := prevUntil.Time.UTC()
		t.PreviousSecretExpiresAt = &u
	}
	return &t, nil
}

// RotateTriggerSecretParams rotates a webhook trigger's secret.
type RotateTriggerSecretParams struct {
	ID string
	// Secret is the new secret.
	Secret string
	// Grace is how long the replaced secret keeps verifying (0: it stops
	// at once).
	Grace time.Duration
}

// RotateTriggerSecret replaces a webhook trigger's secret; the one it
// replaces keeps verifying for p.Grace (database time). A trigger without
// a secret is ErrConflict: there is nothing to rotate.
func (s *Store) RotateTriggerSecret(ctx context.Context, p RotateTriggerSecretParams) (*Trigger, error) {
	ms := p.Grace.Milliseconds()
	res := s.db.WithContext(ctx).Exec(`UPDATE triggers SET secret = ?,
			previous_secret = CASE WHEN ? > 0 THEN secret END,
			previous_secret_expires_at = CASE WHEN ? > 0 THEN now() + make_interval(secs => ? / 1000.0) END
		WHERE id = ? AND secret IS NOT NULL`, p.Secret, ms, ms, ms, p.ID)
	if err := interpretError(res.Error); err != nil {
		return nil, fmt.Errorf("error rotating the secret of trigger %s: %w", p.ID, err)
	}
	t, err := s.TriggerByID(ctx, p.ID)
	if err != nil {
		return nil, err
	}
	if res.RowsAffected == 0 {
		return nil, fmt.Errorf("trigger %s has no secret to rotate (a public trigger): %w", p.ID, engine.ErrConflict)
	}
	return t, nil
}

// LatestJourney returns an entity's newest journey event (for the
// live board stream after a manual move).
func (s *Store) LatestJourney(ctx context.Context, entityID string) (*engine.JourneyEvent, error) {
	js, err := s.Journey(ctx, entityID)
	if err != nil {
		return nil, err
	}
	if len(js) == 0 {
		return nil, fmt.Errorf("entity %s has no journey: %w", entityID, engine.ErrNotFound)
	}
	return &js[len(js)-1], nil
}

// ListBoards lists the boards of workspace ws ("": DefaultWorkspace) with
// their ordered sections, by name.
func (s *Store) ListBoards(ctx context.Context, ws string) ([]Board, error) {
	out, err := listBoards(s.db.WithContext(ctx).Where("workspace = ?", workspaceOr(ws)))
	if err != nil {
		return nil, fmt.Errorf("error listing boards: %w", err)
	}
	return out, nil
}

// ClaimTrigger creates trigger t, or takes its slug over from a trigger
// whose flow was deleted. A slug in use by a live flow is ErrConflict.
func (s *Store) ClaimTrigger(ctx context.Context, t Trigger) error {
	ent := any(nil)
	if len(t.Entity) > 0 {
		ent = string(t.Entity)
	}
	schema := any(nil)
	if len(t.InputSchema) > 0 {
		schema = string(t.InputSchema)
	}
	res := s.db.WithContext(ctx).Exec(`INSERT INTO triggers (id, flow_id, slug, secret, entity, input_schema)
		VALUES (?, ?, ?, ?, ?::jsonb, ?::jsonb)
		ON CONFLICT (slug) DO UPDATE SET flow_id = EXCLUDED.flow_id, secret = EXCLUDED.secret, entity = EXCLUDED.entity,
			input_schema = EXCLUDED.input_schema, previous_secret = NULL, previous_secret_expires_at = NULL, created_at = now()
		WHERE triggers.flow_id IN (SELECT id FROM flows WHERE deleted_at IS NOT NULL)`, t.ID, t.FlowID, t.Slug, t.Secret, ent, schema)
	if err := interpretError(res.Error); err != nil {
		return fmt.Errorf("error claiming trigger %q: %w", t.Slug, err)
	}
	if res.RowsAffected == 0 {
		return fmt.Errorf("trigger %q: %w: the slug is in use", t.Slug, engine.ErrConflict)
	}
	return nil
}
