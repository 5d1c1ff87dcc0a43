-- +goose Up
-- Branches (docs/state_machine.md): a node whose inbound edges were all
-- decided and none taken is skipped; a node with conditional, default,
-- outcome or failure edges records the targets of the edges it took
-- (taken; NULL for a node whose edges are all plain: they are taken when
-- it completes). A handled failure (a failure edge taken) keeps the
-- failure it handed on as its output.
ALTER TABLE node_states DROP CONSTRAINT node_states_status_check;
ALTER TABLE node_states ADD CONSTRAINT node_states_status_check
    CHECK (status IN ('pending', 'running', 'completed', 'failed', 'waiting_for_user', 'cancelled', 'skipped'));
ALTER TABLE node_states ADD COLUMN taken text[];

-- +goose Down
ALTER TABLE node_states DROP COLUMN taken;
DELETE FROM node_states WHERE status = 'skipped';
ALTER TABLE node_states DROP CONSTRAINT node_states_status_check;
ALTER TABLE node_states ADD CONSTRAINT node_states_status_check
    CHECK (status IN ('pending', 'running', 'completed', 'failed', 'waiting_for_user', 'cancelled'));
