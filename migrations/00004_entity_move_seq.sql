-- +goose Up
-- Each entity counts its moves (moves), and each journey event carries the
-- count its move reached (entity_seq). Moves of one entity take its row's
-- lock, so the count orders them as they were applied, whichever instance
-- made them; the times of their transactions' starts (created_at) need
-- not. Live entity.moved events carry entity_seq, so a stream consumer can
-- tell a late event from a newer one, and journeys are listed by it.
ALTER TABLE entities ADD COLUMN moves bigint NOT NULL DEFAULT 0;
ALTER TABLE journey_events ADD COLUMN entity_seq bigint NOT NULL DEFAULT 0;
UPDATE journey_events j SET entity_seq = n.seq
    FROM (SELECT id, row_number() OVER (PARTITION BY entity_id ORDER BY created_at, id) AS seq FROM journey_events) n
    WHERE j.id = n.id;
UPDATE entities e SET moves = n.moves
    FROM (SELECT entity_id, count(*) AS moves FROM journey_events GROUP BY entity_id) n
    WHERE e.id = n.entity_id;

-- +goose Down
ALTER TABLE journey_events DROP COLUMN entity_seq;
ALTER TABLE entities DROP COLUMN moves;
