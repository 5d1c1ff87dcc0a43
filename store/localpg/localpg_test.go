package localpg

import (
	"context"
	"database/sql"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestResolveStartsThrowawayCluster forces the fallback (no server where
// the local one is expected) and checks that a cluster is initialised and
// started under the data directory — as the postgres user when run as root
// — and that the stitchd database is created on it.
func TestResolveStartsThrowawayCluster(t *testing.T) {
	if _, err := findBinDir(); err != nil {
		t.Fatalf("PostgreSQL server binaries are required (make test installs them): %v", err)
	}
	dir := filepath.Join(t.TempDir(), "pg")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	url, cluster, err := Resolve(ctx, Options{DataDir: dir, LocalURL: "postgres://postgres@127.0.0.1:1/postgres?sslmode=disable&connect_timeout=1"})
	require.NoError(t, err)
	require.NotNil(t, cluster, "the fallback cluster was started")
	t.Cleanup(func() { require.NoError(t, cluster.Stop()) })
	_, err = os.Stat(filepath.Join(dir, "PG_VERSION"))
	require.NoError(t, err)

	db, err := sql.Open("pgx", url)
	require.NoError(t, err)
	defer db.Close()
	var name string
	require.NoError(t, db.QueryRowContext(ctx, `SELECT current_database()`).Scan(&name))
	require.Equal(t, "stitchd", name)

	// A second Resolve reuses the running cluster.
	url2, cluster2, err := Resolve(ctx, Options{DataDir: dir, LocalURL: "postgres://postgres@127.0.0.1:1/postgres?sslmode=disable&connect_timeout=1"})
	require.NoError(t, err)
	require.Equal(t, cluster.Port, cluster2.Port)
	require.Equal(t, url, url2)
}

// TestClusterStartsAgainOnItsPort stops a throwaway cluster and starts it
// again: same port, same data (the outage and chaos tests rely on it).
func TestClusterStartsAgainOnItsPort(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c, err := StartCluster(ctx, filepath.Join(t.TempDir(), "pg"))
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Stop() })
	db, err := sql.Open("pgx", c.URL("postgres"))
	require.NoError(t, err)
	defer db.Close()
	_, err = db.ExecContext(ctx, `CREATE TABLE kept (v int); INSERT INTO kept VALUES (42)`)
	require.NoError(t, err)

	port := c.Port
	require.NoError(t, c.Stop())
	require.Error(t, db.PingContext(ctx), "the cluster is down")
	require.NoError(t, c.Start(ctx))
	require.Equal(t, port, c.Port)
	var v int
	require.NoError(t, db.QueryRowContext(ctx, `SELECT v FROM kept`).Scan(&v))
	require.Equal(t, 42, v)
}
