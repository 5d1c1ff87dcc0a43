package store

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"os"
	"regexp"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/lib/pq"
)

// ListenerAppName is the listening connection's application_name in
// pg_stat_activity, unless the database URL names one.
const ListenerAppName = "stitchd-listener"

// Listen LISTENs on channel with lib/pq's Listener (reconnecting on its own)
// and calls fn with each key of each notification's payload (a Notifier
// joins keys with commas) until ctx ends. fn is also called with "" after a
// reconnect, when notifications may have been missed. A URL naming several
// hosts reconnects to whichever its target_session_attrs accepts, as the
// pool does: after a failover, the new primary.
func Listen(ctx context.Context, url, channel string, log *slog.Logger, fn func(payload string)) error {
	return ListenAll(ctx, url, log, map[string]func(string){channel: fn})
}

// ListenAll is Listen on several channels over one connection (a process
// holds one listening connection, whatever it listens for), each
// notification handed to its channel's function; after a reconnect every
// function is called with "".
func ListenAll(ctx context.Context, url string, log *slog.Logger, fns map[string]func(payload string)) error {
	return listenAll(ctx, url, log, fns, listenConnectWithin)
}

// listenConnectWithin bounds how long ListenAll waits for the listening
// connection's first LISTEN. The pool has connected by then, so a
// listener that cannot is told something the pool is not (its TLS, say)
// and would otherwise wait forever, leaving the process half started.
const listenConnectWithin = 30 * time.Second

func listenAll(ctx context.Context, url string, log *slog.Logger, fns map[string]func(payload string), within time.Duration) error {
	dsn, err := listenerDSN(url)
	if err != nil {
		return err
	}
	var mu sync.Mutex
	var lastErr error
	l := pq.NewListener(dsn, 100*time.Millisecond, 5*time.Second, func(ev pq.ListenerEventType, err error) {
		if err != nil {
			mu.Lock()
			lastErr = err
			mu.Unlock()
			if log != nil {
				log.Warn("database listener", "event", ev, "error", err)
			}
		}
	})
	// Listen waits for a connection; Close ends the wait.
	listened := make(chan error, 1)
	go func() {
		for channel := range fns {
			if err := l.Listen(channel); err != nil {
				listened <- fmt.Errorf("error listening on %s: %w", channel, err)
				return
			}
		}
		listened <- nil
	}()
	timer := time.NewTimer(within)
	defer timer.Stop()
	var stopped error
	select {
	case err := <-listened:
		if err != nil {
			l.Close()
			return err
		}
	case <-timer.C:
		stopped = fmt.Errorf("no connection within %s", within)
	case <-ctx.Done():
		stopped = ctx.Err()
	}
	if stopped != nil {
		l.Close()
		if err := <-listened; err != nil && !errors.Is(err, net.ErrClosed) {
			return err
		}
		mu.Lock()
		defer mu.Unlock()
		return fmt.Errorf("error listening for notifications: %w (last error: %v)", stopped, lastErr)
	}
	go func() {
		defer l.Close()
		ping := time.NewTicker(30 * time.Second)
		defer ping.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case n, ok := <-l.Notify:
				if !ok {
					return
				}
				if n == nil { // reconnected
					for _, fn := range fns {
						fn("")
					}
					continue
				}
				fn := fns[n.Channel]
				if fn == nil {
					continue
				}
				for _, k := range splitPayload(n.Extra) {
					fn(k)
				}
			case <-ping.C:
				_ = l.Ping()
			}
		}
	}()
	return nil
}

// listenerDSN is dsn for lib/pq, named ListenerAppName (as a fallback). A
// URL is rewritten in key=value form: lib/pq reads a URL's
// host1:port1,host2:port2 (which pgx, the pool's driver, reads as two
// hosts, as libpq does) as one host name.
func listenerDSN(dsn string) (string, error) {
	return listenerDSNWith(dsn, os.Getenv)
}

// tlsSettings are the settings of a connection's TLS: one of them set,
// in the DSN or the environment, and lib/pq's own default stands.
var tlsSettings = regexp.MustCompile(`(^|[\s?&])(sslmode|sslrootcert|sslnegotiation)\s*=`)

// listenerDSNWith is listenerDSN reading the environment with getenv.
func listenerDSNWith(dsn string, getenv func(string) string) (string, error) {
	name := "fallback_application_name=" + ListenerAppName
	// lib/pq requires TLS unless told otherwise; pgx, the pool's driver,
	// prefers it, as libpq does. Without this a URL that names no sslmode
	// served the pool over plain TCP and left the listener refused. Any
	// TLS setting given (sslrootcert=system makes both verify-full) is
	// left to the drivers.
	if getenv("PGSSLMODE") == "" && getenv("PGSSLROOTCERT") == "" && getenv("PGSSLNEGOTIATION") == "" &&
		!tlsSettings.MatchString(dsn) {
		name = "sslmode='prefer' " + name
	}
	scheme, rest, ok := strings.Cut(dsn, "://")
	if !ok || (scheme != "postgres" && scheme != "postgresql") {
		return strings.TrimSpace(dsn + " " + name), nil
	}
	// The host list is not a URL's host: take it out, parse the rest.
	end := strings.IndexAny(rest, "/?")
	if end < 0 {
		end = len(rest)
	}
	userinfo, hostList := "", rest[:end]
	if i := strings.LastIndexByte(hostList, '@'); i >= 0 {
		userinfo, hostList = hostList[:i+1], hostList[i+1:]
	}
	u, err := url.Parse(scheme + "://" + userinfo + "h" + rest[end:])
	if err != nil {
		return "", fmt.Errorf("error parsing the database URL: %w", err)
	}
	var kvs []string
	add := func(k, v string) {
		if v != "" {
			kvs = append(kvs, k+"='"+strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(v)+"'")
		}
	}
	if u.User != nil {
		add("user", u.User.Username())
		pw, _ := u.User.Password()
		add("password", pw)
	}
	var hosts, ports []string
	for _, hp := range strings.Split(hostList, ",") {
		host, port := hp, ""
		if strings.HasPrefix(hp, "[") { // [IPv6]:port
			if i := strings.IndexByte(hp, ']'); i > 0 {
				host, port = hp[1:i], strings.TrimPrefix(hp[i+1:], ":")
			}
		} else if i := strings.IndexByte(hp, ':'); i >= 0 {
			host, port = hp[:i], hp[i+1:]
		}
		hosts, ports = append(hosts, host), append(ports, port)
	}
	add("host", strings.Join(hosts, ","))
	if strings.Join(ports, "") != "" {
		add("port", strings.Join(ports, ","))
	}
	add("dbname", strings.TrimPrefix(u.Path, "/"))
	q := u.Query()
	keys := make([]string, 0, len(q))
	for k := range q {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		add(k, q.Get(k))
	}
	return strings.Join(append(kvs, name), " "), nil
}
