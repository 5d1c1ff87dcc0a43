package store

import (
	"context"
	"fmt"
	"log/slog"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/lib/pq"
)

// maxNotifyPayload keeps each NOTIFY payload under Postgres's 8,000-byte
// limit.
const maxNotifyPayload = 7900

// Notifier sends NOTIFYs after commit, coalesced: keys (run ids, or
// "entity:<id>") given to Notify while a NOTIFY is in flight, or within
// the interval after one, go out together in the next one, as
// comma-separated payloads. A quiet Notifier sends at once; a busy one
// sends at most once an interval (DefaultNotifyInterval): each NOTIFY is a
// transaction of its own, and Postgres signals every listening connection
// for it, so one per engine commit cost the machine as much CPU as a
// statement of every completion
// (docs/performance.md#measurements-behind-the-code).
//
// A NOTIFY issued inside a transaction takes a database-wide lock at commit
// and holds it until the commit is durable, so transactions that notify
// commit one at a time: with every engine transaction notifying, commits
// of unrelated runs queued behind each other's fsync. Notifying after
// commit from one goroutine per process keeps that lock off the commit
// path. A notification lost to a crash between commit and NOTIFY only
// delays a stream: event streams re-read the database every few seconds
// and after a listener reconnect.
type Notifier struct {
	s        *Store
	channel  string
	interval time.Duration
	log      *slog.Logger

	mu      sync.Mutex
	pending map[string]struct{}
	signal  chan struct{}
}

// DefaultNotifyInterval is the least time between two NOTIFYs of a
// Notifier: what an event stream may lag behind a commit at most, besides
// the NOTIFY's own time, when the process is busy.
const DefaultNotifyInterval = 10 * time.Millisecond

// NewNotifier returns a Notifier on channel that sends at most once an
// interval (DefaultNotifyInterval when 0, none when negative); call Run.
func (s *Store) NewNotifier(channel string, interval time.Duration, log *slog.Logger) *Notifier {
	if log == nil {
		log = slog.Default()
	}
	if interval == 0 {
		interval = DefaultNotifyInterval
	}
	return &Notifier{s: s, channel: channel, interval: interval, log: log, pending: map[string]struct{}{},
		signal: make(chan struct{}, 1)}
}

// Notify queues key for the next NOTIFY; it never blocks.
func (n *Notifier) Notify(key string) {
	n.mu.Lock()
	n.pending[key] = struct{}{}
	n.mu.Unlock()
	select {
	case n.signal <- struct{}{}:
	default:
	}
}

// Run sends queued keys until ctx ends.
func (n *Notifier) Run(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-n.signal:
		}
		if err := n.send(ctx, n.take()); err != nil && ctx.Err() == nil {
			n.log.Warn("error sending notifications", "error", err)
		}
		if n.interval <= 0 {
			continue
		}
		// Keys queued meanwhile wait for the next NOTIFY, together.
		select {
		case <-ctx.Done():
			return
		case <-time.After(n.interval):
		}
	}
}

func (n *Notifier) take() []string {
	n.mu.Lock()
	defer n.mu.Unlock()
	keys := make([]string, 0, len(n.pending))
	for k := range n.pending {
		keys = append(keys, k)
	}
	clear(n.pending)
	sort.Strings(keys)
	return keys
}

// send NOTIFYs the keys in as few payloads as fit. The notification is not
// durable, so its commit does not wait for the disk.
func (n *Notifier) send(ctx context.Context, keys []string) error {
	payloads := joinPayloads(keys, maxNotifyPayload)
	if len(payloads) == 0 {
		return nil
	}
	var ignored string
	err := n.s.db.WithContext(ctx).Raw(`SELECT set_config('synchronous_commit', 'off', true),
		(SELECT count(pg_notify(?, p)) FROM unnest(?::text[]) AS p)::text`, n.channel, pq.StringArray(payloads)).
		Row().Scan(&ignored, &ignored)
	if err != nil {
		return fmt.Errorf("error notifying %d keys on %s: %w", len(keys), n.channel, interpretError(err))
	}
	return nil
}

// joinPayloads joins keys with commas into payloads of at most limit bytes.
func joinPayloads(keys []string, limit int) []string {
	var out []string
	var b strings.Builder
	for _, k := range keys {
		if b.Len() > 0 && b.Len()+1+len(k) > limit {
			out = append(out, b.String())
			b.Reset()
		}
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		b.WriteString(k)
	}
	if b.Len() > 0 {
		out = append(out, b.String())
	}
	return out
}

// splitPayload is joinPayloads's inverse for one payload.
func splitPayload(p string) []string {
	if p == "" {
		return nil
	}
	return strings.Split(p, ",")
}
