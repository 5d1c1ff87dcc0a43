-- +goose Up
-- How many of a pending node's inbound edges were decided not taken (a
-- branch skipped, a switch's other way): with pending_parents it tells,
-- once every edge is decided, how many were taken, so that a switch's
-- join knows its one taken branch without reading its upstream rows
-- (docs/state_machine.md, Branches). Reset wherever pending_parents is.
ALTER TABLE node_states ADD COLUMN untaken_parents int NOT NULL DEFAULT 0;

-- +goose Down
ALTER TABLE node_states DROP COLUMN untaken_parents;
