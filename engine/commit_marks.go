package engine

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"sync"
	"time"
)

// Delivered marks, the commit service's batcher of the one write that
// needs no run lock (RecordDelivery of a successful try).

// deliveredBatch holds the delivered marks of successful deliveries for a
// moment before writing them, markChunk rows a statement. An instant worker's
// callback usually commits within that moment, and its transaction marks
// the row delivered itself (and logs the delivery): the process then
// drops the pending mark (forget), so such a dispatch costs no statement
// and no transaction of its own — and no lock wait against the callback
// on the same row. A mark waits between one and two ticks: the flusher
// writes the older generation each tick and ages the newer one.
type deliveredBatch struct {
	mu      sync.Mutex
	old     map[string]string // mark key → dispatch id
	young   map[string]string
	running bool
	// flushing serialises writers (the ticker and FlushDeliveryMarks).
	flushing sync.Mutex
}

// markTick is the default Config.MarkDelay.
const markTick = 500 * time.Millisecond

func markKey(runID, key string, attempt int) string {
	return runID + "\x00" + key + "\x00" + strconv.Itoa(attempt)
}

func (e *Engine) markDelivered(o DeliveryOutcome) {
	b := &e.delivered
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.young == nil {
		b.young = make(map[string]string)
	}
	b.young[markKey(o.RunID, o.Key, o.Attempt)] = o.DispatchID
	if !b.running {
		b.running = true
		go e.tickDelivered()
	}
}

// forget drops the pending marks of dispatches a committed transaction
// marked delivered (a worker's callback or the deadline: Tx.SaveRunWithEvents).
func (e *Engine) forget(runID string, keys []string, attempts []int) {
	b := &e.delivered
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.old)+len(b.young) == 0 {
		return
	}
	for i, k := range keys {
		mk := markKey(runID, k, attempts[i])
		delete(b.old, mk)
		delete(b.young, mk)
	}
}

// markWait is Config.MarkDelay, or its default, and at most an eighth of
// the claim lease, so a mark lands well before the lease of the row it
// protects ends.
func (e *Engine) markWait() time.Duration {
	d := e.cfg.MarkDelay
	if d <= 0 {
		d = markTick
	}
	if l := e.cfg.ClaimLease / 8; l > 0 && l < d {
		return l
	}
	return d
}

func (e *Engine) tickDelivered() {
	b := &e.delivered
	t := time.NewTimer(e.markWait())
	defer t.Stop()
	for {
		<-t.C
		// flushing is held from taking the marks to writing them, so that
		// FlushDeliveryMarks waits for marks already taken.
		b.flushing.Lock()
		b.mu.Lock()
		due := b.old
		b.old, b.young = b.young, nil
		if len(due) == 0 && len(b.old) == 0 {
			b.running = false
			b.mu.Unlock()
			b.flushing.Unlock()
			return
		}
		b.mu.Unlock()
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		if err := e.writeMarks(ctx, due); err != nil {
			e.cfg.Logger.Warn("error marking dispatches delivered", "dispatches", len(due), "error", err)
		}
		cancel()
		b.flushing.Unlock()
		t.Reset(e.markWait())
	}
}

// writeMarks writes the marks of due; the caller holds flushing.
func (e *Engine) writeMarks(ctx context.Context, due map[string]string) error {
	if len(due) == 0 {
		return nil
	}
	ids := make([]string, 0, len(due))
	for _, id := range due {
		ids = append(ids, id)
	}
	sort.Strings(ids) // a stable order of row locks
	// In statements of markChunk rows: a worker's callback marking one of
	// these rows waits for the statement that holds it, so none may hold
	// thousands (a big fan-out's callbacks trail its deliveries, and its
	// marks come due by the thousand: callbacks queued behind statements
	// that long; docs/performance.md#measurements-behind-the-code).
	// A chunk that fails does not stop the others.
	// A chunk that failed on its connection (one a cancelled query left
	// broken, at a shutdown) is written again on another: the marks are
	// taken from the batch and would be lost.
	var errs []error
	for off := 0; off < len(ids); off += markChunk {
		part := ids[off:min(off+markChunk, len(ids))]
		err := e.cfg.Store.DispatchesDelivered(ctx, part)
		for try := 1; try < markTries && errors.Is(err, ErrUnavailable) && ctx.Err() == nil; try++ {
			err = e.cfg.Store.DispatchesDelivered(ctx, part)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("error marking %d dispatches delivered: %w", len(part), err))
		}
	}
	return errors.Join(errs...)
}

// markChunk bounds the rows one delivered-mark statement locks.
const markChunk = 128

// markTries is how many times a chunk of marks is written before its
// connection's failure is given up on.
const markTries = 3

// FlushDeliveryMarks writes every pending delivered mark now (at shutdown,
// so that no accepted dispatch is delivered again when its lease ends).
func (e *Engine) FlushDeliveryMarks(ctx context.Context) error {
	b := &e.delivered
	b.flushing.Lock() // after any write the ticker has under way
	defer b.flushing.Unlock()
	b.mu.Lock()
	due := b.old
	for k, id := range b.young {
		if due == nil {
			due = make(map[string]string)
		}
		due[k] = id
	}
	b.old, b.young = nil, nil
	b.mu.Unlock()
	return e.writeMarks(ctx, due)
}
