-- +goose Up
-- Deleting runs deletes their event deliveries (the runs' delete trigger,
-- delete_run_rows): without an index on run_id each batch retention
-- deleted read the whole of event_deliveries, which holds a row for every
-- event ever delivered to a run and is not emptied otherwise. Built in
-- the migration's transaction: events posted meanwhile wait for it
-- (seconds for millions of rows).
CREATE INDEX event_deliveries_run_idx ON event_deliveries (run_id);

-- +goose Down
DROP INDEX event_deliveries_run_idx;
