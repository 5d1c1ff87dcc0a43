package web

import (
	"encoding/json"
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
	s.taskPhrase(c, p, "claimed ", "")
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
	s.taskPhrase(c, p, "unclaimed ", "")
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
	s.taskPhrase(c, p, "reassigned ", " to "+assigneesText(a))
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
	s.taskPhrase(c, p, "delegated ", " to "+cl.Delegate)
	return c.JSON(http.StatusOK, claimJSON(cl))
}

// taskGraphKeys are what a task page's canvas shows of a node's data: its
// label and outcomes, not its settings.
var taskGraphKeys = []string{"label", "outcomes", "prompt", "flow", "description"}

// taskGraph is a flow version's drawn graph with only what a person
// deciding a task needs to follow it: nodes with their labels and
// outcomes, edges as drawn.
func taskGraph(raw []byte) json.RawMessage {
	var g struct {
		Nodes []map[string]any  `json:"nodes"`
		Edges []json.RawMessage `json:"edges"`
	}
	if json.Unmarshal(raw, &g) != nil {
		return json.RawMessage(`{"nodes": [], "edges": []}`)
	}
	for _, n := range g.Nodes {
		data, _ := n["data"].(map[string]any)
		kept := map[string]any{}
		for _, k := range taskGraphKeys {
			if v, ok := data[k]; ok {
				kept[k] = v
			}
		}
		n["data"] = kept
		for k := range n {
			if k != "id" && k != "type" && k != "position" && k != "data" {
				delete(n, k)
			}
		}
	}
	if g.Edges == nil {
		g.Edges = []json.RawMessage{}
	}
	b, err := json.Marshal(g)
	if err != nil {
		return json.RawMessage(`{"nodes": [], "edges": []}`)
	}
	return b
}

// getTask is GET /api/v1/runs/{id}/nodes/{key}/task: a task page — the
// approval while it waits (null once decided), the run's flow drawn (labels
// and edges, no settings), the task's history (its events: claims,
// reassignments, escalations, votes, how it ended), its decisions of every
// attempt, and the journey of the run's entity during this run.
func (s *Server) getTask(c echo.Context) error {
	id, err := s.pathUUID(c, "id", "run")
	if err != nil {
		return err
	}
	key := c.Param("key")
	ctx := c.Request().Context()
	r, _, err := s.cfg.Store.GetRun(ctx, id, false)
	if err != nil {
		return err
	}
	n, err := s.cfg.Store.ApprovalNode(ctx, id, key)
	if err != nil {
		return err
	}
	var cfg struct {
		Label  string `json:"label"`
		Prompt string `json:"prompt"`
	}
	_ = json.Unmarshal(n.Config, &cfg)
	tr, err := s.cfg.Store.TaskRunOf(ctx, id)
	if err != nil {
		return err
	}
	var approval *approvalJSON
	a, err := s.cfg.Store.ApprovalOf(ctx, id, key)
	if err != nil {
		return err
	}
	if a != nil {
		steps, err := s.summarySteps(ctx, []store.Approval{*a})
		if err != nil {
			return err
		}
		aj := approvalOf(a, steps)
		approval = &aj
	}
	history, err := s.cfg.Store.TaskHistory(ctx, id, key)
	if err != nil {
		return err
	}
	decisions, err := s.cfg.Store.TaskDecisions(ctx, id, key)
	if err != nil {
		return err
	}
	journey := []engine.JourneyEvent{}
	var entity any
	if r.EntityID != nil {
		e, err := s.cfg.Store.GetEntity(ctx, *r.EntityID)
		if err != nil && !errors.Is(err, engine.ErrNotFound) {
			return err
		}
		if e != nil {
			entity = map[string]any{"id": e.ID, "name": e.Name, "type": e.Type, "section_id": e.SectionID, "board_id": e.BoardID}
			all, err := s.cfg.Store.Journey(ctx, e.ID)
			if err != nil {
				return err
			}
			for _, j := range all {
				if j.RunID != nil && *j.RunID == id {
					journey = append(journey, j)
				}
			}
		}
	}
	label := cfg.Label
	if label == "" {
		label = key
	}
	return c.JSON(http.StatusOK, map[string]any{
		"run_id": id, "key": key, "label": label, "prompt": cfg.Prompt, "status": n.Status, "attempt": n.Attempt,
		"run_status": r.Status, "flow_id": r.FlowID, "flow_name": tr.FlowName, "run_input": nullJSON(r.Input),
		"entity": entity, "approval": approval, "graph": taskGraph(tr.Graph), "history": history,
		"decisions": decisions, "journey": journey,
	})
}

// taskPhrase sets the audit phrase of a task operation: verb, the step's
// label, then more ("reassigned Finance approval to group finance-leads —
// run 01a2…c3f9e1").
func (s *Server) taskPhrase(c echo.Context, p engine.TaskParams, verb, more string) {
	setAuditPhrase(c, verb+s.stepLabel(c.Request().Context(), p.RunID, p.Key)+more+" — run "+shortRun(p.RunID))
}

// assigneesText words assignees: "ann@example.com and group finance-leads".
func assigneesText(a *engine.Assignees) string {
	var parts []string
	if a != nil && len(a.Users) > 0 {
		parts = append(parts, strings.Join(a.Users, ", "))
	}
	if a != nil && len(a.Groups) > 0 {
		w := "group "
		if len(a.Groups) > 1 {
			w = "groups "
		}
		parts = append(parts, w+strings.Join(a.Groups, ", "))
	}
	if len(parts) == 0 {
		return "anyone who may approve"
	}
	return strings.Join(parts, " and ")
}
