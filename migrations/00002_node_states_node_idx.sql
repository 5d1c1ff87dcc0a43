-- +goose Up
-- node_states_node_idx led with run_id, like the primary key (run_id, key).
-- When statistics lag behind a fresh fan-out (a new run_id is estimated at
-- one row), the planner took either index for "run_id = $1 AND key = ANY
-- ($2)" and, with this one, scanned every node of the run for one key: 22
-- ms per lookup at 100,000 items. Leading with node_id leaves run_id-led
-- lookups to the primary key and still serves the item lookups by node
-- (node_id = ANY(…) AND run_id = …).
DROP INDEX node_states_node_idx;
CREATE INDEX node_states_node_idx ON node_states (node_id, run_id, idx);

-- +goose Down
DROP INDEX node_states_node_idx;
CREATE INDEX node_states_node_idx ON node_states (run_id, node_id, idx);
