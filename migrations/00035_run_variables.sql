-- +goose Up
-- A run's variables (data.setVariables of a node, set when it completes;
-- read as vars.<name> by any later expression): one object per run.
ALTER TABLE runs ADD COLUMN variables jsonb NOT NULL DEFAULT '{}'::jsonb;

-- +goose Down
ALTER TABLE runs DROP COLUMN variables;
