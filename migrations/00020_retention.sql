-- +goose Up
-- Retention (README, Operations): finished runs older than the retention
-- period are deleted in batches, oldest first, by any process.
CREATE INDEX runs_finished_idx ON runs (finished_at) WHERE finished_at IS NOT NULL;
CREATE INDEX journey_events_run_idx ON journey_events (run_id) WHERE run_id IS NOT NULL;
-- Deleting a run deletes its rows: the engine's (as before) and the
-- notifications, event deliveries and journey entries that name it.
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION delete_run_rows() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM node_states WHERE run_id IN (SELECT id FROM deleted_runs);
    DELETE FROM dispatches WHERE run_id IN (SELECT id FROM deleted_runs);
    DELETE FROM run_events WHERE run_id IN (SELECT id FROM deleted_runs);
    DELETE FROM notifications WHERE run_id IN (SELECT id FROM deleted_runs);
    DELETE FROM event_deliveries WHERE run_id IN (SELECT id FROM deleted_runs);
    DELETE FROM journey_events WHERE run_id IN (SELECT id FROM deleted_runs);
    RETURN NULL;
END
$$;
-- +goose StatementEnd

-- +goose Down
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION delete_run_rows() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM node_states WHERE run_id IN (SELECT id FROM deleted_runs);
    DELETE FROM dispatches WHERE run_id IN (SELECT id FROM deleted_runs);
    DELETE FROM run_events WHERE run_id IN (SELECT id FROM deleted_runs);
    RETURN NULL;
END
$$;
-- +goose StatementEnd
DROP INDEX journey_events_run_idx;
DROP INDEX runs_finished_idx;
