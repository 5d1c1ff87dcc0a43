package cli

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/stitchd/stitchd/engine"
	"github.com/stitchd/stitchd/store/storetest"
)

// TestKeysRotateTwiceInOneSecond: `stitchd keys rotate` run three times in
// a row (well within a second) makes three keys, each printed, the last
// one current; a rotation to an id already taken is a conflict, not
// silently nothing.
func TestKeysRotateTwiceInOneSecond(t *testing.T) {
	t.Parallel()
	st, dbURL := storetest.IsolatedDB(t)
	env := map[string]string{"DATABASE_URL": dbURL}
	var ids []string
	for range 3 {
		out, stderr, err := runRoot(t, env, "keys", "rotate")
		require.NoError(t, err, stderr)
		ids = append(ids, strings.TrimSpace(out))
	}
	keys, err := st.CallbackKeys(t.Context())
	require.NoError(t, err)
	got := make([]string, len(keys))
	for i, k := range keys {
		got[i] = k.ID
		require.NotContains(t, k.ID, ".", "a key id is a part of the callback token")
	}
	// Newest first: the three rotations, then the first key made.
	require.Len(t, got, 4, "%v", got)
	require.Equal(t, []string{ids[2], ids[1], ids[0]}, got[:3])

	_, err = st.RotateCallbackKey(t.Context(), ids[0])
	require.ErrorIs(t, err, engine.ErrConflict)
}

// TestDatabaseCommandsOfferDatabaseFlags: commands that only open the
// database (keys, user create) offer where it is and the log, not the
// server's forty flags (--addr, --body-limit…, which they ignore).
func TestDatabaseCommandsOfferDatabaseFlags(t *testing.T) {
	t.Parallel()
	for _, cmd := range [][]string{{"keys", "rotate"}, {"keys", "retire"}, {"user", "create"}} {
		out, _, err := runRoot(t, nil, append(cmd, "--help")...)
		require.NoError(t, err)
		for _, f := range []string{"--database-url", "--local-postgres", "--log-level"} {
			require.Contains(t, out, f, cmd)
		}
		for _, f := range []string{"--addr", "--body-limit", "--notify-url", "--retention"} {
			require.NotContains(t, out, f, cmd)
		}
	}
}
