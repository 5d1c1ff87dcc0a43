package bench

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"sync"
	"time"
)

// watcher waits for runs to finish with one query for every run being
// waited on, so 64 waiting chains cost one poll per interval rather than 64
// (a poll per waiter would load the database the bench is measuring).
type watcher struct {
	db       *sql.DB
	interval time.Duration

	mu      sync.Mutex
	waiting map[string][]chan string // run → waiters, sent its final status
	signal  chan struct{}
}

func newWatcher(db *sql.DB, interval time.Duration) *watcher {
	return &watcher{db: db, interval: interval, waiting: map[string][]chan string{}, signal: make(chan struct{}, 1)}
}

// wait returns the status run finished in.
func (w *watcher) wait(ctx context.Context, run string) (string, error) {
	ch := make(chan string, 1)
	w.mu.Lock()
	w.waiting[run] = append(w.waiting[run], ch)
	w.mu.Unlock()
	select {
	case w.signal <- struct{}{}:
	default:
	}
	select {
	case st := <-ch:
		return st, nil
	case <-ctx.Done():
		return "", fmt.Errorf("run %s did not finish: %w", run, ctx.Err())
	}
}

// run polls until ctx ends.
func (w *watcher) run(ctx context.Context) {
	for {
		w.mu.Lock()
		ids := make([]string, 0, len(w.waiting))
		for id := range w.waiting {
			ids = append(ids, id)
		}
		w.mu.Unlock()
		if len(ids) == 0 {
			select {
			case <-ctx.Done():
				return
			case <-w.signal:
				continue
			}
		}
		rows, err := w.db.QueryContext(ctx, `SELECT id::text, status FROM runs WHERE id = ANY($1::uuid[]) AND status <> 'running'`,
			"{"+strings.Join(ids, ",")+"}")
		if err == nil {
			for rows.Next() {
				var id, st string
				if rows.Scan(&id, &st) != nil {
					break
				}
				w.mu.Lock()
				for _, ch := range w.waiting[id] {
					ch <- st
				}
				delete(w.waiting, id)
				w.mu.Unlock()
			}
			_ = rows.Close()
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(w.interval):
		}
	}
}
