-- +goose Up
-- Pull workers (docs/workers.md, "Pull"): a Worker step with data.queue
-- writes its attempt here, in the firing transaction, instead of to the
-- outbox; POST /api/v1/tasks/poll leases the oldest waiting ones (FOR
-- UPDATE SKIP LOCKED) and sets the node's deadline to the lease's end, so
-- a lease that runs out times the attempt out like any deadline. A row is
-- kept after its attempt (the worker that took it is shown in the run
-- view); a waiting row whose attempt has ended (a cancelled run) is
-- dropped by the next poll that meets it (leased_by '').
CREATE TABLE tasks (
    run_id        uuid NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    key           text NOT NULL,
    attempt       integer NOT NULL,
    queue         text NOT NULL,
    payload       jsonb NOT NULL,
    lease_seconds integer NOT NULL CHECK (lease_seconds > 0),
    created_at    timestamptz NOT NULL DEFAULT now(),
    leased_by     text,
    leased_at     timestamptz,
    PRIMARY KEY (run_id, key, attempt)
);
CREATE INDEX tasks_waiting_idx ON tasks (queue, created_at) WHERE leased_by IS NULL;

-- The workers that poll each queue, for GET /api/v1/queues.
CREATE TABLE task_workers (
    queue        text NOT NULL,
    worker       text NOT NULL,
    last_poll_at timestamptz NOT NULL,
    PRIMARY KEY (queue, worker)
);

-- A token may act with a narrower role than its person's: "worker" polls
-- task queues and nothing else.
ALTER TABLE api_tokens ADD COLUMN role text CHECK (role IN ('worker'));

-- +goose Down
ALTER TABLE api_tokens DROP COLUMN role;
DROP TABLE task_workers;
DROP TABLE tasks;
