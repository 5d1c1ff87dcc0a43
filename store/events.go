package store

import (
	"context"
	"encoding/json"
	"fmt"

	"gorm.io/gorm"
)

// NewEvent is an event posted into running runs.
type NewEvent struct {
	// Workspace is where the event is posted ("": DefaultWorkspace): only
	// its runs' nodes wait for it.
	Workspace     string
	ID, Name, Key string
	Payload       json.RawMessage
	TTLSeconds    int
}

// Waiter is a node waiting for an event: its delivery to make.
type Waiter struct {
	EventID string
	RunID   string
	Key     string
	Attempt int
}

// PostEvent stores an event and, in the same transaction, a delivery for
// every node waiting on its name and key (under the lock an Event node's
// wait takes on them, so a wait that begins meanwhile is found, or finds
// the event). The event is kept for a later wait only when no node waits.
// A repeated id stores nothing: duplicate, and no waiter.
func (s *Store) PostEvent(ctx context.Context, ev NewEvent) (duplicate bool, waiters []Waiter, err error) {
	ws := workspaceOr(ev.Workspace)
	id := StoredEventID(ws, ev.ID)
	err = s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		if err := tx.Exec(`SELECT pg_advisory_xact_lock(hashtextextended(? || chr(31) || ?, 0))`, ev.Name, ev.Key).Error; err != nil {
			return err
		}
		res := tx.Exec(`INSERT INTO events (id, workspace, name, key, payload, expires_at)
			VALUES (?, ?, ?, ?, ?::jsonb, now() + make_interval(secs => ?)) ON CONFLICT (id) DO NOTHING`,
			id, ws, ev.Name, ev.Key, string(ev.Payload), ev.TTLSeconds)
		if res.Error != nil {
			return res.Error
		}
		if res.RowsAffected == 0 {
			duplicate = true
			return nil
		}
		rows, err := tx.Raw(`INSERT INTO event_deliveries (event_id, run_id, key, attempt)
			SELECT ?, ns.run_id, ns.key, ns.attempt FROM node_states ns
			WHERE ns.status = 'waiting_for_event' AND ns.event_name = ? AND ns.event_key = ?
				AND EXISTS (SELECT 1 FROM runs r WHERE r.id = ns.run_id AND r.workspace = ?)
			RETURNING run_id::text, key, attempt`, id, ev.Name, ev.Key, ws).Rows()
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			w := Waiter{EventID: id}
			if err := rows.Scan(&w.RunID, &w.Key, &w.Attempt); err != nil {
				return err
			}
			waiters = append(waiters, w)
		}
		if err := rows.Err(); err != nil {
			return err
		}
		if len(waiters) == 0 {
			return nil
		}
		return tx.Exec(`UPDATE events SET consumed_at = now(), delivered = ? WHERE id = ?`, len(waiters), id).Error
	})
	if err != nil {
		return false, nil, fmt.Errorf("error posting event %s: %w", ev.Name, interpretError(err))
	}
	return duplicate, waiters, nil
}

// LeftDeliveries returns up to limit event deliveries older than a few
// seconds — left by a process that stopped between storing an event and
// delivering it — with their payloads.
func (s *Store) LeftDeliveries(ctx context.Context, limit int) ([]LeftDelivery, error) {
	rows, err := s.db.WithContext(ctx).Raw(`SELECT d.event_id, d.run_id::text, d.key, d.attempt, e.name, e.key, e.payload
		FROM event_deliveries d JOIN events e ON e.id = d.event_id
		WHERE d.created_at < now() - interval '5 seconds' ORDER BY d.created_at LIMIT ?`, limit).Rows()
	if err != nil {
		return nil, fmt.Errorf("error listing event deliveries: %w", interpretError(err))
	}
	defer rows.Close()
	var out []LeftDelivery
	for rows.Next() {
		var d LeftDelivery
		if err := rows.Scan(&d.EventID, &d.RunID, &d.Key, &d.Attempt, &d.Name, &d.On, &d.Payload); err != nil {
			return nil, interpretError(err)
		}
		out = append(out, d)
	}
	return out, interpretError(rows.Err())
}

// LeftDelivery is a delivery LeftDeliveries found.
type LeftDelivery struct {
	Waiter
	Name, On string
	Payload  json.RawMessage
}

// OverdueEvents claims up to limit Event nodes waiting past their
// deadline, as DueTimers does.
func (s *Store) OverdueEvents(ctx context.Context, limit int) ([]Due, error) {
	return s.claimDue(ctx, `UPDATE node_states SET deadline = now() + interval '30 seconds'
		WHERE (run_id, key) IN (SELECT run_id, key FROM node_states WHERE status = 'waiting_for_event' AND deadline <= now()
			ORDER BY deadline LIMIT ? FOR UPDATE SKIP LOCKED)
		RETURNING run_id::text, key, attempt, false`, limit, "overdue event waits")
}

// StoredEventID is the id an event posted to workspace ws with id is kept
// under: the caller's id is unique within a workspace, and another
// workspace's (not the default's, whose ids were kept as given) is
// prefixed with its slug.
func StoredEventID(ws, id string) string {
	if ws == "" || ws == DefaultWorkspace {
		return id
	}
	return ws + "/" + id
}
