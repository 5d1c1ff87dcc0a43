package store

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"time"

	"github.com/lib/pq"
)

// DeleteExpiredRuns deletes up to limit finished runs (completed, failed or
// cancelled) whose finish is older than their flow's retention —
// settings.retentionDays of the flow's current version, else keep (0 or
// less: runs of flows without their own are kept) — oldest first, with
// their node states, events, outbox rows, notifications and journey
// entries (the runs' delete trigger). A sub-flow run whose parent has not
// finished is kept. Rows being deleted by another process are skipped
// (SKIP LOCKED), so several processes delete side by side, each batch a
// short transaction. It returns how many runs it deleted.
func (s *Store) DeleteExpiredRuns(ctx context.Context, keep time.Duration, limit int) (int, error) {
	global, ok, err := s.retentionInForce(ctx, keep)
	if err != nil || !ok {
		return 0, err
	}
	res := s.db.WithContext(ctx).Exec(deleteExpiredRuns, global, limit, limit)
	if err := interpretError(res.Error); err != nil {
		return 0, fmt.Errorf("error deleting expired runs: %w", err)
	}
	return int(res.RowsAffected), nil
}

// deleteExpiredRuns deletes the runs expiredRunsSelect picks (its
// arguments), skipping those another process has locked. The ids go from
// one step to the next as arrays (= ANY (ARRAY(…))), which are looked up
// by key: written as IN (subquery), each step was a join the planner
// could make with a scan of the whole of runs (a hash join), which it did
// on tables of tens of thousands of runs.
const deleteExpiredRuns = `DELETE FROM runs WHERE id = ANY (ARRAY(SELECT r.id FROM runs r
		WHERE r.id = ANY (ARRAY(` + expiredRunsSelect + `)) AND r.finished_at IS NOT NULL FOR UPDATE OF r SKIP LOCKED))`

// expiredRunsSelect selects up to limit runs past their retention,
// oldest first: for each flow, its oldest finished runs past the flow's
// retention (settings.retentionDays of its current version, else the
// server's), an index range scan (runs_flow_finished_idx) that stops at
// the flow's bound — runs kept longer by their flow are never read, however
// many. Its arguments are the server's retention in seconds (or NULL) and
// the limit, twice.
const expiredRunsSelect = `SELECT x.id FROM flows f
		JOIN flow_versions v ON v.id = f.current_version_id
		CROSS JOIN LATERAL (SELECT r.id, r.finished_at FROM runs r
			WHERE r.flow_id = f.id AND r.finished_at IS NOT NULL
				AND r.finished_at < now() - coalesce(make_interval(days => (v.execution_graph->>'retentionDays')::int),
					make_interval(secs => ?::float8))
				AND r.status IN ('completed', 'failed', 'cancelled')
				AND ` + parentNotRunning + `
			ORDER BY r.finished_at LIMIT ?) x
		ORDER BY x.finished_at LIMIT ?`

// parentNotRunning is true for a run r without a parent, or whose parent
// has finished or is gone: a scalar subquery, so that the parent is always
// looked up by its key (runs_pkey), one probe for each candidate run that
// has a parent. Written as NOT EXISTS it let the planner — whose
// statistics say almost every run has finished — read the unfinished runs
// with a scan of the whole table, once a statement: an anti-join against a
// materialised sequential scan, or, behind an OR, a hashed subplan. On a
// million finished runs that scan was most of every batch's time; the
// probe keeps a batch short whatever the history
// (docs/performance.md#measurements-behind-the-code).
const parentNotRunning = `(SELECT p.finished_at IS NULL FROM runs p WHERE p.id = r.parent_run_id) IS NOT TRUE`

// retentionInForce returns the server's retention in seconds (nil:
// none); ok is false when no run is ever deleted (neither the server nor
// any flow has a retention): one small query a poll then.
func (s *Store) retentionInForce(ctx context.Context, keep time.Duration) (global *float64, ok bool, err error) {
	if keep > 0 {
		secs := keep.Seconds()
		return &secs, true, nil
	}
	if err := s.db.WithContext(ctx).Raw(`SELECT EXISTS (SELECT 1 FROM flows f JOIN flow_versions v ON v.id = f.current_version_id
		WHERE v.execution_graph->>'retentionDays' IS NOT NULL)`).Row().Scan(&ok); err != nil {
		return nil, false, fmt.Errorf("error reading the flows' retention: %w", interpretError(err))
	}
	return nil, ok, nil
}

// ArchiveSender sends a batch of runs to the archive: batchID is the same
// for the same runs in the same state (a receiver drops a repeat by it);
// an error keeps the runs.
type ArchiveSender func(ctx context.Context, batchID string, body []byte) error

// ArchiveExpiredRuns is DeleteExpiredRuns with a copy sent first: up to
// limit runs past their retention are read — each run with its node
// states, events and journey entries — into one JSON document
// ({"type": "runs.archived", "runs": [...]}) in one statement (one
// snapshot), which send gets; only when it returns nil are they deleted.
// No transaction is open while send runs (it may wait on the network for
// seconds): the delete is a statement of its own that deletes only the
// runs still as they were read (the row version, xmin, unchanged) and
// still past their retention, so a run that changed meanwhile — a rerun,
// a late event — is kept and sent again later in its new state. An error
// leaves the batch for the next try, which reads the same runs (oldest
// first) and sends them with the same batch id. Two processes may send
// the same batch (the same id); one of them deletes it.
func (s *Store) ArchiveExpiredRuns(ctx context.Context, keep time.Duration, limit int, send ArchiveSender) (int, error) {
	global, ok, err := s.retentionInForce(ctx, keep)
	if err != nil || !ok {
		return 0, err
	}
	var (
		body      []byte
		ids, xmin pq.StringArray
	)
	if err := s.db.WithContext(ctx).Raw(archiveExpiredRuns, global, limit, limit).Row().Scan(&body, &ids, &xmin); err != nil {
		return 0, fmt.Errorf("error reading expired runs to archive: %w", interpretError(err))
	}
	if len(ids) == 0 {
		return 0, nil
	}
	// The batch's id names the runs and their row versions: the same runs
	// unchanged are the same batch.
	h := sha256.New()
	for i := range ids {
		fmt.Fprintf(h, "%s:%s,", ids[i], xmin[i])
	}
	if err := send(ctx, "archive_"+hex.EncodeToString(h.Sum(nil)[:16]), body); err != nil {
		return 0, fmt.Errorf("error sending %d runs to the archive: %w", len(ids), err)
	}
	res := s.db.WithContext(ctx).Exec(deleteArchivedRuns, ids, ids, xmin, global)
	if err := interpretError(res.Error); err != nil {
		return 0, fmt.Errorf("error deleting %d archived runs: %w", len(ids), err)
	}
	return int(res.RowsAffected), nil
}

// archiveExpiredRuns reads the runs expiredRunsSelect picks (its
// arguments) as the archive's document, with their ids and row versions
// (xmin), in id order.
const archiveExpiredRuns = `SELECT json_build_object('type', 'runs.archived', 'runs', json_agg(json_build_object(
				'run', to_jsonb(r),
				'nodes', (SELECT coalesce(jsonb_agg(to_jsonb(n) ORDER BY n.key), '[]') FROM node_states n WHERE n.run_id = r.id),
				'events', (SELECT coalesce(jsonb_agg(to_jsonb(e) ORDER BY e.seq), '[]') FROM run_events e WHERE e.run_id = r.id),
				'journey', (SELECT coalesce(jsonb_agg(to_jsonb(j) ORDER BY j.created_at, j.id), '[]') FROM journey_events j
					WHERE j.run_id = r.id)) ORDER BY r.finished_at, r.id))::text,
			array_agg(r.id::text ORDER BY r.id), array_agg(r.xmin::text ORDER BY r.id)
		FROM runs r WHERE r.id = ANY (ARRAY(` + expiredRunsSelect + `))`

// deleteArchivedRuns deletes the runs of ids (twice) whose row versions
// are still those of xmin (the same order) and that are still past their
// retention (the server's in seconds, or NULL), skipping any another
// process holds: the runs sent to the archive, unchanged since.
const deleteArchivedRuns = `DELETE FROM runs WHERE id = ANY (ARRAY(SELECT r.id FROM runs r
			JOIN flows f ON f.id = r.flow_id
			JOIN flow_versions v ON v.id = f.current_version_id
		WHERE r.id = ANY (?::uuid[]) AND (r.id, r.xmin::text) IN (SELECT * FROM unnest(?::uuid[], ?::text[]))
			AND r.status IN ('completed', 'failed', 'cancelled')
			AND r.finished_at < now() - coalesce(make_interval(days => (v.execution_graph->>'retentionDays')::int),
				make_interval(secs => ?::float8))
			AND ` + parentNotRunning + `
		FOR UPDATE OF r SKIP LOCKED))`
