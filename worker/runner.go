package worker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net/http"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"
)

// defaultLeaseSeconds is a Worker node's leaseSeconds and timeoutSeconds
// when its data sets none (handlers.DefaultLeaseSeconds,
// handlers.DefaultTimeoutSeconds).
const defaultLeaseSeconds = 300

// A task's state, for who reports it: the task's own goroutine when its
// handler returns, or a shutdown whose grace period ended first.
const (
	stateRunning int32 = iota
	stateReporting
	stateAbandoned
)

// runner runs tasks, push's and pull's alike: a handler per task with
// heartbeats beside it, the result reported, and a drain for shutdown.
type runner struct {
	handler Handler
	client  *http.Client
	logger  *slog.Logger
	// heartbeat is the interval between heartbeats (0: a third of the
	// task's lease or timeout; negative: none).
	heartbeat time.Duration
	// leaseKey is the node data's field the lease is read from:
	// leaseSeconds (pull) or timeoutSeconds (push).
	leaseKey string

	mu      sync.Mutex
	running map[*inflight]struct{}
	closed  bool
	wg      sync.WaitGroup // tasks whose goroutine has not returned
}

// inflight is a task being worked.
type inflight struct {
	task   *Task
	cancel context.CancelCauseFunc
	state  atomic.Int32
	// reported is closed once the task's result is sent (or given up).
	reported chan struct{}
}

func newRunner(h Handler, client *http.Client, logger *slog.Logger, heartbeat time.Duration, leaseKey string) *runner {
	if client == nil {
		client = &http.Client{}
	}
	if logger == nil {
		logger = slog.Default()
	}
	return &runner{handler: h, client: client, logger: logger, heartbeat: heartbeat, leaseKey: leaseKey,
		running: map[*inflight]struct{}{}}
}

// start runs t's handler on a goroutine of its own, with ctx as its
// context's parent; done is called when the task is over. It returns
// false, running nothing, once the runner is draining.
func (r *runner) start(ctx context.Context, t *Task, done func()) bool {
	hctx, cancel := context.WithCancelCause(ctx)
	f := &inflight{task: t, cancel: cancel, reported: make(chan struct{})}
	t.r = r
	t.stale = func() { cancel(ErrStale) }
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		cancel(nil)
		return false
	}
	r.running[f] = struct{}{}
	r.wg.Add(1)
	r.mu.Unlock()
	go func() {
		defer r.wg.Done()
		defer done()
		defer func() {
			r.mu.Lock()
			delete(r.running, f)
			r.mu.Unlock()
		}()
		defer cancel(nil)
		r.work(hctx, f)
	}()
	return true
}

// work runs the handler with heartbeats beside it and reports its result,
// unless a shutdown reported the task first or stitchd no longer runs it.
func (r *runner) work(ctx context.Context, f *inflight) {
	t := f.task
	stopBeats := make(chan struct{})
	beating := make(chan struct{})
	go func() {
		defer close(beating)
		r.beat(ctx, f, stopBeats)
	}()
	output, err := r.call(ctx, t)
	close(stopBeats)
	<-beating
	if !f.state.CompareAndSwap(stateRunning, stateReporting) {
		return // the shutdown reported it
	}
	defer close(f.reported)
	log := r.logger.With("run_id", t.RunID, "node_id", t.NodeID, "attempt", t.Attempt)
	if errors.Is(context.Cause(ctx), ErrStale) {
		log.Info("stitchd no longer runs this attempt: its result is dropped")
		return
	}
	// Reported even when the handler's context has ended (a hard stop):
	// the attempt should fail now, not when its lease runs out.
	if rerr := r.report(context.WithoutCancel(ctx), t, output, err); rerr != nil {
		log.Error("worker: reporting the result", "error", rerr)
		return
	}
	if err != nil {
		log.Info("task failed", "error", err)
	} else {
		log.Debug("task completed")
	}
}

// call runs the handler, turning a panic into an error.
func (r *runner) call(ctx context.Context, t *Task) (output any, err error) {
	defer func() {
		if p := recover(); p != nil {
			r.logger.Error("worker: the handler panicked", "run_id", t.RunID, "node_id", t.NodeID, "panic", p,
				"stack", string(debug.Stack()))
			output, err = nil, fmt.Errorf("worker: the handler panicked: %v", p)
		}
	}()
	return r.handler(ctx, t)
}

// beat heartbeats t until stop is closed: every interval, or, when one
// fails, again a little later. A 409 cancels the handler's context.
func (r *runner) beat(ctx context.Context, f *inflight, stop <-chan struct{}) {
	every := r.interval(f.task)
	if every <= 0 {
		return
	}
	next := every
	for {
		t := time.NewTimer(next)
		select {
		case <-stop:
			t.Stop()
			return
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		err := f.task.Heartbeat(ctx, nil)
		switch {
		case err == nil:
			next = every
		case errors.Is(err, ErrStale):
			r.logger.Info("worker: stitchd no longer runs this attempt; the handler's context is cancelled",
				"run_id", f.task.RunID, "node_id", f.task.NodeID, "attempt", f.task.Attempt)
			return
		default:
			if ctx.Err() != nil {
				return
			}
			r.logger.Warn("worker: heartbeat", "run_id", f.task.RunID, "node_id", f.task.NodeID, "error", err)
			next = max(every/4, 100*time.Millisecond) // try again well before the lease ends
		}
	}
}

// interval is how often t is heartbeated: a third of its lease (pull) or
// timeout (push), from the node's data, unless set.
func (r *runner) interval(t *Task) time.Duration {
	if r.heartbeat != 0 {
		return r.heartbeat
	}
	secs := float64(defaultLeaseSeconds)
	var cfg map[string]json.RawMessage
	if json.Unmarshal(t.Config, &cfg) == nil {
		// Whole seconds, as stitchd reads them: a fraction rounds up (0.5
		// is 1 s, not the default).
		var v float64
		if json.Unmarshal(cfg[r.leaseKey], &v) == nil && v > 0 {
			secs = math.Ceil(v)
		}
	}
	// A timeout of centuries must not overflow a Duration (nor, in the
	// Node library, a timer): a beat every 24 days is often enough.
	if secs/3 >= maxHeartbeatEvery.Seconds() {
		return maxHeartbeatEvery
	}
	return time.Duration(secs / 3 * float64(time.Second))
}

// maxHeartbeatEvery bounds the automatic heartbeats' interval.
const maxHeartbeatEvery = 24 * 24 * time.Hour

// inFlight is the number of tasks being worked.
func (r *runner) inFlight() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.running)
}

// drain refuses new tasks and waits for the running ones until ctx ends;
// then it cancels those still running (cause ErrShuttingDown), reports
// them failed — retryable, so the retry policy queues the next attempt —
// and returns an error naming how many.
func (r *runner) drain(ctx context.Context) error {
	r.mu.Lock()
	r.closed = true
	r.mu.Unlock()
	idle := make(chan struct{})
	go func() {
		r.wg.Wait()
		close(idle)
	}()
	select {
	case <-idle:
		return nil
	case <-ctx.Done():
	}
	r.mu.Lock()
	left := make([]*inflight, 0, len(r.running))
	for f := range r.running {
		left = append(left, f)
	}
	r.mu.Unlock()
	var failed atomic.Int32
	var wg sync.WaitGroup
	for _, f := range left {
		if !f.state.CompareAndSwap(stateRunning, stateAbandoned) {
			wg.Go(func() { <-f.reported }) // its handler returned: its own report is on its way
			continue
		}
		failed.Add(1)
		f.cancel(ErrShuttingDown)
		wg.Go(func() {
			t := f.task
			if err := r.report(context.WithoutCancel(ctx), t, nil, ErrShuttingDown); err != nil {
				r.logger.Error("worker: reporting a task failed at shutdown", "run_id", t.RunID, "node_id", t.NodeID, "error", err)
			}
		})
	}
	wg.Wait()
	if n := failed.Load(); n > 0 {
		return fmt.Errorf("worker: %d task(s) still running after the grace period were failed as %q: %w",
			n, ErrShuttingDown.Error(), context.Cause(ctx))
	}
	return nil
}
