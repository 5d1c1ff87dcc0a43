package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"math"
	"time"

	"gorm.io/gorm"

	"github.com/stitchd/stitchd/engine"
)

// Flow is a flow with its current version.
type Flow struct {
	ID            string
	Name          string
	BoardID       *string
	VersionID     string
	VersionNumber int
	Graph         json.RawMessage // visual graph of the current version
	Execution     json.RawMessage // execution graph of the current version
	GraphHash     string
	CreatedAt     time.Time
	UpdatedAt     time.Time
}

// FlowVersion is one immutable version of a flow.
type FlowVersion struct {
	ID        string
	FlowID    string
	Number    int
	Message   string
	Graph     json.RawMessage
	Execution json.RawMessage
	CreatedAt time.Time
}

// NewVersion is a compiled graph to store as a version.
type NewVersion struct {
	ID        string
	Graph     json.RawMessage
	Execution json.RawMessage
	// Hash identifies the canonical visual graph; an update whose hash
	// equals the current version's creates no version.
	Hash    string
	Message string
}

// CreateFlow stores a flow and its first version.
func (s *Store) CreateFlow(ctx context.Context, id, name string, boardID *string, v NewVersion) (*Flow, error) {
	err := s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		if err := tx.Exec(`INSERT INTO flows (id, name, board_id, current_version_id) VALUES (?, ?, ?, ?)`,
			id, name, boardID, v.ID).Error; err != nil {
			return err
		}
		return insertVersion(tx, id, 1, v)
	})
	if err != nil {
		return nil, fmt.Errorf("error creating flow: %w", interpretError(err))
	}
	return s.GetFlow(ctx, id)
}

func insertVersion(tx *gorm.DB, flowID string, number int, v NewVersion) error {
	return tx.Exec(`INSERT INTO flow_versions (id, flow_id, number, visual_graph, execution_graph, graph_hash, message)
		VALUES (?, ?, ?, ?::jsonb, ?::jsonb, ?, ?)`, v.ID, flowID, number, string(v.Graph), string(v.Execution), v.Hash, v.Message).Error
}

// UpdateFlowParams changes a flow; nil fields are left alone.
type UpdateFlowParams struct {
	Name    *string
	BoardID *string
	// ClearBoard unsets the board.
	ClearBoard bool
	Version    *NewVersion
}

// UpdateFlow applies p under the flow's row lock. A version is added only
// when p.Version's hash differs from the current version's.
func (s *Store) UpdateFlow(ctx context.Context, id string, p UpdateFlowParams) (*Flow, bool, error) {
	created := false
	var out *Flow
	err := s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		// Lock the flow row alone, then read its current version: a join
		// locked FOR UPDATE would be re-checked against the version row a
		// concurrent save replaced, and match nothing.
		var number int
		var hash, current string
		if err := tx.Raw(`SELECT current_version_id::text FROM flows WHERE id = ? AND deleted_at IS NULL FOR UPDATE`, id).
			Row().Scan(&current); err != nil {
			return err
		}
		if err := tx.Raw(`SELECT number, graph_hash FROM flow_versions WHERE id = ?`, current).Row().Scan(&number, &hash); err != nil {
			return err
		}
		if p.Version != nil && p.Version.Hash != hash {
			if err := insertVersion(tx, id, number+1, *p.Version); err != nil {
				return err
			}
			if err := tx.Exec(`UPDATE flows SET current_version_id = ? WHERE id = ?`, p.Version.ID, id).Error; err != nil {
				return err
			}
			created = true
		}
		if p.Name != nil {
			if err := tx.Exec(`UPDATE flows SET name = ? WHERE id = ?`, *p.Name, id).Error; err != nil {
				return err
			}
		}
		if p.BoardID != nil || p.ClearBoard {
			if err := tx.Exec(`UPDATE flows SET board_id = ? WHERE id = ?`, p.BoardID, id).Error; err != nil {
				return err
			}
		}
		if err := tx.Exec(`UPDATE flows SET updated_at = now() WHERE id = ?`, id).Error; err != nil {
			return err
		}
		// The flow as this transaction left it (a concurrent save may
		// commit right after).
		var err error
		out, err = getFlow(tx, id)
		return err
	})
	if err != nil {
		return nil, false, fmt.Errorf("error updating flow %s: %w", id, interpretError(err))
	}
	return out, created, nil
}

func getFlow(db *gorm.DB, id string) (*Flow, error) {
	return scanFlow(db.Raw(`SELECT `+flowCols+` FROM flows f
		JOIN flow_versions v ON v.id = f.current_version_id WHERE f.id = ? AND f.deleted_at IS NULL`, id).Row())
}

const flowCols = `f.id::text, f.name, f.board_id::text, v.id::text, v.number, v.visual_graph, v.execution_graph, v.graph_hash, f.created_at, f.updated_at`

func scanFlow(row scanner) (*Flow, error) {
	var f Flow
	var board sql.NullString
	var g, e []byte
	if err := row.Scan(&f.ID, &f.Name, &board, &f.VersionID, &f.VersionNumber, &g, &e, &f.GraphHash, &f.CreatedAt, &f.UpdatedAt); err != nil {
		return nil, interpretError(err)
	}
	f.BoardID = nullStr(board)
	f.Graph, f.Execution = g, e
	f.CreatedAt, f.UpdatedAt = f.CreatedAt.UTC(), f.UpdatedAt.UTC()
	return &f, nil
}

// GetFlow loads a (not deleted) flow with its current version.
func (s *Store) GetFlow(ctx context.Context, id string) (*Flow, error) {
	f, err := getFlow(s.db.WithContext(ctx), id)
	if err != nil {
		return nil, fmt.Errorf("error loading flow %s: %w", id, err)
	}
	return f, nil
}

// ListFlows lists flows by name.
func (s *Store) ListFlows(ctx context.Context) ([]Flow, error) {
	rows, err := s.db.WithContext(ctx).Raw(`SELECT ` + flowCols + ` FROM flows f
		JOIN flow_versions v ON v.id = f.current_version_id WHERE f.deleted_at IS NULL ORDER BY f.name, f.id`).Rows()
	if err != nil {
		return nil, fmt.Errorf("error listing flows: %w", interpretError(err))
	}
	defer rows.Close()
	out := []Flow{}
	for rows.Next() {
		f, err := scanFlow(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, *f)
	}
	return out, interpretError(rows.Err())
}

// FlowBusyError refuses to delete a flow while runs of it are still going
// (running, paused or queued): deleting it would strand them.
type FlowBusyError struct {
	FlowID                  string
	Running, Paused, Queued int
}

func (e *FlowBusyError) Error() string {
	return fmt.Sprintf("flow %s has %d runs going (%d running, %d paused, %d queued); cancel them, or delete with cancel_runs=true",
		e.FlowID, e.Running+e.Paused+e.Queued, e.Running, e.Paused, e.Queued)
}

// Unwrap makes a busy flow a conflict for callers that know no better.
func (e *FlowBusyError) Unwrap() error { return engine.ErrConflict }

// DeleteFlow hides a flow; its versions and runs stay for history. It
// refuses (*FlowBusyError) while a run of the flow is running, paused or
// queued. Its triggers stop with it: every trigger's lookup skips deleted
// flows.
func (s *Store) DeleteFlow(ctx context.Context, id string) error {
	err := s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		// The row lock waits for starts whose run insert already checked
		// the flow (the foreign key's share lock), so their runs are
		// counted below.
		var found string
		if err := tx.Raw(`SELECT id::text FROM flows WHERE id = ? AND deleted_at IS NULL FOR UPDATE`, id).Row().Scan(&found); err != nil {
			return interpretError(err)
		}
		busy := FlowBusyError{FlowID: id}
		if err := tx.Raw(`SELECT count(*) FILTER (WHERE status = 'running'), count(*) FILTER (WHERE status = 'paused'),
			count(*) FILTER (WHERE status = 'queued')
			FROM runs WHERE flow_id = ? AND status IN ('running', 'paused', 'queued')`, id).Row().
			Scan(&busy.Running, &busy.Paused, &busy.Queued); err != nil {
			return interpretError(err)
		}
		if busy.Running+busy.Paused+busy.Queued > 0 {
			return &busy
		}
		return interpretError(tx.Exec(`UPDATE flows SET deleted_at = now() WHERE id = ?`, id).Error)
	})
	if err != nil {
		// Interpreted again: a BEGIN or COMMIT that found no database is
		// 503, not 500.
		return fmt.Errorf("error deleting flow %s: %w", id, interpretError(err))
	}
	return nil
}

// GoingFlowRuns lists up to limit ids of a flow's runs still going,
// queued ones first: cancelling those begins nothing, where cancelling a
// running run would begin its entity's next queued one.
func (s *Store) GoingFlowRuns(ctx context.Context, flowID string, limit int) ([]string, error) {
	var ids []string
	err := s.db.WithContext(ctx).Raw(`SELECT id::text FROM runs WHERE flow_id = ? AND status IN ('queued', 'paused', 'running')
		ORDER BY status = 'queued' DESC, created_at, id LIMIT ?`, flowID, limit).Scan(&ids).Error
	if err != nil {
		return nil, fmt.Errorf("error listing the runs going of flow %s: %w", flowID, interpretError(err))
	}
	return ids, nil
}

// ListVersions lists a flow's versions, newest first.
func (s *Store) ListVersions(ctx context.Context, flowID string) ([]FlowVersion, error) {
	if _, err := s.GetFlow(ctx, flowID); err != nil {
		return nil, err
	}
	rows, err := s.db.WithContext(ctx).Raw(`SELECT id::text, flow_id::text, number, message, created_at FROM flow_versions
		WHERE flow_id = ? ORDER BY number DESC`, flowID).Rows()
	if err != nil {
		return nil, fmt.Errorf("error listing versions of flow %s: %w", flowID, interpretError(err))
	}
	defer rows.Close()
	out := []FlowVersion{}
	for rows.Next() {
		var v FlowVersion
		if err := rows.Scan(&v.ID, &v.FlowID, &v.Number, &v.Message, &v.CreatedAt); err != nil {
			return nil, interpretError(err)
		}
		v.CreatedAt = v.CreatedAt.UTC()
		out = append(out, v)
	}
	return out, interpretError(rows.Err())
}

// GetVersion loads version number of a flow.
func (s *Store) GetVersion(ctx context.Context, flowID string, number int) (*FlowVersion, error) {
	// Numbers are int4: a larger one is no version (not an out-of-range 500).
	if number < 1 || number > math.MaxInt32 {
		return nil, fmt.Errorf("error loading version %d of flow %s: %w", number, flowID, engine.ErrNotFound)
	}
	var v FlowVersion
	var g, e []byte
	err := s.db.WithContext(ctx).Raw(`SELECT v.id::text, v.flow_id::text, v.number, v.message, v.visual_graph, v.execution_graph, v.created_at
		FROM flow_versions v JOIN flows f ON f.id = v.flow_id
		WHERE v.flow_id = ? AND v.number = ? AND f.deleted_at IS NULL`, flowID, number).Row().
		Scan(&v.ID, &v.FlowID, &v.Number, &v.Message, &g, &e, &v.CreatedAt)
	if err != nil {
		return nil, fmt.Errorf("error loading version %d of flow %s: %w", number, flowID, interpretError(err))
	}
	v.Graph, v.Execution, v.CreatedAt = g, e, v.CreatedAt.UTC()
	return &v, nil
}

// ExecutionGraph implements engine.Store.
func (s *Store) ExecutionGraph(ctx context.Context, versionID string) (*engine.ExecutionGraph, error) {
	var raw []byte
	err := s.db.WithContext(ctx).Raw(`SELECT execution_graph FROM flow_versions WHERE id = ?`, versionID).Row().Scan(&raw)
	if err != nil {
		return nil, interpretError(err)
	}
	var g engine.ExecutionGraph
	if err := json.Unmarshal(raw, &g); err != nil {
		return nil, fmt.Errorf("error decoding execution graph %s: %w", versionID, err)
	}
	return &g, nil
}

// ResolveSubFlow finds the flow a SubFlow node names — ref is a flow's id,
// else its name — at version number (0: its current version). A name
// several flows share is ambiguous (engine.ErrConflict); deleted flows are
// not found.
func (s *Store) ResolveSubFlow(ctx context.Context, ref string, version int) (engine.SubFlowTarget, error) {
	var t engine.SubFlowTarget
	if version < 0 || version > math.MaxInt32 {
		return t, fmt.Errorf("version %d of flow %q: %w", version, ref, engine.ErrNotFound)
	}
	rows, err := s.db.WithContext(ctx).Raw(`SELECT f.id::text, f.name, v.id::text, v.number FROM flows f
		JOIN flow_versions v ON v.flow_id = f.id AND (CASE WHEN ? = 0 THEN v.id = f.current_version_id ELSE v.number = ? END)
		WHERE f.deleted_at IS NULL AND (f.id::text = ? OR f.name = ?)
		ORDER BY f.id::text = ? DESC LIMIT 2`, version, version, ref, ref, ref).Rows()
	if err != nil {
		return t, fmt.Errorf("error resolving flow %q: %w", ref, interpretError(err))
	}
	defer rows.Close()
	var found []engine.SubFlowTarget
	for rows.Next() {
		var f engine.SubFlowTarget
		if err := rows.Scan(&f.FlowID, &f.FlowName, &f.VersionID, &f.Version); err != nil {
			return t, interpretError(err)
		}
		found = append(found, f)
	}
	if err := rows.Err(); err != nil {
		return t, interpretError(err)
	}
	switch {
	case len(found) == 0:
		return t, fmt.Errorf("flow %q (version %d): %w", ref, version, engine.ErrNotFound)
	case len(found) == 2 && found[0].FlowID != ref:
		return t, fmt.Errorf("%w: several flows are named %q; name the flow by its id", engine.ErrConflict, ref)
	}
	return found[0], nil
}
