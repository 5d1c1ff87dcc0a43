-- +goose Up
-- The HTTP node (README, Concepts): an outbox row may be a request whose
-- response completes the node (kind 'request': its method, headers and
-- timeout in request, its body in body, sent as they are) rather than a
-- worker dispatch (kind 'callback': the signed contract payload).
ALTER TABLE dispatches
    ADD COLUMN kind text NOT NULL DEFAULT 'callback' CHECK (kind IN ('callback', 'request')),
    ADD COLUMN request jsonb,
    ADD COLUMN body bytea;

-- +goose Down
DELETE FROM dispatches WHERE kind = 'request';
ALTER TABLE dispatches DROP COLUMN body, DROP COLUMN request, DROP COLUMN kind;
