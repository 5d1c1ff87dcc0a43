-- +goose Up
-- Boards are edited and deleted (issue 34): a board names the metadata
-- keys its cards show, and a journey event keeps the comment of the
-- decision that moved the entity (a rejection's reason).
ALTER TABLE boards ADD COLUMN card_fields jsonb NOT NULL DEFAULT '[]';
ALTER TABLE journey_events ADD COLUMN comment text;

-- +goose Down
ALTER TABLE journey_events DROP COLUMN comment;
ALTER TABLE boards DROP COLUMN card_fields;
