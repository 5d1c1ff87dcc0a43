-- +goose Up
-- A webhook trigger may check its requests' bodies against a JSON Schema
-- (input_schema): a body that breaks it gets a 400 and starts nothing.
ALTER TABLE triggers ADD COLUMN input_schema jsonb;

-- +goose Down
ALTER TABLE triggers DROP COLUMN input_schema;
