-- +goose Up
-- A transaction fires at most a bounded number of nodes; the rest stay
-- pending with a wake_at of now, and the sweeper fires them in later
-- transactions (docs/state_machine.md, Bounded transactions). This index
-- finds them as node_states_wake_idx finds sleeping nodes.
CREATE INDEX node_states_deferred_idx ON node_states (wake_at) WHERE status = 'pending' AND wake_at IS NOT NULL;

-- +goose Down
DROP INDEX node_states_deferred_idx;
