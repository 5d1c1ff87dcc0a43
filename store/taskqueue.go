package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"time"

	"github.com/lib/pq"

	"github.com/stitchd/stitchd/engine"
)

// TasksChannel is the NOTIFY channel carrying the name of a queue a task
// was written to (at its transaction's commit): long polls wake on it.
const TasksChannel = "stitchd_tasks"

// insertSplittingTasks writes rows of which some are pulled tasks
// (engine.Dispatch.Queue): those to their queues, the rest to the outbox.
func (t *pgTx) insertSplittingTasks(ctx context.Context, ds []*engine.Dispatch) error {
	var tasks, rest []*engine.Dispatch
	for _, d := range ds {
		if d.Queue != "" {
			tasks = append(tasks, d)
		} else {
			rest = append(rest, d)
		}
	}
	if len(rest) > 0 {
		if err := t.insertDispatches(ctx, rest); err != nil {
			return err
		}
	}
	runs := make([]string, len(tasks))
	keys := make([]string, len(tasks))
	attempts := make([]int64, len(tasks))
	queues := make([]string, len(tasks))
	payloads := make([]string, len(tasks))
	leases := make([]int64, len(tasks))
	delays := make([]int64, len(tasks))
	for i, d := range tasks {
		runs[i], keys[i], attempts[i], queues[i], payloads[i] = d.RunID, d.Key, int64(d.Attempt), d.Queue, string(d.Payload)
		leases[i], delays[i] = int64(max(d.LeaseSeconds, 1)), d.DelayMs
	}
	// A task waits from when it is due (a retry's backoff puts that
	// later); its queue is told at commit.
	// A task is of its run's workspace: a queue's name is the workspace's.
	return t.write(ctx, len(tasks), `WITH ins AS (INSERT INTO tasks (run_id, key, attempt, queue, payload, lease_seconds, created_at, workspace)
		SELECT u.r::uuid, u.k, u.a, u.q, u.p::jsonb, u.l, now() + make_interval(secs => u.ms::float8 / 1000),
			(SELECT r.workspace FROM runs r WHERE r.id = u.r::uuid)
		FROM unnest(?::text[], ?::text[], ?::int[], ?::text[], ?::text[], ?::int[], ?::bigint[]) AS u(r, k, a, q, p, l, ms)
		RETURNING queue)
		SELECT count(pg_notify(?, q)) FROM (SELECT DISTINCT queue AS q FROM ins) n`,
		runs, keys, attempts, queues, payloads, leases, delays, TasksChannel)
}

// PolledTask is a task handed to a worker: the worker contract's payload
// and when its lease ends.
type PolledTask struct {
	RunID          string
	Key            string
	Attempt        int
	Payload        engine.WorkerPayload
	LeaseExpiresAt time.Time
}

// PollTasksParams is a worker's poll of one queue.
type PollTasksParams struct {
	// Workspace is the queue's ("": DefaultWorkspace).
	Workspace string
	Queue     string
	Worker    string
	Max       int
}

// PollTasks leases up to Max of the queue's oldest due tasks to Worker
// (a paused run's wait: its tasks are held, as its outbox rows are),
// each handed out once (FOR UPDATE SKIP LOCKED: concurrent polls, on any
// process, take different rows), and sets each one's node deadline to the
// lease's end: a lease that runs out times the attempt out. A waiting task
// whose attempt has ended (its run cancelled, say) is dropped as it is met;
// more reports whether some were, so fewer than Max came back though more
// may be waiting. The worker's last poll is recorded.
func (s *Store) PollTasks(ctx context.Context, p PollTasksParams) (tasks []PolledTask, more bool, err error) {
	rows, err := s.db.WithContext(ctx).Raw(`WITH w AS (
			INSERT INTO task_workers (workspace, queue, worker, last_poll_at) VALUES (?, ?, ?, now())
			ON CONFLICT (workspace, queue, worker) DO UPDATE SET last_poll_at = now()),
		picked AS (
			SELECT t.run_id, t.key, t.attempt, (n.status = 'running' AND n.attempt = t.attempt) IS TRUE AS live
			FROM tasks t LEFT JOIN node_states n ON n.run_id = t.run_id AND n.key = t.key
			WHERE t.workspace = ? AND t.queue = ? AND t.leased_by IS NULL AND t.created_at <= now()
				AND NOT EXISTS (SELECT 1 FROM runs r WHERE r.id = t.run_id AND r.status = 'paused')
			ORDER BY t.created_at LIMIT ? FOR UPDATE OF t SKIP LOCKED),
		leased AS (
			UPDATE tasks t SET leased_by = CASE WHEN p.live THEN ? ELSE '' END, leased_at = now()
			FROM picked p WHERE t.run_id = p.run_id AND t.key = p.key AND t.attempt = p.attempt
			RETURNING t.run_id, t.key, t.attempt, t.payload, t.lease_seconds, t.created_at, p.live),
		due AS (
			UPDATE node_states n SET deadline = now() + make_interval(secs => l.lease_seconds), updated_at = now()
			FROM leased l WHERE l.live AND n.run_id = l.run_id AND n.key = l.key AND n.attempt = l.attempt AND n.status = 'running'
			RETURNING n.run_id, n.key, n.deadline)
		SELECT l.run_id::text, l.key, l.attempt, l.payload, d.deadline, l.live
		FROM leased l LEFT JOIN due d ON d.run_id = l.run_id AND d.key = l.key
		ORDER BY l.created_at, l.run_id, l.key`,
		workspaceOr(p.Workspace), p.Queue, p.Worker, workspaceOr(p.Workspace), p.Queue, p.Max, p.Worker).Rows()
	if err != nil {
		return nil, false, fmt.Errorf("error polling queue %s: %w", p.Queue, interpretError(err))
	}
	defer rows.Close()
	for rows.Next() {
		var pt PolledTask
		var payload []byte
		var deadline *time.Time
		var live bool
		if err := rows.Scan(&pt.RunID, &pt.Key, &pt.Attempt, &payload, &deadline, &live); err != nil {
			return nil, false, fmt.Errorf("error reading a polled task: %w", err)
		}
		if !live || deadline == nil {
			more = true // dropped: its attempt ended (or ended as it was leased)
			continue
		}
		if err := json.Unmarshal(payload, &pt.Payload); err != nil {
			return nil, false, fmt.Errorf("error reading task %s/%s: %w", pt.RunID, pt.Key, err)
		}
		pt.LeaseExpiresAt = deadline.UTC()
		tasks = append(tasks, pt)
	}
	if err := rows.Err(); err != nil {
		return nil, false, fmt.Errorf("error polling queue %s: %w", p.Queue, interpretError(err))
	}
	return tasks, more, nil
}

// QueueWorker is a worker seen polling a queue.
type QueueWorker struct {
	ID         string    `json:"id"`
	LastPollAt time.Time `json:"last_poll_at"`
	Leased     int       `json:"leased"`
}

// QueueStats is a queue's state (GET /api/v1/queues).
type QueueStats struct {
	Name                 string        `json:"name"`
	Pending              int           `json:"pending"`
	Leased               int           `json:"leased"`
	OldestPendingSeconds float64       `json:"oldest_pending_seconds"`
	Workers              []QueueWorker `json:"workers"`
}

// Queues lists every queue with tasks waiting or leased, or polled: how
// many wait (due, of attempts still running), how many are leased (their
// attempt still running), the oldest wait, and the workers that poll it.
func (s *Store) Queues(ctx context.Context, ws string) ([]QueueStats, error) {
	// Leased tasks are found from the running nodes with a deadline (the
	// deadline index: live work only), not from the tasks table, which
	// keeps every pulled attempt until its run is deleted.
	rows, err := s.db.WithContext(ctx).Raw(`WITH live AS (
			SELECT t.queue, t.leased_by, t.created_at FROM tasks t
			JOIN node_states n ON n.run_id = t.run_id AND n.key = t.key AND n.attempt = t.attempt AND n.status = 'running'
			WHERE t.leased_by IS NULL AND t.workspace = @ws
			UNION ALL
			SELECT t.queue, t.leased_by, t.created_at FROM node_states n
			JOIN tasks t ON t.run_id = n.run_id AND t.key = n.key AND t.attempt = n.attempt
			WHERE n.status = 'running' AND n.deadline IS NOT NULL AND t.leased_by <> '' AND t.workspace = @ws),
		q AS (
			SELECT queue, count(*) FILTER (WHERE leased_by IS NULL AND created_at <= now()) AS pending,
				count(*) FILTER (WHERE leased_by IS NOT NULL) AS leased,
				COALESCE(EXTRACT(EPOCH FROM now() - min(created_at) FILTER (WHERE leased_by IS NULL AND created_at <= now())), 0)::float8 AS oldest
			FROM live GROUP BY queue),
		names AS (SELECT queue FROM q UNION SELECT queue FROM task_workers WHERE workspace = @ws)
		SELECT names.queue, COALESCE(q.pending, 0), COALESCE(q.leased, 0), COALESCE(q.oldest, 0),
			COALESCE(w.worker, ''), w.last_poll_at,
			(SELECT count(*) FROM live l WHERE l.queue = names.queue AND l.leased_by = w.worker)
		FROM names LEFT JOIN q ON q.queue = names.queue LEFT JOIN task_workers w ON w.workspace = @ws AND w.queue = names.queue
		ORDER BY names.queue, w.last_poll_at DESC NULLS LAST, w.worker`, sql.Named("ws", workspaceOr(ws))).Rows()
	if err != nil {
		return nil, fmt.Errorf("error listing queues: %w", interpretError(err))
	}
	defer rows.Close()
	var out []QueueStats
	for rows.Next() {
		var q QueueStats
		var worker string
		var last *time.Time
		var leased int
		if err := rows.Scan(&q.Name, &q.Pending, &q.Leased, &q.OldestPendingSeconds, &worker, &last, &leased); err != nil {
			return nil, fmt.Errorf("error reading a queue: %w", err)
		}
		if n := len(out); n == 0 || out[n-1].Name != q.Name {
			q.Workers = []QueueWorker{}
			out = append(out, q)
		}
		if worker != "" && last != nil {
			cur := &out[len(out)-1]
			cur.Workers = append(cur.Workers, QueueWorker{ID: worker, LastPollAt: last.UTC(), Leased: leased})
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("error listing queues: %w", interpretError(err))
	}
	return out, nil
}

// TaskWorkers returns, for a run, the worker that leased each attempt of
// its pulled steps: key → attempt → worker.
func (s *Store) TaskWorkers(ctx context.Context, runID string) (map[string]map[int]string, error) {
	rows, err := s.db.WithContext(ctx).Raw(`SELECT key, attempt, leased_by FROM tasks
		WHERE run_id = ? AND leased_by IS NOT NULL AND leased_by <> ''`, runID).Rows()
	if err != nil {
		return nil, fmt.Errorf("error reading the workers of run %s: %w", runID, interpretError(err))
	}
	defer rows.Close()
	out := map[string]map[int]string{}
	for rows.Next() {
		var key, worker string
		var attempt int
		if err := rows.Scan(&key, &attempt, &worker); err != nil {
			return nil, fmt.Errorf("error reading the workers of run %s: %w", runID, err)
		}
		if out[key] == nil {
			out[key] = map[int]string{}
		}
		out[key][attempt] = worker
	}
	return out, rows.Err()
}

// ReleaseTasks gives tasks leased to worker back to their queue (a poll
// whose answer could not be sent: its client went away as the tasks were
// leased): waiting again, their nodes without a deadline, and the queue
// told.
func (s *Store) ReleaseTasks(ctx context.Context, worker string, tasks []PolledTask) error {
	if len(tasks) == 0 {
		return nil
	}
	runs := make([]string, len(tasks))
	keys := make([]string, len(tasks))
	attempts := make([]int64, len(tasks))
	for i, t := range tasks {
		runs[i], keys[i], attempts[i] = t.RunID, t.Key, int64(t.Attempt)
	}
	err := s.db.WithContext(ctx).Exec(`WITH r AS (
			UPDATE tasks t SET leased_by = NULL, leased_at = NULL
			FROM unnest(?::uuid[], ?::text[], ?::int[]) AS u(r, k, a)
			WHERE t.run_id = u.r AND t.key = u.k AND t.attempt = u.a AND t.leased_by = ?
			RETURNING t.run_id, t.key, t.attempt, t.queue),
		d AS (UPDATE node_states n SET deadline = NULL, updated_at = now() FROM r
			WHERE n.run_id = r.run_id AND n.key = r.key AND n.attempt = r.attempt AND n.status = 'running')
		SELECT count(pg_notify(?, q)) FROM (SELECT DISTINCT queue AS q FROM r) x`,
		pq.StringArray(runs), pq.StringArray(keys), pq.Array(attempts), worker, TasksChannel).Error
	if err != nil {
		return fmt.Errorf("error releasing %d tasks of %s: %w", len(tasks), worker, interpretError(err))
	}
	return nil
}
