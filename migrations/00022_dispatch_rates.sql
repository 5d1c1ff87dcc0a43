-- +goose Up
-- Per-host dispatch rate limits (--dispatch-rate HOST=RPS): one token
-- bucket per destination host, shared by every process. A delivery takes
-- a token first (store.TakeDispatchToken); granted says whether the last
-- take got one.
CREATE TABLE dispatch_rate_buckets (
    host     text PRIMARY KEY,
    tokens   double precision NOT NULL,
    at       timestamptz NOT NULL,
    granted  boolean NOT NULL DEFAULT false
);

-- +goose Down
DROP TABLE dispatch_rate_buckets;
