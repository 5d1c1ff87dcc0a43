-- +goose Up
-- Sub-flows (README, Sub-flows): a SubFlow node starts a child run, which
-- names the parent run, the node instance and the attempt that started it;
-- the node names its child. No foreign key to the parent: the child's
-- final transaction locks the parent's row itself, and a key share lock
-- taken by every insert would only add waiting.
ALTER TABLE runs ADD COLUMN parent_run_id uuid, ADD COLUMN parent_key text, ADD COLUMN parent_attempt int;
-- The unfinished children of a run (cancel, pause and resume pass to them;
-- the sweeper finds those of cancelled parents). Finished ones are not
-- looked up by parent.
CREATE INDEX runs_parent_idx ON runs (parent_run_id) WHERE parent_run_id IS NOT NULL AND status IN ('running', 'paused', 'failed');
ALTER TABLE node_states ADD COLUMN child_run_id uuid;

-- +goose Down
ALTER TABLE node_states DROP COLUMN child_run_id;
DROP INDEX runs_parent_idx;
ALTER TABLE runs DROP COLUMN parent_run_id, DROP COLUMN parent_key, DROP COLUMN parent_attempt;
