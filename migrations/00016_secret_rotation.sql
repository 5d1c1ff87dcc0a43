-- +goose Up
-- Inbound trigger secrets rotate with an overlap (POST
-- /api/v1/triggers/{id}/rotate-secret): the secret replaced keeps verifying
-- until previous_secret_expires_at.
ALTER TABLE triggers ADD COLUMN previous_secret text, ADD COLUMN previous_secret_expires_at timestamptz;

-- The secrets that sign dispatches (Standard Webhooks): the server's
-- (flow_id NULL) and a flow's own. The current secret of a scope has no
-- expires_at; one replaced by a rotation signs too (every dispatch carries
-- one signature per secret) until its expires_at.
CREATE TABLE webhook_secrets (
    id         bigserial PRIMARY KEY,
    flow_id    uuid REFERENCES flows(id) ON DELETE CASCADE,
    secret     bytea NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    expires_at timestamptz
);
CREATE INDEX webhook_secrets_flow_idx ON webhook_secrets (flow_id, id DESC);
-- At most one current secret a scope.
CREATE UNIQUE INDEX webhook_secrets_current_idx ON webhook_secrets (coalesce(flow_id, '00000000-0000-0000-0000-000000000000'))
    WHERE expires_at IS NULL;
INSERT INTO webhook_secrets (secret, created_at) SELECT secret, created_at FROM signing_keys WHERE id = 'whsec';

-- +goose Down
DROP TABLE webhook_secrets;
ALTER TABLE triggers DROP COLUMN previous_secret, DROP COLUMN previous_secret_expires_at;
