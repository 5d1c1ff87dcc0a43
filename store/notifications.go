package store

import (
	"context"
	"fmt"
	"time"

	"github.com/stitchd/stitchd/engine"
)

// DueReminders claims up to limit UX nodes waiting for a person whose
// remind_at passed (database time): remind_at moves 30 s ahead, so other
// sweepers skip them meanwhile; Engine.RemindApproval then sets the next
// one under the run's lock. A paused run's people are not reminded.
func (s *Store) DueReminders(ctx context.Context, limit int) ([]Due, error) {
	return s.claimDue(ctx, `UPDATE node_states SET remind_at = now() + interval '30 seconds'
		WHERE (run_id, key) IN (SELECT n.run_id, n.key FROM node_states n WHERE n.remind_at <= now()
			AND n.status = 'waiting_for_user'
			AND NOT EXISTS (SELECT 1 FROM runs r WHERE r.id = n.run_id AND r.status = 'paused')
			ORDER BY n.remind_at LIMIT ? FOR UPDATE OF n SKIP LOCKED)
		RETURNING run_id::text, key, attempt, false`, limit, "due reminders")
}

// DueEscalations claims up to limit UX nodes waiting for a person whose
// escalate_at passed (database time), as DueReminders does;
// Engine.EscalateApproval then reassigns them and sets the next one.
func (s *Store) DueEscalations(ctx context.Context, limit int) ([]Due, error) {
	return s.claimDue(ctx, `UPDATE node_states SET escalate_at = now() + interval '30 seconds'
		WHERE (run_id, key) IN (SELECT n.run_id, n.key FROM node_states n WHERE n.escalate_at <= now()
			AND n.status = 'waiting_for_user'
			AND NOT EXISTS (SELECT 1 FROM runs r WHERE r.id = n.run_id AND r.status = 'paused')
			ORDER BY n.escalate_at LIMIT ? FOR UPDATE OF n SKIP LOCKED)
		RETURNING run_id::text, key, attempt, false`, limit, "due escalations")
}

// ClaimNotifications claims up to limit notifications due for delivery —
// pending ones whose time came, and ones being sent whose lease ended (a
// process stopped while sending) — for lease: their next_attempt_at moves
// that far ahead and their tries count this one.
func (s *Store) ClaimNotifications(ctx context.Context, limit int, lease time.Duration) ([]engine.Notification, error) {
	rows, err := s.db.WithContext(ctx).Raw(`UPDATE notifications SET status = 'sending', tries = tries + 1,
			next_attempt_at = now() + make_interval(secs => ?)
		WHERE id IN (SELECT id FROM notifications WHERE status IN ('pending', 'sending') AND next_attempt_at <= now()
			ORDER BY next_attempt_at LIMIT ? FOR UPDATE SKIP LOCKED)
		RETURNING id::text, type, coalesce(run_id::text, ''), payload, tries, coalesce(url, '')`, lease.Seconds(), limit).Rows()
	if err != nil {
		return nil, fmt.Errorf("error claiming notifications: %w", interpretError(err))
	}
	defer rows.Close()
	var out []engine.Notification
	for rows.Next() {
		var n engine.Notification
		var payload []byte
		if err := rows.Scan(&n.ID, &n.Type, &n.RunID, &payload, &n.Tries, &n.URL); err != nil {
			return nil, interpretError(err)
		}
		n.Payload = payload
		out = append(out, n)
	}
	return out, interpretError(rows.Err())
}

// RecordNotification records a delivery try of a notification claimed at
// o.Tries tries; a row claimed again since (its lease ended) is left to
// that claim.
func (s *Store) RecordNotification(ctx context.Context, o engine.NotificationOutcome) error {
	status := "failed"
	switch {
	case o.Delivered:
		status = "delivered"
	case o.RetryIn > 0:
		status = "pending"
	}
	var lastErr *string
	if o.Error != "" {
		lastErr = &o.Error
	}
	err := s.db.WithContext(ctx).Exec(`UPDATE notifications SET status = ?, last_error = coalesce(?, last_error),
			next_attempt_at = now() + make_interval(secs => ?),
			delivered_at = CASE WHEN ? = 'delivered' THEN now() END
		WHERE id = ? AND status = 'sending' AND tries = ?`,
		status, lastErr, o.RetryIn.Seconds(), status, o.ID, o.Tries).Error
	if err != nil {
		return fmt.Errorf("error recording notification %s: %w", o.ID, interpretError(err))
	}
	return nil
}
