package store

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
	"time"

	"github.com/lib/pq"
	"gorm.io/gorm"
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
	bound, global, ok, err := s.retentionBound(ctx, keep)
	if err != nil || !ok {
		return 0, err
	}
	res := s.db.WithContext(ctx).Exec(`DELETE FROM runs WHERE id IN (`+expiredRunsSQL+`)`, bound, global, limit)
	if err := interpretError(res.Error); err != nil {
		return 0, fmt.Errorf("error deleting expired runs: %w", err)
	}
	return int(res.RowsAffected), nil
}

// expiredRunsSQL picks up to limit runs past their retention, oldest
// first, locked (SKIP LOCKED: another process takes others); its
// arguments are the bound, the server's retention (or NULL) and the limit
// (retentionBound).
const expiredRunsSQL = `SELECT r.id FROM runs r
			JOIN flows f ON f.id = r.flow_id
			JOIN flow_versions v ON v.id = f.current_version_id
		WHERE r.finished_at < now() - make_interval(secs => ?::float8) AND r.status IN ('completed', 'failed', 'cancelled')
			AND r.finished_at < now() - coalesce(make_interval(days => (v.execution_graph->>'retentionDays')::int),
				make_interval(secs => ?::float8))
			AND NOT EXISTS (SELECT 1 FROM runs p WHERE p.id = r.parent_run_id AND p.finished_at IS NULL)
		ORDER BY r.finished_at LIMIT ? FOR UPDATE OF r SKIP LOCKED`

// retentionBound returns the shortest retention in force, in seconds, and
// the server's (nil: none); ok is false when no run is ever deleted. The
// bound limits the index scan: no run finished since can be due,
// whatever its flow.
func (s *Store) retentionBound(ctx context.Context, keep time.Duration) (bound float64, global *float64, ok bool, err error) {
	if keep > 0 {
		secs := keep.Seconds()
		global = &secs
	}
	var shortestDays *int
	if err := s.db.WithContext(ctx).Raw(`SELECT min((v.execution_graph->>'retentionDays')::int) FROM flows f
		JOIN flow_versions v ON v.id = f.current_version_id WHERE v.execution_graph->>'retentionDays' IS NOT NULL`).
		Row().Scan(&shortestDays); err != nil {
		return 0, nil, false, fmt.Errorf("error reading the flows' retention: %w", interpretError(err))
	}
	bound = -1.0
	if global != nil {
		bound = *global
	}
	if shortestDays != nil && (bound < 0 || float64(*shortestDays)*86400 < bound) {
		bound = float64(*shortestDays) * 86400
	}
	return bound, global, bound >= 0, nil
}

// ArchiveSender sends a batch of runs to the archive: batchID is the same
// for the same runs (a receiver drops a repeat by it); an error keeps the
// runs.
type ArchiveSender func(ctx context.Context, batchID string, body []byte) error

// ArchiveExpiredRuns is DeleteExpiredRuns with a copy sent first: up to
// limit runs past their retention are read — each run with its node
// states, events and journey entries — into one JSON document
// ({"type": "runs.archived", "runs": [...]}) that send gets; only when it
// returns nil are they deleted, in the same transaction, whose row locks
// keep other processes off them meanwhile. An error leaves them for the
// next try.
func (s *Store) ArchiveExpiredRuns(ctx context.Context, keep time.Duration, limit int, send ArchiveSender) (int, error) {
	bound, global, ok, err := s.retentionBound(ctx, keep)
	if err != nil || !ok {
		return 0, err
	}
	n := 0
	err = s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		var ids []string
		if err := tx.Raw(`SELECT id::text FROM (`+expiredRunsSQL+`) x ORDER BY id`, bound, global, limit).Scan(&ids).Error; err != nil {
			return err
		}
		if len(ids) == 0 {
			return nil
		}
		var body []byte
		if err := tx.Raw(`SELECT json_build_object('type', 'runs.archived', 'runs', json_agg(json_build_object(
				'run', to_jsonb(r),
				'nodes', (SELECT coalesce(jsonb_agg(to_jsonb(n) ORDER BY n.key), '[]') FROM node_states n WHERE n.run_id = r.id),
				'events', (SELECT coalesce(jsonb_agg(to_jsonb(e) ORDER BY e.seq), '[]') FROM run_events e WHERE e.run_id = r.id),
				'journey', (SELECT coalesce(jsonb_agg(to_jsonb(j) ORDER BY j.created_at, j.id), '[]') FROM journey_events j
					WHERE j.run_id = r.id)) ORDER BY r.finished_at, r.id))::text
			FROM runs r WHERE r.id = ANY(?::uuid[])`, pq.StringArray(ids)).Row().Scan(&body); err != nil {
			return err
		}
		sum := sha256.Sum256([]byte(strings.Join(ids, ",")))
		if err := send(ctx, "archive_"+hex.EncodeToString(sum[:16]), body); err != nil {
			return fmt.Errorf("error sending %d runs to the archive: %w", len(ids), err)
		}
		res := tx.Exec(`DELETE FROM runs WHERE id = ANY(?::uuid[])`, pq.StringArray(ids))
		n = int(res.RowsAffected)
		return res.Error
	})
	if err != nil {
		return 0, fmt.Errorf("error archiving expired runs: %w", interpretError(err))
	}
	return n, nil
}
