package store

import (
	"database/sql"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/stitchd/stitchd/engine"
)

func TestJoinPayloads(t *testing.T) {
	t.Parallel()
	require.Empty(t, joinPayloads(nil, 20))
	require.Equal(t, []string{"a,b,c"}, joinPayloads([]string{"a", "b", "c"}, 20))
	require.Equal(t, []string{"aaaa,bbbb", "cccc"}, joinPayloads([]string{"aaaa", "bbbb", "cccc"}, 9))
	require.Equal(t, []string{"aaaa", "bbbb"}, joinPayloads([]string{"aaaa", "bbbb"}, 8))

	keys := make([]string, 1000)
	for i := range keys {
		keys[i] = strings.Repeat("x", 35) + string(rune('a'+i%26))
	}
	ps := joinPayloads(keys, maxNotifyPayload)
	var back []string
	for _, p := range ps {
		require.LessOrEqual(t, len(p), maxNotifyPayload)
		back = append(back, splitPayload(p)...)
	}
	require.Equal(t, keys, back)
	require.Nil(t, splitPayload(""))
}

func TestRebind(t *testing.T) {
	t.Parallel()
	require.Equal(t, `SELECT $1, $2::jsonb WHERE x = $3`, rebind(`SELECT ?, ?::jsonb WHERE x = ?`))
	require.Equal(t, `SELECT 'a?b', $1`, rebind(`SELECT 'a?b', ?`))
	require.Equal(t, `SELECT 'it''s ?', $1`, rebind(`SELECT 'it''s ?', ?`))
	require.Equal(t, `SELECT 1`, rebind(`SELECT 1`))
}

// TestBinds: the cache answers what rebind answers, keeps at most maxBinds
// strings, and a nil cache rebinds every time.
func TestBinds(t *testing.T) {
	t.Parallel()
	var nilBinds *binds
	require.Equal(t, `SELECT $1`, nilBinds.get(`SELECT ?`))
	b := &binds{}
	for i := range maxBinds + 10 {
		q := fmt.Sprintf(`SELECT ?, %d WHERE y = ?`, i)
		require.Equal(t, rebind(q), b.get(q))
		require.Equal(t, rebind(q), b.get(q), "cached or not, the same answer")
	}
	require.EqualValues(t, maxBinds, b.n.Load())
	cached := 0
	b.m.Range(func(_, _ any) bool { cached++; return true })
	require.Equal(t, maxBinds, cached)
}

func TestListenerDSN(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ in, want string }{
		{"postgres://postgres@127.0.0.1:5432/stitchd?sslmode=disable",
			"user='postgres' host='127.0.0.1' port='5432' dbname='stitchd' sslmode='disable' fallback_application_name=stitchd-listener"},
		{"postgresql://u:p%27w@db1:5433,db2:5434,[::1]/d?target_session_attrs=read-write&connect_timeout=5",
			"user='u' password='p\\'w' host='db1,db2,::1' port='5433,5434,' dbname='d' connect_timeout='5' " +
				"target_session_attrs='read-write' sslmode='prefer' fallback_application_name=stitchd-listener"},
		{"postgres://db1,db2/d", "host='db1,db2' dbname='d' sslmode='prefer' fallback_application_name=stitchd-listener"},
		{"host=a,b port=1,2 dbname=d target_session_attrs=read-write",
			"host=a,b port=1,2 dbname=d target_session_attrs=read-write sslmode='prefer' fallback_application_name=stitchd-listener"},
		{"host=a sslmode=verify-full", "host=a sslmode=verify-full fallback_application_name=stitchd-listener"},
		{"host=a sslmode = require", "host=a sslmode = require fallback_application_name=stitchd-listener"},
		{"postgres://h/d?sslrootcert=system", "host='h' dbname='d' sslrootcert='system' fallback_application_name=stitchd-listener"},
		{"host=a sslnegotiation=direct sslmode=require", "host=a sslnegotiation=direct sslmode=require fallback_application_name=stitchd-listener"},
	} {
		got, err := listenerDSNWith(c.in, func(string) string { return "" })
		require.NoError(t, err)
		require.Equal(t, c.want, got, c.in)
	}
	// A TLS setting in the environment is the drivers' to read.
	got, err := listenerDSNWith("postgres://h/d", func(k string) string { return map[string]string{"PGSSLROOTCERT": "system"}[k] })
	require.NoError(t, err)
	require.Equal(t, "host='h' dbname='d' fallback_application_name=stitchd-listener", got)
}

// TestInterpretErrorKeepsWhatItNames: an error interpreted already, met
// again on its way out of a transaction, keeps what it names (which node
// was not found) and drops its wrapping's text, which may quote a
// statement.
func TestInterpretErrorKeepsWhatItNames(t *testing.T) {
	t.Parallel()
	ce := &clientError{sentinel: engine.ErrNotFound, what: "no node x in run r", cause: sql.ErrNoRows}
	got := interpretError(fmt.Errorf("error in a queued statement (WITH moved AS (UPDATE node_states…): %w", ce))
	require.ErrorIs(t, got, engine.ErrNotFound)
	require.ErrorIs(t, got, sql.ErrNoRows)
	require.Equal(t, "not found: no node x in run r", got.Error())
	require.Equal(t, "not found", interpretError(fmt.Errorf("error loading: %w", sql.ErrNoRows)).Error())
}
