package web

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/stitchd/stitchd/engine"
	"github.com/stitchd/stitchd/store"
)

// WorkspaceHeader chooses a request's workspace (docs/workspaces.md);
// without it a request acts in store.DefaultWorkspace, or in a bound
// token's.
const WorkspaceHeader = "Stitchd-Workspace"

// workspacePath starts the routes of one workspace, which act in the
// path's workspace whatever the header says.
const workspacePath = "/api/v1/workspaces/:slug"

func workspaceNotFound(slug string) *apiError {
	return errorf(http.StatusNotFound, "not_found", "workspace "+slug+" not found")
}

// enterWorkspace settles the request's workspace and the principal's role
// in it. A workspace the caller is no member of answers 404, as one that
// does not exist, except on the routes that act in none (unscoped: the
// caller's own account, tokens and workspaces).
func (s *Server) enterWorkspace(c echo.Context, p *Principal) error {
	ws := c.Request().Header.Get(WorkspaceHeader)
	if strings.HasPrefix(c.Path(), workspacePath) {
		ws = c.Param("slug")
	}
	if ws != "" && !store.ValidWorkspaceSlug(ws) {
		return badRequest(WorkspaceHeader + ": " + store.WorkspaceSlugRule)
	}
	if p.tokenWorkspace != "" {
		// The routes about the caller answer in any workspace: a bound
		// token's in its own, whatever the header names.
		if ws != "" && ws != p.tokenWorkspace && !ruleOf(c).unscoped {
			return forbidden("workspace_mismatch", "this token acts only in workspace "+p.tokenWorkspace)
		}
		ws = p.tokenWorkspace
	}
	if ws == "" {
		ws = store.DefaultWorkspace
	}
	p.Workspace = ws
	ctx := c.Request().Context()
	role := store.RoleAdmin // the admin token's
	if p.User != nil {
		var err error
		if role, err = s.roleIn(ctx, p.User, ws); err != nil {
			return err
		}
	}
	if role == store.RoleAdmin && ws != store.DefaultWorkspace && (p.User == nil || p.User.Role == store.RoleAdmin) {
		// A server admin is admin of every workspace there is.
		ok, err := s.cfg.Store.WorkspaceExists(ctx, ws)
		if err != nil {
			return err
		}
		if !ok {
			role = ""
		}
	}
	if role == "" {
		return s.outsideWorkspace(c, p, ws)
	}
	p.role = role
	if p.tokenRole != "" {
		p.role = p.tokenRole // narrower: a worker's token polls, nothing else
	}
	return nil
}

// outsideWorkspace answers a caller in a workspace they are no member of
// (or that does not exist): 404, except on an unscoped route, where they
// act with no role.
func (s *Server) outsideWorkspace(c echo.Context, p *Principal, ws string) error {
	if ruleOf(c).unscoped {
		p.role = ""
		return nil
	}
	return workspaceNotFound(ws)
}

// ownerKinds name the object a route's :id is, by the route's prefix:
// ownedHere answers 404 for one of another workspace.
var ownerKinds = []struct{ prefix, kind string }{
	{"/api/v1/flows/:id", store.OwnerFlow},
	{"/api/v1/runs/:id", store.OwnerRun},
	{"/api/v1/boards/:id", store.OwnerBoard},
	{"/api/v1/entities/:id", store.OwnerEntity},
	{"/api/v1/triggers/:id", store.OwnerTrigger},
}

// ownerKind is the kind of the object a route's :id names ("" for none).
func ownerKind(path string) string {
	for _, o := range ownerKinds {
		if path == o.prefix || strings.HasPrefix(path, o.prefix+"/") {
			return o.kind
		}
	}
	return ""
}

// ownedHere answers 404, as for an id that does not exist, when the
// route's object belongs to another workspace than the request's.
func (s *Server) ownedHere(c echo.Context, p *Principal) error {
	kind := ownerKind(c.Path())
	if kind == "" {
		return nil
	}
	id := c.Param("id")
	ws, err := s.cfg.Store.WorkspaceOf(c.Request().Context(), kind, id)
	if err != nil {
		return err
	}
	if ws != "" && ws != p.Workspace {
		return errorf(http.StatusNotFound, "not_found", kind+" "+id+" not found")
	}
	return nil
}

// workspaceOf is the request's workspace.
func workspaceOf(c echo.Context) string {
	if p := principalOf(c); p != nil && p.Workspace != "" {
		return p.Workspace
	}
	return store.DefaultWorkspace
}

// workspaceBody is POST /api/v1/workspaces and PATCH
// /api/v1/workspaces/{slug}. A limit set to null is removed.
type workspaceBody struct {
	Slug               *string           `json:"slug"`
	Name               *string           `json:"name"`
	MaxRunningRuns     optional[int]     `json:"max_running_runs"`
	MaxStartsPerSecond optional[float64] `json:"max_starts_per_second"`
}

// optional is a JSON field that may be absent, null or a value.
type optional[T any] struct {
	Set   bool
	Value *T
}

func (o *optional[T]) UnmarshalJSON(b []byte) error {
	o.Set = true
	if string(b) == "null" {
		o.Value = nil
		return nil
	}
	var v T
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	o.Value = &v
	return nil
}

func (b *workspaceBody) problems(create bool) []engine.Problem {
	var ps []engine.Problem
	if create {
		if b.Slug == nil || !store.ValidWorkspaceSlug(*b.Slug) {
			ps = append(ps, engine.Problem{Code: "invalid", Path: "slug", Message: store.WorkspaceSlugRule})
		}
		if b.Name == nil {
			ps = append(ps, engine.Problem{Code: "required", Path: "name", Message: "name is required"})
		}
	} else if b.Slug != nil {
		ps = append(ps, engine.Problem{Code: "invalid", Path: "slug", Message: "a workspace's slug cannot change"})
	}
	if b.Name != nil && (strings.TrimSpace(*b.Name) == "" || len(*b.Name) > 200) {
		ps = append(ps, engine.Problem{Code: "invalid", Path: "name", Message: "name must be 1 to 200 characters"})
	}
	if v := b.MaxRunningRuns.Value; v != nil && *v < 1 {
		ps = append(ps, engine.Problem{Code: "invalid", Path: "max_running_runs", Message: "max_running_runs must be at least 1 (null: no limit)"})
	}
	if v := b.MaxStartsPerSecond.Value; v != nil && !(*v > 0 && *v <= 1e6) {
		ps = append(ps, engine.Problem{Code: "invalid", Path: "max_starts_per_second",
			Message: "max_starts_per_second must be above 0 and at most 1000000 (null: no limit)"})
	}
	return ps
}

func invalidWorkspace(ps []engine.Problem) *apiError {
	return &apiError{Status: http.StatusBadRequest, Code: "invalid_request", Message: "the workspace has " + plural(len(ps), "problem"), Details: ps}
}

// createWorkspace is POST /api/v1/workspaces (server admins).
func (s *Server) createWorkspace(c echo.Context) error {
	var b workspaceBody
	if err := bind(c, &b); err != nil {
		return err
	}
	if ps := b.problems(true); len(ps) > 0 {
		return invalidWorkspace(ps)
	}
	now := s.cfg.Clock.Now()
	w, err := s.cfg.Store.CreateWorkspace(c.Request().Context(), store.Workspace{Slug: *b.Slug, Name: strings.TrimSpace(*b.Name),
		MaxRunningRuns: b.MaxRunningRuns.Value, MaxStartsPerSecond: b.MaxStartsPerSecond.Value, CreatedAt: now, UpdatedAt: now})
	if err != nil {
		return err
	}
	setAuditTarget(c, "workspace:"+w.Slug)
	return c.JSON(http.StatusCreated, w)
}

// listWorkspaces is GET /api/v1/workspaces: those the caller belongs to,
// with their role in each (every one, as admin, for a server admin).
func (s *Server) listWorkspaces(c echo.Context) error {
	p := principalOf(c)
	userID := ""
	if p.User != nil {
		userID = p.User.ID
	}
	ws, err := s.cfg.Store.WorkspacesOf(c.Request().Context(), userID, p.ServerAdmin())
	if err != nil {
		return err
	}
	if p.tokenWorkspace != "" {
		ws = slices.DeleteFunc(ws, func(w store.Workspace) bool { return w.Slug != p.tokenWorkspace })
	}
	return c.JSON(http.StatusOK, map[string]any{"workspaces": ws})
}

// getWorkspace is GET /api/v1/workspaces/{slug}, for its members.
func (s *Server) getWorkspace(c echo.Context) error {
	w, err := s.cfg.Store.GetWorkspace(c.Request().Context(), c.Param("slug"))
	if err != nil {
		return err
	}
	w.Role = principalOf(c).Role()
	return c.JSON(http.StatusOK, w)
}

// patchWorkspace is PATCH /api/v1/workspaces/{slug} (server admins: a
// team does not lift its own limits).
func (s *Server) patchWorkspace(c echo.Context) error {
	var b workspaceBody
	if err := bind(c, &b); err != nil {
		return err
	}
	if b.Name == nil && !b.MaxRunningRuns.Set && !b.MaxStartsPerSecond.Set && b.Slug == nil {
		return badRequest("nothing to change: give name, max_running_runs or max_starts_per_second")
	}
	if ps := b.problems(false); len(ps) > 0 {
		return invalidWorkspace(ps)
	}
	p := store.UpdateWorkspaceParams{Name: b.Name, Now: s.cfg.Clock.Now(),
		MaxRunningRuns: b.MaxRunningRuns.Value, ClearMaxRunningRuns: b.MaxRunningRuns.Set && b.MaxRunningRuns.Value == nil,
		MaxStartsPerSecond: b.MaxStartsPerSecond.Value, ClearMaxStartsPerSecond: b.MaxStartsPerSecond.Set && b.MaxStartsPerSecond.Value == nil}
	if p.Name != nil {
		n := strings.TrimSpace(*p.Name)
		p.Name = &n
	}
	w, err := s.cfg.Store.UpdateWorkspace(c.Request().Context(), c.Param("slug"), p)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, w)
}

// listMembers is GET /api/v1/workspaces/{slug}/members (its admins).
func (s *Server) listMembers(c echo.Context) error {
	ms, err := s.cfg.Store.Members(c.Request().Context(), c.Param("slug"))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, map[string]any{"members": ms})
}

// putMember is PUT /api/v1/workspaces/{slug}/members/{email} {"role"}
// (its admins): 201 for a new member, 200 for a changed role.
func (s *Server) putMember(c echo.Context) error {
	var b struct {
		Role *string `json:"role"`
	}
	if err := bind(c, &b); err != nil {
		return err
	}
	if b.Role == nil || !slices.Contains(store.Roles, *b.Role) {
		return badRequest("role must be one of " + strings.Join(store.Roles, ", "))
	}
	ctx := c.Request().Context()
	u, err := s.memberUser(c)
	if err != nil {
		return err
	}
	slug := c.Param("slug")
	now := s.cfg.Clock.Now()
	created, err := s.cfg.Store.PutMember(ctx, store.PutMemberParams{Workspace: slug, UserID: u.ID, Role: *b.Role, Now: now})
	if err != nil {
		return err
	}
	setAuditTarget(c, "workspace:"+slug)
	c.Set(auditDetailsKey, map[string]any{"member": u.Email, "role": *b.Role})
	status := http.StatusOK
	if created {
		status = http.StatusCreated
	}
	return c.JSON(status, store.Member{UserID: u.ID, Email: u.Email, Name: u.Name, Role: *b.Role, CreatedAt: now, UpdatedAt: now})
}

// deleteMember is DELETE /api/v1/workspaces/{slug}/members/{email} (its
// admins).
func (s *Server) deleteMember(c echo.Context) error {
	ctx := c.Request().Context()
	u, err := s.memberUser(c)
	if err != nil {
		return err
	}
	slug := c.Param("slug")
	if err := s.cfg.Store.DeleteMember(ctx, slug, u.ID); err != nil {
		return err
	}
	setAuditTarget(c, "workspace:"+slug)
	c.Set(auditDetailsKey, map[string]any{"member": u.Email})
	return c.NoContent(http.StatusNoContent)
}

// mayBind checks that p may bind a token to workspace ws: a member of it,
// or a server admin, and it exists.
func (s *Server) mayBind(c echo.Context, p *Principal, ws string) error {
	if !store.ValidWorkspaceSlug(ws) {
		return badRequest(`"workspace": ` + store.WorkspaceSlugRule)
	}
	ctx := c.Request().Context()
	role, err := s.roleIn(ctx, p.User, ws)
	if err != nil {
		return err
	}
	if role == store.RoleAdmin && p.ServerAdmin() {
		// Admin of every workspace there is.
		ok, err := s.cfg.Store.WorkspaceExists(ctx, ws)
		if err != nil {
			return err
		}
		if !ok {
			role = ""
		}
	}
	if role == "" {
		return workspaceNotFound(ws)
	}
	return nil
}

// workspaceFilter tells, for the stream of every run's events, which are
// of the request's workspace: a run's (or a manually moved entity's)
// workspace is looked up once per stream.
func (s *Server) workspaceFilter(c echo.Context) func(ctx context.Context, e engine.Event) (bool, error) {
	ws := workspaceOf(c)
	seen := map[string]bool{}
	return func(ctx context.Context, e engine.Event) (bool, error) {
		kind, id := store.OwnerRun, e.RunID
		if id == "" {
			var m struct {
				EntityID string `json:"entity_id"`
			}
			_ = json.Unmarshal(e.Payload, &m) // a move without an entity is no one's
			kind, id = store.OwnerEntity, m.EntityID
		}
		if ok, known := seen[id]; known {
			return ok, nil
		}
		owner, err := s.cfg.Store.WorkspaceOf(ctx, kind, id)
		if err != nil {
			return false, err
		}
		// Bounded like the stream's runs: past it, looked up again.
		if len(seen) < 100_000 {
			seen[id] = owner == ws
		}
		return owner == ws, nil
	}
}

// boardHere refuses (400) a board named in a body that does not exist in
// the request's workspace.
func (s *Server) boardHere(c echo.Context, id string) error {
	owner, err := s.cfg.Store.WorkspaceOf(c.Request().Context(), store.OwnerBoard, id)
	if err != nil {
		return err
	}
	if owner != workspaceOf(c) {
		return badRequest("board " + id + " does not exist")
	}
	return nil
}

// roleIn is user u's role in workspace ws: admin for a server admin, else
// their membership's ("" for none).
func (s *Server) roleIn(ctx context.Context, u *store.User, ws string) (string, error) {
	if u.Role == store.RoleAdmin {
		return store.RoleAdmin, nil
	}
	role, err := s.cfg.Store.MemberRole(ctx, ws, u.ID)
	if errors.Is(err, engine.ErrNotFound) {
		return "", nil
	}
	return role, err
}

func orNone(role string) string {
	if role == "" {
		return "none"
	}
	return role
}

// memberUser is the user the path's {email} names (escaped or not: a
// client escapes the @).
func (s *Server) memberUser(c echo.Context) (*store.User, error) {
	email, err := url.PathUnescape(c.Param("email"))
	if err != nil {
		return nil, badRequest("the email in the path is not escaped right")
	}
	return s.cfg.Store.UserByEmail(c.Request().Context(), email)
}
