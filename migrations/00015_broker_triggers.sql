-- +goose Up
-- Broker triggers (docs/triggers.md): a flow trigger of kind nats consumes
-- a NATS JetStream subject through a durable consumer, one of kind amqp a
-- RabbitMQ queue; each message starts a run (idempotent on
-- <kind>:<trigger id>:<message id>) or is posted as an event. config holds
-- the kind's settings (url, subject/stream/durable or queue, as, name,
-- key, key_header), validated by the API.
CREATE TABLE broker_triggers (
    id         uuid PRIMARY KEY,
    flow_id    uuid NOT NULL REFERENCES flows(id),
    kind       text NOT NULL CHECK (kind IN ('nats', 'amqp')),
    config     jsonb NOT NULL,
    enabled    boolean NOT NULL DEFAULT true,
    created_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX broker_triggers_flow_idx ON broker_triggers (flow_id);

-- One row per (trigger, stitchd process) consuming it: its connection
-- state, written when it changes and refreshed (seen_at) while the process
-- lives; rows not seen for a while are of processes gone.
CREATE TABLE broker_consumers (
    trigger_id    uuid NOT NULL REFERENCES broker_triggers(id) ON DELETE CASCADE,
    instance_id   uuid NOT NULL,
    connected     boolean NOT NULL DEFAULT false,
    connected_at  timestamptz,
    last_error    text,
    last_error_at timestamptz,
    seen_at       timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (trigger_id, instance_id)
);

-- +goose Down
DROP TABLE broker_consumers;
DROP TABLE broker_triggers;
