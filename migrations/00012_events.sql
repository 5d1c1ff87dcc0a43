-- +goose Up
-- Events into running runs (README, Events): an Event node waits in status
-- waiting_for_event on (event_name, event_key); POST /api/v1/events wakes
-- every node waiting on its name and key. An event no node waits for is
-- kept until expires_at for the first wait that begins on it. Each waiter
-- it found gets a row in event_deliveries, written in the same
-- transaction as the event and removed by the delivering one: an outbox,
-- so a process killed in between loses no wake-up.
ALTER TABLE node_states DROP CONSTRAINT node_states_status_check;
ALTER TABLE node_states ADD CONSTRAINT node_states_status_check
    CHECK (status IN ('pending', 'running', 'completed', 'failed', 'waiting_for_user', 'cancelled', 'skipped',
                      'sleeping', 'waiting_for_event'));
ALTER TABLE node_states ADD COLUMN event_name text, ADD COLUMN event_key text;
CREATE INDEX node_states_event_idx ON node_states (event_name, event_key) WHERE status = 'waiting_for_event';
CREATE INDEX node_states_event_deadline_idx ON node_states (deadline)
    WHERE status = 'waiting_for_event' AND deadline IS NOT NULL;

CREATE TABLE events (
    id          text PRIMARY KEY,
    name        text NOT NULL,
    key         text NOT NULL,
    payload     jsonb NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now(),
    expires_at  timestamptz NOT NULL,
    consumed_at timestamptz,
    delivered   integer NOT NULL DEFAULT 0
);
CREATE INDEX events_unconsumed_idx ON events (name, key, created_at) WHERE consumed_at IS NULL;

CREATE TABLE event_deliveries (
    event_id   text NOT NULL REFERENCES events(id) ON DELETE CASCADE,
    -- No foreign key to runs: its check would take a share lock on the run
    -- row while the post holds the (name, key) lock, and an engine
    -- transaction holding the run may want that lock (a deadlock).
    run_id     uuid NOT NULL,
    key        text NOT NULL,
    attempt    integer NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (event_id, run_id, key)
);

-- +goose Down
DROP TABLE event_deliveries;
DROP TABLE events;
DROP INDEX node_states_event_deadline_idx;
DROP INDEX node_states_event_idx;
ALTER TABLE node_states DROP COLUMN event_name, DROP COLUMN event_key;
UPDATE node_states SET status = 'cancelled' WHERE status = 'waiting_for_event';
ALTER TABLE node_states DROP CONSTRAINT node_states_status_check;
ALTER TABLE node_states ADD CONSTRAINT node_states_status_check
    CHECK (status IN ('pending', 'running', 'completed', 'failed', 'waiting_for_user', 'cancelled', 'skipped', 'sleeping'));
