-- +goose Up
-- Run deadlines (README, Time): past deadline_at a running or paused run
-- fails with the reason "deadline"; the sweeper finds such runs.
ALTER TABLE runs ADD COLUMN deadline_at timestamptz;
CREATE INDEX runs_deadline_idx ON runs (deadline_at) WHERE deadline_at IS NOT NULL AND status IN ('running', 'paused');

-- +goose Down
DROP INDEX runs_deadline_idx;
ALTER TABLE runs DROP COLUMN deadline_at;
