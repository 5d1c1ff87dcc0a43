-- +goose Up
-- Process semantics (docs/state_machine.md): a run's compensation (the
-- undo nodes run when it fails or is cancelled with compensate), the
-- answer a Respond node gave the run's caller, and a webhook trigger's
-- respond setting (POST /hooks/{slug} waits for the run).
ALTER TABLE runs ADD COLUMN compensation jsonb;
ALTER TABLE runs ADD COLUMN response jsonb;
ALTER TABLE triggers ADD COLUMN respond jsonb;

-- +goose Down
ALTER TABLE triggers DROP COLUMN respond;
ALTER TABLE runs DROP COLUMN response;
ALTER TABLE runs DROP COLUMN compensation;
