package store

import (
	"context"
	"database/sql"
	"encoding/base64"
	"fmt"
	"gorm.io/gorm"
	"math"
	"strings"
	"time"

	"github.com/stitchd/stitchd/engine"
)

// Page sizes of the paginated lists (?limit=): the default and the most.
const (
	DefaultPageSize = 100
	MaxPageSize     = 500
)

// pageLimit is limit within 1..MaxPageSize, DefaultPageSize for 0.
func pageLimit(limit int) int {
	if limit <= 0 {
		return DefaultPageSize
	}
	return min(limit, MaxPageSize)
}

// encodePageCursor makes an opaque cursor of a row's sort key: a time (the
// zero time for none) and one or more texts.
func encodePageCursor(t time.Time, keys ...string) string {
	return base64.RawURLEncoding.EncodeToString([]byte(strings.Join(append([]string{t.UTC().Format(time.RFC3339Nano)}, keys...), "\x1f")))
}

// decodePageCursor reads a cursor of n texts after its time. A cursor the
// server did not give out is engine.ErrInvalidRequest, without the
// database's words: it is checked before any query.
func decodePageCursor(c string, n int, uuids ...int) (time.Time, []string, error) {
	bad := fmt.Errorf("%w: invalid cursor (send back a next_cursor as it was given)", engine.ErrInvalidRequest)
	b, err := base64.RawURLEncoding.DecodeString(c)
	if err != nil {
		return time.Time{}, nil, bad
	}
	parts := strings.Split(string(b), "\x1f")
	if len(parts) != n+1 {
		return time.Time{}, nil, bad
	}
	t, err := time.Parse(time.RFC3339Nano, parts[0])
	if err != nil {
		return time.Time{}, nil, bad
	}
	for _, i := range uuids {
		if !isUUID(parts[1+i]) {
			return time.Time{}, nil, bad
		}
	}
	for _, p := range parts[1:] {
		if len(p) > 1000 || strings.ContainsRune(p, 0) {
			return time.Time{}, nil, bad
		}
	}
	return t, parts[1:], nil
}

// PageParams asks for one page of a list.
type PageParams struct {
	// Limit is the page size (default DefaultPageSize, at most
	// MaxPageSize).
	Limit int
	// Cursor is a next cursor given out with the previous page ("" = the
	// first page).
	Cursor string
	// Workspace is the workspace whose objects a list of flows, boards,
	// secrets or approvals shows ("": DefaultWorkspace).
	Workspace string
}

// workspaceOr is ws, or DefaultWorkspace for "".
func workspaceOr(ws string) string {
	if ws == "" {
		return DefaultWorkspace
	}
	return ws
}

// ApprovalsPage lists nodes waiting for a person, oldest first, one page
// at a time; next is "" on the last page.
func (s *Store) ApprovalsPage(ctx context.Context, p PageParams) (out []Approval, next string, err error) {
	return s.ApprovalsPageFor(ctx, p, ApprovalFilter{})
}

// ApprovalsPageFor is ApprovalsPage narrowed to a caller's approvals.
func (s *Store) ApprovalsPageFor(ctx context.Context, p PageParams, f ApprovalFilter) (out []Approval, next string, err error) {
	limit := pageLimit(p.Limit)
	where, args, err := f.where()
	if err != nil {
		return nil, "", err
	}
	if p.Cursor != "" {
		t, keys, err := decodePageCursor(p.Cursor, 2, 0)
		if err != nil {
			return nil, "", err
		}
		where += ` AND (ns.updated_at, ns.run_id, ns.key) > (?, ?::uuid, ?)`
		args = append(args, t, keys[0], keys[1])
	}
	out, err = s.approvals(ctx, where, append(args, limit+1))
	if err != nil {
		return nil, "", err
	}
	if len(out) > limit {
		out = out[:limit]
		last := out[limit-1]
		next = encodePageCursor(last.WaitingSince, last.RunID, last.Key)
	}
	return out, next, nil
}

// ListFlowsPage lists flows by name, one page at a time.
func (s *Store) ListFlowsPage(ctx context.Context, p PageParams) (out []Flow, next string, err error) {
	return namedPage(s.db.WithContext(ctx), p, "flows", listFlows, func(f Flow) (string, string) { return f.Name, f.ID })
}

// namedPage is a page of a workspace's objects of table listed by (name,
// id), list reading them: the flows' or the boards'.
func namedPage[T any](q *gorm.DB, p PageParams, table string, list func(*gorm.DB) ([]T, error), key func(T) (string, string)) ([]T, string, error) {
	limit := pageLimit(p.Limit)
	q = q.Where(table+".workspace = ?", workspaceOr(p.Workspace))
	if p.Cursor != "" {
		_, keys, err := decodePageCursor(p.Cursor, 2, 1)
		if err != nil {
			return nil, "", err
		}
		q = q.Where("("+table+".name, "+table+".id) > (?, ?::uuid)", keys[0], keys[1])
	}
	out, err := list(q.Limit(limit + 1))
	if err != nil {
		return nil, "", fmt.Errorf("error listing %s: %w", table, err)
	}
	next := ""
	if len(out) > limit {
		out = out[:limit]
		name, id := key(out[limit-1])
		next = encodePageCursor(time.Time{}, name, id)
	}
	return out, next, nil
}

// ListVersionsPage lists a flow's versions newest first, one page at a time.
func (s *Store) ListVersionsPage(ctx context.Context, flowID string, p PageParams) (out []FlowVersion, next string, err error) {
	limit := pageLimit(p.Limit)
	below := int64(math.MaxInt32) + 1
	if p.Cursor != "" {
		_, keys, err := decodePageCursor(p.Cursor, 1)
		if err != nil {
			return nil, "", err
		}
		if _, err := fmt.Sscan(keys[0], &below); err != nil {
			return nil, "", fmt.Errorf("%w: invalid cursor (send back a next_cursor as it was given)", engine.ErrInvalidRequest)
		}
	}
	if _, err := s.GetFlow(ctx, flowID); err != nil {
		return nil, "", err
	}
	var rows []flowVersionRow
	if err := s.db.WithContext(ctx).Select(versionListCols).Where("flow_id = ? AND number < ?::bigint", flowID, below).
		Order("number DESC").Limit(limit + 1).Find(&rows).Error; err != nil {
		return nil, "", fmt.Errorf("error listing versions of flow %s: %w", flowID, interpretError(err))
	}
	out = versions(rows)
	if len(out) > limit {
		out = out[:limit]
		next = encodePageCursor(time.Time{}, fmt.Sprint(out[limit-1].Number))
	}
	return out, next, nil
}

// ListBoardsPage lists boards by name with their sections, one page at a
// time.
func (s *Store) ListBoardsPage(ctx context.Context, p PageParams) (out []Board, next string, err error) {
	return namedPage(s.db.WithContext(ctx), p, "boards", listBoards, func(b Board) (string, string) { return b.Name, b.ID })
}

// SectionPage is one page of a board section's entities.
type SectionPage struct {
	Entities []engine.Entity
	// Next is the cursor of the section's next page ("" on the last).
	Next string
	// Count is how many entities the section holds (every page).
	Count int
	// AvgCurrentSeconds is the average time the section's entities have
	// spent in it so far (every page).
	AvgCurrentSeconds float64
}

// BoardEntitiesParams asks for a page of entities of each section of a
// board, oldest in section first.
type BoardEntitiesParams struct {
	BoardID string
	// SectionID, if set, limits the answer to that section (and Cursor
	// is that section's).
	SectionID string
	// Query, if set, keeps only the entities whose name or email contains
	// it (case-insensitive); counts and averages are then of those.
	Query string
	PageParams
}

// noSince stands for an entity's unknown section_since in sort keys.
var noSince = time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC)

// BoardEntitiesPage returns, by section id, a page of each section's
// entities (oldest in section first) with the section's count and average
// time in section.
func (s *Store) BoardEntitiesPage(ctx context.Context, p BoardEntitiesParams) (map[string]*SectionPage, error) {
	limit := pageLimit(p.Limit)
	cond, args := "", []any{}
	if p.Cursor != "" {
		if p.SectionID == "" {
			return nil, fmt.Errorf("%w: a cursor is a section's: send section_id with it", engine.ErrInvalidRequest)
		}
		t, keys, err := decodePageCursor(p.Cursor, 2, 0)
		if err != nil {
			return nil, err
		}
		// A cursor carries its section: another section's would page that
		// one's entities by this one's place, a wrong page said as right.
		if keys[1] != p.SectionID {
			return nil, fmt.Errorf("%w: this cursor is section %q's, not %q's: send it with its own section_id", engine.ErrInvalidRequest, keys[1], p.SectionID)
		}
		cond = ` AND (coalesce(e.section_since, ?::timestamptz), e.id) > (?, ?::uuid)`
		args = append(args, noSince, t, keys[0])
	}
	secCond, secArgs := "", []any{}
	if p.SectionID != "" {
		secCond, secArgs = ` AND s.id = ?`, []any{p.SectionID}
	}
	qCond, qArgs := "", []any{}
	if p.Query != "" {
		like := "%" + likeEscaper.Replace(p.Query) + "%"
		qCond, qArgs = ` AND (e.name ILIKE ? OR e.email ILIKE ?)`, []any{like, like}
		cond += qCond
		args = append(args, qArgs...)
	}
	out := map[string]*SectionPage{}
	q := `SELECT s.id, ` + prefixCols("e.", entityCols) + ` FROM sections s CROSS JOIN LATERAL (
			SELECT * FROM entities e WHERE e.board_id = s.board_id AND e.section_id = s.id` + cond + `
			ORDER BY coalesce(e.section_since, ?::timestamptz), e.id LIMIT ?) e
		WHERE s.board_id = ?` + secCond + ` ORDER BY s.position, coalesce(e.section_since, ?::timestamptz), e.id`
	all := append(append(append(args, noSince, limit+1, p.BoardID), secArgs...), noSince)
	rows, err := s.db.WithContext(ctx).Raw(q, all...).Rows()
	if err != nil {
		return nil, fmt.Errorf("error listing entities of board %s: %w", p.BoardID, interpretError(err))
	}
	defer rows.Close()
	for rows.Next() {
		var sec string
		e, err := scanEntity(prefixScanner{rows, &sec})
		if err != nil {
			return nil, err
		}
		pg := out[sec]
		if pg == nil {
			pg = &SectionPage{}
			out[sec] = pg
		}
		pg.Entities = append(pg.Entities, *e)
	}
	if err := rows.Err(); err != nil {
		return nil, interpretError(err)
	}
	for sec, pg := range out {
		if len(pg.Entities) > limit {
			pg.Entities = pg.Entities[:limit]
			last := pg.Entities[limit-1]
			since := noSince
			if last.SectionSince != nil {
				since = *last.SectionSince
			}
			pg.Next = encodePageCursor(since, last.ID, sec)
		}
	}
	// Counts and time in section over every entity, not the page's.
	crows, err := s.db.WithContext(ctx).Raw(`SELECT section_id, count(*),
			coalesce(avg(extract(epoch FROM now() - section_since)), 0)
		FROM entities e WHERE board_id = ? AND section_id IS NOT NULL`+qCond+` GROUP BY section_id`,
		append([]any{p.BoardID}, qArgs...)...).Rows()
	if err != nil {
		return nil, fmt.Errorf("error counting entities of board %s: %w", p.BoardID, interpretError(err))
	}
	defer crows.Close()
	for crows.Next() {
		var sec string
		var n int
		var avg float64
		if err := crows.Scan(&sec, &n, &avg); err != nil {
			return nil, interpretError(err)
		}
		if pg := out[sec]; pg != nil {
			pg.Count, pg.AvgCurrentSeconds = n, avg
		}
	}
	return out, interpretError(crows.Err())
}

// likeEscaper makes a search's text literal in an ILIKE pattern.
var likeEscaper = strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`)

// prefixCols qualifies each of a column list's columns with prefix.
func prefixCols(prefix, cols string) string {
	parts := strings.Split(cols, ",")
	for i, c := range parts {
		parts[i] = prefix + strings.TrimSpace(c)
	}
	return strings.Join(parts, ", ")
}

// prefixScanner scans a leading column into first, then the rest.
type prefixScanner struct {
	rows  *sql.Rows
	first *string
}

func (p prefixScanner) Scan(dest ...any) error {
	return p.rows.Scan(append([]any{p.first}, dest...)...)
}

// JourneyPage lists an entity's journey oldest first, one page at a time.
func (s *Store) JourneyPage(ctx context.Context, entityID string, p PageParams) (out []engine.JourneyEvent, next string, err error) {
	limit := pageLimit(p.Limit)
	where, args := "", []any{entityID}
	if p.Cursor != "" {
		t, keys, err := decodePageCursor(p.Cursor, 2, 1)
		if err != nil {
			return nil, "", err
		}
		var seq int64
		if _, err := fmt.Sscan(keys[0], &seq); err != nil {
			return nil, "", fmt.Errorf("%w: invalid cursor (send back a next_cursor as it was given)", engine.ErrInvalidRequest)
		}
		where = ` AND (entity_seq, created_at, id) > (?, ?, ?::uuid)`
		args = append(args, seq, t, keys[1])
	}
	rows, err := s.db.WithContext(ctx).Raw(`SELECT id::text, kind, from_section_id, to_section_id, run_id::text, node_key,
		complete_as, entity_seq, created_at, actor, comment, details FROM journey_events WHERE entity_id = ?`+where+`
		ORDER BY entity_seq, created_at, id LIMIT ?`, append(args, limit+1)...).Rows()
	if err != nil {
		return nil, "", fmt.Errorf("error loading journey of %s: %w", entityID, interpretError(err))
	}
	defer rows.Close()
	out = []engine.JourneyEvent{}
	for rows.Next() {
		var j engine.JourneyEvent
		var from, to, run, node, as, actor, comment sql.NullString
		var details []byte
		if err := rows.Scan(&j.ID, &j.Kind, &from, &to, &run, &node, &as, &j.EntitySeq, &j.CreatedAt, &actor, &comment, &details); err != nil {
			return nil, "", interpretError(err)
		}
		j.FromSectionID, j.ToSectionID, j.RunID, j.NodeKey, j.CompleteAs = nullStr(from), nullStr(to), nullStr(run), nullStr(node), nullStr(as)
		j.Actor, j.Comment = nullStr(actor), nullStr(comment)
		if details != nil {
			j.Details = details
		}
		j.CreatedAt = j.CreatedAt.UTC()
		out = append(out, j)
	}
	if err := rows.Err(); err != nil {
		return nil, "", interpretError(err)
	}
	if len(out) > limit {
		out = out[:limit]
		last := out[limit-1]
		next = encodePageCursor(last.CreatedAt, fmt.Sprint(last.EntitySeq), last.ID)
	}
	return out, next, nil
}

// TriggerWindow is a page of a flow's triggers of one kind: those after
// (AfterAt, AfterID) in (created_at, id) order, at most Limit (0: all).
type TriggerWindow struct {
	AfterAt time.Time
	AfterID string
	Limit   int
}

// sql is the window's condition and limit over a table with created_at
// and id, for a gorm chain.
func (w TriggerWindow) apply(db *gorm.DB) *gorm.DB {
	if w.AfterID != "" {
		db = db.Where("(created_at, id) > (?, ?::uuid)", w.AfterAt, w.AfterID)
	}
	if w.Limit > 0 {
		db = db.Limit(w.Limit)
	}
	return db
}

// EncodeTimeIDCursor is the cursor after a row keyed (created_at, id).
func EncodeTimeIDCursor(at time.Time, id string) string { return encodePageCursor(at, id) }

// DecodeTimeIDCursor reads a cursor EncodeTimeIDCursor made (any other is
// engine.ErrInvalidRequest).
func DecodeTimeIDCursor(c string) (time.Time, string, error) {
	at, keys, err := decodePageCursor(c, 1, 0)
	if err != nil {
		return time.Time{}, "", err
	}
	return at, keys[0], nil
}
