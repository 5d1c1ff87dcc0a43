-- +goose Up
-- Schedule triggers (README, Triggers): a cron expression in a time zone
-- starts runs of a flow; the scheduler of any stitchd process claims a due
-- schedule (FOR UPDATE SKIP LOCKED), starts the tick's run (idempotent on
-- schedule:<id>:<tick>) and moves next_fire_at on.
CREATE TABLE schedules (
    id            uuid PRIMARY KEY,
    flow_id       uuid NOT NULL REFERENCES flows(id),
    cron          text NOT NULL,
    timezone      text NOT NULL DEFAULT 'UTC',
    input         jsonb NOT NULL DEFAULT '{}',
    overlap       text NOT NULL DEFAULT 'skip' CHECK (overlap IN ('skip', 'allow')),
    catch_up      text NOT NULL DEFAULT 'one' CHECK (catch_up IN ('one', 'none')),
    enabled       boolean NOT NULL DEFAULT true,
    next_fire_at  timestamptz NOT NULL,
    last_fired_at timestamptz,
    last_run_id   uuid,
    last_error    text,
    created_at    timestamptz NOT NULL DEFAULT now(),
    updated_at    timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX schedules_due_idx ON schedules (next_fire_at) WHERE enabled;
CREATE INDEX schedules_flow_idx ON schedules (flow_id);

-- +goose Down
DROP TABLE schedules;
