package app_test

import (
	"context"
	"database/sql"
	"net/url"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/stitchd/stitchd/internal/app"
	"github.com/stitchd/stitchd/store/storetest"
)

// With --session-database-url (for a --database-url through PgBouncer in
// transaction mode, which holds no LISTEN and no session lock), the
// migrations and the LISTEN connection use it: here the same database
// under another application_name, so that its connections can be told
// apart. An empty database is migrated, and the one connection named so
// that stays open is the listener.
func TestSessionDatabaseURL(t *testing.T) {
	t.Parallel()
	dbURL := storetest.EmptyDB(t)
	u, err := url.Parse(dbURL)
	require.NoError(t, err)
	q := u.Query()
	q.Set("application_name", "stitchd-session-test")
	u.RawQuery = q.Encode()
	sessionURL := u.String()
	h := newHarnessOn(t, dbURL, func(c *app.Config) { c.SessionDatabaseURL = sessionURL })
	require.Equal(t, 200, h.do("GET", "/readyz", nil, nil), "migrated")

	db, err := sql.Open("pgx", dbURL)
	require.NoError(t, err)
	defer db.Close()
	var listening []string
	h.eventually(func() bool {
		listening = nil
		rows, err := db.QueryContext(context.Background(), `SELECT query FROM pg_stat_activity
			WHERE datname = current_database() AND application_name = 'stitchd-session-test'`)
		require.NoError(t, err)
		defer rows.Close()
		for rows.Next() {
			var q string
			require.NoError(t, rows.Scan(&q))
			listening = append(listening, q)
		}
		return len(listening) == 1
	}, "one connection on the session URL")
	require.Contains(t, listening[0], "LISTEN")
}
