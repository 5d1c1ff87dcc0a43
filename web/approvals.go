package web

import (
	"context"
	"encoding/json"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/stitchd/stitchd/engine"
	"github.com/stitchd/stitchd/store"
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
	steps, err := s.summarySteps(c.Request().Context(), as)
	if err != nil {
		return err
	}
	out := make([]approvalJSON, len(as))
	for i := range as {
		out[i] = approvalOf(&as[i], steps)
	}
	return c.JSON(http.StatusOK, map[string]any{"approvals": out, "next_cursor": nextCursor(next)})
}

// approvalEntity is the entity of an approval's run.
type approvalEntity struct {
	ID   string `json:"id"`
	Name string `json:"name"`
	Type string `json:"type"`
	// Section is the name of the section the entity is in; SectionID its
	// id.
	Section   string  `json:"section"`
	SectionID string  `json:"section_id"`
	Email     *string `json:"email"`
	BoardID   string  `json:"board_id"`
}

// escalationJSON says how a UX node's data.escalation went so far: the
// step applied last (whom it went to, after how long) and the next.
type escalationJSON struct {
	// Steps is how many steps data.escalation has; Step how many were
	// applied.
	Steps int `json:"steps"`
	Step  int `json:"step"`
	// EscalatedTo and EscalatedAfterSeconds: the last step applied (nil
	// before the first).
	EscalatedTo           *engine.Assignees `json:"escalated_to,omitempty"`
	EscalatedAfterSeconds *int              `json:"escalated_after_seconds,omitempty"`
	// Next: when the next step falls due, and to whom it goes.
	NextAt           *time.Time        `json:"next_at,omitempty"`
	NextAfterSeconds *int              `json:"next_after_seconds,omitempty"`
	NextTo           *engine.Assignees `json:"next_to,omitempty"`
}

// approvalJSON is an approval as the API shows it.
type approvalJSON struct {
	RunID    string `json:"run_id"`
	Key      string `json:"key"`
	NodeID   string `json:"node_id"`
	FlowID   string `json:"flow_id"`
	FlowName string `json:"flow_name"`
	Label    string `json:"label"`
	// Title is what the task is about, for a card's heading: the entity's
	// name and the step's label ("Ada Lovelace · Send to sales?"), or the
	// label alone.
	Title  string          `json:"title"`
	Prompt string          `json:"prompt"`
	Input  json.RawMessage `json:"input"`
	// RunInput is the run's input (what started it).
	RunInput     json.RawMessage `json:"run_input"`
	Entity       *approvalEntity `json:"entity"`
	WaitingSince time.Time       `json:"waiting_since"`
	Outcomes     []string        `json:"outcomes"`
	Deadline     *time.Time      `json:"deadline"`
	OnTimeout    *string         `json:"on_timeout"`
	Iteration    int             `json:"iteration"`
	Attempt      int             `json:"attempt"`
	// RemindAfterSeconds: the node is reminded about that often.
	RemindAfterSeconds *float64 `json:"remind_after_seconds,omitempty"`
	// Form: the JSON Schema of the answer (data.form), when it has one;
	// FormComment: its "comment" field is the decision's comment (no
	// other comment box).
	Form        json.RawMessage `json:"form,omitempty"`
	FormComment bool            `json:"form_comment,omitempty"`
	// Assignees: whom the node is assigned to (null: anyone who may
	// decide approvals); RequiredApprovals and RejectPolicy: how many
	// people must agree; Votes: the votes of its attempt so far.
	Assignees         *engine.Assignees `json:"assignees"`
	RequiredApprovals int               `json:"required_approvals"`
	RejectPolicy      string            `json:"reject_policy"`
	Votes             []engine.Vote     `json:"votes"`
	// Summary: the node's summary values, read from its input (empty
	// when it has none: a card shows RunInput instead).
	Summary []engine.SummaryValue `json:"summary"`
	// ClaimedBy and ClaimedAt: who claimed the task, since when (null:
	// no one); Delegate: whom the claimer let decide for them.
	ClaimedBy *string    `json:"claimed_by"`
	ClaimedAt *time.Time `json:"claimed_at"`
	Delegate  string     `json:"delegate,omitempty"`
	// FormOutcomes: the outcomes the form applies to.
	FormOutcomes []string `json:"form_outcomes,omitempty"`
	// Escalation: how the node's data.escalation went (absent without).
	Escalation *escalationJSON `json:"escalation,omitempty"`
}

// summarySteps loads the outputs of the steps the approvals' summaries
// read (steps.<id>.output…), in one query.
func (s *Server) summarySteps(ctx context.Context, as []store.Approval) (map[store.StepRef]json.RawMessage, error) {
	var refs []store.StepRef
	for _, a := range as {
		for _, id := range engine.SummaryStepIDs(a.Config) {
			refs = append(refs, store.StepRef{RunID: a.RunID, NodeID: id})
		}
	}
	return s.cfg.Store.StepOutputs(ctx, refs)
}

// approvalOf is a as the API shows it; steps holds the outputs its
// summary reads.
func approvalOf(a *store.Approval, steps map[store.StepRef]json.RawMessage) approvalJSON {
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
	node := &engine.Node{Config: a.Config}
	people := engine.UXPeopleOf(node)
	out := approvalJSON{
		RunID:              a.RunID,
		Key:                a.Key,
		NodeID:             a.NodeID,
		FlowID:             a.FlowID,
		FlowName:           a.FlowName,
		Label:              cfg.Label,
		Title:              cfg.Label,
		Prompt:             cfg.Prompt,
		Input:              nullJSON(a.Input),
		RunInput:           nullJSON(a.RunInput),
		WaitingSince:       a.WaitingSince,
		Outcomes:           engine.UXOutcomes(node),
		Deadline:           a.Deadline,
		Iteration:          a.Iteration,
		Attempt:            a.Attempt,
		RemindAfterSeconds: cfg.Remind,
		Form:               engine.OrderedForm(engine.FormOf(a.Config)),
		Assignees:          a.Assignees,
		RequiredApprovals:  people.RequiredApprovals,
		RejectPolicy:       people.RejectPolicy,
		Votes:              a.Votes,
		Summary:            summaryOf(a, steps),
		Escalation:         escalationOf(a),
	}
	if out.Summary == nil {
		out.Summary = []engine.SummaryValue{}
	}
	if a.EntityID != nil {
		out.Entity = &approvalEntity{ID: *a.EntityID, Name: a.EntityName, Type: a.EntityType, Section: a.EntitySectionName,
			SectionID: a.EntitySectionID, Email: a.EntityEmail, BoardID: a.EntityBoardID}
		if out.Entity.Section == "" {
			out.Entity.Section = a.EntitySectionID
		}
		name := a.EntityName
		if name == "" {
			name = a.EntityType
		}
		if name != "" {
			out.Title = name + " · " + cfg.Label
		}
	}
	if a.Claim != nil {
		out.ClaimedBy, out.ClaimedAt, out.Delegate = &a.Claim.By, &a.Claim.At, a.Claim.Delegate
	}
	if out.Form != nil {
		out.FormOutcomes = engine.FormOutcomes(node)
		out.FormComment = engine.FormHasComment(a.Config)
	}
	if a.Deadline != nil {
		out.OnTimeout = cfg.OnTimeout
		if out.OnTimeout == nil {
			fail := "fail"
			out.OnTimeout = &fail
		}
	}
	return out
}

// escalationOf reads a waiting node's data.escalation against how far it
// went (nil when the node has none).
func escalationOf(a *store.Approval) *escalationJSON {
	var cfg struct {
		Escalation []engine.Escalation `json:"escalation"`
	}
	if json.Unmarshal(a.Config, &cfg) != nil || len(cfg.Escalation) == 0 {
		return nil
	}
	es := cfg.Escalation
	step := min(max(a.EscalationStep, 0), len(es))
	out := &escalationJSON{Steps: len(es), Step: step}
	assignees := func(e engine.Escalation) *engine.Assignees {
		var v any
		if json.Unmarshal(e.Assignees, &v) != nil {
			return nil
		}
		as, err := engine.AssigneesOf(v)
		if err != nil {
			return nil
		}
		return as
	}
	if step > 0 {
		last := es[step-1]
		out.EscalatedTo, out.EscalatedAfterSeconds = assignees(last), &last.AfterSeconds
	}
	if step < len(es) {
		next := es[step]
		out.NextAfterSeconds, out.NextTo = &next.AfterSeconds, assignees(next)
		if a.NextEscalation != nil {
			out.NextAt = a.NextEscalation
		} else if step == 0 {
			at := a.WaitingSince.Add(time.Duration(next.AfterSeconds) * time.Second)
			out.NextAt = &at
		}
	}
	return out
}

// summaryOf reads a's summary: paths into its input, or the run's input
// (run.input.…), variables (vars.…) or a step's output (steps.<id>.output…).
func summaryOf(a *store.Approval, steps map[store.StepRef]json.RawMessage) []engine.SummaryValue {
	scope := engine.SummaryScope{Input: a.Input, RunInput: a.RunInput, Vars: a.RunVars, Steps: map[string]json.RawMessage{}}
	for _, id := range engine.SummaryStepIDs(a.Config) {
		if o, ok := steps[store.StepRef{RunID: a.RunID, NodeID: id}]; ok {
			scope.Steps[id] = o
		}
	}
	return engine.SummaryIn(a.Config, scope)
}
