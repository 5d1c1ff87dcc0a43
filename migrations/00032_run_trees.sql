-- +goose Up
-- How many node instances a run and its sub-flow runs hold, all levels,
-- counted where they multiply (fan-outs, sub-flow starts) and kept on the
-- root run: a fan-out or sub-flow that would pass --max-run-nodes fails
-- its node (docs/reliability.md, Hostile flows).
CREATE TABLE run_trees (
    root_run_id uuid PRIMARY KEY REFERENCES runs(id) ON DELETE CASCADE,
    nodes bigint NOT NULL
);

-- +goose Down
DROP TABLE run_trees;
