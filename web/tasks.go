package web

import (
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/stitchd/stitchd/engine"
	"github.com/stitchd/stitchd/store"
)

// Human tasks (docs/approvals.md): claim, unclaim, reassign and delegate a
// UX node waiting for a person. The engine checks who may; each is an
// event of the run and, through the audit middleware, an audit entry.

// taskParams reads the run and step of a task request and who acts.
func (s *Server) taskParams(c echo.Context) (engine.TaskParams, error) {
	id, err := s.pathUUID(c, "id", "run")
	if err != nil {
		return engine.TaskParams{}, err
	}
	return engine.TaskParams{RunID: id, Key: c.Param("key"), Actor: taskActorOf(c)}, nil
}

// taskActorOf is deciderOf, with Manager set for those who may unclaim
// and reassign any task (operators and admins).
func taskActorOf(c echo.Context) *engine.Actor {
	a := deciderOf(c)
	if a != nil {
		role := principalOf(c).Role()
		a.Manager = role == store.RoleOperator || role == store.RoleAdmin
	}
	return a
}

// claimJSON is a claim as the API shows it.
func claimJSON(cl *engine.Claim) map[string]any {
	out := map[string]any{"claimed_by": cl.By, "claimed_at": cl.At}
	if cl.Delegate != "" {
		out["delegate"] = cl.Delegate
	}
	return out
}

// claimTask is POST /api/v1/runs/{id}/nodes/{key}/claim.
func (s *Server) claimTask(c echo.Context) error {
	p, err := s.taskParams(c)
	if err != nil {
		return err
	}
	cl, err := s.cfg.Engine.ClaimUX(c.Request().Context(), p)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, claimJSON(cl))
}

// unclaimTask is POST /api/v1/runs/{id}/nodes/{key}/unclaim.
func (s *Server) unclaimTask(c echo.Context) error {
	p, err := s.taskParams(c)
	if err != nil {
		return err
	}
	if err := s.cfg.Engine.UnclaimUX(c.Request().Context(), p); err != nil {
		return err
	}
	return c.JSON(http.StatusOK, map[string]any{"claimed_by": nil})
}

// reassignTask is POST /api/v1/runs/{id}/nodes/{key}/reassign
// {"users", "groups", "comment"}.
func (s *Server) reassignTask(c echo.Context) error {
	p, err := s.taskParams(c)
	if err != nil {
		return err
	}
	var b struct {
		Users   []string `json:"users"`
		Groups  []string `json:"groups"`
		Comment string   `json:"comment"`
	}
	if err := bind(c, &b); err != nil {
		return err
	}
	if len(b.Comment) > maxCommentLen {
		return badRequest(fmt.Sprintf("comment is longer than %d bytes", maxCommentLen))
	}
	a, err := s.cfg.Engine.ReassignUX(c.Request().Context(), engine.ReassignParams{TaskParams: p,
		Assignees: engine.Assignees{Users: b.Users, Groups: b.Groups}, Comment: b.Comment})
	if err != nil {
		return err
	}
	c.Set(auditDetailsKey, map[string]any{"users": a.Users, "groups": a.Groups, "comment": b.Comment})
	return c.JSON(http.StatusOK, map[string]any{"assignees": a})
}

// delegateTask is POST /api/v1/runs/{id}/nodes/{key}/delegate {"user"}:
// the delegate must be an enabled approver or admin.
func (s *Server) delegateTask(c echo.Context) error {
	p, err := s.taskParams(c)
	if err != nil {
		return err
	}
	var b struct {
		User string `json:"user"`
	}
	if err := bind(c, &b); err != nil {
		return err
	}
	if strings.TrimSpace(b.User) == "" {
		return badRequest(`give "user": the email of the person to decide on your behalf`)
	}
	u, err := s.cfg.Store.UserByEmail(c.Request().Context(), strings.TrimSpace(b.User))
	switch {
	case errors.Is(err, engine.ErrNotFound):
		return badRequest("no user has the email " + b.User)
	case err != nil:
		return err
	case u.Disabled:
		return badRequest("user " + u.Email + " is disabled")
	case u.Role != store.RoleApprover && u.Role != store.RoleAdmin:
		return badRequest("user " + u.Email + " (role " + u.Role + ") may not decide approvals")
	}
	cl, err := s.cfg.Engine.DelegateUX(c.Request().Context(), engine.DelegateParams{TaskParams: p, To: u.Email})
	if err != nil {
		return err
	}
	c.Set(auditDetailsKey, map[string]any{"to": cl.Delegate})
	return c.JSON(http.StatusOK, claimJSON(cl))
}
