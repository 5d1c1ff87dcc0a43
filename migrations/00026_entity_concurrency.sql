-- +goose Up
-- Entity concurrency (settings.entityConcurrency): a run may wait queued
-- for its entity's active run of the flow; the index finds an entity's
-- active and queued runs of a flow.
ALTER TABLE runs DROP CONSTRAINT runs_status_check;
ALTER TABLE runs ADD CONSTRAINT runs_status_check
    CHECK (status IN ('running', 'completed', 'failed', 'cancelled', 'paused', 'queued'));
CREATE INDEX runs_entity_active_idx ON runs (entity_id, flow_id, created_at)
    WHERE entity_id IS NOT NULL AND status IN ('running', 'paused', 'queued');

-- +goose Down
DROP INDEX runs_entity_active_idx;
UPDATE runs SET status = 'cancelled', finished_at = now() WHERE status = 'queued';
ALTER TABLE runs DROP CONSTRAINT runs_status_check;
ALTER TABLE runs ADD CONSTRAINT runs_status_check
    CHECK (status IN ('running', 'completed', 'failed', 'cancelled', 'paused'));
