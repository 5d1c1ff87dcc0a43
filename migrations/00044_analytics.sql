-- +goose Up
-- Process analytics (docs/analytics.md): a board section's SLA, the stay
-- of an entity already notified as overdue (one entity.sla_breached
-- notification per stay: sla_notified_since is the section_since of the
-- stay notified), and notifications that belong to no run.
ALTER TABLE sections ADD COLUMN sla_seconds integer CHECK (sla_seconds > 0);
ALTER TABLE entities ADD COLUMN sla_notified_since timestamptz;
ALTER TABLE notifications ALTER COLUMN run_id DROP NOT NULL;
-- The journey ledger read by section (a board's funnel: the moves into
-- and out of its sections over a range).
CREATE INDEX journey_events_created_idx ON journey_events (created_at);

-- +goose Down
DROP INDEX journey_events_created_idx;
DELETE FROM notifications WHERE run_id IS NULL;
ALTER TABLE notifications ALTER COLUMN run_id SET NOT NULL;
ALTER TABLE entities DROP COLUMN sla_notified_since;
ALTER TABLE sections DROP COLUMN sla_seconds;
