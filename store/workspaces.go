package store

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/stitchd/stitchd/engine"
)

// DefaultWorkspace is the workspace a request without the
// Stitchd-Workspace header acts in, and the one the migration put
// everything that existed into (docs/workspaces.md).
const DefaultWorkspace = "default"

// workspaceSlug is a workspace's slug: what the migration's CHECK allows.
var workspaceSlug = regexp.MustCompile(`^[a-z][a-z0-9-]{0,39}$`)

// WorkspaceSlugRule says which slugs a workspace may have.
const WorkspaceSlugRule = "a workspace slug is 1 to 40 lower-case letters, digits and -, starting with a letter"

// ValidWorkspaceSlug reports whether s may be a workspace's slug.
func ValidWorkspaceSlug(s string) bool { return workspaceSlug.MatchString(s) }

// Workspace is a team's part of the server: its own flows, runs, boards,
// secrets, credentials, queues and people's roles.
type Workspace struct {
	Slug string `json:"slug" gorm:"primaryKey"`
	Name string `json:"name"`
	// MaxRunningRuns bounds the workspace's running top-level runs; a start
	// past it is refused (nil: no bound).
	MaxRunningRuns *int `json:"max_running_runs"`
	// MaxStartsPerSecond bounds the rate of starts (a bucket of
	// max(1, rate) starts, refilled at rate; nil: no bound).
	MaxStartsPerSecond *float64  `json:"max_starts_per_second"`
	CreatedAt          time.Time `json:"created_at"`
	UpdatedAt          time.Time `json:"updated_at"`
	// Role is the caller's role in it, when listed for a caller.
	Role string `json:"role,omitempty" gorm:"->;-:migration"`
}

// TableName is the workspaces table.
func (Workspace) TableName() string { return "workspaces" }

var workspaceCols = []string{"slug", "name", "max_running_runs", "max_starts_per_second", "created_at", "updated_at"}

// CreateWorkspace adds a workspace (engine.ErrConflict: the slug is
// taken).
func (s *Store) CreateWorkspace(ctx context.Context, w Workspace) (*Workspace, error) {
	w.Role = ""
	err := s.inGormTx(ctx, func(tx *Store) error {
		return tx.db.WithContext(ctx).Select(workspaceCols).Clauses(clause.Returning{}).Create(&w).Error
	})
	if err != nil {
		err = interpretError(err)
		if errors.Is(err, engine.ErrConflict) {
			return nil, fmt.Errorf("%w: workspace %s exists", engine.ErrConflict, w.Slug)
		}
		return nil, fmt.Errorf("error creating workspace %s: %w", w.Slug, err)
	}
	return &w, nil
}

// GetWorkspace loads a workspace by slug.
func (s *Store) GetWorkspace(ctx context.Context, slug string) (*Workspace, error) {
	var w Workspace
	err := s.db.WithContext(ctx).Select(workspaceCols).Where("slug = ?", slug).Take(&w).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return nil, fmt.Errorf("%w: workspace %s not found", engine.ErrNotFound, slug)
	}
	if err != nil {
		return nil, fmt.Errorf("error loading workspace %s: %w", slug, interpretError(err))
	}
	return &w, nil
}

// UpdateWorkspaceParams changes a workspace: each field set is changed;
// ClearMaxRunningRuns and ClearMaxStartsPerSecond remove a bound.
type UpdateWorkspaceParams struct {
	Name                                         *string
	MaxRunningRuns                               *int
	MaxStartsPerSecond                           *float64
	ClearMaxRunningRuns, ClearMaxStartsPerSecond bool
	Now                                          time.Time
}

// UpdateWorkspace changes a workspace's name or limits.
func (s *Store) UpdateWorkspace(ctx context.Context, slug string, p UpdateWorkspaceParams) (*Workspace, error) {
	set := map[string]any{"updated_at": p.Now}
	if p.Name != nil {
		set["name"] = *p.Name
	}
	switch {
	case p.ClearMaxRunningRuns:
		set["max_running_runs"] = nil
	case p.MaxRunningRuns != nil:
		set["max_running_runs"] = *p.MaxRunningRuns
	}
	switch {
	case p.ClearMaxStartsPerSecond:
		set["max_starts_per_second"], set["start_tokens"], set["tokens_at"] = nil, 0, nil
	case p.MaxStartsPerSecond != nil:
		set["max_starts_per_second"], set["start_tokens"], set["tokens_at"] = *p.MaxStartsPerSecond, 0, nil
	}
	res := s.db.WithContext(ctx).Model(&Workspace{}).Where("slug = ?", slug).Updates(set)
	if res.Error != nil {
		return nil, fmt.Errorf("error updating workspace %s: %w", slug, interpretError(res.Error))
	}
	if res.RowsAffected == 0 {
		return nil, fmt.Errorf("%w: workspace %s not found", engine.ErrNotFound, slug)
	}
	return s.GetWorkspace(ctx, slug)
}

// WorkspacesOf lists, by slug, the workspaces userID is a member of with
// its role in each; every workspace, as admin, for a server admin
// (all=true).
func (s *Store) WorkspacesOf(ctx context.Context, userID string, all bool) ([]Workspace, error) {
	out := []Workspace{}
	q := s.db.WithContext(ctx)
	var err error
	if all {
		err = q.Raw(`SELECT w.slug, w.name, w.max_running_runs, w.max_starts_per_second, w.created_at, w.updated_at, 'admin' AS role
			FROM workspaces w ORDER BY w.slug`).Scan(&out).Error
	} else {
		err = q.Raw(`SELECT w.slug, w.name, w.max_running_runs, w.max_starts_per_second, w.created_at, w.updated_at, m.role
			FROM workspaces w JOIN workspace_members m ON m.workspace = w.slug WHERE m.user_id = ? ORDER BY w.slug`, userID).Scan(&out).Error
	}
	if err != nil {
		return nil, fmt.Errorf("error listing workspaces: %w", interpretError(err))
	}
	return out, nil
}

// MemberRole is userID's role in workspace slug, and whether slug exists
// (engine.ErrNotFound: userID is no member of it, or it does not exist —
// the two look the same to a caller).
func (s *Store) MemberRole(ctx context.Context, slug, userID string) (string, error) {
	var role string
	err := s.db.WithContext(ctx).Raw(`SELECT role FROM workspace_members WHERE workspace = ? AND user_id = ?`, slug, userID).Row().Scan(&role)
	if isNotFound(interpretError(err)) {
		return "", fmt.Errorf("%w: workspace %s not found", engine.ErrNotFound, slug)
	}
	if err != nil {
		return "", fmt.Errorf("error loading a role in workspace %s: %w", slug, interpretError(err))
	}
	return role, nil
}

// WorkspaceExists reports whether workspace slug exists.
func (s *Store) WorkspaceExists(ctx context.Context, slug string) (bool, error) {
	var n int
	if err := s.db.WithContext(ctx).Raw(`SELECT count(*) FROM workspaces WHERE slug = ?`, slug).Row().Scan(&n); err != nil {
		return false, fmt.Errorf("error looking up workspace %s: %w", slug, interpretError(err))
	}
	return n > 0, nil
}

// Member is a person's membership of a workspace.
type Member struct {
	UserID    string    `json:"user_id"`
	Email     string    `json:"email"`
	Name      string    `json:"name"`
	Role      string    `json:"role"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
}

// PutMemberParams gives a user a role in a workspace.
type PutMemberParams struct {
	Workspace, UserID, Role string
	Now                     time.Time
}

// PutMember gives a user a role in a workspace, or changes it; created is
// whether they were no member before.
func (s *Store) PutMember(ctx context.Context, p PutMemberParams) (created bool, err error) {
	err = s.db.WithContext(ctx).Raw(`INSERT INTO workspace_members (workspace, user_id, role, created_at, updated_at)
		VALUES (?, ?, ?, ?, ?) ON CONFLICT (workspace, user_id) DO UPDATE SET role = excluded.role, updated_at = excluded.updated_at
		RETURNING xmax = 0`, p.Workspace, p.UserID, p.Role, p.Now, p.Now).Row().Scan(&created)
	if err != nil {
		return false, fmt.Errorf("error setting a role in workspace %s: %w", p.Workspace, interpretError(err))
	}
	return created, nil
}

// DeleteMember ends a user's membership (engine.ErrNotFound: none).
func (s *Store) DeleteMember(ctx context.Context, slug, userID string) error {
	res := s.db.WithContext(ctx).Exec(`DELETE FROM workspace_members WHERE workspace = ? AND user_id = ?`, slug, userID)
	if res.Error != nil {
		return fmt.Errorf("error removing a member of workspace %s: %w", slug, interpretError(res.Error))
	}
	if res.RowsAffected == 0 {
		return fmt.Errorf("%w: no such member of workspace %s", engine.ErrNotFound, slug)
	}
	return nil
}

// Members lists a workspace's members by email.
func (s *Store) Members(ctx context.Context, slug string) ([]Member, error) {
	out := []Member{}
	err := s.db.WithContext(ctx).Raw(`SELECT u.id AS user_id, u.email, u.name, m.role, m.created_at, m.updated_at
		FROM workspace_members m JOIN users u ON u.id = m.user_id WHERE m.workspace = ? ORDER BY lower(u.email)`, slug).Scan(&out).Error
	if err != nil {
		return nil, fmt.Errorf("error listing the members of workspace %s: %w", slug, interpretError(err))
	}
	return out, nil
}

// Owner kinds WorkspaceOf looks up.
const (
	OwnerFlow    = "flow"
	OwnerRun     = "run"
	OwnerBoard   = "board"
	OwnerEntity  = "entity"
	OwnerTrigger = "trigger"
)

// ownerQueries find the workspace of an object by id.
var ownerQueries = map[string]string{
	OwnerFlow:   `SELECT workspace FROM flows WHERE id = ?`,
	OwnerRun:    `SELECT workspace FROM runs WHERE id = ?`,
	OwnerBoard:  `SELECT workspace FROM boards WHERE id = ?`,
	OwnerEntity: `SELECT b.workspace FROM entities e JOIN boards b ON b.id = e.board_id WHERE e.id = ?`,
	// A trigger of any kind: a webhook, a schedule, an event or a broker
	// trigger; each belongs to a flow.
	OwnerTrigger: `SELECT f.workspace FROM flows f WHERE f.id = (
		SELECT flow_id FROM triggers WHERE id = ? UNION ALL SELECT flow_id FROM schedules WHERE id = ?
		UNION ALL SELECT flow_id FROM event_triggers WHERE id = ? UNION ALL SELECT flow_id FROM broker_triggers WHERE id = ? LIMIT 1)`,
}

// WorkspaceOf is the workspace of the object of kind (Owner…) with id;
// "" when there is none (not found, or id is no UUID).
func (s *Store) WorkspaceOf(ctx context.Context, kind, id string) (string, error) {
	q, ok := ownerQueries[kind]
	if !ok {
		return "", fmt.Errorf("no owner lookup for %s", kind)
	}
	if !isUUID(id) {
		return "", nil
	}
	var ws string
	args := make([]any, strings.Count(q, "?"))
	for i := range args {
		args[i] = id
	}
	err := s.db.WithContext(ctx).Raw(q, args...).Row().Scan(&ws)
	if isNotFound(interpretError(err)) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("error finding the workspace of %s %s: %w", kind, id, interpretError(err))
	}
	return ws, nil
}

// inWorkspace starts the conditions of a query over runs (alias) of
// workspace ws. Another workspace's are said not to be the default's too,
// which lets the planner use the index of other workspaces' runs (the
// default workspace's are not in it).
func inWorkspace(alias, ws string) ([]string, []any) {
	ws = workspaceOr(ws)
	if ws == DefaultWorkspace {
		return []string{alias + ".workspace = ?"}, []any{ws}
	}
	return []string{alias + ".workspace = ?", alias + ".workspace <> 'default'"}, []any{ws}
}
