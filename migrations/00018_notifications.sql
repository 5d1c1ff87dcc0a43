-- +goose Up
-- The notification webhook (README, Notifications): what people should
-- hear about (an approval requested, a reminder, a timed-out approval, a
-- failed run) is written here by the engine's transaction and delivered by
-- the notifier from this outbox, signed, with retries. next_attempt_at is
-- also the lease of a row being sent.
CREATE TABLE notifications (
    id              uuid PRIMARY KEY,
    type            text NOT NULL,
    run_id          uuid NOT NULL,
    payload         jsonb NOT NULL,
    status          text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'sending', 'delivered', 'failed')),
    tries           int NOT NULL DEFAULT 0,
    next_attempt_at timestamptz NOT NULL DEFAULT now(),
    last_error      text,
    created_at      timestamptz NOT NULL DEFAULT now(),
    delivered_at    timestamptz
);
CREATE INDEX notifications_due_idx ON notifications (next_attempt_at) WHERE status IN ('pending', 'sending');
CREATE INDEX notifications_run_idx ON notifications (run_id);

-- A UX node with remindAfterSeconds is reminded about at remind_at.
ALTER TABLE node_states ADD COLUMN remind_at timestamptz;
CREATE INDEX node_states_remind_idx ON node_states (remind_at) WHERE remind_at IS NOT NULL;

-- +goose Down
DROP INDEX node_states_remind_idx;
ALTER TABLE node_states DROP COLUMN remind_at;
DROP TABLE notifications;
