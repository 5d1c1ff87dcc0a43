package store_test

import (
	"context"
	"database/sql"
	"sync"
	"testing"

	_ "github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"
	"github.com/stretchr/testify/require"

	"github.com/stitchd/stitchd/engine"
	"github.com/stitchd/stitchd/migrations"
	"github.com/stitchd/stitchd/store"
	"github.com/stitchd/stitchd/store/storetest"
)

// schemaTables are the tables the migrations create.
var schemaTables = []string{
	"analytics_entity_days", "analytics_move_days", "analytics_node_days", "analytics_rolled", "analytics_run_days", "analytics_stale", "analytics_stay_days",
	"api_tokens", "audit_log", "boards", "dispatch_rate_buckets", "dispatches", "entities", "flow_versions", "flows", "journey_events", "login_failures",
	"broker_consumers", "broker_triggers", "credentials", "event_deliveries", "event_triggers", "events", "node_states", "notifications", "run_events", "run_tree_deltas", "run_trees", "runs", "schedules", "secrets", "sections", "sessions", "signing_keys", "task_workers", "tasks", "triggers", "used_action_links", "users", "ux_decisions", "webhook_secrets", "workspace_members", "workspaces",
}

// latestVersion is the highest migration in migrations/.
const latestVersion = 47

func openSQL(t *testing.T, url string) *sql.DB {
	t.Helper()
	db, err := sql.Open("pgx", url)
	require.NoError(t, err)
	t.Cleanup(func() { db.Close() })
	return db
}

func openStore(t *testing.T, url string) *store.Store {
	t.Helper()
	st, err := store.Open(context.Background(), url, store.Options{MaxOpenConns: 4})
	require.NoError(t, err)
	t.Cleanup(func() { st.Close() })
	return st
}

// publicTables lists the application tables of the public schema (goose's
// own version table excluded), in no particular order.
func publicTables(t *testing.T, db *sql.DB) []string {
	t.Helper()
	rows, err := db.QueryContext(t.Context(), `SELECT table_name FROM information_schema.tables
		WHERE table_schema = 'public' AND table_type = 'BASE TABLE' AND table_name <> 'goose_db_version'
		`)
	require.NoError(t, err)
	defer rows.Close()
	out := []string{}
	for rows.Next() {
		var n string
		require.NoError(t, rows.Scan(&n))
		out = append(out, n)
	}
	require.NoError(t, rows.Err())
	return out
}

func TestMigrateUpDownUp(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := storetest.EmptyDB(t)
	st := openStore(t, url)
	db := openSQL(t, url)

	require.Empty(t, publicTables(t, db), "EmptyDB must start empty")
	err := st.Ready(ctx)
	require.ErrorIs(t, err, engine.ErrUnavailable, "an unmigrated database is not ready")

	for round := 1; round <= 2; round++ {
		require.NoError(t, st.Migrate(ctx, nil), "round %d: up", round)
		require.ElementsMatch(t, schemaTables, publicTables(t, db), "round %d: tables after up", round)
		v, err := st.MigrationVersion(ctx)
		require.NoError(t, err)
		require.EqualValues(t, latestVersion, v, "round %d", round)
		require.NoError(t, st.Ready(ctx), "round %d: migrated database is ready", round)

		// Migrating an up-to-date database is a no-op.
		require.NoError(t, st.Migrate(ctx, nil))
		v, err = st.MigrationVersion(ctx)
		require.NoError(t, err)
		require.EqualValues(t, latestVersion, v)

		require.NoError(t, st.MigrateDownAll(ctx), "round %d: down", round)
		require.Empty(t, publicTables(t, db), "round %d: tables after down", round)
		v, err = st.MigrationVersion(ctx)
		require.NoError(t, err)
		require.EqualValues(t, 0, v, "round %d: version after down", round)
		require.ErrorIs(t, st.Ready(ctx), engine.ErrUnavailable, "round %d: rolled-back database is not ready", round)
	}

	// And up once more: the database is usable afterwards.
	require.NoError(t, st.Migrate(ctx, nil))
	require.ElementsMatch(t, schemaTables, publicTables(t, db))
	require.Equal(t, storetest.EveryMigrationOnce(t), storetest.GooseVersions(t, url))
}

func TestMigrateConcurrent(t *testing.T) {
	t.Parallel()
	const n = 4
	ctx := context.Background()
	url := storetest.EmptyDB(t)
	stores := make([]*store.Store, n)
	for i := range stores {
		stores[i] = openStore(t, url)
	}
	start := make(chan struct{})
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range stores {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			errs[i] = stores[i].Migrate(ctx, nil)
		}()
	}
	close(start)
	wg.Wait()
	for i, err := range errs {
		require.NoError(t, err, "Migrate #%d", i)
	}

	db := openSQL(t, url)
	require.Equal(t, storetest.EveryMigrationOnce(t), storetest.GooseVersions(t, url),
		"every version is recorded exactly once")
	require.ElementsMatch(t, schemaTables, publicTables(t, db))
	for i, st := range stores {
		v, err := st.MigrationVersion(ctx)
		require.NoError(t, err)
		require.EqualValues(t, latestVersion, v, "store #%d", i)
		require.NoError(t, st.Ready(ctx), "store #%d", i)
	}
}

// TestMigrationNumbersExistingJourneys: migration 4 numbers the journeys
// already written (by time, per entity) and sets each entity's move count,
// so the moves made after it continue the count.
func TestMigrationNumbersExistingJourneys(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := storetest.EmptyDB(t)
	db := openSQL(t, url)
	p, err := goose.NewProvider(goose.DialectPostgres, db, migrations.FS, goose.WithDisableGlobalRegistry(true))
	require.NoError(t, err)
	_, err = p.UpTo(ctx, 3)
	require.NoError(t, err)

	_, err = db.ExecContext(ctx, `
		INSERT INTO boards (id, name) VALUES ('00000000-0000-0000-0000-0000000000b1', 'b');
		INSERT INTO sections (board_id, id, name, position) VALUES
			('00000000-0000-0000-0000-0000000000b1', 'new', 'New', 0), ('00000000-0000-0000-0000-0000000000b1', 'won', 'Won', 1);
		INSERT INTO entities (id, board_id, type, name, section_id) VALUES
			('00000000-0000-0000-0000-0000000000e1', '00000000-0000-0000-0000-0000000000b1', 'lead', 'one', 'won'),
			('00000000-0000-0000-0000-0000000000e2', '00000000-0000-0000-0000-0000000000b1', 'lead', 'two', 'new'),
			('00000000-0000-0000-0000-0000000000e3', '00000000-0000-0000-0000-0000000000b1', 'lead', 'three', 'new');
		INSERT INTO journey_events (id, entity_id, kind, to_section_id, created_at) VALUES
			('00000000-0000-0000-0000-000000000a03', '00000000-0000-0000-0000-0000000000e1', 'manual_move', 'won', '2026-01-01 00:00:03+00'),
			('00000000-0000-0000-0000-000000000a01', '00000000-0000-0000-0000-0000000000e1', 'created', 'new', '2026-01-01 00:00:01+00'),
			('00000000-0000-0000-0000-000000000a02', '00000000-0000-0000-0000-0000000000e1', 'run_started', NULL, '2026-01-01 00:00:02+00'),
			('00000000-0000-0000-0000-000000000a04', '00000000-0000-0000-0000-0000000000e2', 'run_started', 'new', '2026-01-01 00:00:01+00'),
			('00000000-0000-0000-0000-000000000a05', '00000000-0000-0000-0000-0000000000e2', 'created', 'new', '2026-01-01 00:00:01+00');`)
	require.NoError(t, err)

	st := openStore(t, url)
	require.NoError(t, st.Migrate(ctx, nil))
	seqs := func(entity string) []int64 {
		js, err := st.Journey(ctx, entity)
		require.NoError(t, err)
		out := []int64{}
		for _, j := range js {
			out = append(out, j.EntitySeq)
		}
		return out
	}
	require.Equal(t, []int64{1, 2, 3}, seqs("00000000-0000-0000-0000-0000000000e1"))
	js, err := st.Journey(ctx, "00000000-0000-0000-0000-0000000000e1")
	require.NoError(t, err)
	require.Equal(t, []string{"created", "run_started", "manual_move"}, []string{js[0].Kind, js[1].Kind, js[2].Kind})
	// A trigger's creation and run start share their transaction's time
	// (and the ids are random): creation is 1.
	js, err = st.Journey(ctx, "00000000-0000-0000-0000-0000000000e2")
	require.NoError(t, err)
	require.Len(t, js, 2)
	require.Equal(t, []string{"created", "run_started"}, []string{js[0].Kind, js[1].Kind})
	require.Equal(t, []int64{1, 2}, seqs("00000000-0000-0000-0000-0000000000e2"))
	require.Empty(t, seqs("00000000-0000-0000-0000-0000000000e3"))

	// The next move continues the count, and so does a journey event
	// written without one (by a stitchd of before the migration, still
	// running during a rolling upgrade).
	require.NoError(t, st.MoveEntityManually(ctx, "00000000-0000-0000-0000-0000000000e1", "new", "00000000-0000-0000-0000-000000000a06", "admin"))
	require.Equal(t, []int64{1, 2, 3, 4}, seqs("00000000-0000-0000-0000-0000000000e1"))
	_, err = db.ExecContext(ctx, `INSERT INTO journey_events (id, entity_id, kind, to_section_id)
		VALUES ('00000000-0000-0000-0000-000000000a07', '00000000-0000-0000-0000-0000000000e1', 'manual_move', 'won')`)
	require.NoError(t, err)
	require.Equal(t, []int64{1, 2, 3, 4, 5}, seqs("00000000-0000-0000-0000-0000000000e1"))
	var moves [3]int64
	require.NoError(t, db.QueryRowContext(ctx, `SELECT
		(SELECT moves FROM entities WHERE id = '00000000-0000-0000-0000-0000000000e1'),
		(SELECT moves FROM entities WHERE id = '00000000-0000-0000-0000-0000000000e2'),
		(SELECT moves FROM entities WHERE id = '00000000-0000-0000-0000-0000000000e3')`).Scan(&moves[0], &moves[1], &moves[2]))
	require.Equal(t, [3]int64{5, 2, 0}, moves)
}
