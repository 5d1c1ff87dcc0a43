package store_test

import (
	"context"
	"database/sql"
	"sync"
	"testing"

	_ "github.com/jackc/pgx/v5/stdlib"
	"github.com/stretchr/testify/require"

	"github.com/stitchd/stitchd/engine"
	"github.com/stitchd/stitchd/store"
	"github.com/stitchd/stitchd/store/storetest"
)

// schemaTables are the tables migration 1 creates.
var schemaTables = []string{
	"api_tokens", "boards", "dispatches", "entities", "flow_versions", "flows", "journey_events",
	"node_states", "run_events", "runs", "sections", "signing_keys", "triggers",
}

// latestVersion is the highest migration in migrations/.
const latestVersion = 3

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
	rows, err := db.Query(`SELECT table_name FROM information_schema.tables
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
