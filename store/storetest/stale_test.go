package storetest

import (
	"database/sql"
	"fmt"
	"os"
	"os/exec"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/stitchd/stitchd/store/localpg"
)

func TestMain(m *testing.M) { Main(m) }

func TestStaleOwner(t *testing.T) {
	for _, c := range []struct {
		name string
		pid  int
		ok   bool
	}{
		{"stitchd_t_abcd1234_4242_17", 4242, true},
		{"stitchd_t_abcd1234_4242_17_3", 4242, true},
		{"stitchd_t_abcd1234_4242_17_e9", 4242, true},
		{"stitchd_t_ffff0000_4242_17", 0, false}, // another machine's
		{"stitchd_t_4242_17", 0, false},          // before tags: whose is unknown
		{"stitchd_tmpl_abcd1234", 0, false},
		{"stitchd_t_abcd1234_x_17", 0, false},
	} {
		pid, ok := staleOwner(c.name, "abcd1234")
		require.Equal(t, c.ok, ok, c.name)
		require.Equal(t, c.pid, pid, c.name)
	}
}

// TestDropStaleDropsOnlyDeadBinariesDatabases makes databases named as a
// test binary's would be — of a dead process here, of this living one, of
// another machine, and a dead process's one still in use — and checks
// that only the first is dropped.
func TestDropStaleDropsOnlyDeadBinariesDatabases(t *testing.T) {
	server := ServerURL(t)
	db, err := sql.Open("pgx", server)
	require.NoError(t, err)
	defer db.Close()
	ctx := t.Context()

	gone := exec.CommandContext(t.Context(), "true")
	require.NoError(t, gone.Run()) // its pid is no process once reaped
	dead := gone.Process.Pid
	tag := hostTag()
	other := "0" + tag[1:]
	if other == tag {
		other = "1" + tag[1:]
	}
	names := map[string]string{
		"dead":  fmt.Sprintf("%s%s_%d_%d", dbPrefix, tag, dead, 1),
		"alive": fmt.Sprintf("%s%s_%d_%d", dbPrefix, tag, os.Getpid(), 999999),
		"other": fmt.Sprintf("%s%s_%d_%d", dbPrefix, other, dead, 1),
		"used":  fmt.Sprintf("%s%s_%d_%d", dbPrefix, tag, dead, 2),
	}
	for _, n := range names {
		_, err := db.ExecContext(ctx, `CREATE DATABASE `+localpg.QuoteIdent(n))
		require.NoError(t, err)
		t.Cleanup(func() { get(t).drop(n) })
	}
	user, err := sql.Open("pgx", withDB(server, names["used"]))
	require.NoError(t, err)
	defer user.Close()
	require.NoError(t, user.PingContext(ctx))

	dropped, err := dropStale(ctx, db, tag)
	require.NoError(t, err)
	require.Contains(t, dropped, names["dead"]) // and any a dead binary of this machine left
	for what, n := range names {
		if what != "dead" {
			require.NotContains(t, dropped, n, what)
		}
	}
	for what, n := range names {
		var exists bool
		require.NoError(t, db.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)`, n).Scan(&exists))
		require.Equal(t, what != "dead", exists, what)
	}
}
