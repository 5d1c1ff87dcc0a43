-- +goose Up
-- People (README, People and access): users with a role and groups, their
-- sign-in sessions and personal API tokens, the audit trail of what
-- people changed, the decisions each person made at a UX node, and whom a
-- waiting UX node is assigned to.
CREATE TABLE users (
    id            uuid PRIMARY KEY,
    email         text NOT NULL,
    name          text NOT NULL,
    role          text NOT NULL CHECK (role IN ('admin', 'editor', 'operator', 'approver', 'viewer')),
    groups        text[] NOT NULL DEFAULT '{}',
    disabled      boolean NOT NULL DEFAULT false,
    -- An argon2id hash in PHC form; NULL: the user cannot sign in with a
    -- password (tokens only).
    password_hash text,
    created_at    timestamptz NOT NULL DEFAULT now(),
    updated_at    timestamptz NOT NULL DEFAULT now()
);
CREATE UNIQUE INDEX users_email_idx ON users (lower(email));

-- A signed-in browser. The cookie holds a random value; only its SHA-256
-- is kept, so a copy of this table signs nobody in.
CREATE TABLE sessions (
    id_hash      bytea PRIMARY KEY,
    user_id      uuid NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    csrf_token   text NOT NULL,
    created_at   timestamptz NOT NULL DEFAULT now(),
    expires_at   timestamptz NOT NULL
);
CREATE INDEX sessions_user_idx ON sessions (user_id);
CREATE INDEX sessions_expires_idx ON sessions (expires_at);

-- Personal API tokens (the table was reserved in 00001): each acts as its
-- user, with the user's role at the time of the call.
DELETE FROM api_tokens;
ALTER TABLE api_tokens ADD COLUMN user_id uuid NOT NULL REFERENCES users(id) ON DELETE CASCADE;
ALTER TABLE api_tokens ADD COLUMN last_used_at timestamptz;
CREATE INDEX api_tokens_user_idx ON api_tokens (user_id);

-- Failed sign-ins, counted per account and per address to slow guessing
-- across every process.
CREATE TABLE login_failures (
    id       bigserial PRIMARY KEY,
    email    text NOT NULL,
    address  text NOT NULL,
    at       timestamptz NOT NULL
);
CREATE INDEX login_failures_email_idx ON login_failures (lower(email), at);
CREATE INDEX login_failures_address_idx ON login_failures (address, at);

-- What people and tokens changed through the API.
CREATE TABLE audit_log (
    id          bigserial PRIMARY KEY,
    at          timestamptz NOT NULL,
    actor       text NOT NULL,
    action      text NOT NULL,
    target      text NOT NULL DEFAULT '',
    request_id  text NOT NULL DEFAULT '',
    status      int NOT NULL,
    details     jsonb
);
CREATE INDEX audit_log_actor_idx ON audit_log (actor, id);
CREATE INDEX audit_log_target_idx ON audit_log (target, id);
CREATE INDEX audit_log_at_idx ON audit_log (at);

-- Each person's decision at a UX node's attempt: N-of-M approvals count
-- them, and the run's record shows them.
CREATE TABLE ux_decisions (
    run_id      uuid NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    key         text NOT NULL,
    attempt     int NOT NULL,
    by_email    text NOT NULL,
    outcome     text NOT NULL,
    comment     text NOT NULL DEFAULT '',
    answer      jsonb,
    at          timestamptz NOT NULL,
    PRIMARY KEY (run_id, key, attempt, by_email)
);
-- The newest vote: a live inbox's mark (store.ApprovalsMark).
CREATE INDEX ux_decisions_at_idx ON ux_decisions (at);

-- One-click approval links already used (each works once).
CREATE TABLE used_action_links (
    nonce    text PRIMARY KEY,
    used_at  timestamptz NOT NULL
);
CREATE INDEX used_action_links_used_idx ON used_action_links (used_at);

-- Whom a waiting UX node is assigned to, worked out when it starts
-- waiting (NULL and NULL: any approver).
ALTER TABLE node_states ADD COLUMN assign_users text[];
ALTER TABLE node_states ADD COLUMN assign_groups text[];
-- Who started a run (a user's email; NULL: the admin token, a trigger, a
-- schedule), for separation of duties.
ALTER TABLE runs ADD COLUMN started_by text;
-- Who moved an entity by hand or decided the step that moved it.
ALTER TABLE journey_events ADD COLUMN actor text;

-- +goose Down
ALTER TABLE journey_events DROP COLUMN actor;
ALTER TABLE runs DROP COLUMN started_by;
ALTER TABLE node_states DROP COLUMN assign_groups;
ALTER TABLE node_states DROP COLUMN assign_users;
DROP TABLE used_action_links;
DROP TABLE ux_decisions;
DROP TABLE audit_log;
DROP TABLE login_failures;
DROP INDEX api_tokens_user_idx;
ALTER TABLE api_tokens DROP COLUMN last_used_at;
ALTER TABLE api_tokens DROP COLUMN user_id;
DROP TABLE sessions;
DROP TABLE users;
