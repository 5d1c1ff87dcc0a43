-- +goose Up
-- Human tasks (docs/approvals.md): a waiting UX node's claim — who took
-- it, when, at which attempt (a claim of an earlier attempt is void), and
-- whom the claimer let decide on their behalf.
ALTER TABLE node_states ADD COLUMN claimed_by text;
ALTER TABLE node_states ADD COLUMN claimed_at timestamptz;
ALTER TABLE node_states ADD COLUMN claim_attempt int;
ALTER TABLE node_states ADD COLUMN claim_delegate text;
-- Escalation (data.escalation): when the node's next escalation falls due,
-- and which one it is (0: the first).
ALTER TABLE node_states ADD COLUMN escalate_at timestamptz;
ALTER TABLE node_states ADD COLUMN escalation_step int NOT NULL DEFAULT 0;
CREATE INDEX node_states_escalate_idx ON node_states (escalate_at) WHERE escalate_at IS NOT NULL;
-- A delegate's vote: by_email decided for for_email, whose vote it is.
ALTER TABLE ux_decisions ADD COLUMN for_email text;
-- Each person votes once per attempt, themselves or through a delegate.
CREATE UNIQUE INDEX ux_decisions_person_idx ON ux_decisions (run_id, key, attempt, lower(coalesce(for_email, by_email)));

-- +goose Down
DROP INDEX node_states_escalate_idx;
ALTER TABLE node_states DROP COLUMN escalation_step;
ALTER TABLE node_states DROP COLUMN escalate_at;
DROP INDEX ux_decisions_person_idx;
ALTER TABLE ux_decisions DROP COLUMN for_email;
ALTER TABLE node_states DROP COLUMN claim_delegate;
ALTER TABLE node_states DROP COLUMN claim_attempt;
ALTER TABLE node_states DROP COLUMN claimed_at;
ALTER TABLE node_states DROP COLUMN claimed_by;
