package store

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/lib/pq"

	"github.com/stitchd/stitchd/engine"
)

// Assignment and decisions at UX nodes (engine/assign.go): whom a waiting
// node is assigned to (node_states.assign_users, assign_groups) and the
// votes of each attempt (ux_decisions).

// nonNil is s, or an empty list for nil (written as '{}', not NULL).
func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// Assignment implements engine.Tx.
func (t *pgTx) Assignment(ctx context.Context, runID, key string) (*engine.Assignees, error) {
	var users, groups []byte
	err := t.raw(ctx, `SELECT array_to_json(assign_users)::text, array_to_json(assign_groups)::text
		FROM node_states WHERE run_id = ? AND key = ?`, runID, key).Row().Scan(&users, &groups)
	if err != nil {
		return nil, fmt.Errorf("node %s: %w", key, interpretError(err))
	}
	return assigneesOf(users, groups)
}

// assigneesOf reads the two columns as array_to_json gives them (nil for
// NULL): nil when both are NULL.
func assigneesOf(users, groups []byte) (*engine.Assignees, error) {
	if users == nil && groups == nil {
		return nil, nil
	}
	a := &engine.Assignees{Users: []string{}, Groups: []string{}}
	if users != nil {
		if err := json.Unmarshal(users, &a.Users); err != nil {
			return nil, fmt.Errorf("error reading assignees: %w", err)
		}
	}
	if groups != nil {
		if err := json.Unmarshal(groups, &a.Groups); err != nil {
			return nil, fmt.Errorf("error reading assignees: %w", err)
		}
	}
	a.Users, a.Groups = nonNil(a.Users), nonNil(a.Groups)
	return a, nil
}

// AddDecision implements engine.Tx: one statement inserts the vote (or
// nothing, for a person who voted at that attempt already) and reads the
// attempt's votes; the insert's own row comes from its RETURNING (the
// statement's snapshot does not see it).
func (t *pgTx) AddDecision(ctx context.Context, d engine.UXDecision) ([]engine.Vote, bool, error) {
	rows, err := t.raw(ctx, `WITH ins AS (
		INSERT INTO ux_decisions (run_id, key, attempt, by_email, for_email, outcome, comment, answer, at)
		VALUES (?, ?, ?, ?, nullif(?, ''), ?, ?, ?::jsonb, ?) ON CONFLICT DO NOTHING
		RETURNING by_email, for_email, outcome, comment, answer, at)
		SELECT by_email, coalesce(for_email, ''), outcome, comment, answer, at, false FROM ux_decisions WHERE run_id = ? AND key = ? AND attempt = ?
		UNION ALL SELECT by_email, coalesce(for_email, ''), outcome, comment, answer, at, true FROM ins
		ORDER BY 6, 1`,
		d.RunID, d.Key, d.Attempt, d.By, d.For, d.Outcome, d.Comment, jsonArg(d.Answer), d.At,
		d.RunID, d.Key, d.Attempt).Rows()
	if err != nil {
		return nil, false, interpretError(err)
	}
	defer rows.Close()
	var all []engine.Vote
	added := false
	for rows.Next() {
		var v engine.Vote
		var answer []byte
		var mine bool
		if err := rows.Scan(&v.By, &v.For, &v.Outcome, &v.Comment, &answer, &v.At, &mine); err != nil {
			return nil, false, interpretError(err)
		}
		v.Answer, v.At = nullRaw(answer), v.At.UTC()
		added = added || mine
		all = append(all, v)
	}
	return all, added, interpretError(rows.Err())
}

// Claim implements engine.Tx.
func (t *pgTx) Claim(ctx context.Context, runID, key string) (*engine.Claim, error) {
	var c engine.Claim
	err := t.raw(ctx, `SELECT claimed_by, claimed_at, coalesce(claim_delegate, '') FROM node_states
		WHERE run_id = ? AND key = ? AND status = 'waiting_for_user' AND claimed_by IS NOT NULL AND claim_attempt = attempt`,
		runID, key).Row().Scan(&c.By, &c.At, &c.Delegate)
	if err = interpretError(err); isNotFound(err) {
		return nil, nil
	} else if err != nil {
		return nil, fmt.Errorf("node %s: %w", key, err)
	}
	c.At = c.At.UTC()
	return &c, nil
}

// SetClaim implements engine.Tx.
func (t *pgTx) SetClaim(ctx context.Context, runID, key string, attempt int, c *engine.Claim) error {
	var err error
	if c == nil {
		err = t.exec(ctx, `UPDATE node_states SET claimed_by = NULL, claimed_at = NULL, claim_attempt = NULL, claim_delegate = NULL
			WHERE run_id = ? AND key = ? AND attempt = ?`, runID, key, attempt).Error
	} else {
		err = t.exec(ctx, `UPDATE node_states SET claimed_by = ?, claimed_at = ?, claim_attempt = ?, claim_delegate = nullif(?, '')
			WHERE run_id = ? AND key = ? AND attempt = ?`, c.By, c.At, attempt, c.Delegate, runID, key, attempt).Error
	}
	if err != nil {
		return fmt.Errorf("node %s: %w", key, interpretError(err))
	}
	return nil
}

// Reassign implements engine.Tx.
func (t *pgTx) Reassign(ctx context.Context, runID, key string, attempt int, a *engine.Assignees) error {
	err := t.exec(ctx, `UPDATE node_states SET assign_users = ?::text[], assign_groups = ?::text[],
		claimed_by = NULL, claimed_at = NULL, claim_attempt = NULL, claim_delegate = NULL
		WHERE run_id = ? AND key = ? AND attempt = ? AND status = 'waiting_for_user'`,
		pq.StringArray(nonNil(a.Users)), pq.StringArray(nonNil(a.Groups)), runID, key, attempt).Error
	if err != nil {
		return fmt.Errorf("node %s: %w", key, interpretError(err))
	}
	return nil
}

// nullRaw is a JSON value read from a nullable column (null for NULL).
func nullRaw(b []byte) json.RawMessage {
	if b == nil {
		return json.RawMessage("null")
	}
	return b
}

// Votes lists the votes of attempt of UX node key of run runID, oldest
// first.
func (s *Store) Votes(ctx context.Context, runID, key string, attempt int) ([]engine.Vote, error) {
	rows, err := s.db.WithContext(ctx).Raw(`SELECT by_email, coalesce(for_email, ''), outcome, comment, answer, at FROM ux_decisions
		WHERE run_id = ? AND key = ? AND attempt = ? ORDER BY at, by_email`, runID, key, attempt).Rows()
	if err != nil {
		return nil, fmt.Errorf("error loading the decisions at %s: %w", key, interpretError(err))
	}
	defer rows.Close()
	out := []engine.Vote{}
	for rows.Next() {
		var v engine.Vote
		var answer []byte
		if err := rows.Scan(&v.By, &v.For, &v.Outcome, &v.Comment, &answer, &v.At); err != nil {
			return nil, interpretError(err)
		}
		v.Answer, v.At = nullRaw(answer), v.At.UTC()
		out = append(out, v)
	}
	return out, interpretError(rows.Err())
}

// Which approvals a caller lists (ApprovalFilter.Assigned).
const (
	// AssignedMe: those assigned to the caller's email, and the
	// unassigned ones.
	AssignedMe = "me"
	// AssignedGroups: those assigned to one of the caller's groups.
	AssignedGroups = "groups"
	// AssignedAll: every one the caller may see.
	AssignedAll = "all"
)

// ApprovalFilter narrows the approvals listed to a caller's.
type ApprovalFilter struct {
	// Workspace is the workspace whose runs' approvals are listed ("":
	// DefaultWorkspace).
	Workspace string
	// Assigned is AssignedMe, AssignedGroups or AssignedAll ("": all).
	Assigned string
	// Email and Groups are the caller's.
	Email  string
	Groups []string
	// Decidable keeps only what the caller may decide (assigned to them,
	// to one of their groups, or to no one): an approver's view.
	Decidable bool
}

// where is the filter's SQL condition (" AND …") over node_states ns,
// and its arguments.
func (f ApprovalFilter) where() (string, []any, error) {
	const unassigned = `(ns.assign_users IS NULL AND ns.assign_groups IS NULL)`
	// Mine: assigned to the caller, or delegated to them by its claimer.
	const mine = `lower(?) IN (SELECT unnest(ns.assign_users) UNION ALL
		SELECT lower(ns.claim_delegate) WHERE ns.claim_attempt = ns.attempt)`
	const ours = `ns.assign_groups && ?::text[]`
	groups := pq.StringArray(nonNil(f.Groups)) // gorm would spread a []string
	where := ` AND EXISTS (SELECT 1 FROM runs wr WHERE wr.id = ns.run_id AND wr.workspace = ?)`
	args := []any{workspaceOr(f.Workspace)}
	switch f.Assigned {
	case AssignedMe:
		where, args = where+` AND (`+unassigned+` OR `+mine+`)`, append(args, f.Email)
	case AssignedGroups:
		where, args = where+` AND `+ours, append(args, groups)
	case AssignedAll, "":
	default:
		return "", nil, fmt.Errorf("%w: assigned must be me, groups or all", engine.ErrInvalidRequest)
	}
	if f.Decidable {
		where += ` AND (` + unassigned + ` OR ` + mine + ` OR ` + ours + `)`
		args = append(args, f.Email, groups)
	}
	if f.Email != "" && (f.Decidable || f.Assigned == AssignedMe || f.Assigned == AssignedGroups) {
		// Not the steps separation of duties keeps from the run's starter:
		// "assigned to me" lists what I can decide.
		where += ` AND NOT EXISTS (SELECT 1 FROM runs sr JOIN flow_versions sv ON sv.id = sr.flow_version_id
			WHERE sr.id = ns.run_id AND lower(sr.started_by) = lower(?)
			AND sv.execution_graph->'nodes'->ns.node_id->'config'->>'separationOfDuties' = 'true')`
		args = append(args, f.Email)
	}
	return where, args, nil
}
