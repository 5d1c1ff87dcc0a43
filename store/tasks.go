package store

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/lib/pq"

	"github.com/stitchd/stitchd/engine"
)

// taskEventTypes are the events a task's history shows: it waited, was
// claimed, unclaimed, reassigned, delegated, escalated, voted on, decided
// for someone, timed out, completed by hand, and how it ended.
var taskEventTypes = pq.StringArray{engine.EventNodeStatus, engine.EventNodeClaimed, engine.EventNodeUnclaimed,
	engine.EventNodeReassigned, engine.EventNodeDelegated, engine.EventNodeEscalated, engine.EventApprovalVote,
	engine.EventDecidedFor, engine.EventApprovalTimedOut, engine.EventNodeSkippedByHand, engine.EventNodeRerun,
	engine.EventApprovalReminder}

// TaskHistory lists the events of node key of run runID that make its
// history as a task (taskEventTypes), oldest first, at most 500.
func (s *Store) TaskHistory(ctx context.Context, runID, key string) ([]engine.Event, error) {
	rows, err := s.db.WithContext(ctx).Raw(`SELECT `+eventCols+` FROM run_events
		WHERE run_id = ? AND key = ? AND type = ANY(?::text[]) ORDER BY seq LIMIT 500`, runID, key, taskEventTypes).Rows()
	if err != nil {
		return nil, fmt.Errorf("error loading the history of step %s of run %s: %w", key, runID, interpretError(err))
	}
	return scanEvents(rows)
}

// TaskDecision is a person's decision at a UX node, of any attempt.
type TaskDecision struct {
	engine.Vote
	Attempt int `json:"attempt"`
}

// TaskDecisions lists the decisions (votes) at node key of run runID, of
// every attempt, oldest first.
func (s *Store) TaskDecisions(ctx context.Context, runID, key string) ([]TaskDecision, error) {
	rows, err := s.db.WithContext(ctx).Raw(`SELECT attempt, by_email, coalesce(for_email, ''), outcome, comment, answer, at
		FROM ux_decisions WHERE run_id = ? AND key = ? ORDER BY at, by_email LIMIT 500`, runID, key).Rows()
	if err != nil {
		return nil, fmt.Errorf("error loading the decisions at %s: %w", key, interpretError(err))
	}
	defer rows.Close()
	out := []TaskDecision{}
	for rows.Next() {
		var d TaskDecision
		var answer []byte
		if err := rows.Scan(&d.Attempt, &d.By, &d.For, &d.Outcome, &d.Comment, &answer, &d.At); err != nil {
			return nil, interpretError(err)
		}
		d.Answer, d.At = nullRaw(answer), d.At.UTC()
		out = append(out, d)
	}
	return out, interpretError(rows.Err())
}

// TaskRun is what a task page needs of its run besides its nodes: the
// flow's name, the run's version's graph (as drawn), and its entity.
type TaskRun struct {
	FlowName string
	Graph    []byte
}

// TaskRunOf loads the flow name and the drawn graph of run runID's version.
func (s *Store) TaskRunOf(ctx context.Context, runID string) (*TaskRun, error) {
	var out TaskRun
	err := s.db.WithContext(ctx).Raw(`SELECT coalesce(f.name, ''), v.visual_graph FROM runs r
		JOIN flow_versions v ON v.id = r.flow_version_id LEFT JOIN flows f ON f.id = r.flow_id WHERE r.id = ?`, runID).
		Row().Scan(&out.FlowName, &out.Graph)
	if err != nil {
		return nil, fmt.Errorf("error loading run %s: %w", runID, interpretError(err))
	}
	return &out, nil
}

// ApprovalOf loads node key of run runID as an approval: nil when it is
// not waiting for a person.
func (s *Store) ApprovalOf(ctx context.Context, runID, key string) (*Approval, error) {
	as, err := s.approvals(ctx, ` AND ns.run_id = ?::uuid AND ns.key = ?`, []any{runID, key, 1})
	if err != nil || len(as) == 0 {
		return nil, err
	}
	return &as[0], nil
}

// StepRef names a step of a run (its node id: the row of its current
// iteration, outside any fan-out).
type StepRef struct{ RunID, NodeID string }

// StepOutputs loads the outputs of steps (absent: no such row, or no
// output yet).
func (s *Store) StepOutputs(ctx context.Context, steps []StepRef) (map[StepRef]json.RawMessage, error) {
	out := map[StepRef]json.RawMessage{}
	if len(steps) == 0 {
		return out, nil
	}
	runs, keys := make(pq.StringArray, len(steps)), make(pq.StringArray, len(steps))
	for i, st := range steps {
		runs[i], keys[i] = st.RunID, st.NodeID
	}
	rows, err := s.db.WithContext(ctx).Raw(`SELECT ns.run_id::text, ns.key, ns.output FROM node_states ns
		JOIN (SELECT unnest(?::uuid[]) AS run_id, unnest(?::text[]) AS key) w ON w.run_id = ns.run_id AND w.key = ns.key
		WHERE ns.output IS NOT NULL`, runs, keys).Rows()
	if err != nil {
		return nil, fmt.Errorf("error loading step outputs: %w", interpretError(err))
	}
	defer rows.Close()
	for rows.Next() {
		var ref StepRef
		var o []byte
		if err := rows.Scan(&ref.RunID, &ref.NodeID, &o); err != nil {
			return nil, interpretError(err)
		}
		out[ref] = o
	}
	return out, interpretError(rows.Err())
}
