-- +goose Up
-- Retention reads each flow's oldest finished runs up to the flow's own
-- bound (store/retention.go): one index range scan a flow, which never
-- reads the runs another flow keeps longer. It replaces runs_finished_idx,
-- which retention alone used: a scan of it in finish order read every run
-- finished before the shortest retention in force, kept or not, at every
-- poll.
CREATE INDEX runs_flow_finished_idx ON runs (flow_id, finished_at) WHERE finished_at IS NOT NULL;
DROP INDEX runs_finished_idx;

-- +goose Down
CREATE INDEX runs_finished_idx ON runs (finished_at) WHERE finished_at IS NOT NULL;
DROP INDEX runs_flow_finished_idx;
