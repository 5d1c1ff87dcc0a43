package store

import (
	"context"
	"database/sql"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/stitchd/stitchd/engine"
)

// GetRun loads a run and, when withNodes, its node states ordered by key.
func (s *Store) GetRun(ctx context.Context, id string, withNodes bool) (*engine.Run, []engine.NodeState, error) {
	r, err := scanRun(s.db.WithContext(ctx).Raw(`SELECT `+runCols+` FROM runs WHERE id = ?`, id).Row())
	if err != nil {
		return nil, nil, fmt.Errorf("error loading run %s: %w", id, err)
	}
	if !withNodes {
		return r, nil, nil
	}
	var nodes []engine.NodeState
	err = s.EachNode(ctx, id, func(n *engine.NodeState) error {
		nodes = append(nodes, *n)
		return nil
	})
	return r, nodes, err
}

// RunVariables returns a run's variables (data.setVariables): an object.
func (s *Store) RunVariables(ctx context.Context, id string) (json.RawMessage, error) {
	var raw []byte
	if err := s.db.WithContext(ctx).Raw(`SELECT variables::text FROM runs WHERE id = ?`, id).Row().Scan(&raw); err != nil {
		return nil, fmt.Errorf("error loading the variables of run %s: %w", id, interpretError(err))
	}
	return raw, nil
}

// EachNode calls fn with each node state of a run, by key (in byte order),
// as they are read: a 100,000-item fan-out's run is answered without
// holding its node states in memory.
func (s *Store) EachNode(ctx context.Context, runID string, fn func(n *engine.NodeState) error) error {
	rows, err := s.db.WithContext(ctx).Raw(`SELECT `+nodeColsAs("")+` FROM node_states WHERE run_id = ?
		ORDER BY key COLLATE "C"`, runID).Rows()
	if err != nil {
		return fmt.Errorf("error loading nodes of run %s: %w", runID, interpretError(err))
	}
	defer rows.Close()
	for rows.Next() {
		n, err := scanNode(rows, runID)
		if err != nil {
			return err
		}
		if err := fn(n); err != nil {
			return err
		}
	}
	return interpretError(rows.Err())
}

// RunFilter filters ListRuns.
type RunFilter struct {
	// Workspace is the workspace whose runs are listed ("":
	// DefaultWorkspace).
	Workspace string
	FlowID    string
	Status    string
	// Node: a node (key or id) of the run failed, not handled by a failure
	// edge; ErrorContains: the run's error contains this text.
	Node, ErrorContains string
	Limit               int
	Cursor              string
}

// ListRuns lists runs newest first, keyset-paginated; the returned cursor
// is empty on the last page.
func (s *Store) ListRuns(ctx context.Context, f RunFilter) ([]engine.Run, string, error) {
	if f.Limit <= 0 || f.Limit > 500 {
		f.Limit = 50
	}
	where, args := inWorkspace("runs", f.Workspace)
	if f.FlowID != "" {
		if !isUUID(f.FlowID) {
			return nil, "", fmt.Errorf("%w: flow_id must be a UUID", engine.ErrInvalidRequest)
		}
		where = append(where, "flow_id = ?")
		args = append(args, f.FlowID)
	}
	if f.Status != "" {
		where = append(where, "status = ?")
		args = append(args, f.Status)
	}
	where, args = matchFailure(where, args, "runs", f.Node, f.ErrorContains)
	if f.Cursor != "" {
		ts, id, err := decodeCursor(f.Cursor)
		if err != nil {
			return nil, "", fmt.Errorf("%w: invalid cursor", engine.ErrInvalidRequest)
		}
		where = append(where, "(created_at, id) < (?, ?)")
		args = append(args, ts, id)
	}
	args = append(args, f.Limit+1)
	rows, err := s.db.WithContext(ctx).Raw(`SELECT `+runCols+` FROM runs WHERE `+strings.Join(where, " AND ")+
		` ORDER BY created_at DESC, id DESC LIMIT ?`, args...).Rows()
	if err != nil {
		return nil, "", fmt.Errorf("error listing runs: %w", interpretError(err))
	}
	defer rows.Close()
	out := []engine.Run{}
	for rows.Next() {
		r, err := scanRun(rows)
		if err != nil {
			return nil, "", err
		}
		out = append(out, *r)
	}
	if err := rows.Err(); err != nil {
		return nil, "", interpretError(err)
	}
	next := ""
	if len(out) > f.Limit {
		out = out[:f.Limit]
		last := out[len(out)-1]
		next = base64.RawURLEncoding.EncodeToString([]byte(last.CreatedAt.Format(time.RFC3339Nano) + "|" + last.ID))
	}
	return out, next, nil
}

// isUUID reports whether s is a UUID in its 36-character form (uuid.Parse
// also takes forms Postgres does not).
func isUUID(s string) bool {
	_, err := uuid.Parse(s)
	return err == nil && len(s) == 36
}

func decodeCursor(c string) (time.Time, string, error) {
	b, err := base64.RawURLEncoding.DecodeString(c)
	if err != nil {
		return time.Time{}, "", err
	}
	ts, id, ok := strings.Cut(string(b), "|")
	if !ok {
		return time.Time{}, "", fmt.Errorf("bad cursor")
	}
	// A cursor is the client's to send back: check it, or Postgres would
	// answer for it (with its own text).
	if !isUUID(id) {
		return time.Time{}, "", fmt.Errorf("bad cursor id %q", id)
	}
	t, err := time.Parse(time.RFC3339Nano, ts)
	return t, id, err
}

const eventCols = `id, run_id::text, seq, type, coalesce(key, ''), payload, created_at`

func scanEvents(rows *sql.Rows) ([]engine.Event, error) {
	defer rows.Close()
	out := []engine.Event{}
	for rows.Next() {
		var e engine.Event
		var p []byte
		if err := rows.Scan(&e.ID, &e.RunID, &e.Seq, &e.Type, &e.Key, &p, &e.CreatedAt); err != nil {
			return nil, interpretError(err)
		}
		e.Payload, e.CreatedAt = p, e.CreatedAt.UTC()
		out = append(out, e)
	}
	return out, interpretError(rows.Err())
}

// RunEvents returns a run's events with seq > afterSeq, in order.
func (s *Store) RunEvents(ctx context.Context, runID string, afterSeq int64, limit int) ([]engine.Event, error) {
	return s.RunEventsBounded(ctx, runID, afterSeq, limit, 0)
}

// boundedEvents wraps an events query (SELECT * …, its ORDER BY and LIMIT
// included) so
// that it returns only the events that begin within maxBytes of payloads
// (the ? it ends with): a page holds at most maxBytes and one event,
// however big each is. PageFull tells whether more may follow.
func boundedEvents(q, order string) string {
	return `SELECT ` + eventCols + ` FROM (SELECT *, sum(octet_length(payload::text)) OVER (ORDER BY ` + order + `) AS upto
		FROM (` + q + `) q) b WHERE upto - octet_length(payload::text) < ? ORDER BY ` + order
}

// PageFull reports whether a page of events read with limit and maxBytes
// may have been cut short (more events may follow): it holds limit
// events, or its payloads pass maxBytes (the event that crosses the bound
// is the last one read).
func PageFull(evs []engine.Event, limit, maxBytes int) bool {
	if len(evs) >= limit {
		return true
	}
	n := 0
	for _, e := range evs {
		n += len(e.Payload)
	}
	return maxBytes > 0 && n > maxBytes
}

// RunEventsBounded is RunEvents reading only the events that begin within
// maxBytes of payloads (0: no bound); see PageFull.
func (s *Store) RunEventsBounded(ctx context.Context, runID string, afterSeq int64, limit, maxBytes int) ([]engine.Event, error) {
	q := `SELECT ` + eventCols + ` FROM run_events WHERE run_id = ? AND seq > ? ORDER BY seq LIMIT ?`
	args := []any{runID, afterSeq, limit}
	if maxBytes > 0 {
		q, args = boundedEvents(strings.Replace(q, eventCols, "*", 1), "seq"), append(args, maxBytes)
	}
	rows, err := s.db.WithContext(ctx).Raw(q, args...).Rows()
	if err != nil {
		return nil, fmt.Errorf("error loading events of run %s: %w", runID, interpretError(err))
	}
	return scanEvents(rows)
}

// EventsAfter returns events of every run with id > afterID, in id order.
func (s *Store) EventsAfter(ctx context.Context, afterID int64, limit int) ([]engine.Event, error) {
	return s.EventsAfterBounded(ctx, afterID, limit, 0)
}

// EventsAfterBounded is EventsAfter reading only the events that begin
// within maxBytes of payloads (0: no bound); see PageFull.
func (s *Store) EventsAfterBounded(ctx context.Context, afterID int64, limit, maxBytes int) ([]engine.Event, error) {
	q := `SELECT ` + eventCols + ` FROM run_events WHERE id > ? ORDER BY id LIMIT ?`
	args := []any{afterID, limit}
	if maxBytes > 0 {
		q, args = boundedEvents(strings.Replace(q, eventCols, "*", 1), "id"), append(args, maxBytes)
	}
	rows, err := s.db.WithContext(ctx).Raw(q, args...).Rows()
	if err != nil {
		return nil, fmt.Errorf("error loading events: %w", interpretError(err))
	}
	return scanEvents(rows)
}

// WaitReplicated waits until what this server has written so far is on
// its synchronous standbys (pg_stat_replication's flush position), if it
// has any and may see their positions. Postgres shows a transaction to
// other sessions once it is written here, before a synchronous standby
// has it: an event read in that moment, from a primary that then dies,
// was never committed as far as the promoted standby knows, and the work
// that wrote it is done again under new ids. A stream that waits before
// sending what it read sends only what survives a failover.
func (s *Store) WaitReplicated(ctx context.Context) error {
	// Waiting: the server has synchronous standbys configured, and none
	// of them has flushed up to here yet (one whose position this user
	// may not see counts as caught up: nothing can be proven, nothing is
	// held). A dying primary's standby is gone from pg_stat_replication:
	// the stream waits, and ends with its connection.
	const waitQ = `SELECT current_setting('synchronous_standby_names') <> '' AND NOT EXISTS (SELECT 1 FROM pg_stat_replication
		WHERE sync_state IN ('sync', 'quorum') AND (flush_lsn IS NULL OR flush_lsn >= ?::pg_lsn))`
	var lsn string
	var synchronous bool
	if err := s.db.WithContext(ctx).Raw(`SELECT pg_current_wal_lsn()::text, current_setting('synchronous_standby_names') <> ''`).
		Row().Scan(&lsn, &synchronous); err != nil {
		return fmt.Errorf("error reading the replication position: %w", interpretError(err))
	}
	for synchronous {
		var waiting bool
		if err := s.db.WithContext(ctx).Raw(waitQ, lsn).Row().Scan(&waiting); err != nil {
			return fmt.Errorf("error reading the replication position: %w", interpretError(err))
		}
		if !waiting {
			return nil
		}
		t := time.NewTimer(5 * time.Millisecond)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
	}
	return nil
}

// LastEventID is the id of the newest event (0 when there is none).
func (s *Store) LastEventID(ctx context.Context) (int64, error) {
	var id int64
	err := s.db.WithContext(ctx).Raw(`SELECT coalesce(max(id), 0) FROM run_events`).Row().Scan(&id)
	return id, interpretError(err)
}

// Approval is a UX node waiting for a person.
type Approval struct {
	RunID    string
	Key      string
	NodeID   string
	FlowID   string
	Config   json.RawMessage
	Input    json.RawMessage
	EntityID *string
	// The run's entity, when it has one.
	EntityName, EntityType, EntityBoardID string
	EntityEmail                           *string
	WaitingSince                          time.Time
	// Deadline is when the node times out (its timeoutSeconds), if ever.
	Deadline *time.Time
	// Iteration is the node's loop iteration (0: the first pass).
	Iteration int
	// Attempt is the node's attempt; Votes are the votes of that attempt
	// so far, oldest first.
	Attempt int
	Votes   []engine.Vote
	// Assignees is whom the node is assigned to (nil: anyone).
	Assignees *engine.Assignees
	// Claim is who claimed the node's attempt (nil: no one).
	Claim *engine.Claim
	// RunInput is the run's input, RunVars its variables; FlowName the
	// run's flow's name.
	RunInput, RunVars json.RawMessage
	FlowName          string
	// EntitySectionID and EntitySectionName: the section the run's entity
	// is in ("" without an entity).
	EntitySectionID, EntitySectionName string
	// EscalationStep is how many of the node's data.escalation steps were
	// applied; NextEscalation when the next falls due (nil: none).
	EscalationStep int
	NextEscalation *time.Time
}

// Approvals lists nodes waiting for a person, oldest first, at most limit
// (default 500; ApprovalsPage pages through all).
func (s *Store) Approvals(ctx context.Context, limit int) ([]Approval, error) {
	if limit <= 0 {
		limit = 500
	}
	return s.approvals(ctx, "", []any{limit})
}

// approvals lists waiting nodes; where adds conditions (" AND …") whose
// arguments args holds, followed by the limit.
func (s *Store) approvals(ctx context.Context, where string, args []any) ([]Approval, error) {
	rows, err := s.db.WithContext(ctx).Raw(`SELECT ns.run_id::text, ns.key, ns.node_id, r.flow_id::text,
		coalesce(v.execution_graph->'nodes'->ns.node_id->'config', '{}'), ns.input, r.entity_id::text, ns.updated_at,
		coalesce(e.name, ''), coalesce(e.type, ''), coalesce(e.board_id::text, ''), e.email, ns.deadline, ns.iteration,
		ns.attempt, array_to_json(ns.assign_users)::text, array_to_json(ns.assign_groups)::text,
		(SELECT json_agg(jsonb_strip_nulls(jsonb_build_object('by', d.by_email, 'for', d.for_email, 'outcome', d.outcome,
			'comment', d.comment, 'at', d.at)) || jsonb_build_object('answer', d.answer) ORDER BY d.at, d.by_email)::text
			FROM ux_decisions d WHERE d.run_id = ns.run_id AND d.key = ns.key AND d.attempt = ns.attempt),
		CASE WHEN ns.claim_attempt = ns.attempt THEN ns.claimed_by END,
		CASE WHEN ns.claim_attempt = ns.attempt THEN ns.claimed_at END,
		CASE WHEN ns.claim_attempt = ns.attempt THEN ns.claim_delegate END,
		r.input, r.variables, coalesce(e.section_id, ''), coalesce(sec.name, ''), coalesce(f.name, ''), ns.escalation_step, ns.escalate_at
		FROM node_states ns JOIN runs r ON r.id = ns.run_id JOIN flow_versions v ON v.id = r.flow_version_id
		LEFT JOIN flows f ON f.id = r.flow_id
		LEFT JOIN entities e ON e.id = r.entity_id LEFT JOIN sections sec ON sec.board_id = e.board_id AND sec.id = e.section_id
		WHERE ns.status = 'waiting_for_user'`+where+` ORDER BY ns.updated_at, ns.run_id, ns.key LIMIT ?`, args...).Rows()
	if err != nil {
		return nil, fmt.Errorf("error listing approvals: %w", interpretError(err))
	}
	defer rows.Close()
	out := []Approval{}
	for rows.Next() {
		var a Approval
		var cfg, in []byte
		var ent, email sql.NullString
		var deadline sql.NullTime
		var users, groups, votes []byte
		var claimedBy, delegate sql.NullString
		var claimedAt, escalateAt sql.NullTime
		var runInput, vars []byte
		if err := rows.Scan(&a.RunID, &a.Key, &a.NodeID, &a.FlowID, &cfg, &in, &ent, &a.WaitingSince,
			&a.EntityName, &a.EntityType, &a.EntityBoardID, &email, &deadline, &a.Iteration,
			&a.Attempt, &users, &groups, &votes, &claimedBy, &claimedAt, &delegate,
			&runInput, &vars, &a.EntitySectionID, &a.EntitySectionName, &a.FlowName, &a.EscalationStep, &escalateAt); err != nil {
			return nil, interpretError(err)
		}
		if claimedBy.Valid {
			a.Claim = &engine.Claim{By: claimedBy.String, At: claimedAt.Time.UTC(), Delegate: delegate.String}
		}
		var err error
		if a.Assignees, err = assigneesOf(users, groups); err != nil {
			return nil, err
		}
		a.Votes = []engine.Vote{}
		if votes != nil {
			if err := json.Unmarshal(votes, &a.Votes); err != nil {
				return nil, fmt.Errorf("error reading the votes at %s: %w", a.Key, err)
			}
		}
		a.Deadline, a.NextEscalation, a.RunInput, a.RunVars = nullTime(deadline), nullTime(escalateAt), nullRaw(runInput), nullRaw(vars)
		a.Config, a.Input, a.EntityID, a.EntityEmail, a.WaitingSince = cfg, in, nullStr(ent), nullStr(email), a.WaitingSince.UTC()
		out = append(out, a)
	}
	return out, interpretError(rows.Err())
}

// Overdue is a running node past its deadline.
type Overdue struct {
	RunID   string
	Key     string
	Attempt int
	// Deadline is the one the claim set: the engine expires the attempt
	// only while it is still the node's (engine.ExpireParams).
	Deadline time.Time
}

// OverdueNodes claims up to limit running nodes whose deadline passed
// (database time) for one sweeper: their deadline moves 30 s ahead, so other
// instances' sweepers skip them meanwhile (SKIP LOCKED for rows being
// claimed at the same moment). The engine's compare-and-set on the attempt
// makes a sweep after a crash harmless; it expires an attempt only while
// the node's deadline is the claim's, so a heartbeat answered between the
// claim and the expiry keeps the attempt. A paused run's nodes wait for
// its resume.
func (s *Store) OverdueNodes(ctx context.Context, limit int) ([]Overdue, error) {
	rows, err := s.db.WithContext(ctx).Raw(`UPDATE node_states SET deadline = now() + interval '30 seconds'
		WHERE (run_id, key) IN (SELECT n.run_id, n.key FROM node_states n WHERE n.status = 'running' AND n.deadline < now()
			AND NOT EXISTS (SELECT 1 FROM runs r WHERE r.id = n.run_id AND r.status = 'paused')
			ORDER BY n.deadline LIMIT ? FOR UPDATE OF n SKIP LOCKED)
		RETURNING run_id::text, key, attempt, deadline`, limit).Rows()
	if err != nil {
		return nil, fmt.Errorf("error claiming overdue nodes: %w", interpretError(err))
	}
	defer rows.Close()
	var out []Overdue
	for rows.Next() {
		var o Overdue
		if err := rows.Scan(&o.RunID, &o.Key, &o.Attempt, &o.Deadline); err != nil {
			return nil, interpretError(err)
		}
		out = append(out, o)
	}
	return out, interpretError(rows.Err())
}

// Due is a node whose time came: a sleeping node past its wake_at, or a
// UX node past its deadline.
type Due struct {
	RunID   string
	Key     string
	Attempt int
	// Deferred: a pending node a transaction left to fire later
	// (engine.Config.MaxFirings), not a sleeping one.
	Deferred bool
}

// DueTimers claims up to limit sleeping nodes whose wake_at passed
// (database time), and pending nodes left to fire later (deferred), for
// one sweeper: their wake_at moves 30 s ahead, so other instances'
// sweepers skip them meanwhile (SKIP LOCKED for rows being claimed at the
// same moment); the engine's compare-and-set on the node's status and
// attempt makes each wake once.
func (s *Store) DueTimers(ctx context.Context, limit int) ([]Due, error) {
	return s.claimDue(ctx, `UPDATE node_states SET wake_at = now() + interval '30 seconds'
		WHERE (run_id, key) IN (SELECT run_id, key FROM node_states
			WHERE (status = 'sleeping' AND wake_at <= now()) OR (status = 'pending' AND wake_at <= now())
			ORDER BY wake_at LIMIT ? FOR UPDATE SKIP LOCKED)
		RETURNING run_id::text, key, attempt, status = 'pending'`, limit, "due timers")
}

// OverdueApprovals claims up to limit UX nodes waiting past their deadline
// (timeoutSeconds), as DueTimers does.
func (s *Store) OverdueApprovals(ctx context.Context, limit int) ([]Due, error) {
	return s.claimDue(ctx, `UPDATE node_states SET deadline = now() + interval '30 seconds'
		WHERE (run_id, key) IN (SELECT run_id, key FROM node_states WHERE status = 'waiting_for_user' AND deadline <= now()
			ORDER BY deadline LIMIT ? FOR UPDATE SKIP LOCKED)
		RETURNING run_id::text, key, attempt, false`, limit, "overdue approvals")
}

func (s *Store) claimDue(ctx context.Context, q string, limit int, what string) ([]Due, error) {
	rows, err := s.db.WithContext(ctx).Raw(q, limit).Rows()
	if err != nil {
		return nil, fmt.Errorf("error claiming %s: %w", what, interpretError(err))
	}
	defer rows.Close()
	var out []Due
	for rows.Next() {
		var d Due
		if err := rows.Scan(&d.RunID, &d.Key, &d.Attempt, &d.Deferred); err != nil {
			return nil, interpretError(err)
		}
		out = append(out, d)
	}
	return out, interpretError(rows.Err())
}

// RunAnswer is what a caller waiting for a run (a webhook trigger's
// respond.mode "wait") is told: the run's status, output and error, and
// the answer a Respond node gave, if one did.
type RunAnswer struct {
	Status       engine.RunStatus
	Output       json.RawMessage
	Error        *string
	Response     *engine.CallerAnswer
	Compensation *engine.Compensation
}

// RunAnswer loads what a caller waiting for run id is told.
func (s *Store) RunAnswer(ctx context.Context, id string) (*RunAnswer, error) {
	var a RunAnswer
	var status string
	var errMsg sql.NullString
	var output, response, comp []byte
	err := s.db.WithContext(ctx).Raw(`SELECT status, output, error, response, compensation FROM runs WHERE id = ?`, id).Row().
		Scan(&status, &output, &errMsg, &response, &comp)
	if err != nil {
		return nil, fmt.Errorf("run %s: %w", id, interpretError(err))
	}
	a.Status, a.Output, a.Error = engine.RunStatus(status), output, nullStr(errMsg)
	if len(response) > 0 {
		a.Response = &engine.CallerAnswer{}
		if err := json.Unmarshal(response, a.Response); err != nil {
			return nil, fmt.Errorf("error reading the answer of run %s: %w", id, err)
		}
	}
	if len(comp) > 0 {
		a.Compensation = &engine.Compensation{}
		if err := json.Unmarshal(comp, a.Compensation); err != nil {
			return nil, fmt.Errorf("error reading the compensation of run %s: %w", id, err)
		}
	}
	return &a, nil
}

// OrphanedChildren lists up to limit unfinished sub-flow runs whose parent
// run was cancelled: a process that cancelled the parent stopped before it
// cancelled them (Engine.CancelRun passes a cancel on after its commit).
func (s *Store) OrphanedChildren(ctx context.Context, limit int) ([]string, error) {
	var ids []string
	// A parent's node cancelled on its own (a branch a join's first
	// arrival cancelled) orphans its child too.
	err := s.db.WithContext(ctx).Raw(`SELECT c.id::text FROM runs c JOIN runs p ON p.id = c.parent_run_id
		WHERE c.parent_run_id IS NOT NULL AND c.status IN ('running', 'paused', 'failed') AND (p.status = 'cancelled'
			OR EXISTS (SELECT 1 FROM node_states n WHERE n.run_id = c.parent_run_id AND n.key = c.parent_key
				AND n.status = 'cancelled' AND n.attempt = c.parent_attempt))
		LIMIT ?`, limit).Scan(&ids).Error
	if err != nil {
		return nil, fmt.Errorf("error finding the sub-flow runs of cancelled runs: %w", interpretError(err))
	}
	return ids, nil
}

// OverdueRuns lists up to limit running or paused runs past their
// deadline (database time). Two sweepers may list the same run: failing
// it is a compare-and-set on its status under its lock, so it fails once.
func (s *Store) OverdueRuns(ctx context.Context, limit int) ([]string, error) {
	var ids []string
	err := s.db.WithContext(ctx).Raw(`SELECT id::text FROM runs WHERE deadline_at <= now() AND status IN ('running', 'paused')
		ORDER BY deadline_at LIMIT ?`, limit).Scan(&ids).Error
	if err != nil {
		return nil, fmt.Errorf("error claiming runs past their deadline: %w", interpretError(err))
	}
	return ids, nil
}
