-- +goose Up
-- Daily rollups of analytics (docs/analytics.md, Rollups): whole UTC days
-- of a flow's finished runs and of a board's journey ledger, summed once
-- so that a range of months reads a few hundred rows, not millions.
-- Durations are kept as log histograms: {"<bucket>": count}, bucket
-- ceil(ln(v) / ln(1.02)) (-9999 for values under 0.001), so that days
-- merge and percentiles come out within 1 %.

-- How far each flow's and board's days are rolled: every day up to and
-- including rolled_through (UTC) has its rows, unless a mark below says
-- it changed since.
CREATE TABLE analytics_rolled (
    kind           text NOT NULL CHECK (kind IN ('flow', 'board')),
    key            uuid NOT NULL,
    rolled_through date NOT NULL,
    PRIMARY KEY (kind, key)
);

-- Days whose rows no longer match the runs or the ledger (a finished run
-- of a rolled day ran again or finished late, runs or journey entries
-- were deleted): read raw until the roller has rolled them again. A NULL
-- day: every day of the board (an entity deleted with its journey).
CREATE TABLE analytics_stale (
    id   bigserial PRIMARY KEY,
    kind text NOT NULL,
    key  uuid NOT NULL,
    day  date
);
CREATE INDEX analytics_stale_key_idx ON analytics_stale (kind, key, day);

-- A flow's finished runs of a day, per version, by status.
CREATE TABLE analytics_run_days (
    flow_id         uuid NOT NULL,
    day             date NOT NULL,
    flow_version_id uuid NOT NULL,
    completed       integer NOT NULL,
    failed          integer NOT NULL,
    cancelled       integer NOT NULL,
    PRIMARY KEY (flow_id, day, flow_version_id)
);

-- Each node's figures over a day's finished runs, per version.
CREATE TABLE analytics_node_days (
    flow_id         uuid NOT NULL,
    day             date NOT NULL,
    flow_version_id uuid NOT NULL,
    node_id         text NOT NULL,
    fired           integer NOT NULL,
    completed       integer NOT NULL,
    failed          integer NOT NULL,
    skipped         integer NOT NULL,
    waiting         integer NOT NULL,
    outcomes        jsonb NOT NULL,
    durations       jsonb NOT NULL,
    PRIMARY KEY (flow_id, day, flow_version_id, node_id)
);

-- A board's moves of a day, from a section ('' for none) to another.
CREATE TABLE analytics_move_days (
    board_id     uuid NOT NULL,
    day          date NOT NULL,
    from_section text NOT NULL,
    to_section   text NOT NULL,
    moves        integer NOT NULL,
    PRIMARY KEY (board_id, day, from_section, to_section)
);

-- The stays in a section that ended on a day: their time in it, in
-- seconds.
CREATE TABLE analytics_stay_days (
    board_id  uuid NOT NULL,
    day       date NOT NULL,
    section   text NOT NULL,
    max_secs  float8 NOT NULL,
    durations jsonb NOT NULL,
    PRIMARY KEY (board_id, day, section)
);

-- The entities that moved on a day (a range's distinct entities: each of
-- the board's entities is probed for a day in the range, cheaper than
-- counting distinct over every entity's days).
CREATE TABLE analytics_entity_days (
    board_id  uuid NOT NULL,
    day       date NOT NULL,
    entity_id uuid NOT NULL,
    PRIMARY KEY (board_id, day, entity_id)
);
CREATE INDEX analytics_entity_days_entity_idx ON analytics_entity_days (board_id, entity_id, day);

-- +goose StatementBegin
-- A run of a day the roller may have rolled (two days back or more) that
-- finishes, or runs again once finished, marks its day stale. Runs of the
-- last two days (nearly every status change) never reach the function.
CREATE FUNCTION analytics_run_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO analytics_stale (kind, key, day)
    VALUES ('flow', NEW.flow_id, (NEW.created_at AT TIME ZONE 'UTC')::date);
    RETURN NULL;
END
$$;
CREATE TRIGGER runs_analytics_changed AFTER UPDATE OF status ON runs
    FOR EACH ROW
    WHEN ((OLD.status IN ('completed', 'failed', 'cancelled')) IS DISTINCT FROM (NEW.status IN ('completed', 'failed', 'cancelled'))
        AND NEW.created_at < (date_trunc('day', now() AT TIME ZONE 'UTC') - interval '1 day') AT TIME ZONE 'UTC')
    EXECUTE FUNCTION analytics_run_changed();

CREATE FUNCTION analytics_runs_deleted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO analytics_stale (kind, key, day)
    SELECT DISTINCT 'flow', flow_id, (created_at AT TIME ZONE 'UTC')::date FROM deleted_runs
    WHERE created_at < (date_trunc('day', now() AT TIME ZONE 'UTC') - interval '1 day') AT TIME ZONE 'UTC';
    RETURN NULL;
END
$$;
CREATE TRIGGER runs_analytics_deleted AFTER DELETE ON runs
    REFERENCING OLD TABLE AS deleted_runs FOR EACH STATEMENT EXECUTE FUNCTION analytics_runs_deleted();

-- Deleted journey entries change their own day's moves and the stay the
-- entity's next move ends (it began at the entry deleted).
CREATE FUNCTION analytics_journey_deleted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO analytics_stale (kind, key, day)
    SELECT DISTINCT 'board', e.board_id, (x.at AT TIME ZONE 'UTC')::date
    FROM deleted_journey d JOIN entities e ON e.id = d.entity_id
    CROSS JOIN LATERAL (
        SELECT d.created_at AS at
        UNION ALL
        (SELECT n.created_at FROM journey_events n WHERE n.entity_id = d.entity_id AND n.entity_seq > d.entity_seq
         ORDER BY n.entity_seq LIMIT 1)) x
    WHERE x.at < (date_trunc('day', now() AT TIME ZONE 'UTC') - interval '1 day') AT TIME ZONE 'UTC';
    RETURN NULL;
END
$$;
CREATE TRIGGER journey_events_analytics_deleted AFTER DELETE ON journey_events
    REFERENCING OLD TABLE AS deleted_journey FOR EACH STATEMENT EXECUTE FUNCTION analytics_journey_deleted();

-- An entity deleted takes its journey along: its board is rolled again.
CREATE FUNCTION analytics_entities_deleted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO analytics_stale (kind, key, day)
    SELECT DISTINCT 'board', board_id, NULL::date FROM deleted_entities;
    RETURN NULL;
END
$$;
CREATE TRIGGER entities_analytics_deleted AFTER DELETE ON entities
    REFERENCING OLD TABLE AS deleted_entities FOR EACH STATEMENT EXECUTE FUNCTION analytics_entities_deleted();
-- +goose StatementEnd

-- +goose Down
DROP TRIGGER entities_analytics_deleted ON entities;
DROP TRIGGER journey_events_analytics_deleted ON journey_events;
DROP TRIGGER runs_analytics_deleted ON runs;
DROP TRIGGER runs_analytics_changed ON runs;
DROP FUNCTION analytics_entities_deleted();
DROP FUNCTION analytics_journey_deleted();
DROP FUNCTION analytics_runs_deleted();
DROP FUNCTION analytics_run_changed();
DROP TABLE analytics_entity_days, analytics_stay_days, analytics_move_days, analytics_node_days, analytics_run_days,
    analytics_stale, analytics_rolled;
