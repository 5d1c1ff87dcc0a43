-- +goose Up
-- Each entity counts its moves (moves), and each journey event carries the
-- count its move reached (entity_seq: created is 1). The count is kept by
-- the database: inserting a journey event counts it under the entity's row
-- lock (a trigger), so moves are numbered in the order they were applied,
-- whichever instance — and whichever stitchd version, during a rolling
-- upgrade — made them; the times of their transactions' starts
-- (created_at) need not be in that order. Live entity.moved events carry
-- entity_seq, so a stream consumer can tell a late event from a newer one,
-- and journeys are listed by it.
--
-- The journeys written before are numbered by time, creation first (a
-- trigger's creation and run start share their transaction's time). This
-- rewrites every journey event and entity once, holding both tables' locks
-- until it commits: seconds for a million journey events.
ALTER TABLE entities ADD COLUMN moves bigint NOT NULL DEFAULT 0;
ALTER TABLE journey_events ADD COLUMN entity_seq bigint;
UPDATE journey_events j SET entity_seq = n.seq
    FROM (SELECT id, row_number() OVER (PARTITION BY entity_id ORDER BY created_at, kind <> 'created', id) AS seq
          FROM journey_events) n
    WHERE j.id = n.id;
UPDATE entities e SET moves = n.moves
    FROM (SELECT entity_id, max(entity_seq) AS moves FROM journey_events GROUP BY entity_id) n
    WHERE e.id = n.entity_id;
ALTER TABLE journey_events ALTER COLUMN entity_seq SET NOT NULL;
CREATE UNIQUE INDEX journey_events_entity_seq_idx ON journey_events (entity_id, entity_seq);

-- +goose StatementBegin
CREATE FUNCTION count_entity_move() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE entities SET moves = moves + 1 WHERE id = NEW.entity_id RETURNING moves INTO NEW.entity_seq;
    RETURN NEW;
END
$$;
-- +goose StatementEnd
CREATE TRIGGER journey_events_count BEFORE INSERT ON journey_events
    FOR EACH ROW EXECUTE FUNCTION count_entity_move();

-- +goose Down
DROP TRIGGER journey_events_count ON journey_events;
DROP FUNCTION count_entity_move();
DROP INDEX journey_events_entity_seq_idx;
ALTER TABLE journey_events DROP COLUMN entity_seq;
ALTER TABLE entities DROP COLUMN moves;
