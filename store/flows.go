package store

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/stitchd/stitchd/engine"
)

// Flow is a flow with its current version.
type Flow struct {
	ID            string
	Name          string
	BoardID       *string
	Workspace     string
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

// flowRow is a flows row; Version is its current version. Deleted flows
// (deleted_at set) are hidden from every query made through it. Times are
// the database's (now()), not the process's.
type flowRow struct {
	ID               string         `gorm:"primaryKey;type:uuid"`
	Name             string         ``
	BoardID          *string        `gorm:"type:uuid"`
	Workspace        string         `gorm:"default:default"`
	CurrentVersionID string         `gorm:"type:uuid"`
	Version          flowVersionRow `gorm:"foreignKey:CurrentVersionID"`
	CreatedAt        time.Time      `gorm:"default:now();autoCreateTime:false"`
	UpdatedAt        time.Time      `gorm:"default:now();autoUpdateTime:false"`
	DeletedAt        gorm.DeletedAt
}

// TableName is the flows table.
func (flowRow) TableName() string { return "flows" }

func (r *flowRow) flow() Flow {
	return Flow{ID: r.ID, Name: r.Name, BoardID: r.BoardID, Workspace: r.Workspace, VersionID: r.Version.ID, VersionNumber: r.Version.Number,
		Graph: r.Version.VisualGraph, Execution: r.Version.ExecutionGraph, GraphHash: r.Version.GraphHash,
		CreatedAt: r.CreatedAt.UTC(), UpdatedAt: r.UpdatedAt.UTC()}
}

// flowVersionRow is a flow_versions row.
type flowVersionRow struct {
	ID             string          `gorm:"primaryKey;type:uuid"`
	FlowID         string          `gorm:"type:uuid"`
	Number         int             ``
	VisualGraph    json.RawMessage `gorm:"type:jsonb"`
	ExecutionGraph json.RawMessage `gorm:"type:jsonb"`
	GraphHash      string          ``
	Message        string          ``
	CreatedAt      time.Time       `gorm:"default:now();autoCreateTime:false"`
}

// TableName is the flow_versions table.
func (flowVersionRow) TableName() string { return "flow_versions" }

func (r *flowVersionRow) version() FlowVersion {
	return FlowVersion{ID: r.ID, FlowID: r.FlowID, Number: r.Number, Message: r.Message, Graph: r.VisualGraph,
		Execution: r.ExecutionGraph, CreatedAt: r.CreatedAt.UTC()}
}

// versionListCols are the columns a list of versions shows (not the graphs).
const versionListCols = "id, flow_id, number, message, created_at"

// CreateFlow stores a flow of workspace ws ("": DefaultWorkspace) and its
// first version.
func (s *Store) CreateFlow(ctx context.Context, ws, id, name string, boardID *string, v NewVersion) (*Flow, error) {
	err := s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		f := flowRow{ID: id, Name: name, BoardID: boardID, CurrentVersionID: v.ID, Workspace: workspaceOr(ws)}
		if err := tx.Omit(clause.Associations).Create(&f).Error; err != nil {
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
	return tx.Create(&flowVersionRow{ID: v.ID, FlowID: flowID, Number: number, VisualGraph: v.Graph,
		ExecutionGraph: v.Execution, GraphHash: v.Hash, Message: v.Message}).Error
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
		var f flowRow
		var cur flowVersionRow
		if err := tx.Clauses(clause.Locking{Strength: "UPDATE"}).Select("current_version_id").Take(&f, "id = ?", id).Error; err != nil {
			return err
		}
		if err := tx.Select("number", "graph_hash").Take(&cur, "id = ?", f.CurrentVersionID).Error; err != nil {
			return err
		}
		set := map[string]any{"updated_at": gorm.Expr("now()")}
		if p.Version != nil && p.Version.Hash != cur.GraphHash {
			if err := insertVersion(tx, id, cur.Number+1, *p.Version); err != nil {
				return err
			}
			set["current_version_id"] = p.Version.ID
			created = true
		}
		if p.Name != nil {
			set["name"] = *p.Name
		}
		if p.BoardID != nil || p.ClearBoard {
			set["board_id"] = p.BoardID
		}
		if err := tx.Model(&flowRow{}).Where("id = ?", id).Updates(set).Error; err != nil {
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
	var r flowRow
	if err := db.Joins("Version").Take(&r, "flows.id = ?", id).Error; err != nil {
		return nil, interpretError(err)
	}
	f := r.flow()
	return &f, nil
}

// listFlows lists the flows q selects by name, with their current versions.
func listFlows(q *gorm.DB) ([]Flow, error) {
	var rows []flowRow
	if err := q.Joins("Version").Order("flows.name, flows.id").Find(&rows).Error; err != nil {
		return nil, interpretError(err)
	}
	out := make([]Flow, len(rows))
	for i := range rows {
		out[i] = rows[i].flow()
	}
	return out, nil
}

// GetFlow loads a (not deleted) flow with its current version.
func (s *Store) GetFlow(ctx context.Context, id string) (*Flow, error) {
	f, err := getFlow(s.db.WithContext(ctx), id)
	if err != nil {
		return nil, fmt.Errorf("error loading flow %s: %w", id, err)
	}
	return f, nil
}

// ListFlows lists the flows of workspace ws ("": DefaultWorkspace) by
// name.
func (s *Store) ListFlows(ctx context.Context, ws string) ([]Flow, error) {
	out, err := listFlows(s.db.WithContext(ctx).Where("flows.workspace = ?", workspaceOr(ws)))
	if err != nil {
		return nil, fmt.Errorf("error listing flows: %w", err)
	}
	return out, nil
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
		if err := tx.Clauses(clause.Locking{Strength: "UPDATE"}).Select("id").Take(&flowRow{}, "id = ?", id).Error; err != nil {
			return interpretError(err)
		}
		// Counted in SQL: one aggregate over the flow's runs.
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
		// Soft deletion by hand: gorm's Delete would stamp the process's clock.
		return interpretError(tx.Model(&flowRow{}).Where("id = ?", id).Update("deleted_at", gorm.Expr("now()")).Error)
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
	var rows []flowVersionRow
	if err := s.db.WithContext(ctx).Select(versionListCols).Where("flow_id = ?", flowID).Order("number DESC").
		Find(&rows).Error; err != nil {
		return nil, fmt.Errorf("error listing versions of flow %s: %w", flowID, interpretError(err))
	}
	return versions(rows), nil
}

func versions(rows []flowVersionRow) []FlowVersion {
	out := make([]FlowVersion, len(rows))
	for i := range rows {
		out[i] = rows[i].version()
	}
	return out
}

// GetVersion loads version number of a flow.
func (s *Store) GetVersion(ctx context.Context, flowID string, number int) (*FlowVersion, error) {
	// Numbers are int4: a larger one is no version (not an out-of-range 500).
	if number < 1 || number > math.MaxInt32 {
		return nil, fmt.Errorf("error loading version %d of flow %s: %w", number, flowID, engine.ErrNotFound)
	}
	db := s.db.WithContext(ctx)
	var r flowVersionRow
	err := db.Where("flow_id = ? AND number = ?", flowID, number).
		Where("flow_id IN (?)", db.Model(&flowRow{}).Select("id")). // not of a deleted flow
		Take(&r).Error
	if err != nil {
		return nil, fmt.Errorf("error loading version %d of flow %s: %w", number, flowID, interpretError(err))
	}
	v := r.version()
	return &v, nil
}

// ExecutionGraph implements engine.Store: the engine's path, left in SQL.
func (s *Store) ExecutionGraph(ctx context.Context, versionID string) (*engine.ExecutionGraph, error) {
	var raw []byte
	var ws, flowID string
	err := s.db.WithContext(ctx).Raw(`SELECT v.execution_graph, f.workspace, f.id::text FROM flow_versions v JOIN flows f ON f.id = v.flow_id
		WHERE v.id = ?`, versionID).Row().Scan(&raw, &ws, &flowID)
	if err != nil {
		return nil, interpretError(err)
	}
	var g engine.ExecutionGraph
	if err := json.Unmarshal(raw, &g); err != nil {
		return nil, fmt.Errorf("error decoding execution graph %s: %w", versionID, err)
	}
	g.Workspace, g.FlowID = ws, flowID
	return &g, nil
}

// ResolveSubFlow finds the flow a SubFlow node names — ref is a flow's id,
// else its name — at version number (0: its current version). A name
// several flows share is ambiguous (engine.ErrConflict); deleted flows are
// not found.
func (s *Store) ResolveSubFlow(ctx context.Context, ref string, version int) (engine.SubFlowTarget, error) {
	return s.resolveSubFlow(ctx, DefaultWorkspace, ref, version)
}

// WorkspaceFlows resolves SubFlow nodes among one workspace's flows: a
// sub-flow never crosses workspaces (compiler.SubFlowResolver).
type WorkspaceFlows struct {
	s  *Store
	ws string
}

// FlowsIn is workspace ws's flows, to resolve sub-flows in.
func (s *Store) FlowsIn(ws string) WorkspaceFlows { return WorkspaceFlows{s: s, ws: workspaceOr(ws)} }

// ResolveSubFlow is Store.ResolveSubFlow within the workspace: another
// workspace's flow is not found.
func (w WorkspaceFlows) ResolveSubFlow(ctx context.Context, ref string, version int) (engine.SubFlowTarget, error) {
	return w.s.resolveSubFlow(ctx, w.ws, ref, version)
}

// ExecutionGraph is Store.ExecutionGraph (a version pinned within the
// workspace, found by id).
func (w WorkspaceFlows) ExecutionGraph(ctx context.Context, versionID string) (*engine.ExecutionGraph, error) {
	return w.s.ExecutionGraph(ctx, versionID)
}

func (s *Store) resolveSubFlow(ctx context.Context, ws, ref string, version int) (engine.SubFlowTarget, error) {
	var t engine.SubFlowTarget
	if version < 0 || version > math.MaxInt32 {
		return t, fmt.Errorf("version %d of flow %q: %w", version, ref, engine.ErrNotFound)
	}
	rows, err := s.db.WithContext(ctx).Raw(`SELECT f.id::text, f.name, v.id::text, v.number FROM flows f
		JOIN flow_versions v ON v.flow_id = f.id AND (CASE WHEN ? = 0 THEN v.id = f.current_version_id ELSE v.number = ? END)
		WHERE f.deleted_at IS NULL AND f.workspace = ? AND (f.id::text = ? OR f.name = ?)
		ORDER BY f.id::text = ? DESC LIMIT 2`, version, version, ws, ref, ref, ref).Rows()
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
