-- +goose Up
-- Event triggers (README, Events): a flow trigger of kind event starts a
-- run of the flow for each event posted with its name (once per event id:
-- the run's idempotency key is event:<id>).
CREATE TABLE event_triggers (
    id         uuid PRIMARY KEY,
    flow_id    uuid NOT NULL REFERENCES flows(id),
    name       text NOT NULL,
    enabled    boolean NOT NULL DEFAULT true,
    created_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX event_triggers_name_idx ON event_triggers (name) WHERE enabled;
CREATE INDEX event_triggers_flow_idx ON event_triggers (flow_id);

-- +goose Down
DROP TABLE event_triggers;
