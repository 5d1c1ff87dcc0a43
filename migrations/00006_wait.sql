-- +goose Up
-- Time (docs/state_machine.md): a Wait node sleeps until wake_at
-- (database time); the sweeper wakes due ones. A UX node with a timeout
-- keeps its deadline while it waits for a person.
ALTER TABLE node_states DROP CONSTRAINT node_states_status_check;
ALTER TABLE node_states ADD CONSTRAINT node_states_status_check
    CHECK (status IN ('pending', 'running', 'completed', 'failed', 'waiting_for_user', 'cancelled', 'skipped', 'sleeping'));
ALTER TABLE node_states ADD COLUMN wake_at timestamptz;
CREATE INDEX node_states_wake_idx ON node_states (wake_at) WHERE status = 'sleeping';
CREATE INDEX node_states_approval_deadline_idx ON node_states (deadline)
    WHERE status = 'waiting_for_user' AND deadline IS NOT NULL;

-- +goose Down
DROP INDEX node_states_approval_deadline_idx;
DROP INDEX node_states_wake_idx;
ALTER TABLE node_states DROP COLUMN wake_at;
UPDATE node_states SET status = 'cancelled' WHERE status = 'sleeping';
ALTER TABLE node_states DROP CONSTRAINT node_states_status_check;
ALTER TABLE node_states ADD CONSTRAINT node_states_status_check
    CHECK (status IN ('pending', 'running', 'completed', 'failed', 'waiting_for_user', 'cancelled', 'skipped'));
