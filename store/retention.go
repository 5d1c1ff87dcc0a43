package store

import (
	"context"
	"fmt"
	"time"
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
	var global *float64
	if keep > 0 {
		secs := keep.Seconds()
		global = &secs
	}
	// The shortest retention in force bounds the index scan: no run
	// finished since can be due, whatever its flow.
	var shortestDays *int
	if err := s.db.WithContext(ctx).Raw(`SELECT min((v.execution_graph->>'retentionDays')::int) FROM flows f
		JOIN flow_versions v ON v.id = f.current_version_id WHERE v.execution_graph->>'retentionDays' IS NOT NULL`).
		Row().Scan(&shortestDays); err != nil {
		return 0, fmt.Errorf("error reading the flows' retention: %w", interpretError(err))
	}
	bound := -1.0
	if global != nil {
		bound = *global
	}
	if shortestDays != nil && (bound < 0 || float64(*shortestDays)*86400 < bound) {
		bound = float64(*shortestDays) * 86400
	}
	if bound < 0 {
		return 0, nil // nothing is ever deleted
	}
	res := s.db.WithContext(ctx).Exec(`DELETE FROM runs WHERE id IN (
		SELECT r.id FROM runs r
			JOIN flows f ON f.id = r.flow_id
			JOIN flow_versions v ON v.id = f.current_version_id
		WHERE r.finished_at < now() - make_interval(secs => ?::float8) AND r.status IN ('completed', 'failed', 'cancelled')
			AND r.finished_at < now() - coalesce(make_interval(days => (v.execution_graph->>'retentionDays')::int),
				make_interval(secs => ?::float8))
			AND NOT EXISTS (SELECT 1 FROM runs p WHERE p.id = r.parent_run_id AND p.finished_at IS NULL)
		ORDER BY r.finished_at LIMIT ? FOR UPDATE OF r SKIP LOCKED)`, bound, global, limit)
	if err := interpretError(res.Error); err != nil {
		return 0, fmt.Errorf("error deleting expired runs: %w", err)
	}
	return int(res.RowsAffected), nil
}
