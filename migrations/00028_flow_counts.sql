-- +goose Up
-- The flows page shows each flow's runs counted by status: the index
-- answers a (flow, status) count from the index alone (counts are capped,
-- so a busy flow's completed runs are counted up to the cap, no further).
-- Webhook triggers are counted by flow too.
CREATE INDEX runs_flow_status_idx ON runs (flow_id, status);
CREATE INDEX triggers_flow_idx ON triggers (flow_id);

-- +goose Down
DROP INDEX triggers_flow_idx;
DROP INDEX runs_flow_status_idx;
