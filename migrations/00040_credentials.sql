-- +goose Up
-- Named credentials (docs/integrations.md): a type and its data, the data
-- sealed with AES-256-GCM under the server's STITCHD_SECRET_KEY as a
-- secret's value is (the name as additional data), and the only hosts a
-- request carrying it may go to. No plaintext is kept.
CREATE TABLE credentials (
    name          text PRIMARY KEY CHECK (name ~ '^[A-Za-z][A-Za-z0-9_-]{0,99}$'),
    type          text NOT NULL CHECK (type IN ('bearer', 'basic', 'api_key', 'oauth2_client_credentials', 'smtp')),
    ciphertext    bytea NOT NULL,
    nonce         bytea NOT NULL,
    key_id        text NOT NULL,
    allowed_hosts text[] NOT NULL CHECK (cardinality(allowed_hosts) > 0),
    created_by    text NOT NULL DEFAULT '',
    updated_by    text NOT NULL DEFAULT '',
    created_at    timestamptz NOT NULL DEFAULT now(),
    updated_at    timestamptz NOT NULL DEFAULT now()
);

-- +goose Down
DROP TABLE credentials;
