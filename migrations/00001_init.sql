-- +goose Up
-- +goose StatementBegin
CREATE TABLE boards (
    id          uuid PRIMARY KEY,
    name        text NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now(),
    updated_at  timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE sections (
    board_id    uuid NOT NULL REFERENCES boards(id) ON DELETE CASCADE,
    id          text NOT NULL,
    name        text NOT NULL,
    position    integer NOT NULL,
    PRIMARY KEY (board_id, id)
);

CREATE TABLE flows (
    id                 uuid PRIMARY KEY,
    name               text NOT NULL,
    board_id           uuid REFERENCES boards(id),
    current_version_id uuid,
    created_at         timestamptz NOT NULL DEFAULT now(),
    updated_at         timestamptz NOT NULL DEFAULT now(),
    deleted_at         timestamptz
);

CREATE TABLE flow_versions (
    id              uuid PRIMARY KEY,
    flow_id         uuid NOT NULL REFERENCES flows(id),
    number          integer NOT NULL,
    visual_graph    jsonb NOT NULL,
    execution_graph jsonb NOT NULL,
    graph_hash      text NOT NULL,
    message         text NOT NULL DEFAULT '',
    created_at      timestamptz NOT NULL DEFAULT now(),
    UNIQUE (flow_id, number)
);

ALTER TABLE flows ADD CONSTRAINT flows_current_version_fk
    FOREIGN KEY (current_version_id) REFERENCES flow_versions(id) DEFERRABLE INITIALLY DEFERRED;

CREATE TABLE entities (
    id               uuid PRIMARY KEY,
    board_id         uuid NOT NULL REFERENCES boards(id),
    type             text NOT NULL,
    name             text NOT NULL,
    email            text,
    metadata         jsonb NOT NULL DEFAULT '{}',
    section_id       text,
    section_since    timestamptz,
    current_run_id   uuid,
    current_node_key text,
    created_at       timestamptz NOT NULL DEFAULT now(),
    updated_at       timestamptz NOT NULL DEFAULT now()
);
CREATE UNIQUE INDEX entities_board_email_idx ON entities (board_id, lower(email)) WHERE email IS NOT NULL;
CREATE INDEX entities_board_section_idx ON entities (board_id, section_id);

CREATE TABLE runs (
    id               uuid PRIMARY KEY,
    flow_id          uuid NOT NULL REFERENCES flows(id),
    flow_version_id  uuid NOT NULL REFERENCES flow_versions(id),
    entity_id        uuid REFERENCES entities(id),
    status           text NOT NULL CHECK (status IN ('running', 'completed', 'failed', 'cancelled')),
    trigger          jsonb NOT NULL DEFAULT '{}',
    input            jsonb NOT NULL DEFAULT 'null',
    output           jsonb,
    error            text,
    idempotency_key  text,
    -- Bookkeeping updated in the same transaction as every node transition:
    -- nodes running or waiting for a person, failed nodes, terminal nodes
    -- not yet completed, and the last event sequence number.
    active_nodes     integer NOT NULL DEFAULT 0,
    failed_nodes     integer NOT NULL DEFAULT 0,
    terminals_left   integer NOT NULL DEFAULT 0,
    event_seq        bigint NOT NULL DEFAULT 0,
    created_at       timestamptz NOT NULL DEFAULT now(),
    updated_at       timestamptz NOT NULL DEFAULT now(),
    finished_at      timestamptz
);
CREATE UNIQUE INDEX runs_idempotency_idx ON runs (flow_id, idempotency_key) WHERE idempotency_key IS NOT NULL;
CREATE INDEX runs_flow_created_idx ON runs (flow_id, created_at DESC, id DESC);
CREATE INDEX runs_created_idx ON runs (created_at DESC, id DESC);
CREATE INDEX runs_status_idx ON runs (status, created_at DESC);

CREATE TABLE node_states (
    run_id          uuid NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    key             text NOT NULL,
    node_id         text NOT NULL,
    idx             integer[] NOT NULL DEFAULT '{}',
    type            text NOT NULL,
    status          text NOT NULL CHECK (status IN ('pending', 'running', 'completed', 'failed', 'waiting_for_user', 'cancelled')),
    input           jsonb,
    output          jsonb,
    error           text,
    attempt         integer NOT NULL DEFAULT 0,
    -- Upstream completions (or, for a Collector, item arrivals) still awaited.
    pending_parents integer NOT NULL DEFAULT 0,
    deadline        timestamptz,
    started_at      timestamptz,
    finished_at     timestamptz,
    updated_at      timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (run_id, key)
);
CREATE INDEX node_states_deadline_idx ON node_states (deadline) WHERE status = 'running' AND deadline IS NOT NULL;
CREATE INDEX node_states_waiting_idx ON node_states (updated_at) WHERE status = 'waiting_for_user';
CREATE INDEX node_states_node_idx ON node_states (run_id, node_id, idx);

CREATE TABLE dispatches (
    id              uuid PRIMARY KEY,
    run_id          uuid NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    key             text NOT NULL,
    attempt         integer NOT NULL,
    url             text NOT NULL,
    payload         jsonb NOT NULL,
    status          text NOT NULL CHECK (status IN ('pending', 'sending', 'delivered', 'failed', 'cancelled')),
    tries           integer NOT NULL DEFAULT 0,
    max_tries       integer NOT NULL DEFAULT 3,
    next_attempt_at timestamptz NOT NULL DEFAULT now(),
    locked_until    timestamptz,
    last_error      text,
    -- Whether the successful delivery has been written to the run's events
    -- (done by the next transaction that holds the run's lock).
    delivery_logged boolean NOT NULL DEFAULT false,
    created_at      timestamptz NOT NULL DEFAULT now(),
    updated_at      timestamptz NOT NULL DEFAULT now(),
    UNIQUE (run_id, key, attempt)
);
CREATE INDEX dispatches_due_idx ON dispatches (next_attempt_at) WHERE status IN ('pending', 'sending');

CREATE TABLE run_events (
    id          bigserial PRIMARY KEY,
    run_id      uuid NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    seq         bigint NOT NULL,
    type        text NOT NULL,
    key         text,
    payload     jsonb NOT NULL DEFAULT '{}',
    created_at  timestamptz NOT NULL DEFAULT now(),
    UNIQUE (run_id, seq)
);

CREATE TABLE journey_events (
    id              uuid PRIMARY KEY,
    entity_id       uuid NOT NULL REFERENCES entities(id) ON DELETE CASCADE,
    kind            text NOT NULL,
    from_section_id text,
    to_section_id   text,
    run_id          uuid,
    node_key        text,
    complete_as     text,
    created_at      timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX journey_events_entity_idx ON journey_events (entity_id, created_at, id);

CREATE TABLE api_tokens (
    id          uuid PRIMARY KEY,
    name        text NOT NULL,
    token_hash  bytea NOT NULL UNIQUE,
    created_at  timestamptz NOT NULL DEFAULT now(),
    revoked_at  timestamptz
);

CREATE TABLE triggers (
    id          uuid PRIMARY KEY,
    flow_id     uuid NOT NULL REFERENCES flows(id),
    slug        text NOT NULL UNIQUE,
    secret      text,
    entity      jsonb,
    created_at  timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE signing_keys (
    id          text PRIMARY KEY,
    secret      bytea NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now(),
    retired_at  timestamptz
);

-- +goose StatementEnd

-- +goose Down
-- +goose StatementBegin
DROP TABLE IF EXISTS signing_keys, triggers, api_tokens, journey_events,
    run_events, dispatches, node_states, runs, entities, flow_versions, flows, sections, boards CASCADE;
-- +goose StatementEnd
