package web

import (
	"encoding/json"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/stitchd/stitchd/engine"
)

// approvals is GET /api/v1/approvals: a page of the approval nodes waiting
// for a decision, of those the caller may see (approvalsFilterFor).
func (s *Server) approvals(c echo.Context) error {
	p, err := pageParams(c)
	if err != nil {
		return err
	}
	f, err := approvalsFilterFor(c)
	if err != nil {
		return err
	}
	as, next, err := s.cfg.Store.ApprovalsPageFor(c.Request().Context(), p, f)
	if err != nil {
		return err
	}
	type aj struct {
		RunID        string          `json:"run_id"`
		Key          string          `json:"key"`
		NodeID       string          `json:"node_id"`
		FlowID       string          `json:"flow_id"`
		Label        string          `json:"label"`
		Prompt       string          `json:"prompt"`
		Input        json.RawMessage `json:"input"`
		Entity       any             `json:"entity"`
		WaitingSince time.Time       `json:"waiting_since"`
		Outcomes     []string        `json:"outcomes"`
		Deadline     *time.Time      `json:"deadline"`
		OnTimeout    *string         `json:"on_timeout"`
		Iteration    int             `json:"iteration"`
		// RemindAfterSeconds: the node is reminded about that often.
		RemindAfterSeconds *float64 `json:"remind_after_seconds,omitempty"`
		// Form: the JSON Schema of the answer (data.form), when it has one.
		Form json.RawMessage `json:"form,omitempty"`
		// Assignees: whom the node is assigned to (null: anyone who may
		// decide approvals); RequiredApprovals and RejectPolicy: how many
		// people must agree; Votes: the votes of its attempt so far.
		Assignees         *engine.Assignees `json:"assignees"`
		RequiredApprovals int               `json:"required_approvals"`
		RejectPolicy      string            `json:"reject_policy"`
		Votes             []engine.Vote     `json:"votes"`
		// Summary: the node's summary values, read from its input.
		Summary []engine.SummaryValue `json:"summary,omitempty"`
		// ClaimedBy and ClaimedAt: who claimed the task, since when (null:
		// no one); Delegate: whom the claimer let decide for them.
		ClaimedBy *string    `json:"claimed_by"`
		ClaimedAt *time.Time `json:"claimed_at"`
		Delegate  string     `json:"delegate,omitempty"`
		// FormOutcomes: the outcomes the form applies to.
		FormOutcomes []string `json:"form_outcomes,omitempty"`
	}
	out := make([]aj, len(as))
	for i, a := range as {
		var cfg struct {
			Label     string   `json:"label"`
			Prompt    string   `json:"prompt"`
			OnTimeout *string  `json:"onTimeout"`
			Remind    *float64 `json:"remindAfterSeconds"`
		}
		_ = json.Unmarshal(a.Config, &cfg)
		if cfg.Label == "" {
			cfg.Label = a.NodeID
		}
		var ent any
		if a.EntityID != nil {
			ent = map[string]any{"id": *a.EntityID, "name": a.EntityName, "type": a.EntityType, "email": a.EntityEmail,
				"board_id": a.EntityBoardID}
		}
		people := engine.UXPeopleOf(&engine.Node{Config: a.Config})
		out[i] = aj{
			RunID:              a.RunID,
			Key:                a.Key,
			NodeID:             a.NodeID,
			FlowID:             a.FlowID,
			Label:              cfg.Label,
			Prompt:             cfg.Prompt,
			Input:              nullJSON(a.Input),
			Entity:             ent,
			WaitingSince:       a.WaitingSince,
			Outcomes:           engine.UXOutcomes(&engine.Node{Config: a.Config}),
			Deadline:           a.Deadline,
			Iteration:          a.Iteration,
			RemindAfterSeconds: cfg.Remind,
			Form:               engine.OrderedForm(engine.FormOf(a.Config)),
			Assignees:          a.Assignees,
			RequiredApprovals:  people.RequiredApprovals,
			RejectPolicy:       people.RejectPolicy,
			Votes:              a.Votes,
			Summary:            engine.SummaryOf(a.Config, a.Input),
		}
		if a.Claim != nil {
			out[i].ClaimedBy, out[i].ClaimedAt, out[i].Delegate = &a.Claim.By, &a.Claim.At, a.Claim.Delegate
		}
		if out[i].Form != nil {
			out[i].FormOutcomes = engine.FormOutcomes(&engine.Node{Config: a.Config})
		}
		if a.Deadline != nil {
			out[i].OnTimeout = cfg.OnTimeout
			if out[i].OnTimeout == nil {
				fail := "fail"
				out[i].OnTimeout = &fail
			}
		}
	}
	return c.JSON(http.StatusOK, map[string]any{"approvals": out, "next_cursor": nextCursor(next)})
}
