-- +goose Up
-- Human tasks in business language (docs/approvals.md): an audit entry's
-- sentence ("fiona@example.com approved Finance approval — run 01a2…f9"),
-- and what a journey entry that moves nothing says (a task reassigned,
-- delegated or escalated: to whom).
ALTER TABLE audit_log ADD COLUMN summary text;
ALTER TABLE journey_events ADD COLUMN details jsonb;

-- +goose Down
ALTER TABLE journey_events DROP COLUMN details;
ALTER TABLE audit_log DROP COLUMN summary;
