package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/stitchd/stitchd/engine"
)

// pgTx implements engine.Tx over one transaction. Its statements — the
// engine's hot path — go straight to the transaction's connection, not
// through gorm's statement builder: slices are passed as Go slices, which
// pgx encodes natively in binary, and statements whose results are not
// needed before the commit are queued to share a round trip (querier).
type pgTx struct {
	q     querier
	binds *binds
	// fresh holds the rows of runs started in the transaction, queued
	// before its next statement (newRuns).
	fresh *newRuns
	// saves are run saves that mark deliveries, held back so that
	// consecutive ones go as one statement (queueSaves).
	saves []heldSave
	// written counts the rows bulk statements wrote, by ANALYZE statement
	// (analyzeAfter).
	written map[string]int
}

// raw prepares a query written with ? placeholders; call Row or Rows.
func (t *pgTx) raw(ctx context.Context, q string, args ...any) rawQuery {
	return rawQuery{t: t, ctx: ctx, q: t.binds.get(q), args: args}
}

type rawQuery struct {
	t    *pgTx
	ctx  context.Context
	q    string
	args []any
}

func (r rawQuery) Row() scanner {
	r.t.writeHeld()
	return r.t.q.row(r.ctx, r.q, r.args)
}

func (r rawQuery) Rows() (rows, error) {
	r.t.writeHeld()
	return r.t.q.query(r.ctx, r.q, r.args)
}

// execResult mirrors the two fields of gorm's result a caller reads.
type execResult struct {
	RowsAffected int64
	Error        error
}

// exec runs a statement written with ? placeholders.
func (t *pgTx) exec(ctx context.Context, q string, args ...any) execResult {
	t.writeHeld()
	n, err := t.q.exec(ctx, t.binds.get(q), args)
	return execResult{RowsAffected: n, Error: err}
}

// later queues a statement written with ? placeholders, to be sent with
// the next statement that must be answered or with COMMIT; its error
// surfaces there. scan, when set, reads its one row.
func (t *pgTx) later(q string, scan func(scanner) error, args ...any) {
	t.writeHeld()
	t.queue(q, scan, args...)
}

// queue is later without the new runs' rows first: theirs.
func (t *pgTx) queue(q string, scan func(scanner) error, args ...any) {
	t.q.later(t.binds.get(q), args, scan)
}

// write runs a statement that returns nothing the engine reads, carrying
// rows rows: queued (later) when small, at once — planned for its actual
// parameters (planFor) — when big, so a fan-out's chunks are not held in
// memory until the next round trip.
func (t *pgTx) write(ctx context.Context, rows int, q string, args ...any) error {
	if rows <= customPlanAbove {
		t.later(q, nil, args...)
		return nil
	}
	return interpretError(t.exec(ctx, q, planFor(rows, args...)...).Error)
}

// bulkChunk bounds the rows one bulk statement carries. pgx builds a
// statement's parameters in memory (text arrays, then the Bind message), so
// one statement for a big fan-out held several copies of every dispatch
// payload at once (docs/performance.md#measurements-behind-the-code).
const bulkChunk = 2000

// chunked calls fn with consecutive parts of at most bulkChunk items and
// the offset of each; nothing for no items.
// scanTexts reads a one-column text result (ids, keys) and closes it.
func scanTexts(rows rows, err error) ([]string, error) {
	if err != nil {
		return nil, interpretError(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var v string
		if err := rows.Scan(&v); err != nil {
			return nil, interpretError(err)
		}
		out = append(out, v)
	}
	return out, interpretError(rows.Err())
}

func chunked[T any](items []T, fn func(part []T, off int) error) error {
	for off := 0; off < len(items); off += bulkChunk {
		if err := fn(items[off:min(off+bulkChunk, len(items))], off); err != nil {
			return err
		}
	}
	return nil
}

// customPlanAbove: a statement carrying more rows than this is planned for
// its actual parameters, not with the connection's cached generic plan: on
// its own as an unnamed statement, in an engine transaction's pipeline as
// the cached statement under plan_cache_mode = force_custom_plan (pipe).
// A generic plan guesses 10 elements for every array parameter; for a
// 2,000-key chunk of a fan-out it chose a nested loop comparing every key
// with every row (docs/performance.md#measurements-behind-the-code).
// Planning costs a fraction of a millisecond, small against a statement of
// that size, and small statements keep their cached plans.
//
// pgx's QueryExecModeCacheDescribe: the statement's parameter types are
// described once per connection and cached, so its arrays travel in
// binary. (QueryExecModeExec, which knows no types, sent them as text:
// every JSON payload quoted and escaped by pgx and parsed back by
// Postgres, a share of stitchd's CPU in a big fan-out:
// docs/performance.md#measurements-behind-the-code.)
const customPlanAbove = 32

// planFor returns args, preceded by the option asking pgx for a custom
// plan when the statement carries more than customPlanAbove rows.
func planFor(rows int, args ...any) []any {
	if rows <= customPlanAbove {
		return args
	}
	return append([]any{pgx.QueryExecModeCacheDescribe}, args...)
}

// binds caches rebind. The engine's statements are a fixed set of
// strings, renumbered at every call otherwise (a share of stitchd's CPU in
// the 64-chain bench: docs/performance.md#measurements-behind-the-code);
// past maxBinds strings, new ones are not cached.
type binds struct {
	m sync.Map // query with ? → query with $n
	n atomic.Int32
}

const maxBinds = 4096

func (b *binds) get(q string) string {
	if b == nil {
		return rebind(q)
	}
	if v, ok := b.m.Load(q); ok {
		if s, ok := v.(string); ok {
			return s
		}
	}
	r := rebind(q)
	if b.n.Load() < maxBinds {
		if _, loaded := b.m.LoadOrStore(q, r); !loaded {
			b.n.Add(1)
		}
	}
	return r
}

// rebind numbers ? placeholders as Postgres's $1, $2, … (a ? inside a
// quoted literal is left alone).
func rebind(q string) string {
	var b strings.Builder
	b.Grow(len(q) + 16)
	n, quoted := 0, false
	for i := 0; i < len(q); i++ {
		c := q[i]
		switch {
		case c == '\'':
			quoted = !quoted
		case c == '?' && !quoted:
			n++
			b.WriteByte('$')
			b.WriteString(strconv.Itoa(n))
			continue
		}
		b.WriteByte(c)
	}
	return b.String()
}

var _ engine.Tx = (*pgTx)(nil)

const runCols = `id::text, flow_id::text, flow_version_id::text, entity_id::text, status, trigger, input, output, error,
	idempotency_key, active_nodes, failed_nodes, terminals_left, event_seq, created_at, updated_at, finished_at, deadline_at,
	parent_run_id::text, parent_key, parent_attempt, reran, started_by, compensation`

type scanner interface{ Scan(dest ...any) error }

func scanRun(row scanner) (*engine.Run, error) {
	var r engine.Run
	var entity, errMsg, idem sql.NullString
	var trigger, input, output []byte
	var finished, deadline sql.NullTime
	var status string
	var parent, parentKey, startedBy sql.NullString
	var parentAttempt sql.NullInt64
	var comp []byte
	if err := row.Scan(&r.ID, &r.FlowID, &r.FlowVersionID, &entity, &status, &trigger, &input, &output, &errMsg,
		&idem, &r.ActiveNodes, &r.FailedNodes, &r.TerminalsLeft, &r.EventSeq, &r.CreatedAt, &r.UpdatedAt, &finished,
		&deadline, &parent, &parentKey, &parentAttempt, &r.Reran, &startedBy, &comp); err != nil {
		return nil, interpretError(err)
	}
	if len(comp) > 0 {
		r.Compensation = &engine.Compensation{}
		if err := json.Unmarshal(comp, r.Compensation); err != nil {
			return nil, fmt.Errorf("error reading the compensation of run %s: %w", r.ID, err)
		}
	}
	r.StartedBy = startedBy.String
	r.ParentRunID, r.ParentKey, r.ParentAttempt = nullStr(parent), nullStr(parentKey), int(parentAttempt.Int64)
	r.DeadlineAt = nullTime(deadline)
	r.Status = engine.RunStatus(status)
	r.EntityID = nullStr(entity)
	r.Error = nullStr(errMsg)
	r.IdempotencyKey = nullStr(idem)
	r.Trigger, r.Input, r.Output = trigger, input, output
	if finished.Valid {
		t := finished.Time.UTC()
		r.FinishedAt = &t
	}
	r.CreatedAt, r.UpdatedAt = r.CreatedAt.UTC(), r.UpdatedAt.UTC()
	return &r, nil
}

func nullStr(s sql.NullString) *string {
	if !s.Valid {
		return nil
	}
	v := s.String
	return &v
}

// nodeColsAs lists the node_states columns scanNode reads, qualified
// with alias (e.g. "n.") when an UPDATE joins another relation.
func nodeColsAs(a string) string {
	return a + "key, " + a + "node_id, array_to_string(" + a + "idx, ','), " + a + "type, " + a + "status, " +
		a + "input, " + a + "output, " + a + "error, " + a + "attempt, " + a + "pending_parents, " + a + "deadline, " +
		a + "started_at, " + a + "finished_at, " + a + "updated_at, array_to_json(" + a + "taken)::text, " + a + "wake_at, " + a + "iteration, " + a + "event_name, " + a + "event_key, " + a + "child_run_id::text"
}

func scanNode(row scanner, runID string) (*engine.NodeState, error) {
	var n engine.NodeState
	var idx, typ, status string
	var input, output []byte
	var errMsg sql.NullString
	var deadline, started, finished, wake sql.NullTime
	var taken []byte
	var evName, evKey, child sql.NullString
	if err := row.Scan(&n.Key, &n.NodeID, &idx, &typ, &status, &input, &output, &errMsg, &n.Attempt,
		&n.PendingParents, &deadline, &started, &finished, &n.UpdatedAt, &taken, &wake, &n.Iteration, &evName, &evKey, &child); err != nil {
		return nil, interpretError(err)
	}
	if taken != nil {
		if err := json.Unmarshal(taken, &n.Taken); err != nil {
			return nil, fmt.Errorf("error reading the taken edges of %s: %w", n.Key, err)
		}
		if n.Taken == nil {
			n.Taken = []string{}
		}
	}
	n.RunID = runID
	n.Index = textToInts(idx)
	n.Type = engine.NodeType(typ)
	n.Status = engine.Status(status)
	n.Input, n.Output = input, output
	n.Error = nullStr(errMsg)
	n.Deadline, n.StartedAt, n.FinishedAt = nullTime(deadline), nullTime(started), nullTime(finished)
	n.WakeAt = nullTime(wake)
	n.EventName, n.EventKey = nullStr(evName), nullStr(evKey)
	n.ChildRunID = nullStr(child)
	n.UpdatedAt = n.UpdatedAt.UTC()
	return &n, nil
}

// scanNodes reads node states (size: the expected count) and closes rows.
func scanNodes(rows rows, runID string, size int) ([]engine.NodeState, error) {
	defer rows.Close()
	out := make([]engine.NodeState, 0, size)
	for rows.Next() {
		st, err := scanNode(rows, runID)
		if err != nil {
			return nil, err
		}
		out = append(out, *st)
	}
	return out, interpretError(rows.Err())
}

func nullTime(t sql.NullTime) *time.Time {
	if !t.Valid {
		return nil
	}
	v := t.Time.UTC()
	return &v
}

// lockCols is runCols with NULL for the trigger, the input and the
// compensation: LockRun leaves them out (a graph with undo nodes reads
// its compensation when it needs it, RunCompensation).
const lockCols = `id::text, flow_id::text, flow_version_id::text, entity_id::text, status, NULL::jsonb, NULL::jsonb, output,
	error, idempotency_key, active_nodes, failed_nodes, terminals_left, event_seq, created_at, updated_at, finished_at, deadline_at,
	parent_run_id::text, parent_key, parent_attempt, reran, started_by, NULL::jsonb`

func (t *pgTx) LockRun(ctx context.Context, runID string) (*engine.Run, error) {
	r, err := scanRun(t.raw(ctx, `SELECT `+lockCols+` FROM runs WHERE id = ? FOR UPDATE`, runID).Row())
	if err != nil {
		return nil, fmt.Errorf("run %s: %w", runID, err)
	}
	return r, nil
}

func (t *pgTx) LockRunLater(_ context.Context, runID string) func() (*engine.Run, error) {
	var r *engine.Run
	var err error
	t.later(`SELECT `+lockCols+` FROM runs WHERE id = ? FOR UPDATE`, func(row scanner) error {
		r, err = scanRun(row)
		if err != nil {
			err = fmt.Errorf("run %s: %w", runID, err)
		}
		if errors.Is(err, engine.ErrNotFound) {
			// No row is no failure of the transaction: the caller
			// learns it from the returned function, and the pipe's later
			// statements (another run's, in a group) are not failed.
			return nil
		}
		return err
	}, runID)
	return func() (*engine.Run, error) { return r, err }
}

func (t *pgTx) LockRuns(ctx context.Context, ids []string) ([]*engine.Run, error) {
	rows, err := t.raw(ctx, `SELECT `+lockCols+` FROM runs WHERE id = ANY(?::uuid[]) ORDER BY id FOR UPDATE`,
		planFor(len(ids), ids)...).Rows()
	if err != nil {
		return nil, interpretError(err)
	}
	defer rows.Close()
	out := make([]*engine.Run, 0, len(ids))
	for rows.Next() {
		r, err := scanRun(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, interpretError(rows.Err())
}

func (t *pgTx) RunInput(ctx context.Context, runID string) (json.RawMessage, error) {
	var in []byte
	if err := t.raw(ctx, `SELECT input FROM runs WHERE id = ?`, runID).Row().Scan(&in); err != nil {
		return nil, fmt.Errorf("run %s: %w", runID, interpretError(err))
	}
	return in, nil
}

func (t *pgTx) RunInputLater(_ context.Context, runID string) func() (json.RawMessage, error) {
	var in []byte
	var err error
	t.later(`SELECT input FROM runs WHERE id = ?`, func(row scanner) error {
		if serr := row.Scan(&in); serr != nil {
			// No row is no failure of the transaction: the lock queued
			// before it says the run is missing.
			err = fmt.Errorf("run %s: %w", runID, interpretError(serr))
		}
		return nil
	}, runID)
	return func() (json.RawMessage, error) { return in, err }
}

func (t *pgTx) AdmitRun(_ context.Context, flowID string) {
	// stitchd_admit_run (migration 45) locks the workspace's row only when
	// it has a limit: a workspace without one pays this statement alone,
	// sent with the run's insert.
	// A refusal is an error in the database (interpretError reads it), so
	// the transaction is aborted there whatever travels with it.
	t.later(`SELECT stitchd_admit_run(?::uuid)`, nil, flowID)
}

func (t *pgTx) RunByIdempotencyKey(ctx context.Context, flowID, key string) (*engine.Run, error) {
	return scanRun(t.raw(ctx, `SELECT `+runCols+` FROM runs WHERE flow_id = ? AND idempotency_key = ?`, flowID, key).Row())
}

// saveRunSQL updates a run's row; saveRunArgs are its arguments.
const saveRunSQL = `UPDATE runs SET status = ?, output = ?::jsonb, error = ?, active_nodes = ?,
		failed_nodes = ?, terminals_left = ?, event_seq = ?, updated_at = now(),
		finished_at = CASE WHEN ? IN ('running', 'paused', 'queued') THEN NULL ELSE coalesce(finished_at, now()) END
		WHERE id = ? RETURNING updated_at, finished_at`

func saveRunArgs(r *engine.Run) []any {
	return []any{string(r.Status), jsonArg(r.Output), r.Error, r.ActiveNodes, r.FailedNodes, r.TerminalsLeft, r.EventSeq,
		string(r.Status), r.ID}
}

func (t *pgTx) SaveRun(_ context.Context, r *engine.Run) error {
	if ok, err := t.saveNew(engine.RunSave{Run: r, FirstSeq: r.EventSeq + 1}); ok {
		return err
	}
	t.later(saveRunSQL, func(row scanner) error { return scanSavedRun(r, row) }, saveRunArgs(r)...)
	return nil
}

// SaveRunWithEvents marks the dispatches of s.DeliveredKeys delivered,
// appends the events with a dispatch.attempt event for each delivery not
// logged yet, and saves the run. Up to a chunk (2,000) of events and of
// delivered pairs (every step of a chain, a batch of a fan-out's
// callbacks) this is one statement, queued to travel with COMMIT; beyond,
// the marks are made first and the events written in chunks.
func (t *pgTx) SaveRunWithEvents(ctx context.Context, s engine.RunSave) error {
	if s.Relative && (len(s.DeliveredKeys) == 0 || len(s.Events) > bulkChunk || len(s.DeliveredKeys) > bulkChunk) {
		return fmt.Errorf("%w: a relative run save needs delivered pairs and at most %d events", engine.ErrInvalidRequest, bulkChunk)
	}
	if ok, err := t.saveNew(s); ok {
		return err
	}
	if len(s.Events) > bulkChunk || len(s.DeliveredKeys) > bulkChunk {
		return t.saveRunInSteps(ctx, s)
	}
	// Queued to travel with COMMIT; with many events or delivered pairs,
	// planned for its actual parameters (planFor).
	rows := max(len(s.Events), len(s.DeliveredKeys))
	r := s.Run
	types, keys, payloads, err := encodeEvents(s.Events)
	if err != nil {
		return err
	}
	if len(s.DeliveredKeys) == 0 {
		// Without delivered pairs the marking part would be planned again at
		// every call (an empty array makes a custom plan far cheaper than
		// the generic one): planning for every run started
		// (docs/performance.md#measurements-behind-the-code).
		args := append([]any{r.ID, s.FirstSeq, types, keys, payloads}, saveRunArgs(r)...)
		t.later(`WITH ev AS (`+insertEventsSQL+`) `+saveRunSQL, func(row scanner) error { return scanSavedRun(r, row) },
			planFor(rows, args...)...)
		return nil
	}
	if !s.Relative {
		// Held back: the saves of a group's runs that end together go as
		// one statement (queueSaves).
		t.hold(s, types, keys, payloads)
		return nil
	}
	q, scan, args := markAndSave(s, s.Run, types, keys, payloads)
	t.later(q, scan, args...)
	return nil
}

// markAndSave is the statement of SaveRunWithEvents for one run's save
// that marks deliveries, and how its answer is read.
// The answer is read into dst (s.Run, or the Run it is a copy of).
func markAndSave(s engine.RunSave, dst *engine.Run, types, keys, payloads []string) (string, func(scanner) error, []any) {
	r := s.Run
	rows := max(len(types), len(s.DeliveredKeys))
	// Events before DeliveredAt keep their numbers, the deliveries follow them
	// and the rest move up by the number of deliveries. Inserted in number
	// order, so a run's events take ids in their own order: the stream of
	// every run's events follows ids (web.allEvents).
	mdSQL, mdArgs := markDeliveredStmt(r.ID, s.DeliveredKeys, s.DeliveredAttempts)
	save, saveArgs := strings.Replace(saveRunSQL, "event_seq = ?", "event_seq = ? + (SELECT count(*) FROM md)", 1), saveRunArgs(r)
	first := any(s.FirstSeq)
	firstSQL := `?::bigint`
	if s.Relative {
		// Numbered after the row's event_seq, which this statement reads
		// before its own update (one snapshot), under the run's lock.
		save, saveArgs = saveRunRelativeSQL, []any{r.ActiveNodes, r.FailedNodes, r.TerminalsLeft, len(s.Events), r.ID}
		first, firstSQL = r.ID, `(SELECT event_seq + 1 FROM runs WHERE id = ?::uuid)`
	}
	args := append(append(mdArgs, r.ID, first, s.DeliveredAt,
		types, keys, payloads, r.ID, first, s.DeliveredAt), saveArgs...)
	q := `WITH md AS (` + mdSQL + `),
		ev AS (INSERT INTO run_events (run_id, seq, type, key, payload)
			SELECT * FROM (SELECT ?::uuid, ` + firstSQL + ` + ord - 1 + CASE WHEN ord > ?::int THEN (SELECT count(*) FROM md) ELSE 0 END, ty, nullif(k, ''), p::jsonb
			FROM unnest(?::text[], ?::text[], ?::text[]) WITH ORDINALITY AS u(ty, k, p, ord)
			UNION ALL
			SELECT ?::uuid, ` + firstSQL + ` + ?::int + row_number() OVER (ORDER BY key, attempt) - 1, 'dispatch.attempt', key,
				jsonb_build_object('dispatch_id', id, 'attempt', attempt, 'try', tries, 'delivered', true)
			FROM md) AS numbered WHERE ` + xidFirst + ` ORDER BY 2) ` + save + `, event_seq`
	return q, func(row scanner) error { return scanSavedRun(dst, row, &dst.EventSeq) }, planFor(rows, args...)
}

// saveRunRelativeSQL is saveRunSQL for RunSave.Relative (within
// SaveRunWithEvents' statement): the counters and the event sequence move
// by the given amounts; status, output and error stay.
const saveRunRelativeSQL = `UPDATE runs SET active_nodes = active_nodes + ?, failed_nodes = failed_nodes + ?,
		terminals_left = terminals_left + ?, event_seq = event_seq + ? + (SELECT count(*) FROM md), updated_at = now()
		WHERE id = ? RETURNING updated_at, finished_at`

// saveRunInSteps is SaveRunWithEvents for more events or delivered pairs than
// a chunk: the marks, then the events in chunks, then the run.
func (t *pgTx) saveRunInSteps(ctx context.Context, s engine.RunSave) error {
	r, events := s.Run, s.Events
	if len(s.DeliveredKeys) > 0 {
		ds, err := t.markDelivered(ctx, r.ID, s.DeliveredKeys, s.DeliveredAttempts)
		if err != nil {
			return fmt.Errorf("error marking dispatches delivered: %w", err)
		}
		if len(ds) > 0 {
			sort.Slice(ds, func(i, j int) bool {
				return ds[i].Key < ds[j].Key || ds[i].Key == ds[j].Key && ds[i].Attempt < ds[j].Attempt
			})
			evs := make([]engine.NewEvent, 0, len(events)+len(ds))
			evs = append(evs, events[:s.DeliveredAt]...)
			for _, d := range ds {
				evs = append(evs, engine.NewEvent{Type: engine.EventDispatchAttempt, Key: d.Key, Payload: map[string]any{
					"dispatch_id": d.ID, "attempt": d.Attempt, "try": d.Tries, "delivered": true}})
			}
			events = append(evs, events[s.DeliveredAt:]...)
			r.EventSeq += int64(len(ds))
		}
	}
	if len(events) == 0 {
		return t.SaveRun(ctx, r)
	}
	if len(events) > bulkChunk {
		if err := t.AppendEvents(ctx, r.ID, s.FirstSeq, events); err != nil {
			return err
		}
		return t.SaveRun(ctx, r)
	}
	types, keys, payloads, err := encodeEvents(events)
	if err != nil {
		return err
	}
	args := append([]any{r.ID, s.FirstSeq, types, keys, payloads}, saveRunArgs(r)...)
	q := `WITH ev AS (` + insertEventsSQL + `) ` + saveRunSQL
	return scanSavedRun(r, t.raw(ctx, q, planFor(len(events), args...)...).Row())
}

// scanSavedRun reads saveRunSQL's answer into r, and any further columns
// into more.
func scanSavedRun(r *engine.Run, row scanner, more ...any) error {
	var finished sql.NullTime
	if err := row.Scan(append([]any{&r.UpdatedAt, &finished}, more...)...); err != nil {
		return interpretError(err)
	}
	r.UpdatedAt = r.UpdatedAt.UTC()
	r.FinishedAt = nullTime(finished)
	return nil
}

func jsonArg(b json.RawMessage) any {
	if len(b) == 0 {
		return nil
	}
	return string(b)
}

func (t *pgTx) InsertNodes(ctx context.Context, runID string, nodes []engine.NodeState) error {
	return t.InsertStartedNodes(ctx, runID, nodes, make([]engine.BulkStart, len(nodes)))
}

func (t *pgTx) ArchiveIteration(ctx context.Context, runID string, keys []string) (map[string]int, error) {
	rows, err := t.raw(ctx, `UPDATE node_states SET key = key || '@' || iteration, updated_at = now()
		WHERE run_id = ? AND key = ANY(?::text[]) RETURNING split_part(key, '@', 1), attempt`, runID, keys).Rows()
	if err != nil {
		return nil, interpretError(err)
	}
	defer rows.Close()
	out := make(map[string]int, len(keys))
	for rows.Next() {
		var k string
		var a int
		if err := rows.Scan(&k, &a); err != nil {
			return nil, interpretError(err)
		}
		out[k] = a
	}
	if err := rows.Err(); err != nil {
		return nil, interpretError(err)
	}
	if len(out) != len(keys) {
		return nil, fmt.Errorf("%w: kept %d of the loop's %d rows", engine.ErrConflict, len(out), len(keys))
	}
	return out, nil
}

func (t *pgTx) InsertIteration(ctx context.Context, runID string, nodes []engine.NodeState) error {
	keys := make([]string, len(nodes))
	ids := make([]string, len(nodes))
	idxs := make([]string, len(nodes))
	types := make([]string, len(nodes))
	pend := make([]int64, len(nodes))
	iters := make([]int64, len(nodes))
	attempts := make([]int64, len(nodes))
	for i, n := range nodes {
		keys[i], ids[i], idxs[i], types[i] = n.Key, n.NodeID, intsToText(n.Index), string(n.Type)
		pend[i], iters[i], attempts[i] = int64(n.PendingParents), int64(n.Iteration), int64(n.Attempt)
	}
	return t.write(ctx, len(nodes), `INSERT INTO node_states (run_id, key, node_id, idx, type, status, pending_parents, iteration, attempt)
		SELECT ?, k, n, CASE WHEN i = '' THEN '{}'::int[] ELSE string_to_array(i, ',')::int[] END, ty, 'pending', p, it, a
		FROM unnest(?::text[], ?::text[], ?::text[], ?::text[], ?::int[], ?::int[], ?::int[]) AS u(k, n, i, ty, p, it, a)`,
		runID, keys, ids, idxs, types, pend, iters, attempts)
}

func (t *pgTx) InsertStartedNodes(ctx context.Context, runID string, nodes []engine.NodeState, starts []engine.BulkStart) error {
	if len(starts) != len(nodes) {
		return fmt.Errorf("error creating node states: %d starts for %d nodes", len(starts), len(nodes))
	}
	if t.addNodes(runID, nodes, starts) {
		return nil
	}
	if err := chunked(nodes, func(part []engine.NodeState, off int) error {
		return t.insertStartedNodes(ctx, runID, part, starts[off:off+len(part)])
	}); err != nil {
		return err
	}
	return t.analyzeAfter(ctx, len(nodes), `ANALYZE node_states (run_id, key, status)`)
}

func (t *pgTx) insertStartedNodes(ctx context.Context, runID string, nodes []engine.NodeState, starts []engine.BulkStart) error {
	q, args := nodeRowsInsert(runID, nil, nodes, starts)
	return t.write(ctx, len(nodes), q, args...)
}

// nodeRowsInsert is the statement writing nodes (as started by starts) of
// run runID, or of runIDs[i] each when runIDs is set.
func nodeRowsInsert(runID string, runIDs []string, nodes []engine.NodeState, starts []engine.BulkStart) (string, []any) {
	keys := make([]string, len(nodes))
	ids := make([]string, len(nodes))
	idxs := make([]string, len(nodes))
	types := make([]string, len(nodes))
	pend := make([]int64, len(nodes))
	statuses := make([]string, len(nodes))
	inputs := make([]string, len(nodes))
	secs := make([]int64, len(nodes))
	children := make([]string, len(nodes))
	for i, n := range nodes {
		keys[i], ids[i], idxs[i], types[i], pend[i] = n.Key, n.NodeID, intsToText(n.Index), string(n.Type), int64(n.PendingParents)
		statuses[i] = string(engine.StatusPending)
		if s := starts[i]; s.Status != "" {
			statuses[i], secs[i], children[i] = string(s.Status), int64(s.DeadlineSeconds), s.ChildRunID
			inputs[i] = string(s.Input)
			if len(s.Input) == 0 {
				inputs[i] = "null"
			}
		}
	}
	run, runs := "?::uuid", "'{}'::text[]"
	if runIDs != nil {
		run, runs = "r::uuid", "?::text[]"
	}
	q := `INSERT INTO node_states (run_id, key, node_id, idx, type, status, pending_parents,
			attempt, input, deadline, started_at, child_run_id)
		SELECT ` + run + `, k, n, CASE WHEN i = '' THEN '{}'::int[] ELSE string_to_array(i, ',')::int[] END, ty, st, p,
			CASE WHEN st = 'pending' THEN 0 ELSE 1 END, nullif(inp, '')::jsonb,
			CASE WHEN secs > 0 THEN now() + make_interval(secs => secs) END,
			CASE WHEN st <> 'pending' THEN now() END, nullif(c, '')::uuid
		FROM unnest(?::text[], ?::text[], ?::text[], ?::text[], ?::int[], ?::text[], ?::text[], ?::int[], ?::text[], ` + runs + `)
			AS u(k, n, i, ty, p, st, inp, secs, c, r)`
	if runIDs != nil {
		return q, []any{keys, ids, idxs, types, pend, statuses, inputs, secs, children, runIDs}
	}
	return q, []any{runID, keys, ids, idxs, types, pend, statuses, inputs, secs, children}
}

// analyzeAfterRows is how many rows the bulk statements of a transaction
// must write to a table for its planner statistics to be refreshed in it.
const analyzeAfterRows = 5000

// analyzeAfter refreshes, inside the transaction, the statistics the
// planner needs to find rows of a run, when n rows were just written. A
// big fan-out adds a run the statistics do not know: its id is estimated
// at one row, and the planner then answers "run_id = $1 AND key = ANY($2)"
// by reading every row of the run and filtering, in every later statement
// of the fan-out, its own chunked writes too
// (docs/performance.md#measurements-behind-the-code). Autovacuum's analyze
// comes too late for a fan-out that lasts seconds. ANALYZE in a
// transaction samples the transaction's own new rows; only the named
// columns are analyzed (tens of milliseconds), and the statistics become
// everyone's at commit. key is
// among them: with statistics of an earlier, smaller run, "key = ANY(128
// keys)" was estimated at half the table, and the callbacks' marking of
// their dispatches scanned all of the fan-out's rows.
func (t *pgTx) analyzeAfter(ctx context.Context, n int, stmt string) error {
	// Once per transaction and table, when the rows written so far cross
	// the threshold: a fan-out writes its rows in several calls.
	if t.written == nil {
		t.written = make(map[string]int)
	}
	before := t.written[stmt]
	t.written[stmt] = before + n
	if before >= analyzeAfterRows || before+n < analyzeAfterRows {
		return nil
	}
	if err := t.exec(ctx, stmt).Error; err != nil {
		return fmt.Errorf("error refreshing statistics: %w", interpretError(err))
	}
	return nil
}

// transitionSQL is the compare-and-set of a transition, without its
// RETURNING clause.
func transitionSQL(tr *engine.NodeTransition) (string, []any) {
	final := string(tr.Final())
	inc := 0
	if tr.NewAttempt {
		inc = 1
	}
	setOutput := tr.Output != nil
	q := `UPDATE node_states SET
		status = ?,
		attempt = attempt + ?,
		input = coalesce(?::jsonb, input),
		output = CASE WHEN ? THEN ?::jsonb WHEN ? THEN NULL ELSE output END,
		error = ?,
		deadline = CASE WHEN ? > 0 THEN now() + make_interval(secs => ?) ELSE NULL END,
		started_at = CASE WHEN ? THEN now() ELSE started_at END,
		finished_at = CASE WHEN ? IN ('completed', 'failed', 'cancelled', 'skipped') THEN now() ELSE NULL END,
		pending_parents = CASE WHEN ? THEN 0 ELSE pending_parents END,
		untaken_parents = CASE WHEN ? THEN 0 ELSE untaken_parents END,
		updated_at = now()`
	args := []any{final, inc, jsonArg(tr.Input), setOutput, jsonArg(tr.Output), tr.NewAttempt, tr.Error,
		tr.DeadlineSeconds, tr.DeadlineSeconds, tr.NewAttempt, final, tr.ClearPending, tr.ClearPending}
	if tr.Taken != nil {
		q += `, taken = ?::text[]`
		args = append(args, tr.Taken)
	}
	switch {
	case tr.Wake != nil:
		q += `, wake_at = coalesce(?::timestamptz, now() + make_interval(secs => ?))`
		args = append(args, tr.Wake.At, tr.Wake.SleepSeconds)
	case tr.From == engine.StatusSleeping:
		q += `, wake_at = NULL`
	}
	if tr.Event != nil {
		q += `, event_name = ?, event_key = ?`
		args = append(args, tr.Event.Name, tr.Event.Key)
	}
	if tr.ChildRunID != nil {
		q += `, child_run_id = ?::uuid`
		args = append(args, *tr.ChildRunID)
	}
	switch {
	case tr.RemindSeconds > 0 && tr.Final() == engine.StatusWaitingForUser:
		q += `, remind_at = now() + make_interval(secs => ?)`
		args = append(args, tr.RemindSeconds)
	case tr.From == engine.StatusWaitingForUser:
		q += `, remind_at = NULL`
	}
	switch {
	case tr.Final() == engine.StatusWaitingForUser:
		q += `, escalate_at = CASE WHEN ? > 0 THEN now() + make_interval(secs => ?) END, escalation_step = 0`
		args = append(args, tr.EscalateSeconds, tr.EscalateSeconds)
	case tr.From == engine.StatusWaitingForUser:
		q += `, escalate_at = NULL`
	}
	switch {
	case tr.Assign != nil && tr.Final() == engine.StatusWaitingForUser:
		q += `, assign_users = ?::text[], assign_groups = ?::text[]`
		args = append(args, nonNil(tr.Assign.Users), nonNil(tr.Assign.Groups))
	case tr.Final() == engine.StatusWaitingForUser:
		q += `, assign_users = NULL, assign_groups = NULL`
	}
	q += ` WHERE run_id = ? AND key = ? AND status = ? AND (? = 0 OR attempt = ?)`
	args = append(args, tr.RunID, tr.Key, string(tr.From), tr.Attempt, tr.Attempt)
	if tr.NodeID != "" {
		q += ` AND node_id = ?`
		args = append(args, tr.NodeID)
	}
	if tr.Ready != nil {
		// CountDownToReadyLater's check, carried by the join's move.
		q += ` AND ` + readyCheckSQL
		args = append(args, tr.Ready.Untaken, tr.RunID)
	}
	if tr.RunVersion != "" {
		// Locks the run (before the node's row: the order of every
		// engine transaction), so that no other statement is needed.
		q += ` AND EXISTS (SELECT 1 FROM runs WHERE id = ? AND flow_version_id = ?::uuid AND status = 'running' AND NOT reran FOR UPDATE)`
		args = append(args, tr.RunID, tr.RunVersion)
	}
	return q, args
}

func (t *pgTx) Transition(ctx context.Context, tr *engine.NodeTransition) (*engine.NodeState, error) {
	final := string(tr.Final())
	q, args := transitionSQL(tr)
	row := t.raw(ctx, q+` RETURNING `+nodeColsAs(""), args...).Row()
	st, err := scanNode(row, tr.RunID)
	if err == nil {
		return st, nil
	}
	if !isNotFound(err) {
		return nil, fmt.Errorf("error moving node %s to %s: %w", tr.Key, final, err)
	}
	cur, cerr := t.Node(ctx, tr.RunID, tr.Key)
	if cerr != nil && !isNotFound(cerr) {
		return nil, cerr
	}
	return nil, &engine.TransitionError{Key: tr.Key, Want: tr.From, Current: cur}
}

// checked scans the answer of a queued statement that divides by the rows
// it changed (count(*) / n): its division by zero, raised in the database
// so that the transaction fails even when the statement travels with
// COMMIT, is the error failed gives.
func checked(failed func() error) func(scanner) error {
	return func(row scanner) error {
		var one int
		err := row.Scan(&one)
		var pgErr *pgconn.PgError
		if errors.As(err, &pgErr) && pgErr.Code == "22012" { // division by zero: not every row changed
			return failed()
		}
		return err
	}
}

// TransitionLater queues the compare-and-set; a row it does not find in
// tr.From (with tr.Attempt) fails the transaction — in the database: the
// statement divides by the number of rows it moved, so that its error
// aborts the transaction even when it travels with COMMIT (a check of its
// answer would come after the commit). Postgres then skips what was sent
// after it, COMMIT included.
//
// Once maxQueued statements wait, they are sent: a fan-out of synchronous
// steps queues one a step, each with its input and output.
func (t *pgTx) TransitionLater(ctx context.Context, tr *engine.NodeTransition) error {
	q, args := transitionSQL(tr)
	t.later(`WITH moved AS (`+q+` RETURNING 1) SELECT 1 / count(*) FROM moved`, checked(func() error {
		return &engine.QueuedTransitionError{RunID: tr.RunID, Key: tr.Key, From: tr.From, To: tr.Final(),
			Attempt: tr.Attempt}
	}), args...)
	if t.q.queued() < maxQueued {
		return nil
	}
	if err := t.q.flush(ctx); err != nil {
		return fmt.Errorf("error sending the queued statements: %w", interpretError(err))
	}
	return nil
}

// maxQueued bounds the statements a transaction queues (TransitionLater).
const maxQueued = 1000

// SkipLater queues the compare-and-set of pending nodes keys to skipped,
// one statement for all: a switch's branches not taken — and the
// count-downs then of their successors, each as CountDownUntakenLater
// checks it. Like TransitionLater, a row not pending (or not counted
// down as assumed) fails the transaction in the database (count(*) / n
// is 0 unless every row moved).
func (t *pgTx) SkipLater(_ context.Context, runID string, keys []string, then []engine.UntakenCountDown) error {
	q := `WITH moved AS (UPDATE node_states SET status = 'skipped', error = NULL, deadline = NULL,
			finished_at = now(), updated_at = now()
		WHERE run_id = ? AND ` + keyMatch(keys) + ` AND status = 'pending' RETURNING 1)`
	args := append([]any{runID}, keyArgs(keys)...)
	sel := ` SELECT 1 / ((SELECT count(*) FROM moved) / ?)`
	tail := []any{len(keys)}
	for i, c := range then {
		q += fmt.Sprintf(`, counted%d AS (%s RETURNING 1)`, i, untakenCountDownSQL(c.Keys))
		args = append(append(append(args, c.N, c.N, runID), keyArgs(c.Keys)...), c.N)
		sel += fmt.Sprintf(` + 1 / ((SELECT count(*) FROM counted%d) / ?)`, i)
		tail = append(tail, len(c.Keys))
	}
	t.later(q+sel, checked(func() error {
		// Which part moved too few rows is not told apart: both name
		// the rows the statement changes.
		key := strings.Join(keys, ",")
		for _, c := range then {
			key += " (then counted down: " + strings.Join(c.Keys, ",") + ")"
		}
		return &engine.QueuedTransitionError{RunID: runID, Key: key, From: engine.StatusPending, To: engine.StatusSkipped}
	}), append(args, tail...)...)
	return nil
}

// untakenCountDownSQL counts the pending parents of keys down by n, all
// decided not taken, where parents are left after it (its arguments: n,
// n, the run, keyArgs(keys), n).
func untakenCountDownSQL(keys []string) string {
	return `UPDATE node_states SET pending_parents = pending_parents - ?, untaken_parents = untaken_parents + ?
		WHERE run_id = ? AND ` + keyMatch(keys) + ` AND status = 'pending' AND pending_parents > ?`
}

func (t *pgTx) CountDownUntakenLater(_ context.Context, runID string, keys []string, n int) error {
	args := append(append([]any{n, n, runID}, keyArgs(keys)...), n, len(keys))
	t.later(`WITH counted AS (`+untakenCountDownSQL(keys)+` RETURNING 1)
		SELECT 1 / (count(*) / ?) FROM counted`, checked(func() error {
		return &engine.QueuedTransitionError{RunID: runID, Key: strings.Join(keys, ","), From: engine.StatusPending,
			To: engine.StatusPending}
	}), args...)
	return nil
}

// readyCheckSQL is what a join assumed ready must be (its untaken edges
// and run id the arguments): its last parent left, that many edges not
// taken, in a run never rerun.
const readyCheckSQL = `pending_parents = 1 AND untaken_parents = ? AND NOT (SELECT reran FROM runs WHERE id = ?)`

func (t *pgTx) CountDownToReadyLater(_ context.Context, runID, key string, untaken int) error {
	t.later(`WITH counted AS (UPDATE node_states SET pending_parents = 0
		WHERE run_id = ? AND key = ? AND status = 'pending' AND `+readyCheckSQL+` RETURNING 1)
		SELECT 1 / count(*) FROM counted`, checked(func() error {
		return &engine.QueuedTransitionError{RunID: runID, Key: key, From: engine.StatusPending, To: engine.StatusPending}
	}), runID, key, untaken, runID)
	return nil
}

func (t *pgTx) Node(ctx context.Context, runID, key string) (*engine.NodeState, error) {
	st, err := scanNode(t.raw(ctx, `SELECT `+nodeColsAs("")+` FROM node_states WHERE run_id = ? AND key = ?`, runID, key).Row(), runID)
	if err != nil {
		if errors.Is(err, engine.ErrNotFound) {
			return nil, &clientError{sentinel: engine.ErrNotFound, what: "no node " + key + " in run " + runID, cause: err}
		}
		return nil, fmt.Errorf("node %s: %w", key, err)
	}
	return st, nil
}

func (t *pgTx) AddPending(ctx context.Context, runID string, keys []string, delta int) (map[string]engine.Pending, error) {
	return t.addPending(ctx, runID, keys, delta, nil)
}

func (t *pgTx) AddPendingUntaken(ctx context.Context, runID string, keys, untaken []string, delta int) (map[string]engine.Pending, error) {
	return t.addPending(ctx, runID, keys, delta, untaken)
}

// addPending adds delta to the pending parents of keys, and -delta to the
// untaken parents of those of them in untaken.
func (t *pgTx) addPending(ctx context.Context, runID string, keys []string, delta int, untaken []string) (map[string]engine.Pending, error) {
	rows, err := t.raw(ctx, `UPDATE node_states SET pending_parents = pending_parents + ?,
			untaken_parents = untaken_parents + CASE WHEN key = ANY(?::text[]) THEN ? ELSE 0 END
		WHERE run_id = ? AND `+keyMatch(keys)+` RETURNING key, pending_parents, untaken_parents, status`,
		planFor(len(keys), append([]any{delta, nonNil(untaken), -delta, runID}, keyArgs(keys)...)...)...).Rows()
	if err != nil {
		return nil, interpretError(err)
	}
	defer rows.Close()
	out := make(map[string]engine.Pending, len(keys))
	for rows.Next() {
		var k, s string
		var n, u int
		if err := rows.Scan(&k, &n, &u, &s); err != nil {
			return nil, interpretError(err)
		}
		out[k] = engine.Pending{Remaining: n, Untaken: u, Status: engine.Status(s)}
	}
	return out, interpretError(rows.Err())
}

// AddPendingLater queues the count-down as one statement answering one
// row: the counted keys, their new counts and statuses as a JSON array. Queued statements run with the
// cached plan; it is meant for a node's few successors.
func (t *pgTx) AddPendingLater(_ context.Context, runID string, keys []string, delta int) func() (map[string]engine.Pending, error) {
	var out map[string]engine.Pending
	var err error
	t.later(`WITH u AS (UPDATE node_states SET pending_parents = pending_parents + ?
		WHERE run_id = ? AND `+keyMatch(keys)+` RETURNING key, pending_parents, untaken_parents, status)
		SELECT coalesce(json_agg(json_build_object('k', key, 'n', pending_parents, 'u', untaken_parents, 's', status)), '[]')::text FROM u`,
		func(row scanner) error {
			var raw []byte
			var got []struct {
				K string        `json:"k"`
				N int           `json:"n"`
				U int           `json:"u"`
				S engine.Status `json:"s"`
			}
			if err = row.Scan(&raw); err != nil {
				err = interpretError(err)
			} else if err = json.Unmarshal(raw, &got); err != nil {
				err = fmt.Errorf("error reading counted-down nodes: %w", err)
			}
			if err != nil {
				return err
			}
			out = make(map[string]engine.Pending, len(got))
			for _, g := range got {
				out[g.K] = engine.Pending{Remaining: g.N, Untaken: g.U, Status: g.S}
			}
			return nil
		}, append([]any{delta, runID}, keyArgs(keys)...)...)
	return func() (map[string]engine.Pending, error) { return out, err }
}

// keyMatch matches node_states rows by key: "key = ?" for one key, "key
// IN (?, …)" for up to maxKeyList, else "key = ANY(?)"; keyArgs are its
// parameters. Postgres plans "key = ANY($1)" generically for ten keys,
// costlier than the custom plan for one key or a switch's three branches,
// so it never takes the generic plan and plans the statement at every
// execution, which cost about as much as the execution itself
// (docs/performance.md#measurements-behind-the-code); "key = $1" and an
// IN list of parameters have generic plans as good as any custom one.
func keyMatch(keys []string) string {
	switch {
	case len(keys) == 0:
		return `false`
	case len(keys) == 1:
		return `key = ?`
	case len(keys) <= maxKeyList:
		return `key IN (?` + strings.Repeat(`, ?`, len(keys)-1) + `)`
	}
	return `key = ANY(?::text[])`
}

// maxKeyList bounds the keys keyMatch lists one parameter each.
const maxKeyList = 8

// keyArgs are keyMatch's parameters.
func keyArgs(keys []string) []any {
	if len(keys) > maxKeyList {
		return []any{keys}
	}
	out := make([]any, len(keys))
	for i, k := range keys {
		out[i] = k
	}
	return out
}

func (t *pgTx) ResetUntaken(ctx context.Context, runID string) error {
	return t.write(ctx, 1, `UPDATE node_states SET untaken_parents = 0
		WHERE run_id = ? AND status = 'pending' AND untaken_parents <> 0`, runID)
}

func (t *pgTx) SetPending(ctx context.Context, runID, key string, n int) error {
	return t.write(ctx, 1, `UPDATE node_states SET pending_parents = ?, untaken_parents = 0 WHERE run_id = ? AND key = ?`, n, runID, key)
}

func (t *pgTx) Outputs(ctx context.Context, runID string, keys []string) (map[string]json.RawMessage, error) {
	out := make(map[string]json.RawMessage, len(keys))
	if len(keys) == 0 {
		return out, nil
	}
	rows, err := t.raw(ctx, `SELECT key, output FROM node_states WHERE run_id = ? AND `+keyMatch(keys),
		planFor(len(keys), append([]any{runID}, keyArgs(keys)...)...)...).Rows()
	if err != nil {
		return nil, interpretError(err)
	}
	defer rows.Close()
	for rows.Next() {
		var k string
		var v []byte
		if err := rows.Scan(&k, &v); err != nil {
			return nil, interpretError(err)
		}
		out[k] = v
	}
	return out, interpretError(rows.Err())
}

func (t *pgTx) NodeStates(ctx context.Context, runID string, keys []string) (map[string]*engine.NodeState, error) {
	out := make(map[string]*engine.NodeState, len(keys))
	if len(keys) == 0 {
		return out, nil
	}
	rows, err := t.raw(ctx, `SELECT `+nodeColsAs("")+` FROM node_states WHERE run_id = ? AND `+keyMatch(keys),
		planFor(len(keys), append([]any{runID}, keyArgs(keys)...)...)...).Rows()
	if err != nil {
		return nil, interpretError(err)
	}
	states, err := scanNodes(rows, runID, len(keys))
	for i := range states {
		out[states[i].Key] = &states[i]
	}
	return out, err
}

func (t *pgTx) HoldDispatches(ctx context.Context, runID string, hold bool) (int, error) {
	from, to, when := "pending", "held", "next_attempt_at"
	if !hold {
		from, to, when = "held", "pending", "now()"
	}
	res := t.exec(ctx, `UPDATE dispatches SET status = '`+to+`', next_attempt_at = `+when+`, updated_at = now()
		WHERE run_id = ? AND status = '`+from+`'`, runID)
	if res.Error != nil {
		return 0, interpretError(res.Error)
	}
	// A pulled task waiting in its queue is held by its run's status (a
	// poll passes a paused run's tasks); at resume its queues are told, so
	// that long polls wake.
	var tasks int
	var err error
	if hold {
		err = t.raw(ctx, `SELECT count(*) FROM tasks WHERE run_id = ? AND leased_by IS NULL`, runID).Row().Scan(&tasks)
	} else {
		err = t.raw(ctx, `SELECT count(*), (SELECT count(pg_notify(?, queue)) FROM (SELECT DISTINCT queue FROM tasks
			WHERE run_id = ? AND leased_by IS NULL) w) FROM tasks WHERE run_id = ? AND leased_by IS NULL`,
			TasksChannel, runID, runID).Row().Scan(&tasks, new(int))
	}
	if err != nil {
		return 0, fmt.Errorf("error counting the waiting tasks of run %s: %w", runID, interpretError(err))
	}
	if hold {
		return int(res.RowsAffected) + tasks, nil
	}
	// Fires the pause kept waiting (left for a later transaction) are due
	// again at once.
	err = t.exec(ctx, `UPDATE node_states SET wake_at = now(), updated_at = now()
		WHERE run_id = ? AND status = 'pending' AND wake_at IS NOT NULL`, runID).Error
	return int(res.RowsAffected) + tasks, interpretError(err)
}

func (t *pgTx) ChildRuns(ctx context.Context, runID string, statuses ...engine.RunStatus) ([]string, error) {
	st := make([]string, len(statuses))
	for i, s := range statuses {
		st[i] = string(s)
	}
	ids, err := scanTexts(t.raw(ctx, `SELECT id::text FROM runs WHERE parent_run_id = ? AND status = ANY(?::text[]) ORDER BY id`,
		runID, st).Rows())
	if err != nil {
		return nil, fmt.Errorf("error listing the sub-flow runs of run %s: %w", runID, err)
	}
	return ids, nil
}

func (t *pgTx) StartedNodeIDs(ctx context.Context, runID string) ([]string, error) {
	return scanTexts(t.raw(ctx, `SELECT DISTINCT node_id FROM node_states WHERE run_id = ? AND status <> 'pending' ORDER BY node_id`,
		runID).Rows())
}

func (t *pgTx) DeletePendingNodes(ctx context.Context, runID string, nodeIDs []string) error {
	if len(nodeIDs) == 0 {
		return nil
	}
	return interpretError(t.exec(ctx, `DELETE FROM node_states WHERE run_id = ? AND node_id = ANY(?::text[]) AND status = 'pending'`,
		runID, nodeIDs).Error)
}

func (t *pgTx) SetRunVersion(ctx context.Context, runID, versionID string) error {
	return t.write(ctx, 1, `UPDATE runs SET flow_version_id = ?::uuid WHERE id = ?`, versionID, runID)
}

func (t *pgTx) ResetNodes(ctx context.Context, runID string, nodes []engine.ResetNode) error {
	keys := make([]string, len(nodes))
	pend := make([]int64, len(nodes))
	for i, n := range nodes {
		keys[i], pend[i] = n.Key, int64(n.PendingParents)
	}
	return interpretError(t.exec(ctx, `WITH r AS (UPDATE runs SET reran = true WHERE id = ? AND NOT reran)
		UPDATE node_states n SET status = 'pending', output = NULL, error = NULL, taken = NULL,
			deadline = NULL, wake_at = NULL, remind_at = NULL, escalate_at = NULL, event_name = NULL, event_key = NULL, started_at = NULL,
			finished_at = NULL, pending_parents = u.p, untaken_parents = 0, updated_at = now()
		FROM unnest(?::text[], ?::int[]) AS u(k, p)
		WHERE n.run_id = ? AND n.key = u.k`, runID, keys, pend, runID).Error)
}

func (t *pgTx) DeleteInstances(ctx context.Context, runID string, nodeIDs []string, idx []int) (int, error) {
	prefix := intsToText(idx)
	const match = `run_id = ? AND node_id = ANY(?::text[]) AND
		idx[1:?] = (CASE WHEN ? = '' THEN '{}'::int[] ELSE string_to_array(?, ',')::int[] END)`
	var active string
	err := t.raw(ctx, `SELECT coalesce(min(key || ' is ' || status), '') FROM node_states WHERE `+match+`
		AND status IN ('running', 'waiting_for_user', 'sleeping', 'waiting_for_event')`,
		runID, nodeIDs, len(idx), prefix, prefix).Row().Scan(&active)
	if err != nil {
		return 0, interpretError(err)
	}
	if active != "" {
		return 0, fmt.Errorf("%w: node %s; wait for it, or cancel the run", engine.ErrConflict, active)
	}
	var failed int
	// Their outbox rows go too (each finished): the new fan-out's
	// instances take the same keys, from attempt 1.
	err = t.raw(ctx, `WITH gone AS (DELETE FROM node_states WHERE `+match+` RETURNING key, status, taken),
			sent AS (DELETE FROM dispatches d USING gone WHERE d.run_id = ? AND d.key = gone.key)
		SELECT count(*) FILTER (WHERE status = 'failed' AND taken IS NULL) FROM gone`,
		runID, nodeIDs, len(idx), prefix, prefix, runID).Row().Scan(&failed)
	return failed, interpretError(err)
}

func (t *pgTx) InsertNotifications(ctx context.Context, ns []engine.Notification) error {
	return chunked(ns, func(part []engine.Notification, _ int) error { return t.insertNotifications(ctx, part) })
}

func (t *pgTx) insertNotifications(ctx context.Context, ns []engine.Notification) error {
	ids := make([]string, len(ns))
	types := make([]string, len(ns))
	runs := make([]string, len(ns))
	payloads := make([]string, len(ns))
	urls := make([]string, len(ns))
	for i, n := range ns {
		ids[i], types[i], runs[i], payloads[i], urls[i] = n.ID, n.Type, n.RunID, string(n.Payload), n.URL
	}
	return t.write(ctx, len(ns), `INSERT INTO notifications (id, type, run_id, payload, url)
		SELECT i::uuid, ty, r::uuid, p::jsonb, nullif(w, '') FROM unnest(?::text[], ?::text[], ?::text[], ?::text[], ?::text[]) AS u(i, ty, r, p, w)`,
		ids, types, runs, payloads, urls)
}

func (t *pgTx) EscalationStep(ctx context.Context, runID, key string) (int, error) {
	var step int
	err := t.raw(ctx, `SELECT escalation_step FROM node_states WHERE run_id = ? AND key = ?`, runID, key).Row().Scan(&step)
	if err != nil {
		return 0, fmt.Errorf("node %s: %w", key, interpretError(err))
	}
	return step, nil
}

func (t *pgTx) SetEscalation(ctx context.Context, runID, key string, step, seconds int) error {
	return interpretError(t.exec(ctx, `UPDATE node_states SET escalation_step = ?,
		escalate_at = CASE WHEN ? > 0 THEN now() + make_interval(secs => ?) END
		WHERE run_id = ? AND key = ?`, step, seconds, seconds, runID, key).Error)
}

func (t *pgTx) SetRemindAt(ctx context.Context, runID, key string, seconds int) error {
	return interpretError(t.exec(ctx, `UPDATE node_states SET remind_at = CASE WHEN ? > 0 THEN now() + make_interval(secs => ?) END
		WHERE run_id = ? AND key = ?`, seconds, seconds, runID, key).Error)
}

func (t *pgTx) ReadyNodes(ctx context.Context, runID string) ([]engine.NodeState, error) {
	rows, err := t.raw(ctx, `SELECT `+nodeColsAs("")+` FROM node_states WHERE run_id = ?
		AND (status = 'pending' OR (status = 'failed' AND type = 'Collector' AND taken IS NULL))
		AND pending_parents = 0 AND strpos(key, '@') = 0 AND (status <> 'pending' OR wake_at IS NULL) ORDER BY key`, runID).Rows()
	if err != nil {
		return nil, interpretError(err)
	}
	return scanNodes(rows, runID, 0)
}

func (t *pgTx) TakeEvent(ctx context.Context, runID string, w engine.EventWait) (*engine.TakenEvent, error) {
	if err := t.exec(ctx, `SELECT pg_advisory_xact_lock(hashtextextended(? || chr(31) || ?, 0))`, w.Name, w.Key).Error; err != nil {
		return nil, interpretError(err)
	}
	var ev engine.TakenEvent
	var payload []byte
	err := t.raw(ctx, `UPDATE events SET consumed_at = now(), delivered = delivered + 1
		WHERE id = (SELECT id FROM events WHERE workspace = (SELECT workspace FROM runs WHERE id = ?) AND name = ? AND key = ?
			AND consumed_at IS NULL AND expires_at > now() ORDER BY created_at, id LIMIT 1 FOR UPDATE)
		RETURNING id, payload`, runID, w.Name, w.Key).Row().Scan(&ev.ID, &payload)
	if isNotFound(interpretError(err)) {
		return nil, nil
	}
	if err != nil {
		return nil, interpretError(err)
	}
	ev.Payload = payload
	return &ev, nil
}

func (t *pgTx) EventDelivered(ctx context.Context, eventID, runID, key string) error {
	return interpretError(t.exec(ctx, `DELETE FROM event_deliveries WHERE event_id = ? AND run_id = ? AND key = ?`,
		eventID, runID, key).Error)
}

func (t *pgTx) FailActiveNodes(ctx context.Context, runID, msg string) ([]string, error) {
	keys, err := scanTexts(t.raw(ctx, `UPDATE node_states SET status = 'failed', error = ?, deadline = NULL, wake_at = NULL,
		finished_at = now(), updated_at = now()
		WHERE run_id = ? AND status IN ('running', 'waiting_for_user', 'sleeping', 'waiting_for_event') RETURNING key`, msg, runID).Rows())
	if err != nil {
		return nil, err
	}
	err = t.exec(ctx, `UPDATE dispatches SET status = 'cancelled', locked_until = NULL, updated_at = now()
		WHERE run_id = ? AND status IN ('pending', 'sending', 'held')`, runID).Error
	if err != nil {
		return nil, interpretError(err)
	}
	// Fires left for a later transaction (engine.Config.MaxFirings) are
	// given up with the run: they stay pending, no longer due.
	err = t.exec(ctx, `UPDATE node_states SET wake_at = NULL, updated_at = now()
		WHERE run_id = ? AND status = 'pending' AND wake_at IS NOT NULL`, runID).Error
	return keys, interpretError(err)
}

func (t *pgTx) SetTaken(ctx context.Context, runID, key string, taken []string, output json.RawMessage) error {
	if taken == nil {
		taken = []string{}
	}
	res := t.exec(ctx, `UPDATE node_states SET taken = ?::text[], output = ?, updated_at = now()
		WHERE run_id = ? AND key = ? AND status = 'failed' AND taken IS NULL`, taken, jsonArg(output), runID, key)
	if res.Error != nil {
		return interpretError(res.Error)
	}
	if res.RowsAffected != 1 {
		return fmt.Errorf("%w: node %s is not an unhandled failure", engine.ErrConflict, key)
	}
	return nil
}

func (t *pgTx) EntityOf(ctx context.Context, entityID string) (map[string]any, error) {
	var raw []byte
	err := t.raw(ctx, `SELECT json_build_object('id', id, 'board_id', board_id, 'type', type, 'name', name,
		'email', email, 'metadata', metadata, 'section_id', section_id)::text FROM entities WHERE id = ?`, entityID).Row().Scan(&raw)
	if err != nil {
		return nil, fmt.Errorf("error loading entity %s: %w", entityID, interpretError(err))
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, fmt.Errorf("error decoding entity %s: %w", entityID, err)
	}
	return m, nil
}

func (t *pgTx) RunVariables(ctx context.Context, runID string) (json.RawMessage, error) {
	var raw []byte
	if err := t.raw(ctx, `SELECT variables::text FROM runs WHERE id = ?`, runID).Row().Scan(&raw); err != nil {
		return nil, fmt.Errorf("error loading the variables of run %s: %w", runID, interpretError(err))
	}
	return raw, nil
}

func (t *pgTx) SetRunVariables(ctx context.Context, runID string, vars json.RawMessage) error {
	if err := t.exec(ctx, `UPDATE runs SET variables = variables || ?::jsonb WHERE id = ?`, string(vars), runID).Error; err != nil {
		return fmt.Errorf("error setting the variables of run %s: %w", runID, interpretError(err))
	}
	return nil
}

func (t *pgTx) ItemStates(ctx context.Context, runID string, nodeIDs []string, prefix []int) ([]engine.NodeState, error) {
	p := make([]int64, len(prefix))
	for i, v := range prefix {
		p[i] = int64(v)
	}
	rows, err := t.raw(ctx, `SELECT `+nodeColsAs("")+` FROM node_states
		WHERE run_id = ? AND node_id = ANY(?::text[]) AND cardinality(idx) = ? AND idx[1:?] = ?::int[]
			AND strpos(key, '@') = 0
		ORDER BY idx, node_id`, runID, nodeIDs, len(prefix)+1, len(prefix), p).Rows()
	if err != nil {
		return nil, interpretError(err)
	}
	return scanNodes(rows, runID, 0)
}

func (t *pgTx) ItemOutputs(ctx context.Context, runID, nodeID, target string, prefix []int) (json.RawMessage, error) {
	p := make([]int64, len(prefix))
	for i, v := range prefix {
		p[i] = int64(v)
	}
	var out []byte
	// An item whose edge to target was not taken (skipped, or a branch
	// that went elsewhere) contributes null. A loop's earlier iterations (kept as
	// <key>@<n>) are not items.
	err := t.raw(ctx, `SELECT coalesce(json_agg(CASE WHEN (taken IS NULL AND status = 'completed') OR ? = ANY(taken)
		THEN coalesce(output, 'null'::jsonb) ELSE 'null'::jsonb END ORDER BY idx), '[]')::text FROM node_states
		WHERE run_id = ? AND node_id = ? AND cardinality(idx) = ? AND idx[1:?] = ?::int[]
			AND strpos(key, '@') = 0`,
		target, runID, nodeID, len(prefix)+1, len(prefix), p).Row().Scan(&out)
	if err != nil {
		return nil, fmt.Errorf("error collecting the outputs of %s: %w", nodeID, interpretError(err))
	}
	return out, nil
}

func (t *pgTx) FirstFailure(ctx context.Context, runID string) (string, error) {
	var msg string
	err := t.raw(ctx, `SELECT 'node ' || key || ' failed: ' || coalesce(error, '') FROM node_states
		WHERE run_id = ? AND status = 'failed' AND taken IS NULL ORDER BY finished_at, key LIMIT 1`, runID).Row().Scan(&msg)
	if isNotFound(interpretError(err)) {
		return "a node failed", nil
	}
	return msg, interpretError(err)
}

func (t *pgTx) InsertDispatch(ctx context.Context, d *engine.Dispatch) error {
	return t.InsertDispatches(ctx, []*engine.Dispatch{d})
}

func (t *pgTx) ExtendDeadline(ctx context.Context, runID, key string, attempt, seconds int) (bool, error) {
	res := t.exec(ctx, `UPDATE node_states SET deadline = now() + make_interval(secs => ?), updated_at = now()
		WHERE run_id = ? AND key = ? AND status = 'running' AND attempt = ?`, seconds, runID, key, attempt)
	return res.RowsAffected == 1, interpretError(res.Error)
}

func (t *pgTx) LockEntityRuns(ctx context.Context, flowID, entityID string) error {
	return interpretError(t.exec(ctx, `SELECT pg_advisory_xact_lock(hashtextextended('entity-runs:' || ? || ':' || ?, 0))`,
		flowID, entityID).Error)
}

func (t *pgTx) ActiveEntityRun(ctx context.Context, flowID, entityID string) (string, error) {
	ids, err := scanTexts(t.raw(ctx, `SELECT id::text FROM runs WHERE entity_id = ? AND flow_id = ?
		AND status IN ('running', 'paused', 'queued') ORDER BY created_at, id LIMIT 1`, entityID, flowID).Rows())
	if err != nil || len(ids) == 0 {
		return "", err
	}
	return ids[0], nil
}

func (t *pgTx) NextQueuedRun(ctx context.Context, flowID, entityID, ending string) (string, error) {
	ids, err := scanTexts(t.raw(ctx, `SELECT id::text FROM runs WHERE entity_id = ? AND flow_id = ? AND status = 'queued'
			AND NOT EXISTS (SELECT 1 FROM runs a WHERE a.entity_id = ? AND a.flow_id = ? AND a.status IN ('running', 'paused')
				AND a.id <> ?)
		ORDER BY created_at, id LIMIT 1`, entityID, flowID, entityID, flowID, ending).Rows())
	if err != nil || len(ids) == 0 {
		return "", err
	}
	return ids[0], nil
}

func (t *pgTx) CancelNodes(ctx context.Context, runID string) ([]engine.CancelledNode, error) {
	from := engine.AllowedFrom(engine.StatusCancelled)
	fs := make([]string, len(from))
	for i, s := range from {
		fs[i] = string(s)
	}
	rows, err := t.raw(ctx, `WITH was AS (SELECT key, status FROM node_states WHERE run_id = ? AND status = ANY(?::text[])
			AND NOT (status = 'failed' AND taken IS NOT NULL) FOR UPDATE)
		UPDATE node_states n SET status = 'cancelled', deadline = NULL, finished_at = now(), updated_at = now()
		FROM was WHERE n.run_id = ? AND n.key = was.key RETURNING n.key, n.node_id, was.status, n.attempt`,
		runID, fs, runID).Rows()
	if err != nil {
		return nil, interpretError(err)
	}
	defer rows.Close()
	var nodes []engine.CancelledNode
	for rows.Next() {
		var c engine.CancelledNode
		if err := rows.Scan(&c.Key, &c.NodeID, &c.Was, &c.Attempt); err != nil {
			return nil, interpretError(err)
		}
		nodes = append(nodes, c)
	}
	if err := rows.Err(); err != nil {
		return nil, interpretError(err)
	}
	// Rows being sent are dropped too: the claimer's outcome then finds the
	// row no longer its own and changes nothing.
	err = t.exec(ctx, `UPDATE dispatches SET status = 'cancelled', locked_until = NULL, updated_at = now()
		WHERE run_id = ? AND status IN ('pending', 'sending', 'held')`, runID).Error
	return nodes, interpretError(err)
}

func (t *pgTx) RunCompensation(ctx context.Context, runID string) (*engine.Compensation, error) {
	var raw []byte
	if err := t.raw(ctx, `SELECT compensation FROM runs WHERE id = ?`, runID).Row().Scan(&raw); err != nil {
		return nil, fmt.Errorf("run %s: %w", runID, interpretError(err))
	}
	if len(raw) == 0 {
		return nil, nil
	}
	var c engine.Compensation
	if err := json.Unmarshal(raw, &c); err != nil {
		return nil, fmt.Errorf("error reading the compensation of run %s: %w", runID, err)
	}
	return &c, nil
}

func (t *pgTx) SetRunCompensation(_ context.Context, runID string, c *engine.Compensation) error {
	b, _ := json.Marshal(c) // plain fields always encode
	t.later(`UPDATE runs SET compensation = ?::jsonb WHERE id = ?`, nil, string(b), runID)
	return nil
}

func (t *pgTx) CompletionOrder(ctx context.Context, runID string, keys []string) (map[string]int64, error) {
	rows, err := t.raw(ctx, `SELECT key, max(seq) FROM run_events WHERE run_id = ? AND type = 'node.status'
		AND key = ANY(?::text[]) AND payload->>'status' = 'completed' GROUP BY key`, runID, keys).Rows()
	if err != nil {
		return nil, interpretError(err)
	}
	defer rows.Close()
	out := make(map[string]int64, len(keys))
	for rows.Next() {
		var k string
		var seq int64
		if err := rows.Scan(&k, &seq); err != nil {
			return nil, interpretError(err)
		}
		out[k] = seq
	}
	return out, interpretError(rows.Err())
}

func (t *pgTx) SetRunResponse(ctx context.Context, runID string, a *engine.CallerAnswer) (bool, error) {
	b, _ := json.Marshal(a) // plain fields always encode
	res := t.exec(ctx, `UPDATE runs SET response = ?::jsonb WHERE id = ? AND response IS NULL`, string(b), runID)
	if res.Error != nil {
		return false, interpretError(res.Error)
	}
	return res.RowsAffected == 1, nil
}

func (t *pgTx) CancelBranches(ctx context.Context, runID string, nodeIDs []string, prefix []int) ([]engine.CancelledNode, error) {
	p := make([]int64, len(prefix))
	for i, v := range prefix {
		p[i] = int64(v)
	}
	rows, err := t.raw(ctx, `WITH was AS (SELECT key, status, (status = 'pending' AND wake_at IS NOT NULL) AS deferred
			FROM node_states WHERE run_id = ? AND node_id = ANY(?::text[]) AND strpos(key, '@') = 0
			AND idx[1:cardinality(?::int[])] = ?::int[]
			AND status IN ('pending', 'running', 'failed', 'waiting_for_user', 'sleeping', 'waiting_for_event')
			AND NOT (status = 'failed' AND taken IS NOT NULL) FOR UPDATE)
		UPDATE node_states n SET status = CASE WHEN was.status = 'pending' THEN 'skipped' ELSE 'cancelled' END,
			deadline = NULL, wake_at = NULL, finished_at = now(), updated_at = now()
		FROM was WHERE n.run_id = ? AND n.key = was.key RETURNING n.key, n.node_id, was.status, n.attempt, was.deferred`,
		runID, nodeIDs, p, p, runID).Rows()
	if err != nil {
		return nil, interpretError(err)
	}
	defer rows.Close()
	var nodes []engine.CancelledNode
	var keys []string
	for rows.Next() {
		var c engine.CancelledNode
		if err := rows.Scan(&c.Key, &c.NodeID, &c.Was, &c.Attempt, &c.Deferred); err != nil {
			return nil, interpretError(err)
		}
		nodes = append(nodes, c)
		keys = append(keys, c.Key)
	}
	if err := rows.Err(); err != nil {
		return nil, interpretError(err)
	}
	if len(keys) == 0 {
		return nil, nil
	}
	// Rows being sent are dropped too, as on a run's cancel.
	err = t.exec(ctx, `UPDATE dispatches SET status = 'cancelled', locked_until = NULL, updated_at = now()
		WHERE run_id = ? AND key = ANY(?::text[]) AND status IN ('pending', 'sending', 'held')`, runID, keys).Error
	return nodes, interpretError(err)
}

func (t *pgTx) AppendEvents(ctx context.Context, runID string, firstSeq int64, events []engine.NewEvent) error {
	return chunked(events, func(part []engine.NewEvent, off int) error {
		return t.appendEvents(ctx, runID, firstSeq+int64(off), part)
	})
}

// insertEventsSQL appends events (run id, first sequence number, then
// types, keys and JSON payloads as arrays). No NOTIFY here: it would
// serialize commits (see Notifier); the process notifies after commit.
// The filter gives the transaction its id before the first event takes an
// id from the sequence (xidFirst).
const insertEventsSQL = `INSERT INTO run_events (run_id, seq, type, key, payload)
		SELECT ?, ? + ord - 1, ty, nullif(k, ''), p::jsonb
		FROM unnest(?::text[], ?::text[], ?::text[]) WITH ORDINALITY AS u(ty, k, p, ord) WHERE ` + xidFirst

// xidFirst, as a statement's filter, makes sure its transaction has a
// transaction id before the statement inserts an event (and takes its id
// from the sequence): the stream of every run's events proves event ids
// final by transaction ids (store.EventIDBound), and a transaction that
// took an event id before its own could be missed. Evaluated once, before
// the first row.
const xidFirst = `pg_current_xact_id() IS NOT NULL`

func encodeEvents(events []engine.NewEvent) (types, keys, payloads []string, err error) {
	types = make([]string, len(events))
	keys = make([]string, len(events))
	payloads = make([]string, len(events))
	for i, e := range events {
		types[i], keys[i] = e.Type, e.Key
		p := e.Payload
		if p == nil {
			p = struct{}{}
		}
		b, err := json.Marshal(p)
		if err != nil {
			return nil, nil, nil, fmt.Errorf("error encoding %s event: %w", e.Type, err)
		}
		payloads[i] = string(b)
	}
	return types, keys, payloads, nil
}

func (t *pgTx) appendEvents(ctx context.Context, runID string, firstSeq int64, events []engine.NewEvent) error {
	types, keys, payloads, err := encodeEvents(events)
	if err != nil {
		return err
	}
	return t.write(ctx, len(events), insertEventsSQL, runID, firstSeq, types, keys, payloads)
}

// EventsChannel is the NOTIFY channel carrying the id of a run with new events.
const EventsChannel = "stitchd_events"

func isNotFound(err error) bool { return err != nil && errors.Is(err, engine.ErrNotFound) }

func (t *pgTx) UpdateDispatches(ctx context.Context, us []engine.DispatchUpdate) (int, error) {
	ids := make([]string, len(us))
	statuses := make([]string, len(us))
	errs := make([]string, len(us))
	delays := make([]int64, len(us))
	tries := make([]int64, len(us))
	for i, u := range us {
		ids[i], statuses[i], errs[i], delays[i], tries[i] = u.ID, u.Status, u.LastError, u.RetryInMs, int64(u.Tries)
	}
	// Only a row still claimed by the try takes its outcome: a callback may
	// have marked it delivered, or another claim taken it over, meanwhile.
	// A retry of a paused run's delivery waits, held, for the run to
	// resume (the EXISTS is evaluated for retries only).
	res := t.exec(ctx, `UPDATE dispatches d SET status = CASE WHEN u.st = 'pending'
			AND EXISTS (SELECT 1 FROM runs r WHERE r.id = d.run_id AND r.status = 'paused') THEN 'held' ELSE u.st END,
		last_error = nullif(u.err, ''),
		locked_until = NULL, next_attempt_at = now() + make_interval(secs => u.ms::float8 / 1000), updated_at = now()
		FROM unnest(?::text[], ?::text[], ?::text[], ?::bigint[], ?::int[]) AS u(id, st, err, ms, tries)
		WHERE d.id = u.id::uuid AND `+isSending+` AND d.tries = u.tries`,
		planFor(len(us), ids, statuses, errs, delays, tries)...)
	return int(res.RowsAffected), interpretError(res.Error)
}

func (t *pgTx) BulkStart(ctx context.Context, runID string, starts []engine.BulkStart) (int, error) {
	n := 0
	err := chunked(starts, func(part []engine.BulkStart, _ int) error {
		m, err := t.bulkStart(ctx, runID, part)
		n += m
		return err
	})
	return n, err
}

func (t *pgTx) bulkStart(ctx context.Context, runID string, starts []engine.BulkStart) (int, error) {
	keys := make([]string, len(starts))
	inputs := make([]string, len(starts))
	statuses := make([]string, len(starts))
	secs := make([]int64, len(starts))
	children := make([]string, len(starts))
	for i, s := range starts {
		keys[i], statuses[i], secs[i], children[i] = s.Key, string(s.Status), int64(s.DeadlineSeconds), s.ChildRunID
		inputs[i] = string(s.Input)
		if len(s.Input) == 0 {
			inputs[i] = "null"
		}
	}
	res := t.exec(ctx, `UPDATE node_states n SET status = u.st, attempt = n.attempt + 1, input = u.inp::jsonb,
		deadline = CASE WHEN u.secs > 0 THEN now() + make_interval(secs => u.secs) ELSE NULL END,
		error = NULL, started_at = now(), finished_at = NULL, updated_at = now(), child_run_id = coalesce(nullif(u.c, '')::uuid, n.child_run_id)
		FROM unnest(?::text[], ?::text[], ?::text[], ?::int[], ?::text[]) AS u(k, inp, st, secs, c)
		WHERE n.run_id = ? AND n.key = ANY(?::text[]) AND n.key = u.k AND n.status = 'pending'`,
		planFor(len(starts), keys, inputs, statuses, secs, children, runID, keys)...)
	return int(res.RowsAffected), interpretError(res.Error)
}

func (t *pgTx) InsertDispatches(ctx context.Context, ds []*engine.Dispatch) error {
	if t.addDispatches(ds) {
		return nil
	}
	if err := chunked(ds, func(part []*engine.Dispatch, _ int) error { return t.insertDispatches(ctx, part) }); err != nil {
		return err
	}
	return t.analyzeAfter(ctx, len(ds), `ANALYZE dispatches (run_id, key, status)`)
}

func (t *pgTx) insertDispatches(ctx context.Context, ds []*engine.Dispatch) error {
	for _, d := range ds {
		if d.Queue != "" {
			return t.insertSplittingTasks(ctx, ds)
		}
	}
	for i, d := range ds {
		if d.Request != nil {
			return t.insertWithRequests(ctx, ds, i)
		}
	}
	return t.insertCallbacks(ctx, ds)
}

// insertWithRequests writes rows of which some, from first on, are
// request/response deliveries (engine.DispatchHTTP): those with one
// statement, the worker dispatches with another.
func (t *pgTx) insertWithRequests(ctx context.Context, ds []*engine.Dispatch, first int) error {
	cbs := ds[:first:first]
	var reqs []*engine.Dispatch
	for _, d := range ds[first:] {
		if d.Request != nil {
			reqs = append(reqs, d)
		} else {
			cbs = append(cbs, d)
		}
	}
	if len(cbs) > 0 {
		if err := t.insertCallbacks(ctx, cbs); err != nil {
			return err
		}
	}
	ids := make([]string, len(reqs))
	keys := make([]string, len(reqs))
	urls := make([]string, len(reqs))
	requests := make([]string, len(reqs))
	bodies := make([][]byte, len(reqs))
	attempts := make([]int64, len(reqs))
	tries := make([]int64, len(reqs))
	delays := make([]int64, len(reqs))
	claims := make([]float64, len(reqs))
	for i, d := range reqs {
		r, _ := json.Marshal(d.Request) // a struct of strings: cannot fail
		ids[i], keys[i], urls[i], requests[i], attempts[i] = d.ID, d.Key, d.URL, string(r), int64(d.Attempt)
		bodies[i] = d.Payload
		if bodies[i] == nil {
			bodies[i] = []byte{}
		}
		tries[i], delays[i], claims[i] = int64(max(d.MaxTries, 1)), d.DelayMs, d.ClaimSeconds
	}
	return t.write(ctx, len(reqs), `INSERT INTO dispatches (id, run_id, key, attempt, url, payload, kind, request, body,
		status, max_tries, tries, locked_until, next_attempt_at, workspace)
		SELECT u.id::uuid, ?, u.k, u.a, u.url, 'null'::jsonb, 'request', u.r::jsonb, u.b,
			CASE WHEN u.c > 0 THEN 'sending' ELSE 'pending' END, u.mt,
			CASE WHEN u.c > 0 THEN 1 ELSE 0 END,
			CASE WHEN u.c > 0 THEN clk.at + make_interval(secs => u.c) END,
			CASE WHEN u.c > 0 THEN clk.at + make_interval(secs => u.c)
				ELSE now() + make_interval(secs => u.ms::float8 / 1000) END,
			coalesce(nullif(?, ''), (SELECT rw.workspace FROM runs rw WHERE rw.id = ?::uuid))
		FROM unnest(?::text[], ?::text[], ?::int[], ?::text[], ?::text[], ?::bytea[], ?::int[], ?::bigint[], ?::float8[])
			AS u(id, k, a, url, r, b, mt, ms, c), (SELECT clock_timestamp() AS at) clk`,
		reqs[0].RunID, reqs[0].Workspace, reqs[0].RunID, ids, keys, attempts, urls, requests, bodies, tries, delays, claims)
}

// insertCallbacks writes worker dispatches.
func (t *pgTx) insertCallbacks(ctx context.Context, ds []*engine.Dispatch) error {
	q, args := callbacksInsert(ds)
	return t.write(ctx, len(ds), q, args...)
}

// callbacksInsert is the statement writing worker dispatches: of one run
// (the hot path: a chain's next step, a fan-out's items), or of several
// (newRuns: sub-flow runs started together), with a run id per row.
func callbacksInsert(ds []*engine.Dispatch) (string, []any) {
	ids := make([]string, len(ds))
	keys := make([]string, len(ds))
	urls := make([]string, len(ds))
	payloads := make([]string, len(ds))
	attempts := make([]int64, len(ds))
	tries := make([]int64, len(ds))
	delays := make([]int64, len(ds))
	claims := make([]float64, len(ds))
	var runs []string
	for i, d := range ds {
		ids[i], keys[i], urls[i], payloads[i], attempts[i] = d.ID, d.Key, d.URL, string(d.Payload), int64(d.Attempt)
		tries[i], delays[i], claims[i] = int64(max(d.MaxTries, 1)), d.DelayMs, d.ClaimSeconds
		if d.RunID != ds[0].RunID && runs == nil {
			runs = make([]string, len(ds))
			for j := range ds {
				runs[j] = ds[j].RunID
			}
		}
	}
	// A row carries its run's workspace (ClaimDue's fairness): the
	// engine's (its graph's) for the hot path's one run, read from the
	// run when it is not known, and per row for several runs.
	run, ws, runArray, runCol := "?", "coalesce(nullif(?, ''), (SELECT rw.workspace FROM runs rw WHERE rw.id = ?::uuid))", "", ""
	args := []any{ds[0].RunID, ds[0].Workspace, ds[0].RunID, ids, keys, attempts, urls, payloads, tries, delays, claims}
	if runs != nil {
		run, ws, runArray, runCol = "u.r::uuid", "(SELECT rw.workspace FROM runs rw WHERE rw.id = u.r::uuid)", ", ?::text[]", ", r"
		args = append(args[3:], runs)
	}
	// A claimed row is written as being sent (first try) by this process
	// until its lease ends; others wait for the next poll. The lease runs
	// from the statement (clock_timestamp), not from the transaction's
	// start (now()): a transaction shared by a group of runs, or one
	// writing a large fan-out, may have begun before the engine noted the
	// time its claims' leases start from (ClaimedDispatch.LeasedAt).
	return `INSERT INTO dispatches (id, run_id, key, attempt, url, payload, status,
		max_tries, tries, locked_until, next_attempt_at, workspace)
		SELECT u.id::uuid, ` + run + `, u.k, u.a, u.url, u.p::jsonb, CASE WHEN u.c > 0 THEN 'sending' ELSE 'pending' END, u.mt,
			CASE WHEN u.c > 0 THEN 1 ELSE 0 END,
			CASE WHEN u.c > 0 THEN clk.at + make_interval(secs => u.c) END,
			CASE WHEN u.c > 0 THEN clk.at + make_interval(secs => u.c)
				ELSE now() + make_interval(secs => u.ms::float8 / 1000) END,
			coalesce(` + ws + `, 'default')
		FROM unnest(?::text[], ?::text[], ?::int[], ?::text[], ?::text[], ?::int[], ?::bigint[], ?::float8[]` + runArray + `)
			AS u(id, k, a, url, p, mt, ms, c` + runCol + `), (SELECT clock_timestamp() AS at) clk`, args
}

// markDeliveredSQL marks the outbox rows of (key, attempt) pairs (run id,
// keys, then "key:attempt" pairs) delivered — a worker's callback proves
// its dispatch arrived — and returns those whose delivery is not yet in the
// run's events. key = ANY(…) lets the planner walk the (run_id, key,
// attempt) index instead of joining every dispatch row of the run.
const markDeliveredSQL = `UPDATE dispatches SET status = 'delivered', locked_until = NULL,
		delivery_logged = true, updated_at = now()
		WHERE run_id = ? AND key = ANY(?::text[]) AND status IN ('pending', 'sending', 'delivered') AND NOT delivery_logged
		AND key || ':' || attempt = ANY(?::text[]) RETURNING id::text AS id, key, attempt, tries`

// markDeliveredStmt is markDeliveredSQL and its arguments; for one pair,
// the form "key = ? AND attempt = ?". Postgres planned the ANY form of
// the final statement again at every call once the statistics knew runs
// of many dispatches (planning at every completion:
// docs/performance.md#measurements-behind-the-code); the one-pair form's
// generic plan is the unique index lookup.
func markDeliveredStmt(runID string, keys []string, attempts []int) (string, []any) {
	if len(keys) == 1 {
		return markDeliveredOneSQL, []any{runID, keys[0], attempts[0]}
	}
	return markDeliveredSQL, []any{runID, keys, deliveredPairs(keys, attempts)}
}

const markDeliveredOneSQL = `UPDATE dispatches SET status = 'delivered', locked_until = NULL,
		delivery_logged = true, updated_at = now()
		WHERE run_id = ? AND key = ? AND attempt = ? AND status IN ('pending', 'sending', 'delivered') AND NOT delivery_logged
		RETURNING id::text AS id, key, attempt, tries`

func deliveredPairs(keys []string, attempts []int) []string {
	pairs := make([]string, len(keys))
	for i, k := range keys {
		pairs[i] = k + ":" + strconv.Itoa(attempts[i])
	}
	return pairs
}

func (t *pgTx) markDelivered(ctx context.Context, runID string, keys []string, attempts []int) ([]engine.Delivered, error) {
	rows, err := t.raw(ctx, markDeliveredSQL, planFor(len(keys), runID, keys, deliveredPairs(keys, attempts))...).Rows()
	if err != nil {
		return nil, interpretError(err)
	}
	defer rows.Close()
	var out []engine.Delivered
	for rows.Next() {
		var d engine.Delivered
		if err := rows.Scan(&d.ID, &d.Key, &d.Attempt, &d.Tries); err != nil {
			return nil, interpretError(err)
		}
		out = append(out, d)
	}
	return out, interpretError(rows.Err())
}

func (t *pgTx) AddTreeNodes(ctx context.Context, runID string, n, limit int) (engine.TreeCount, error) {
	if n > limit {
		return engine.TreeCount{}, nil
	}
	// The root is found by the parent links (a sub-flow's depth is small).
	var root string
	if err := t.raw(ctx, `WITH RECURSIVE up(id, parent) AS (
			SELECT id, parent_run_id FROM runs WHERE id = ?
			UNION ALL SELECT r.id, r.parent_run_id FROM runs r JOIN up ON r.id = up.parent)
		SELECT id::text FROM up WHERE parent IS NULL`, runID).Row().Scan(&root); err != nil {
		return engine.TreeCount{}, fmt.Errorf("error finding the root of run %s: %w", runID, interpretError(err))
	}
	if root == runID {
		// Only the root's own transactions (one at a time: they hold its
		// run) create the row; its sub-flow runs exist only after it
		// counted them. Looked for first: an insert meeting the row while
		// another transaction updates it would wait for that one.
		var exists bool
		if err := t.raw(ctx, `SELECT EXISTS (SELECT 1 FROM run_trees WHERE root_run_id = ?)`, root).Row().Scan(&exists); err != nil {
			return engine.TreeCount{}, interpretError(err)
		}
		if !exists {
			if err := t.exec(ctx, `INSERT INTO run_trees (root_run_id, nodes) VALUES (?, 0) ON CONFLICT DO NOTHING`, root).Error; err != nil {
				return engine.TreeCount{}, interpretError(err)
			}
		}
	}
	// The row, if no other transaction of the tree holds it: nothing here
	// ever waits for it.
	rows, err := t.raw(ctx, `SELECT nodes FROM run_trees WHERE root_run_id = ? FOR UPDATE SKIP LOCKED`, root).Rows()
	if err != nil {
		return engine.TreeCount{}, interpretError(err)
	}
	var nodes int64
	held := rows.Next()
	if held {
		err = rows.Scan(&nodes)
	}
	rows.Close()
	if err != nil {
		return engine.TreeCount{}, interpretError(err)
	}
	if held {
		var folded int64
		if err := t.raw(ctx, `WITH d AS (DELETE FROM run_tree_deltas WHERE root_run_id = ? RETURNING n) SELECT coalesce(sum(n), 0)::bigint FROM d`,
			root).Row().Scan(&folded); err != nil {
			return engine.TreeCount{}, interpretError(err)
		}
		ok := nodes+folded+int64(n) <= int64(limit)
		add := folded
		if ok {
			add += int64(n)
		}
		if add != 0 {
			if err := t.exec(ctx, `UPDATE run_trees SET nodes = nodes + ? WHERE root_run_id = ?`, add, root).Error; err != nil {
				return engine.TreeCount{}, interpretError(err)
			}
		}
		return engine.TreeCount{Added: ok, Root: root, Held: true, Room: int64(limit) - nodes - add}, nil
	}
	// Another transaction of the tree holds the row: decide on what is
	// committed (concurrent counts may pass the bound by what they add) and
	// leave the count beside it.
	var committed int64
	if err := t.raw(ctx, `SELECT coalesce((SELECT nodes FROM run_trees WHERE root_run_id = ?), 0)
			+ coalesce((SELECT sum(n) FROM run_tree_deltas WHERE root_run_id = ?), 0)`, root, root).Row().Scan(&committed); err != nil {
		return engine.TreeCount{}, interpretError(err)
	}
	if committed+int64(n) > int64(limit) {
		return engine.TreeCount{Root: root}, nil
	}
	if err := t.exec(ctx, `INSERT INTO run_tree_deltas (root_run_id, n) VALUES (?, ?)`, root, n).Error; err != nil {
		return engine.TreeCount{}, interpretError(err)
	}
	return engine.TreeCount{Added: true, Root: root}, nil
}

func (t *pgTx) GrowTreeLater(_ context.Context, c engine.TreeCount, n int64) error {
	if n == 0 {
		return nil
	}
	if c.Held {
		t.later(`UPDATE run_trees SET nodes = nodes + ? WHERE root_run_id = ?`, nil, n, c.Root)
	} else {
		t.later(`INSERT INTO run_tree_deltas (root_run_id, n) VALUES (?, ?)`, nil, c.Root, n)
	}
	return nil
}

func (t *pgTx) RedeferNodes(ctx context.Context, runID string, keys []string) error {
	return interpretError(t.exec(ctx, `UPDATE node_states SET wake_at = now(), updated_at = now()
		WHERE run_id = ? AND key = ANY(?::text[]) AND status = 'pending' AND wake_at IS NOT NULL`, runID, keys).Error)
}

func (t *pgTx) HasDeferred(ctx context.Context, runID string) (bool, error) {
	var waiting bool
	err := t.raw(ctx, `SELECT EXISTS (SELECT 1 FROM node_states WHERE run_id = ? AND status = 'pending' AND wake_at IS NOT NULL)`,
		runID).Row().Scan(&waiting)
	return waiting, interpretError(err)
}

// DeferNode is queued, as TransitionLater is: a fan-out past the
// transaction's bounds defers thousands of instances, a round trip each
// when sent at once. Consecutive fires of one run left for later share
// one statement, sent once it carries bulkChunk of them (so that their
// inputs are not all held until the next round trip); a row not pending
// fails the transaction in the database.
func (t *pgTx) DeferNode(ctx context.Context, runID, key string, input json.RawMessage) error {
	t.writeHeld()
	if it := t.q.last(); it != nil {
		if d, ok := it.more.(*deferredFires); ok && d.runID == runID {
			d.add(key, input)
			it.args = planFor(len(d.keys), d.args()...)
			if len(d.keys) < bulkChunk {
				return nil
			}
			if err := t.q.flush(ctx); err != nil {
				return fmt.Errorf("error deferring %d nodes of run %s: %w", len(d.keys), runID, interpretError(err))
			}
			return nil
		}
	}
	d := &deferredFires{runID: runID, distinct: map[string]bool{}}
	d.add(key, input)
	t.later(deferNodesSQL, checked(d.notPending), d.args()...)
	t.q.last().more = d
	return nil
}

// deferNodesSQL keeps pending nodes (keys, their inputs) of a run (the
// keys again) with their inputs and a wake_at of now, the last input of a
// key repeated winning; it divides by zero unless the distinct keys (the
// last argument) all moved.
const deferNodesSQL = `WITH moved AS (UPDATE node_states n SET input = u.inp::jsonb, wake_at = now(), updated_at = now()
		FROM (SELECT DISTINCT ON (k) k, inp FROM unnest(?::text[], ?::text[]) WITH ORDINALITY AS x(k, inp, ord)
			ORDER BY k, ord DESC) u
		WHERE n.run_id = ? AND n.key = ANY(?::text[]) AND n.key = u.k AND n.status = 'pending' RETURNING 1)
	SELECT 1 / (count(*) / ?) FROM moved`

// deferredFires are the fires of one run a queued statement defers
// (DeferNode).
type deferredFires struct {
	runID        string
	keys, inputs []string
	distinct     map[string]bool
}

func (d *deferredFires) add(key string, input json.RawMessage) {
	d.keys = append(d.keys, key)
	d.inputs = append(d.inputs, nullJSON(input))
	d.distinct[key] = true
}

func (d *deferredFires) args() []any {
	return []any{d.keys, d.inputs, d.runID, d.keys, len(d.distinct)}
}

func (d *deferredFires) notPending() error {
	key := strings.Join(d.keys[:min(len(d.keys), 3)], ",")
	if len(d.keys) > 3 {
		key += fmt.Sprintf(" and %d more", len(d.keys)-3)
	}
	return &engine.QueuedTransitionError{RunID: d.runID, Key: key, From: engine.StatusPending, To: engine.StatusPending}
}

// nullJSON is JSON text for a jsonb parameter: null for none.
func nullJSON(raw json.RawMessage) string {
	if len(raw) == 0 {
		return "null"
	}
	return string(raw)
}

func (t *pgTx) WakeNodes(ctx context.Context, runID string, due []engine.DueNode) ([]engine.NodeState, error) {
	keys := make([]string, len(due))
	attempts := make([]int64, len(due))
	for i, d := range due {
		keys[i], attempts[i] = d.Key, int64(d.Attempt)
	}
	rows, err := t.raw(ctx, `UPDATE node_states n SET status = 'completed', output = coalesce(n.input, 'null'::jsonb),
		wake_at = NULL, finished_at = now(), updated_at = now()
		FROM unnest(?::text[], ?::int[]) AS u(k, a)
		WHERE n.run_id = ? AND n.key = ANY(?::text[]) AND n.key = u.k AND n.status = 'sleeping' AND n.attempt = u.a
		RETURNING `+nodeColsAs("n."), keys, attempts, runID, keys).Rows()
	if err != nil {
		return nil, interpretError(err)
	}
	return scanNodes(rows, runID, len(due))
}

func (t *pgTx) CompleteAcrossRuns(ctx context.Context, cs []engine.BulkComplete) ([]engine.NodeState, error) {
	runs := make([]string, len(cs))
	keys := make([]string, len(cs))
	attempts := make([]int64, len(cs))
	outputs := make([]string, len(cs))
	for i, c := range cs {
		runs[i], keys[i], attempts[i], outputs[i] = c.RunID, c.Key, int64(c.Attempt), string(c.Output)
	}
	// As BulkComplete, with the run on each row; the run id is the last
	// column (withRunID).
	rows, err := t.raw(ctx, `UPDATE node_states n SET status = 'completed', output = u.out::jsonb,
		error = NULL, deadline = NULL, finished_at = now(), updated_at = now()
		FROM (SELECT DISTINCT ON (r, k) r, k, a, out
			FROM unnest(?::uuid[], ?::text[], ?::int[], ?::text[]) WITH ORDINALITY AS x(r, k, a, out, ord)
			ORDER BY r, k, ord) u
		WHERE n.run_id = u.r AND n.key = u.k AND n.status = 'running' AND n.attempt = u.a
		RETURNING `+strings.Replace(nodeColsAs("n."), "n.input", "NULL::jsonb", 1)+`, n.run_id::text`,
		planFor(len(cs), runs, keys, attempts, outputs)...).Rows()
	if err != nil {
		return nil, interpretError(err)
	}
	defer rows.Close()
	out := make([]engine.NodeState, 0, len(cs))
	for rows.Next() {
		var runID string
		st, err := scanNode(withRunID{rows, &runID}, "")
		if err != nil {
			return nil, err
		}
		st.RunID = runID
		out = append(out, *st)
	}
	return out, interpretError(rows.Err())
}

// withRunID scans a node row whose last column is its run's id.
type withRunID struct {
	scanner
	runID *string
}

func (w withRunID) Scan(dest ...any) error { return w.scanner.Scan(append(dest, w.runID)...) }

func (t *pgTx) BulkComplete(ctx context.Context, runID string, cs []engine.BulkComplete) ([]engine.NodeState, error) {
	keys := make([]string, len(cs))
	attempts := make([]int64, len(cs))
	outputs := make([]string, len(cs))
	for i, c := range cs {
		keys[i], attempts[i], outputs[i] = c.Key, int64(c.Attempt), string(c.Output)
	}
	// DISTINCT ON keeps the first of repeated callbacks for one node; the
	// others find it completed and are judged one by one. The nodes' inputs
	// are not read back (NULL): a completion's consequences need only its
	// output, and an input may be large.
	rows, err := t.raw(ctx, `UPDATE node_states n SET status = 'completed', output = u.out::jsonb,
		error = NULL, deadline = NULL, finished_at = now(), updated_at = now()
		FROM (SELECT DISTINCT ON (k) k, a, out FROM unnest(?::text[], ?::int[], ?::text[]) WITH ORDINALITY AS x(k, a, out, ord)
			ORDER BY k, ord) u
		WHERE n.run_id = ? AND n.key = ANY(?::text[]) AND n.key = u.k AND n.status = 'running' AND n.attempt = u.a
		RETURNING `+strings.Replace(nodeColsAs("n."), "n.input", "NULL::jsonb", 1),
		planFor(len(cs), keys, attempts, outputs, runID, keys)...).Rows()
	if err != nil {
		return nil, interpretError(err)
	}
	return scanNodes(rows, runID, len(cs))
}
