package store

import (
	"context"
	"fmt"
	"time"

	"github.com/stitchd/stitchd/engine"
)

const claimCols = `id::text, run_id::text, key, attempt, url, payload, tries, max_tries`

// ClaimDue claims up to limit rows that are due: pending rows whose time
// has come, and sending rows whose lease expired (their process died).
func (s *Store) ClaimDue(ctx context.Context, limit int, lease time.Duration) ([]engine.ClaimedDispatch, error) {
	// Rows whose attempt is over (the node moved on: completed, failed,
	// cancelled or retried) are not delivered any more.
	if err := s.db.WithContext(ctx).Exec(`UPDATE dispatches d SET status = 'cancelled', locked_until = NULL, updated_at = now()
		WHERE d.status IN ('pending', 'sending') AND d.next_attempt_at <= now()
		AND (d.status = 'pending' OR d.locked_until < now())
		AND NOT EXISTS (SELECT 1 FROM node_states n WHERE n.run_id = d.run_id AND n.key = d.key
			AND n.attempt = d.attempt AND n.status = 'running')`).Error; err != nil {
		return nil, fmt.Errorf("error retiring stale dispatches: %w", interpretError(err))
	}
	return s.claim(ctx, `SELECT id FROM dispatches WHERE status IN ('pending', 'sending') AND next_attempt_at <= now()
		AND (status = 'pending' OR locked_until < now()) ORDER BY next_attempt_at LIMIT ? FOR UPDATE SKIP LOCKED`, lease, limit)
}

func (s *Store) claim(ctx context.Context, sel string, lease time.Duration, arg any) ([]engine.ClaimedDispatch, error) {
	// next_attempt_at moves to the lease's end too, so the row is not due
	// again before another process may take it over.
	rows, err := s.db.WithContext(ctx).Raw(`UPDATE dispatches SET status = 'sending', tries = tries + 1,
		locked_until = now() + make_interval(secs => ?), next_attempt_at = now() + make_interval(secs => ?), updated_at = now()
		WHERE id IN (`+sel+`) RETURNING `+claimCols, lease.Seconds(), lease.Seconds(), arg).Rows()
	if err != nil {
		return nil, fmt.Errorf("error claiming dispatches: %w", interpretError(err))
	}
	defer rows.Close()
	var out []engine.ClaimedDispatch
	for rows.Next() {
		var d engine.ClaimedDispatch
		var p []byte
		if err := rows.Scan(&d.ID, &d.RunID, &d.Key, &d.Attempt, &d.URL, &p, &d.Tries, &d.MaxTries); err != nil {
			return nil, interpretError(err)
		}
		d.Payload = p
		out = append(out, d)
	}
	return out, interpretError(rows.Err())
}

// RenewLease extends a claimed row's lease if the claim that made tries is
// still the row's current one.
func (s *Store) RenewLease(ctx context.Context, id string, tries int, lease time.Duration) (bool, error) {
	res := s.db.WithContext(ctx).Exec(`UPDATE dispatches SET locked_until = now() + make_interval(secs => ?),
		next_attempt_at = now() + make_interval(secs => ?), updated_at = now()
		WHERE id = ? AND status = 'sending' AND tries = ?`, lease.Seconds(), lease.Seconds(), id, tries)
	return res.RowsAffected == 1, interpretError(res.Error)
}

// DispatchDelivered implements engine.Store.
func (s *Store) DispatchDelivered(ctx context.Context, id string) error {
	return interpretError(s.db.WithContext(ctx).Exec(`UPDATE dispatches SET status = 'delivered', locked_until = NULL,
		updated_at = now() WHERE id = ? AND status = 'sending'`, id).Error)
}

// OutboxDepth counts the dispatches not yet delivered, by status (pending:
// waiting for their time or a claim; sending: claimed by a process). It
// reads the partial index of due rows only.
func (s *Store) OutboxDepth(ctx context.Context) (map[string]int64, error) {
	rows, err := s.db.WithContext(ctx).Raw(`SELECT status, count(*) FROM dispatches
		WHERE status IN ('pending', 'sending') GROUP BY status`).Rows()
	if err != nil {
		return nil, fmt.Errorf("error counting the outbox: %w", interpretError(err))
	}
	defer rows.Close()
	out := map[string]int64{"pending": 0, "sending": 0}
	for rows.Next() {
		var st string
		var n int64
		if err := rows.Scan(&st, &n); err != nil {
			return nil, interpretError(err)
		}
		out[st] = n
	}
	return out, interpretError(rows.Err())
}
