-- +goose Up
-- The hosts a secret may be sent to (docs/http.md#where-a-secret-goes):
-- empty, the hosts fixed in the flows that use it; else only these
-- (host or host:port), checked as each request is sent.
ALTER TABLE secrets ADD COLUMN allowed_hosts text[] NOT NULL DEFAULT '{}';

-- +goose Down
ALTER TABLE secrets DROP COLUMN allowed_hosts;
