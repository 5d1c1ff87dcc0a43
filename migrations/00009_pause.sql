-- +goose Up
-- Run control (docs/state_machine.md): a paused run fires nothing new; its
-- undelivered dispatches are held until it resumes.
ALTER TABLE runs DROP CONSTRAINT runs_status_check;
ALTER TABLE runs ADD CONSTRAINT runs_status_check
    CHECK (status IN ('running', 'completed', 'failed', 'cancelled', 'paused'));
ALTER TABLE dispatches DROP CONSTRAINT dispatches_status_check;
ALTER TABLE dispatches ADD CONSTRAINT dispatches_status_check
    CHECK (status IN ('pending', 'sending', 'delivered', 'failed', 'cancelled', 'held'));

-- +goose Down
UPDATE dispatches SET status = 'pending' WHERE status = 'held';
ALTER TABLE dispatches DROP CONSTRAINT dispatches_status_check;
ALTER TABLE dispatches ADD CONSTRAINT dispatches_status_check
    CHECK (status IN ('pending', 'sending', 'delivered', 'failed', 'cancelled'));
UPDATE runs SET status = 'running' WHERE status = 'paused';
ALTER TABLE runs DROP CONSTRAINT runs_status_check;
ALTER TABLE runs ADD CONSTRAINT runs_status_check
    CHECK (status IN ('running', 'completed', 'failed', 'cancelled'));
