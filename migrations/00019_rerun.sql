-- +goose Up
-- A run some of whose nodes were re-run by hand (POST …/rerun): its
-- pending rows may carry earlier attempts, so the engine reads a row's
-- attempt before firing it, and does not fire its steps speculatively.
ALTER TABLE runs ADD COLUMN reran boolean NOT NULL DEFAULT false;

-- +goose Down
ALTER TABLE runs DROP COLUMN reran;
