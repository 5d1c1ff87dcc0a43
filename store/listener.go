package store

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/lib/pq"
)

// Listen LISTENs on channel with lib/pq's Listener (reconnecting on its own)
// and calls fn with each key of each notification's payload (a Notifier
// joins keys with commas) until ctx ends. fn is also called with "" after a
// reconnect, when notifications may have been missed.
func Listen(ctx context.Context, url, channel string, log *slog.Logger, fn func(payload string)) error {
	l := pq.NewListener(url, 100*time.Millisecond, 5*time.Second, func(ev pq.ListenerEventType, err error) {
		if err != nil && log != nil {
			log.Warn("database listener", "event", ev, "error", err)
		}
	})
	if err := l.Listen(channel); err != nil {
		l.Close()
		return fmt.Errorf("error listening on %s: %w", channel, err)
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
					fn("")
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
