package store_test

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"log/slog"
	"net"
	neturl "net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/lib/pq"
	"github.com/stretchr/testify/require"

	"github.com/stitchd/stitchd/store"
	"github.com/stitchd/stitchd/store/storetest"
)

// TestNotifierReachesListener sends keys from many goroutines through one
// Notifier and checks a listener on another connection receives every one,
// split back out of the coalesced payloads (more keys than fit in one).
func TestNotifierReachesListener(t *testing.T) {
	t.Parallel()
	st, url := storetest.IsolatedDB(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	channel := "stitchd_test_" + uuid.NewString()[:8]

	var mu sync.Mutex
	got := map[string]int{}
	require.NoError(t, store.Listen(ctx, url, channel, nil, func(k string) {
		mu.Lock()
		got[k]++
		mu.Unlock()
	}))
	// Listen returns with the LISTEN in place: lib/pq's Listener.Listen
	// waits for its connection, which listens on every channel before it
	// is up.

	n := st.NewNotifier(channel, 0, slog.New(slog.DiscardHandler))
	go n.Run(ctx)
	want := map[string]bool{}
	var wg sync.WaitGroup
	for g := range 8 {
		keys := make([]string, 100)
		for i := range keys {
			keys[i] = uuid.NewString()
			if i%10 == 0 {
				keys[i] = fmt.Sprintf("entity:%s", keys[i])
			}
			want[keys[i]] = true
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for _, k := range keys {
				n.Notify(k)
				if g%2 == 0 {
					n.Notify(k) // a repeated key is sent at most once per NOTIFY
				}
			}
		}()
	}
	wg.Wait()
	require.Eventually(t, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(got) == len(want)
	}, 10*time.Second, 10*time.Millisecond)
	mu.Lock()
	defer mu.Unlock()
	for k := range got {
		require.True(t, want[k], "unexpected key %q", k)
	}
}

// TestNotifierPaces: a quiet Notifier sends at once; keys given to it
// within the interval after a NOTIFY wait, and go out together in one.
func TestNotifierPaces(t *testing.T) {
	t.Parallel()
	st, url := storetest.IsolatedDB(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	channel := "stitchd_test_" + uuid.NewString()[:8]
	l := pq.NewListener(url, 100*time.Millisecond, time.Second, nil)
	defer l.Close()
	require.NoError(t, l.Listen(channel))

	const interval = 2 * time.Second
	n := st.NewNotifier(channel, interval, slog.New(slog.DiscardHandler))
	go n.Run(ctx)
	next := func() (*pq.Notification, time.Time) {
		t.Helper()
		select {
		case got := <-l.Notify:
			require.NotNil(t, got)
			return got, time.Now()
		case <-time.After(10 * time.Second):
			t.Fatal("no notification")
			return nil, time.Time{}
		}
	}
	n.Notify("first")
	first, at := next()
	require.Equal(t, "first", first.Extra)
	var want []string
	for i := range 20 {
		k := fmt.Sprintf("k%02d", i)
		want = append(want, k)
		n.Notify(k)
	}
	second, at2 := next()
	require.Equal(t, strings.Join(want, ","), second.Extra, "the keys of the pause in one NOTIFY")
	require.GreaterOrEqual(t, at2.Sub(at), interval-100*time.Millisecond, "not before the interval ended")
	select {
	case extra := <-l.Notify:
		t.Fatalf("a third notification: %v", extra)
	default:
	}
}

// A multi-host URL, as for a Patroni pair (postgres://h1:p1,h2:p2/db?
// target_session_attrs=read-write): the listener tries the hosts as the
// pool does and listens on the one that is up and writable (lib/pq read
// such a URL's host list as one host name and could not connect). Its
// connection is named in pg_stat_activity.
func TestListenFollowsMultiHostURL(t *testing.T) {
	t.Parallel()
	st, u := storetest.IsolatedDB(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	l, err := (&net.ListenConfig{}).Listen(ctx, "tcp", "127.0.0.1:0")
	require.NoError(t, err)
	down := l.Addr().String() // nothing listens there once closed
	l.Close()
	pu, err := neturl.Parse(u)
	require.NoError(t, err)
	pu.Host = down + "," + pu.Host
	q := pu.Query()
	q.Set("target_session_attrs", "read-write")
	pu.RawQuery = q.Encode()

	channel := "stitchd_test_" + uuid.NewString()[:8]
	got := make(chan string, 100)
	listening := make(chan error, 1)
	go func() { listening <- store.Listen(ctx, pu.String(), channel, nil, func(k string) { got <- k }) }()
	select {
	case err := <-listening:
		require.NoError(t, err)
	case <-time.After(10 * time.Second): // lib/pq waits as long as it cannot connect
		t.Fatal("the listener did not connect through a multi-host URL")
	}
	db, err := st.SQLDB()
	require.NoError(t, err)
	deadline := time.After(10 * time.Second)
	for received := false; !received; {
		// Sent again until it arrives: the LISTEN may not be in place yet.
		_, err := db.ExecContext(ctx, `SELECT pg_notify($1, 'k')`, channel)
		require.NoError(t, err)
		select {
		case k := <-got:
			received = k == "k"
		case <-time.After(100 * time.Millisecond):
		case <-deadline:
			t.Fatal("no notification through a multi-host URL")
		}
	}
	var named int
	require.NoError(t, db.QueryRowContext(ctx, `SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()
		AND application_name = $1`, store.ListenerAppName).Scan(&named))
	require.Equal(t, 1, named)
}

// noTLSProxy serves target's Postgres as a server without TLS would: it
// answers a client's SSLRequest with 'N' and then passes bytes both ways.
func noTLSProxy(t *testing.T, target string) string {
	t.Helper()
	ln, err := (&net.ListenConfig{}).Listen(t.Context(), "tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				var first [8]byte
				if _, err := io.ReadFull(c, first[:]); err != nil {
					return
				}
				up, err := (&net.Dialer{}).DialContext(context.Background(), "tcp", target)
				if err != nil {
					return
				}
				defer up.Close()
				// SSLRequest: length 8, code 80877103.
				if binary.BigEndian.Uint32(first[4:]) == 80877103 {
					if _, err := c.Write([]byte{'N'}); err != nil {
						return
					}
				} else if _, err := up.Write(first[:]); err != nil {
					return
				}
				go func() { _, _ = io.Copy(up, c) }()
				_, _ = io.Copy(c, up)
			}()
		}
	}()
	return ln.Addr().String()
}

// A database URL naming no sslmode works for the pool (pgx prefers TLS)
// and, the same, for the listener, on a server without TLS: lib/pq's own
// default, require, left it refused and the process waiting at start-up.
// A listener that cannot connect fails ListenAll, saying why, instead of
// waiting forever.
func TestListenerOnAServerWithoutTLS(t *testing.T) {
	t.Parallel()
	st, u := storetest.IsolatedDB(t)
	pu, err := neturl.Parse(u)
	require.NoError(t, err)
	pu.Host = noTLSProxy(t, pu.Host)
	q := pu.Query()
	q.Del("sslmode")
	pu.RawQuery = q.Encode()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	channel := "stitchd_test_" + uuid.NewString()[:8]
	got := make(chan string, 100)
	require.NoError(t, store.ListenAllWithin(ctx, pu.String(), nil, map[string]func(string){channel: func(k string) { got <- k }}, 10*time.Second))
	db, err := st.SQLDB()
	require.NoError(t, err)
	_, err = db.ExecContext(ctx, `SELECT pg_notify($1, 'k')`, channel)
	require.NoError(t, err)
	select {
	case k := <-got:
		require.Equal(t, "k", k)
	case <-time.After(10 * time.Second):
		t.Fatal("no notification through a listener on a server without TLS")
	}

	q.Set("sslmode", "require")
	pu.RawQuery = q.Encode()
	err = store.ListenAllWithin(ctx, pu.String(), nil, map[string]func(string){channel: func(string) {}}, 300*time.Millisecond)
	require.ErrorContains(t, err, "no connection within 300ms")
	require.ErrorContains(t, err, "SSL is not enabled on the server")
}
