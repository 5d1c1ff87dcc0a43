package worker

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Pull defaults.
const (
	// DefaultWaitSeconds is how long a poll waits for a task (stitchd
	// allows 1 to 60).
	DefaultWaitSeconds = 20
	// DefaultErrorBackoff is the wait after a failed poll, doubled on each
	// failure in a row up to MaxErrorBackoff (with jitter).
	DefaultErrorBackoff = time.Second
	MaxErrorBackoff     = 30 * time.Second
	// maxPollTasks is the most tasks one poll may ask for.
	maxPollTasks = 100
)

// PullParams configure a Puller.
type PullParams struct {
	// URL is stitchd's base URL (https://stitchd.example.com). Required.
	URL string
	// Token is a worker token (POST /api/v1/tokens {"role": "worker"}):
	// it may poll and nothing else. Required.
	Token string
	// Queue is the queue polled: a Worker node's data.queue. Required.
	Queue string
	// Handler does each task's work. Required.
	Handler Handler
	// Worker names this worker on its attempts and in GET /api/v1/queues
	// (default <hostname>/<pid>).
	Worker string
	// Concurrency is the most tasks held at once (default 1): each poll
	// asks for the free slots only, so no task waits in this process while
	// another worker could run it.
	Concurrency int
	// WaitSeconds is how long a poll waits for a task before answering
	// empty (default DefaultWaitSeconds; 1 to 60).
	WaitSeconds int
	// HeartbeatInterval is how often a running handler's attempt is
	// heartbeated, extending its lease: 0 is a third of the node's
	// leaseSeconds (300 s when unset), negative is never.
	HeartbeatInterval time.Duration
	// ErrorBackoff is the first wait after a failed poll (default
	// DefaultErrorBackoff), doubled on each failure in a row up to
	// MaxErrorBackoff.
	ErrorBackoff time.Duration
	// Client makes the polls and callbacks (default: a new http.Client;
	// requests are bounded by their own timeouts).
	Client *http.Client
	// Logger (default slog.Default()).
	Logger *slog.Logger
}

// Puller works one queue's tasks: it long-polls stitchd for as many tasks
// as it has free slots, runs each on a goroutine of its own with
// heartbeats beside it, and reports each result. Start it, then Stop it.
type Puller struct {
	p     PullParams
	url   string
	r     *runner
	slots chan struct{} // a token per free slot

	mu       sync.Mutex
	started  bool
	stopPoll context.CancelFunc
	polling  chan struct{} // closed when the poll loop has returned
}

// NewPuller returns a Puller of p.Queue; Start starts it.
func NewPuller(p PullParams) (*Puller, error) {
	var missing []string
	for name, v := range map[string]string{"URL": p.URL, "Token": p.Token, "Queue": p.Queue} {
		if v == "" {
			missing = append(missing, name)
		}
	}
	if p.Handler == nil {
		missing = append(missing, "Handler")
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("worker: PullParams needs %s", strings.Join(missing, ", "))
	}
	if p.Worker == "" {
		host, _ := os.Hostname()
		p.Worker = host + "/" + strconv.Itoa(os.Getpid())
	}
	if p.Concurrency <= 0 {
		p.Concurrency = 1
	}
	if p.WaitSeconds == 0 {
		p.WaitSeconds = DefaultWaitSeconds
	}
	if p.WaitSeconds < 1 || p.WaitSeconds > 60 {
		return nil, fmt.Errorf("worker: WaitSeconds %d: stitchd waits 1 to 60 seconds", p.WaitSeconds)
	}
	if p.ErrorBackoff <= 0 {
		p.ErrorBackoff = DefaultErrorBackoff
	}
	pl := &Puller{p: p, url: strings.TrimRight(p.URL, "/") + "/api/v1/tasks/poll",
		r:     newRunner(p.Handler, p.Client, p.Logger, p.HeartbeatInterval, "leaseSeconds"),
		slots: make(chan struct{}, p.Concurrency)}
	for range p.Concurrency {
		pl.slots <- struct{}{}
	}
	return pl, nil
}

// Start starts polling. Handlers' contexts derive from ctx: cancelling it
// is a hard stop (polling ends, handlers are cancelled and whatever they
// return is reported); Stop is the graceful one.
func (p *Puller) Start(ctx context.Context) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.started {
		return errors.New("worker: the puller was started already")
	}
	p.started = true
	pollCtx, cancel := context.WithCancel(ctx)
	p.stopPoll = cancel
	p.polling = make(chan struct{})
	go func() {
		defer close(p.polling)
		p.loop(pollCtx, ctx)
	}()
	return nil
}

// Stop stops polling at once (an outstanding long poll is abandoned) and
// waits for the running handlers until ctx ends. Those still running then
// have their context cancelled (cause ErrShuttingDown) and are reported
// failed with "worker shutting down" — retryable, so the node's retry
// policy queues the next attempt for another worker — and the error says
// how many. stitchd has no way to give a lease back untried: a task is
// either worked, failed this way, or — if this process dies — retried
// when its lease runs out.
func (p *Puller) Stop(ctx context.Context) error {
	p.mu.Lock()
	started, polling := p.started, p.polling
	if p.stopPoll != nil {
		p.stopPoll()
	}
	p.mu.Unlock()
	if !started {
		return nil
	}
	<-polling
	return p.r.drain(ctx)
}

// InFlight is how many tasks are being worked.
func (p *Puller) InFlight() int { return p.r.inFlight() }

// loop polls until ctx ends: for the free slots, waiting for one when all
// are taken; work is the handlers' context.
func (p *Puller) loop(ctx, work context.Context) {
	failures := 0
	for {
		free, ok := p.takeSlots(ctx)
		if !ok {
			return
		}
		tasks, err := p.poll(ctx, free)
		// Tasks received are this worker's whatever happens next: worked
		// (and drained on Stop), never dropped.
		for i, t := range tasks {
			if i >= free {
				// More than asked for: not held beyond the limit, failed for
				// another attempt (stitchd never answers so).
				p.r.logger.Error("worker: stitchd answered more tasks than asked for", "asked", free, "got", len(tasks))
				go func() {
					_ = p.r.report(context.WithoutCancel(work), t, nil, errors.New("worker over its concurrency limit"))
				}()
				continue
			}
			if !p.r.start(work, t, func() { p.slots <- struct{}{} }) {
				p.slots <- struct{}{}
			}
		}
		for range free - min(len(tasks), free) {
			p.slots <- struct{}{}
		}
		if err == nil {
			failures = 0
			continue
		}
		if ctx.Err() != nil {
			return
		}
		failures++
		wait := backoff(p.p.ErrorBackoff, failures)
		p.r.logger.Warn("worker: poll failed", "queue", p.p.Queue, "error", err, "retry_in", wait)
		if !sleep(ctx, wait) {
			return
		}
	}
}

// takeSlots waits for a free slot and takes every free one (at most a
// poll's 100), reporting how many; false when ctx ended.
func (p *Puller) takeSlots(ctx context.Context) (int, bool) {
	select {
	case <-p.slots:
	case <-ctx.Done():
		return 0, false
	}
	n := 1
	for n < maxPollTasks && p.tryTake() {
		n++
	}
	return n, true
}

// tryTake takes a free slot if there is one.
func (p *Puller) tryTake() bool {
	select {
	case <-p.slots:
		return true
	default:
		return false
	}
}

// backoff is the wait after the n-th failed poll in a row: first doubled
// n-1 times, at most MaxErrorBackoff, less up to half at random.
func backoff(first time.Duration, n int) time.Duration {
	d := first
	for i := 1; i < n && d < MaxErrorBackoff; i++ {
		d *= 2
	}
	d = min(d, MaxErrorBackoff)
	return d - time.Duration(rand.Int64N(int64(d)/2+1)) //nolint:gosec // jitter, not a secret
}

// polledTask is a task as POST /api/v1/tasks/poll hands it out.
type polledTask struct {
	RunID          string          `json:"run_id"`
	NodeID         string          `json:"node_id"`
	Attempt        int             `json:"attempt"`
	Input          json.RawMessage `json:"input"`
	Config         json.RawMessage `json:"config"`
	CallbackURL    string          `json:"callback_url"`
	LeaseExpiresAt time.Time       `json:"lease_expires_at"`
}

// poll asks for up to limit tasks, waiting up to WaitSeconds for one.
func (p *Puller) poll(ctx context.Context, limit int) ([]*Task, error) {
	body, err := json.Marshal(map[string]any{"queue": p.p.Queue, "worker": p.p.Worker, "max": limit,
		"wait_seconds": p.p.WaitSeconds})
	if err != nil {
		return nil, fmt.Errorf("worker: encoding the poll: %w", err)
	}
	// The long poll's wait, and time to answer.
	rctx, cancel := context.WithTimeout(ctx, time.Duration(p.p.WaitSeconds)*time.Second+30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(rctx, http.MethodPost, p.url, bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("worker: poll request: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+p.p.Token)
	resp, err := p.r.client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("worker: polling %s: %w", p.p.Queue, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("worker: polling %s: stitchd answered %d %s", p.p.Queue, resp.StatusCode, excerpt(resp.Body))
	}
	var out struct {
		Tasks []polledTask `json:"tasks"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		return nil, fmt.Errorf("worker: reading the poll's answer: %w", err)
	}
	tasks := make([]*Task, len(out.Tasks))
	for i, t := range out.Tasks {
		tasks[i] = &Task{RunID: t.RunID, NodeID: t.NodeID, Attempt: t.Attempt, Input: t.Input, Config: t.Config,
			CallbackURL: t.CallbackURL, LeaseExpiresAt: t.LeaseExpiresAt}
	}
	return tasks, nil
}
