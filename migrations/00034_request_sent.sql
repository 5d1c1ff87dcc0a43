-- +goose Up
-- The try of a request/response delivery (an HTTP node's request) that
-- was sent: recorded just before it goes out, so that a row claimed again
-- after its lease ran out is sent again only when no earlier try was —
-- one queued and dropped by a stopping process — and otherwise fails its
-- attempt as unknown (docs/http.md).
ALTER TABLE dispatches ADD COLUMN sent_tries int NOT NULL DEFAULT 0;

-- +goose Down
ALTER TABLE dispatches DROP COLUMN sent_tries;
