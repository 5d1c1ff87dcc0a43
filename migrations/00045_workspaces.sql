-- +goose Up
-- Workspaces (docs/workspaces.md): several teams on one stitchd. Flows,
-- boards, secrets, credentials, events and audit entries belong to one;
-- runs carry their flow's (written once, when the run is inserted, so a
-- list or a limit reads no join); triggers, schedules, versions, node
-- states, entities and tasks belong through their flow, board or run.
-- Everything that exists goes into "default".
CREATE TABLE workspaces (
    slug                  text PRIMARY KEY CHECK (slug ~ '^[a-z][a-z0-9-]{0,39}$'),
    name                  text NOT NULL CHECK (name <> ''),
    max_running_runs      integer CHECK (max_running_runs > 0),
    max_starts_per_second double precision CHECK (max_starts_per_second > 0),
    -- The start rate's token bucket, kept here so that every process
    -- draws from one: tokens left at tokens_at.
    start_tokens          double precision NOT NULL DEFAULT 0,
    tokens_at             timestamptz,
    created_at            timestamptz NOT NULL DEFAULT now(),
    updated_at            timestamptz NOT NULL DEFAULT now()
);
INSERT INTO workspaces (slug, name) VALUES ('default', 'Default');

-- A person's role in a workspace. A user whose users.role is admin is a
-- server admin: admin in every workspace, member or not.
CREATE TABLE workspace_members (
    workspace  text NOT NULL REFERENCES workspaces(slug) ON DELETE CASCADE,
    user_id    uuid NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    role       text NOT NULL CHECK (role IN ('admin', 'editor', 'operator', 'approver', 'viewer')),
    created_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (workspace, user_id)
);
CREATE INDEX workspace_members_user_idx ON workspace_members (user_id);
INSERT INTO workspace_members (workspace, user_id, role) SELECT 'default', id, role FROM users;

ALTER TABLE flows ADD COLUMN workspace text NOT NULL DEFAULT 'default' REFERENCES workspaces(slug);
CREATE INDEX flows_workspace_idx ON flows (workspace, created_at);
ALTER TABLE boards ADD COLUMN workspace text NOT NULL DEFAULT 'default' REFERENCES workspaces(slug);
CREATE INDEX boards_workspace_idx ON boards (workspace, created_at);
-- No foreign key on runs: its check would take a share lock on the
-- workspace's row at every start, against the limits' row lock.
ALTER TABLE runs ADD COLUMN workspace text NOT NULL DEFAULT 'default';
-- Only other workspaces' runs are indexed: a server with one workspace
-- pays nothing more per run.
CREATE INDEX runs_workspace_created_idx ON runs (workspace, created_at DESC, id DESC) WHERE workspace <> 'default';

ALTER TABLE secrets ADD COLUMN workspace text NOT NULL DEFAULT 'default' REFERENCES workspaces(slug);
ALTER TABLE secrets DROP CONSTRAINT secrets_pkey, ADD PRIMARY KEY (workspace, name);
ALTER TABLE credentials ADD COLUMN workspace text NOT NULL DEFAULT 'default' REFERENCES workspaces(slug);
ALTER TABLE credentials DROP CONSTRAINT credentials_pkey, ADD PRIMARY KEY (workspace, name);

-- Events and their waits match within a workspace; an event's id (the
-- caller's, for idempotency) is unique within its workspace: the stored
-- id of another workspace's event is "<slug>/<id>".
ALTER TABLE events ADD COLUMN workspace text NOT NULL DEFAULT 'default';
DROP INDEX events_unconsumed_idx;
CREATE INDEX events_unconsumed_idx ON events (workspace, name, key, created_at) WHERE consumed_at IS NULL;

ALTER TABLE tasks ADD COLUMN workspace text NOT NULL DEFAULT 'default';
DROP INDEX tasks_waiting_idx;
CREATE INDEX tasks_waiting_idx ON tasks (workspace, queue, created_at) WHERE leased_by IS NULL;
ALTER TABLE task_workers ADD COLUMN workspace text NOT NULL DEFAULT 'default';
ALTER TABLE task_workers DROP CONSTRAINT task_workers_pkey, ADD PRIMARY KEY (workspace, queue, worker);

-- Deliveries are claimed fairly between workspaces (ClaimDue takes the
-- oldest due rows of each workspace in turn): a row carries its run's
-- workspace, and the due index leads with it.
ALTER TABLE dispatches ADD COLUMN workspace text NOT NULL DEFAULT 'default';
DROP INDEX dispatches_due_idx;
CREATE INDEX dispatches_due_idx ON dispatches (workspace, next_attempt_at) WHERE status IN ('pending', 'sending');

ALTER TABLE audit_log ADD COLUMN workspace text;
UPDATE audit_log SET workspace = 'default';
CREATE INDEX audit_log_workspace_idx ON audit_log (workspace, id);
-- A token bound to a workspace acts only there.
ALTER TABLE api_tokens ADD COLUMN workspace text REFERENCES workspaces(slug) ON DELETE CASCADE;

-- Admits one start of a run of flow f against its workspace's limits
-- (docs/workspaces.md#limits), in the start's own transaction: the
-- workspace's row stays locked until the start commits, so starts from
-- every process are counted one at a time. A start past a limit raises
-- SQLSTATE SD429 (message: the workspace; detail: the limit; hint: the
-- seconds to wait), which aborts the transaction; only a workspace with a
-- limit is locked.
-- +goose StatementBegin
CREATE FUNCTION stitchd_admit_run(f uuid) RETURNS void AS $$
DECLARE
    workspace_slug text;
    w workspaces%ROWTYPE;
    running bigint;
    cap double precision;
    avail double precision;
BEGIN
    SELECT k.slug INTO workspace_slug FROM flows fl JOIN workspaces k ON k.slug = fl.workspace
        WHERE fl.id = f AND (k.max_running_runs IS NOT NULL OR k.max_starts_per_second IS NOT NULL);
    IF workspace_slug IS NULL THEN
        RETURN;
    END IF;
    SELECT * INTO w FROM workspaces k WHERE k.slug = workspace_slug FOR UPDATE;
    IF w.max_running_runs IS NOT NULL THEN
        SELECT count(*) INTO running FROM runs
            WHERE flow_id IN (SELECT fl.id FROM flows fl WHERE fl.workspace = w.slug) AND status = 'running' AND parent_run_id IS NULL;
        IF running >= w.max_running_runs THEN
            RAISE EXCEPTION USING ERRCODE = 'SD429', MESSAGE = w.slug, DETAIL = 'max_running_runs', HINT = '1';
        END IF;
    END IF;
    IF w.max_starts_per_second IS NOT NULL THEN
        cap := greatest(1, w.max_starts_per_second);
        avail := CASE WHEN w.tokens_at IS NULL THEN cap
            ELSE least(cap, w.start_tokens + w.max_starts_per_second * greatest(0, extract(epoch FROM clock_timestamp() - w.tokens_at))) END;
        IF avail < 1 THEN
            RAISE EXCEPTION USING ERRCODE = 'SD429', MESSAGE = w.slug, DETAIL = 'max_starts_per_second',
                HINT = ((1 - avail) / w.max_starts_per_second)::text;
        END IF;
        UPDATE workspaces k SET start_tokens = avail - 1, tokens_at = clock_timestamp() WHERE k.slug = w.slug;
    END IF;
END
$$ LANGUAGE plpgsql;
-- +goose StatementEnd

-- +goose Down
DROP FUNCTION stitchd_admit_run(uuid);
ALTER TABLE api_tokens DROP COLUMN workspace;
DROP INDEX audit_log_workspace_idx;
ALTER TABLE audit_log DROP COLUMN workspace;
DROP INDEX dispatches_due_idx;
ALTER TABLE dispatches DROP COLUMN workspace;
CREATE INDEX dispatches_due_idx ON dispatches (next_attempt_at) WHERE status IN ('pending', 'sending');
DROP INDEX tasks_waiting_idx;
DELETE FROM task_workers WHERE workspace <> 'default';
ALTER TABLE task_workers DROP CONSTRAINT task_workers_pkey, ADD PRIMARY KEY (queue, worker);
ALTER TABLE task_workers DROP COLUMN workspace;
DELETE FROM tasks WHERE workspace <> 'default';
ALTER TABLE tasks DROP COLUMN workspace;
CREATE INDEX tasks_waiting_idx ON tasks (queue, created_at) WHERE leased_by IS NULL;
DROP INDEX events_unconsumed_idx;
DELETE FROM events WHERE workspace <> 'default';
ALTER TABLE events DROP COLUMN workspace;
CREATE INDEX events_unconsumed_idx ON events (name, key, created_at) WHERE consumed_at IS NULL;
DELETE FROM credentials WHERE workspace <> 'default';
ALTER TABLE credentials DROP CONSTRAINT credentials_pkey, ADD PRIMARY KEY (name);
ALTER TABLE credentials DROP COLUMN workspace;
DELETE FROM secrets WHERE workspace <> 'default';
ALTER TABLE secrets DROP CONSTRAINT secrets_pkey, ADD PRIMARY KEY (name);
ALTER TABLE secrets DROP COLUMN workspace;
DROP INDEX runs_workspace_created_idx;
ALTER TABLE runs DROP COLUMN workspace;
ALTER TABLE boards DROP COLUMN workspace;
ALTER TABLE flows DROP COLUMN workspace;
DROP TABLE workspace_members;
DROP TABLE workspaces;
