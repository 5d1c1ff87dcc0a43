package bench

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"sync"
	"time"
)

// watcher waits for runs to finish. It asks the database with one query
// for every run being waited on, and only when one may have finished: when
// the worker's callback that should finish it was answered (a run
// finishes in the transaction of its last completion, which commits before
// the callback is answered), else every interval — so waiting costs the
// measured database a few queries a second, not one per waiter and
// millisecond (a short poll took a share of the database's time the
// scenarios then measured: docs/performance.md#measurements-behind-the-code).
type watcher struct {
	db       *sql.DB
	interval time.Duration

	mu       sync.Mutex
	waiting  map[string][]chan string // run → waiters, sent its final status
	expect   map[string]int           // run → callbacks after which it should have finished
	answered map[string]int           // run → its callbacks the worker had answered
	wake     chan struct{}
}

func newWatcher(db *sql.DB, interval time.Duration) *watcher {
	return &watcher{db: db, interval: interval, waiting: map[string][]chan string{},
		expect: map[string]int{}, answered: map[string]int{}, wake: make(chan struct{}, 1)}
}

// wait returns the status run finished in; callbacks is how many of its
// callbacks the worker answers before it should have finished (0: unknown,
// looked for every interval).
func (w *watcher) wait(ctx context.Context, run string, callbacks int) (string, error) {
	ch := make(chan string, 1)
	w.mu.Lock()
	w.waiting[run] = append(w.waiting[run], ch)
	due := true // unknown: look at once
	if callbacks > 0 {
		w.expect[run] = callbacks
		due = w.answered[run] >= callbacks // it may have finished already
	}
	w.mu.Unlock()
	if due {
		w.poke()
	}
	select {
	case st := <-ch:
		return st, nil
	case <-ctx.Done():
		return "", fmt.Errorf("run %s did not finish: %w", run, ctx.Err())
	}
}

// callbackAnswered is told that a callback of run was answered 200.
func (w *watcher) callbackAnswered(run string) {
	w.mu.Lock()
	w.answered[run]++
	n, ok := w.expect[run]
	due := ok && w.answered[run] >= n
	w.mu.Unlock()
	if due {
		w.poke()
	}
}

func (w *watcher) poke() {
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

// run looks for finished runs until ctx ends.
func (w *watcher) run(ctx context.Context) {
	timer := time.NewTimer(w.interval)
	defer timer.Stop()
	for {
		w.mu.Lock()
		ids := make([]string, 0, len(w.waiting))
		for id := range w.waiting {
			ids = append(ids, id)
		}
		w.mu.Unlock()
		if len(ids) > 0 {
			w.poll(ctx, ids)
		}
		timer.Reset(w.interval)
		select {
		case <-ctx.Done():
			return
		case <-w.wake:
		case <-timer.C:
		}
	}
}

func (w *watcher) poll(ctx context.Context, ids []string) {
	rows, err := w.db.QueryContext(ctx, `SELECT id::text, status FROM runs WHERE id = ANY($1::uuid[]) AND status <> 'running'`,
		"{"+strings.Join(ids, ",")+"}")
	if err != nil {
		return
	}
	defer rows.Close()
	for rows.Next() {
		var id, st string
		if rows.Scan(&id, &st) != nil {
			return
		}
		w.mu.Lock()
		for _, ch := range w.waiting[id] {
			ch <- st
		}
		delete(w.waiting, id)
		delete(w.expect, id)
		delete(w.answered, id)
		w.mu.Unlock()
	}
}
