-- +goose Up
-- A notification may go to a URL of its own instead of the notification
-- webhook: a Worker node's cancelUrl gets a notice when its run is
-- cancelled (worker.cancel).
ALTER TABLE notifications ADD COLUMN url text;

-- +goose Down
ALTER TABLE notifications DROP COLUMN url;
