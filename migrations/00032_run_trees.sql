-- +goose Up
-- How many node instances a run and its sub-flow runs hold, all levels,
-- counted where they multiply (fan-outs, sub-flow starts) and kept on the
-- root run: a fan-out or sub-flow that would pass --max-run-nodes fails
-- its node (docs/reliability.md, Hostile flows).
CREATE TABLE run_trees (
    root_run_id uuid PRIMARY KEY REFERENCES runs(id) ON DELETE CASCADE,
    nodes bigint NOT NULL
);
-- What a transaction counted while another of the same tree held the
-- run_trees row: nothing waits for that row (a child holding it while it
-- tells its parent, and the parent holding its run while it waits for
-- the row, would deadlock); the row's next holder folds these into it.
-- No foreign key: its check would lock the root's run row, which the
-- root's own transactions hold. Deleting runs deletes their rows.
CREATE TABLE run_tree_deltas (
    root_run_id uuid NOT NULL,
    n bigint NOT NULL
);
CREATE INDEX run_tree_deltas_root_idx ON run_tree_deltas (root_run_id);

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION delete_run_rows() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM node_states WHERE run_id IN (SELECT id FROM deleted_runs);
    DELETE FROM dispatches WHERE run_id IN (SELECT id FROM deleted_runs);
    DELETE FROM run_events WHERE run_id IN (SELECT id FROM deleted_runs);
    DELETE FROM notifications WHERE run_id IN (SELECT id FROM deleted_runs);
    DELETE FROM event_deliveries WHERE run_id IN (SELECT id FROM deleted_runs);
    DELETE FROM journey_events WHERE run_id IN (SELECT id FROM deleted_runs);
    DELETE FROM run_tree_deltas WHERE root_run_id IN (SELECT id FROM deleted_runs);
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
    DELETE FROM notifications WHERE run_id IN (SELECT id FROM deleted_runs);
    DELETE FROM event_deliveries WHERE run_id IN (SELECT id FROM deleted_runs);
    DELETE FROM journey_events WHERE run_id IN (SELECT id FROM deleted_runs);
    RETURN NULL;
END
$$;
-- +goose StatementEnd
DROP TABLE run_tree_deltas;
DROP TABLE run_trees;
