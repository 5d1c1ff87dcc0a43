package handlers

import (
	"context"
	"encoding/json"
	"fmt"
	"math"

	"github.com/tidwall/gjson"

	"github.com/stitchd/stitchd/engine"
	"github.com/stitchd/stitchd/internal/retrypolicy"
)

// Worker defaults.
const (
	DefaultTimeoutSeconds = 300
	DefaultMaxAttempts    = 3
	DefaultInitialDelayMs = 1000
	DefaultMaxDelayMs     = 60000
	DefaultMultiplier     = 2
	// DefaultLeaseSeconds is how long a pulled task is a worker's before
	// its attempt times out, unless a heartbeat extends it
	// (data.leaseSeconds).
	DefaultLeaseSeconds = 300
	// DefaultDeliveryTries is how many times one attempt's dispatch is
	// POSTed before the attempt fails: with the dispatcher's backoff
	// (retrypolicy.Delivery, 0.5 s doubling to 60 s) the tries span 2.5 to
	// 5 minutes, so a worker's restart or deploy fails nothing.
	DefaultDeliveryTries = 12
)

// Worker hands work to an external service: it marks the node running with
// a deadline and writes an outbox row; the worker's callback completes it.
type Worker struct{}

// WorkerPolicy is a Worker node's timeout and retry policy.
type WorkerPolicy struct {
	URL string
	// Queue, when set, makes the Worker pulled: its tasks wait in that
	// queue for a worker's poll, each leased for LeaseSeconds.
	Queue          string
	LeaseSeconds   int
	TimeoutSeconds int
	MaxAttempts    int
	Backoff        string // exponential | linear | fixed
	InitialDelayMs int64
	MaxDelayMs     int64
	// Multiplier is the exponential backoff's factor (default 2).
	Multiplier float64
	// Jitter is the fraction of each delay drawn at random (0: none, 1:
	// full jitter, a uniform delay in (0, d]). Default: 1 for exponential
	// backoff, 0 for linear and fixed.
	Jitter float64
	// NonRetryable are error substrings: a failure whose error contains
	// one fails the node at once.
	NonRetryable []string
	// DeliveryTries bounds the POSTs of one attempt's dispatch
	// (delivery.maxTries): a worker that is down or answers 5xx, 408, 425
	// or 429 is tried again, with backoff, up to this many times.
	DeliveryTries int
}

// PolicyOf reads a Worker node's config, applying defaults.
func PolicyOf(n *engine.Node) WorkerPolicy {
	c := gjson.ParseBytes(n.Config)
	p := WorkerPolicy{
		URL:          c.Get("webhookUrl").String(),
		Queue:        c.Get("queue").String(),
		LeaseSeconds: int(c.Get("leaseSeconds").Int()),
		// Deadlines are whole seconds: a fraction rounds up (0.5 is 1 s,
		// not the default).
		TimeoutSeconds: int(math.Ceil(c.Get("timeoutSeconds").Float())),
		MaxAttempts:    int(c.Get("retry.maxAttempts").Int()),
		Backoff:        c.Get("retry.backoff").String(),
		InitialDelayMs: c.Get("retry.initialDelayMs").Int(),
		MaxDelayMs:     c.Get("retry.maxDelayMs").Int(),
		DeliveryTries:  int(c.Get("delivery.maxTries").Int()),
	}
	if p.LeaseSeconds <= 0 {
		p.LeaseSeconds = DefaultLeaseSeconds
	}
	if p.DeliveryTries <= 0 {
		p.DeliveryTries = DefaultDeliveryTries
	}
	if p.TimeoutSeconds <= 0 {
		p.TimeoutSeconds = DefaultTimeoutSeconds
	}
	if p.MaxAttempts <= 0 {
		p.MaxAttempts = DefaultMaxAttempts
	}
	if p.Backoff == "" {
		p.Backoff = "exponential"
	}
	if !c.Get("retry.initialDelayMs").Exists() {
		p.InitialDelayMs = DefaultInitialDelayMs
	}
	if !c.Get("retry.maxDelayMs").Exists() {
		p.MaxDelayMs = DefaultMaxDelayMs
	}
	if p.MaxDelayMs < p.InitialDelayMs {
		p.MaxDelayMs = p.InitialDelayMs
	}
	p.Multiplier = DefaultMultiplier
	if m := c.Get("retry.multiplier"); m.Type == gjson.Number && m.Num >= 1 {
		p.Multiplier = m.Num
	}
	switch j := c.Get("retry.jitter"); {
	case j.Type == gjson.Number:
		p.Jitter = min(max(j.Num, 0), 1)
	case j.Str == "full":
		p.Jitter = 1
	case j.Str == "none":
		p.Jitter = 0
	case p.Backoff == "exponential":
		p.Jitter = 1 // today's full jitter
	}
	c.Get("retry.nonRetryable").ForEach(func(_, v gjson.Result) bool {
		if v.Type == gjson.String && v.Str != "" {
			p.NonRetryable = append(p.NonRetryable, v.Str)
		}
		return true
	})
	return p
}

// attempts is the policy's retry of failed attempts (internal/retrypolicy).
func (p WorkerPolicy) attempts() retrypolicy.Attempts {
	return retrypolicy.Attempts{MaxAttempts: p.MaxAttempts, Backoff: p.Backoff, InitialDelayMs: p.InitialDelayMs,
		MaxDelayMs: p.MaxDelayMs, Multiplier: p.Multiplier, Jitter: p.Jitter, NonRetryable: p.NonRetryable}
}

// Retryable reports whether a failure with error msg may be retried: it
// contains none of the policy's nonRetryable substrings.
func (p WorkerPolicy) Retryable(msg string) bool { return p.attempts().Retryable(msg) }

// BaseDelayMs is the backoff before attempt n+1 after n failures, before
// jitter.
func (p WorkerPolicy) BaseDelayMs(n int) int64 { return p.attempts().BaseDelayMs(n) }

// DelayMs is the backoff before attempt n+1 after n failures, with the
// policy's jitter (retrypolicy.Attempts.DelayMs).
func (p WorkerPolicy) DelayMs(n int, u float64) int64 { return p.attempts().DelayMs(n, u) }

// JitterFraction is a number in [0, 1) derived from a node instance's run,
// key and attempt (retrypolicy.JitterFraction).
func JitterFraction(runID, key string, attempt int) float64 {
	return retrypolicy.JitterFraction(runID, key, attempt)
}

// RetryDelay applies policy p to a failure (RetryDelayMs of the Worker and
// HTTP nodes).
func (p WorkerPolicy) RetryDelay(r engine.RetryParams) (int64, bool) {
	return p.attempts().Next(r.RunID, r.Key, r.Attempt, r.Error)
}

// Fire dispatches the node: the contract payload (engine.WorkerPayload),
// completed by the worker's callback on its URL.
func (Worker) Fire(_ context.Context, fc engine.FireContext) error {
	p := PolicyOf(fc.Node())
	cb, err := fc.CallbackURL()
	if err != nil {
		return err
	}
	input := fc.Input()
	if len(input) == 0 {
		input = json.RawMessage("null")
	}
	body, err := json.Marshal(engine.WorkerPayload{RunID: fc.RunID(), NodeID: fc.Key(), Config: fc.Node().Config,
		Input: input, CallbackURL: cb, Attempt: fc.Attempt()})
	if err != nil {
		return fmt.Errorf("error encoding dispatch payload: %w", err)
	}
	if p.Queue != "" {
		// Pulled: no deadline until a worker leases it (the poll sets it).
		return fc.Dispatch(engine.DispatchRequest{URL: "queue:" + p.Queue, Body: body, Kind: engine.DispatchTask,
			Queue: p.Queue, LeaseSeconds: p.LeaseSeconds})
	}
	return fc.Dispatch(engine.DispatchRequest{URL: p.URL, Body: body, Kind: engine.DispatchCallback,
		TimeoutSeconds: p.TimeoutSeconds, MaxTries: p.DeliveryTries})
}

// RetryDelayMs implements engine.Retrier: a worker-reported failure or a
// missed deadline is retried as a new attempt until maxAttempts, unless its
// error contains one of retry.nonRetryable.
func (Worker) RetryDelayMs(r engine.RetryParams) (int64, bool) {
	return PolicyOf(r.Node).RetryDelay(r)
}

// TimeoutSeconds implements engine.Timeouter: a heartbeat extends a
// pushed worker's deadline by its timeout, a pulled one's lease by its
// leaseSeconds.
func (Worker) TimeoutSeconds(n *engine.Node) int {
	p := PolicyOf(n)
	if p.Queue != "" {
		return p.LeaseSeconds
	}
	return p.TimeoutSeconds
}

// workerType is the Worker type's registration (handlers.Types).
func workerType() engine.NodeTypeSpec {
	return engine.NodeTypeSpec{Type: engine.NodeTypeWorker, IDPrefix: "worker", Panel: true,
		Caps:  engine.Capabilities{CallsBack: true},
		Label: "Worker", Color: "#4f46e5", Icon: "⚙",
		Help:          "Hands work to your service — POSTed to its webhook, or waiting in a queue it polls — and waits for its callback.",
		DefaultConfig: raw(`{"webhookUrl":""}`), Handler: Worker{},
		ConfigSchema: object(`"oneOf":[{"required":["webhookUrl"]},{"required":["queue"]}],"properties":{
			"webhookUrl":{"type":"string","format":"uri","title":"Webhook URL","description":"Where the work is POSTed (push); the worker answers at the callback URL it carries."},
			"queue":{"type":"string","pattern":"^[A-Za-z0-9][A-Za-z0-9._:-]{0,99}$","title":"Queue","description":"The queue a worker polls (pull: POST /api/v1/tasks/poll); instead of a webhook URL."},
			"leaseSeconds":{"type":"integer","minimum":1,"maximum":86400,"title":"Lease (seconds)","description":"How long a polled task is the worker's; a heartbeat extends it. Default 300."},
			"timeoutSeconds":{"type":"number","exclusiveMinimum":0,"title":"Timeout (seconds)"},
			` + retryField + `,
			"delivery":{"type":"object","title":"Delivery","properties":{"maxTries":{"type":"integer","minimum":1}}},
			"rateLimit":{"type":"number","exclusiveMinimum":0,"title":"Deliveries a second"},
			"cancelUrl":{"type":"string","format":"uri","title":"Cancel URL"},` + common + `}`),
		Statuses: statuses(engine.StatusRunning, engine.StatusCompleted, engine.StatusFailed)}
}
