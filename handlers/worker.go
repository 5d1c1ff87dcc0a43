package handlers

import (
	"context"
	"math/rand/v2"

	"github.com/tidwall/gjson"

	"github.com/stitchd/stitchd/engine"
)

// Worker defaults.
const (
	DefaultTimeoutSeconds = 300
	DefaultMaxAttempts    = 3
	DefaultInitialDelayMs = 1000
	DefaultMaxDelayMs     = 60000
)

// Worker hands work to an external service: it marks the node running with
// a deadline and writes an outbox row; the worker's callback completes it.
type Worker struct{}

// WorkerPolicy is a Worker node's timeout and retry policy.
type WorkerPolicy struct {
	URL            string
	TimeoutSeconds int
	MaxAttempts    int
	Backoff        string // exponential | linear | fixed
	InitialDelayMs int64
	MaxDelayMs     int64
}

// PolicyOf reads a Worker node's config, applying defaults.
func PolicyOf(n *engine.Node) WorkerPolicy {
	c := gjson.ParseBytes(n.Config)
	p := WorkerPolicy{
		URL:            c.Get("webhookUrl").String(),
		TimeoutSeconds: int(c.Get("timeoutSeconds").Int()),
		MaxAttempts:    int(c.Get("retry.maxAttempts").Int()),
		Backoff:        c.Get("retry.backoff").String(),
		InitialDelayMs: c.Get("retry.initialDelayMs").Int(),
		MaxDelayMs:     c.Get("retry.maxDelayMs").Int(),
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
	return p
}

// DelayMs is the backoff before try/attempt n+1 after n failures.
func (p WorkerPolicy) DelayMs(n int) int64 {
	d := p.InitialDelayMs
	switch p.Backoff {
	case "fixed":
	case "linear":
		d = p.InitialDelayMs * int64(n)
	default:
		for i := 1; i < n && d < p.MaxDelayMs; i++ {
			d *= 2
		}
		if d > p.MaxDelayMs {
			d = p.MaxDelayMs
		}
		if d > 0 {
			d = rand.Int64N(d + 1) // full jitter
		}
	}
	if d > p.MaxDelayMs {
		d = p.MaxDelayMs
	}
	return d
}

// Fire dispatches the node.
func (Worker) Fire(_ context.Context, fc engine.FireContext) error {
	p := PolicyOf(fc.Node())
	return fc.Dispatch(engine.DispatchRequest{URL: p.URL, Config: fc.Node().Config,
		TimeoutSeconds: p.TimeoutSeconds, MaxTries: p.MaxAttempts})
}

// RetryDelayMs implements engine.Retrier: a worker-reported failure or a
// missed deadline is retried as a new attempt until maxAttempts.
func (Worker) RetryDelayMs(n *engine.Node, attempt int) (int64, bool) {
	p := PolicyOf(n)
	if attempt >= p.MaxAttempts {
		return 0, false
	}
	return max(p.DelayMs(attempt), 1), true
}

// TimeoutSeconds implements engine.Timeouter.
func (Worker) TimeoutSeconds(n *engine.Node) int { return PolicyOf(n).TimeoutSeconds }
