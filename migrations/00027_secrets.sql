-- +goose Up
-- Named secrets for HTTP node templates ({{ secret "NAME" }}, docs/http.md):
-- each value sealed with AES-256-GCM under the server's STITCHD_SECRET_KEY,
-- the name as the seal's additional data; key_id names the key that sealed
-- it. No plaintext is kept.
CREATE TABLE secrets (
    name       text PRIMARY KEY CHECK (name ~ '^[A-Za-z][A-Za-z0-9_-]{0,99}$'),
    ciphertext bytea NOT NULL,
    nonce      bytea NOT NULL,
    key_id     text NOT NULL,
    created_by text NOT NULL DEFAULT '',
    updated_by text NOT NULL DEFAULT '',
    created_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now()
);

-- +goose Down
DROP TABLE secrets;
