-- +goose Up
-- Loops (docs/state_machine.md): following a loop's back edge starts a new
-- iteration of the nodes on the loop, one node-state row each, keyed
-- <key>@<iteration> (keys are stored, never parsed); iteration 0 is the
-- first pass, keyed as before.
ALTER TABLE node_states ADD COLUMN iteration integer NOT NULL DEFAULT 0;

-- +goose Down
DELETE FROM node_states WHERE iteration > 0;
ALTER TABLE node_states DROP COLUMN iteration;
