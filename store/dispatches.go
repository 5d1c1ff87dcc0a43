package store

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/stitchd/stitchd/engine"
)

// ClaimDue claims up to limit rows that are due: pending rows whose time
// has come, and sending rows whose lease expired (their process died). A
// picked row whose attempt is over (the node moved on: completed, failed,
// cancelled or retried) is retired instead of delivered. Only the rows
// picked are looked at, so a poll costs the same with 100 or 100,000 rows
// waiting. Workspaces take turns (docs/workspaces.md#fairness): the
// oldest due rows of each are ranked first, second, … and the claim takes
// them rank by rank, so a backlog in one does not hold another's rows
// back; with one workspace it is the oldest rows, as before.
func (s *Store) ClaimDue(ctx context.Context, limit int, lease time.Duration) ([]engine.ClaimedDispatch, error) {
	// next_attempt_at moves to the lease's end too, so the row is not due
	// again before another process may take it over. OFFSET 0 keeps the
	// liveness check a primary-key probe per picked row: without it the
	// planner may turn it into a hash of every running node (a sequential
	// scan of node_states per poll, growing with a fan-out's running items:
	// docs/performance.md#measurements-behind-the-code).
	rows, err := s.db.WithContext(ctx).Raw(`WITH due AS (
			SELECT d.id, d.run_id, d.key, d.attempt,
				row_number() OVER (PARTITION BY w.slug ORDER BY d.next_attempt_at) AS turn, d.next_attempt_at
			FROM workspaces w CROSS JOIN LATERAL (
				SELECT d.id, d.run_id, d.key, d.attempt, d.next_attempt_at FROM dispatches d
				WHERE d.workspace = w.slug AND d.status IN ('pending', 'sending') AND d.next_attempt_at <= now()
					AND (d.status = 'pending' OR d.locked_until < now())
				ORDER BY d.next_attempt_at LIMIT ? FOR UPDATE OF d SKIP LOCKED) d),
		picked AS (
			SELECT d.id, EXISTS (SELECT 1 FROM node_states n WHERE n.run_id = d.run_id AND n.key = d.key
				AND n.attempt = d.attempt AND n.status = 'running' OFFSET 0) AS live
			FROM (SELECT * FROM due ORDER BY turn, next_attempt_at LIMIT ?) d),
		retired AS (
			UPDATE dispatches d SET status = 'cancelled', locked_until = NULL, updated_at = now()
			FROM picked p WHERE d.id = p.id AND NOT p.live)
		UPDATE dispatches d SET status = 'sending', tries = d.tries + 1,
			locked_until = now() + make_interval(secs => ?), next_attempt_at = now() + make_interval(secs => ?),
			updated_at = now()
		FROM picked p WHERE d.id = p.id AND p.live
		RETURNING d.id::text, d.run_id::text, d.workspace, d.key, d.attempt, d.url, d.payload, d.tries, d.max_tries, d.request, d.body, d.sent_tries`,
		limit, limit, lease.Seconds(), lease.Seconds()).Rows()
	if err != nil {
		return nil, fmt.Errorf("error claiming dispatches: %w", interpretError(err))
	}
	defer rows.Close()
	var out []engine.ClaimedDispatch
	for rows.Next() {
		var d engine.ClaimedDispatch
		var p, req, body []byte
		if err := rows.Scan(&d.ID, &d.RunID, &d.Workspace, &d.Key, &d.Attempt, &d.URL, &p, &d.Tries, &d.MaxTries, &req, &body, &d.SentTries); err != nil {
			return nil, interpretError(err)
		}
		d.Payload = p
		if req != nil { // a request/response delivery: its body is what is sent
			d.Request = &engine.HTTPRequest{}
			if err := json.Unmarshal(req, d.Request); err != nil {
				return nil, fmt.Errorf("error reading the request of dispatch %s: %w", d.ID, err)
			}
			d.Payload = body
		}
		out = append(out, d)
	}
	return out, interpretError(rows.Err())
}

// MarkRequestSent records that try tries of request/response row id is
// about to be sent, while the claim that made it still holds the row; it
// reports whether it did (false: the row was taken over or retired).
func (s *Store) MarkRequestSent(ctx context.Context, id string, tries int) (bool, error) {
	res := s.db.WithContext(ctx).Exec(`UPDATE dispatches SET sent_tries = ? WHERE id = ? AND tries = ? AND status = 'sending'`,
		tries, id, tries)
	if res.Error != nil {
		return false, fmt.Errorf("error recording that dispatch %s was sent: %w", id, interpretError(res.Error))
	}
	return res.RowsAffected == 1, nil
}

// RenewLeases extends the leases of rows still held by the given claims
// (their id and the try the claim made; one statement for any number) and
// returns the ids renewed; a row another claim took over, or that was
// delivered, retired or cancelled meanwhile, is not.
func (s *Store) RenewLeases(ctx context.Context, ks []engine.ClaimedDispatch, lease time.Duration) ([]string, error) {
	if len(ks) == 0 {
		return nil, nil
	}
	ids := make([]string, len(ks))
	tries := make([]int64, len(ks))
	for i, k := range ks {
		ids[i], tries[i] = k.ID, int64(k.Tries)
	}
	rows, err := s.db.Statement.ConnPool.QueryContext(ctx, `UPDATE dispatches d SET locked_until = now() + make_interval(secs => $1),
		next_attempt_at = now() + make_interval(secs => $1), updated_at = now()
		FROM unnest($2::uuid[], $3::int[]) AS u(id, tries)
		WHERE d.id = u.id AND d.tries = u.tries AND `+isSending+`
		RETURNING d.id::text`, planFor(len(ks), lease.Seconds(), ids, tries)...)
	if err != nil {
		return nil, fmt.Errorf("error renewing %d leases: %w", len(ks), interpretError(err))
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, interpretError(err)
		}
		out = append(out, id)
	}
	return out, interpretError(rows.Err())
}

// isSending is status = 'sending' written so that it does not imply the
// predicate of the partial index of due rows (status IN ('pending',
// 'sending')): rows looked up by id must be found through the primary key.
// When statistics lag behind a fresh fan-out, the partial index looks
// nearly empty and the planner scanned all of it for a handful of ids
// (docs/performance.md#measurements-behind-the-code). The CHECK constraint
// allows no other status.
// The outbox table is aliased d where it is used.
const isSending = `d.status NOT IN ('pending', 'delivered', 'failed', 'cancelled')`

// DispatchesDelivered implements engine.Store. The mark is advisory — it
// keeps a row whose worker accepted it from being delivered again when its
// lease ends — so it does not wait for the disk (synchronous_commit off for
// this statement: a crash may lose the mark, and the row is then delivered
// again with the same webhook-id), and it skips rows a worker's callback is
// marking delivered in the same moment instead of queueing behind that
// transaction's commit.
func (s *Store) DispatchesDelivered(ctx context.Context, ids []string) error {
	_, err := s.db.Statement.ConnPool.ExecContext(ctx, `WITH cfg AS (SELECT set_config('synchronous_commit', 'off', true))
		UPDATE dispatches SET status = 'delivered', locked_until = NULL, updated_at = now()
		FROM cfg WHERE id IN (SELECT d.id FROM dispatches d WHERE d.id = ANY($1::uuid[]) AND `+isSending+`
			FOR UPDATE SKIP LOCKED)`, planFor(len(ids), ids)...)
	return interpretError(err)
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
