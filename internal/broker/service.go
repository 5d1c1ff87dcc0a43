package broker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"time"

	"github.com/stitchd/stitchd/internal/retrypolicy"
	"github.com/stitchd/stitchd/internal/startstop"
)

// Trigger is a broker trigger to consume.
type Trigger struct {
	ID, FlowID, Kind string
	Config           Config
	// Version changes when the trigger's settings do (its updated_at): its
	// consumer is then restarted with the new ones.
	Version string
}

// State is a consumer's connection state, as reported.
type State struct {
	TriggerID   string
	Connected   bool
	ConnectedAt *time.Time
	LastError   string
	LastErrorAt *time.Time
}

// Params configures a Service.
type Params struct {
	// List returns the triggers to consume (enabled, of live flows).
	List func(ctx context.Context) ([]Trigger, error)
	// Handle starts the message's run (or posts its event); it returns
	// once that committed. An error marked Permanent drops the message;
	// any other redelivers it.
	Handle func(ctx context.Context, m Message) error
	// Report records a consumer's state when it changes. Nil: not recorded.
	Report func(ctx context.Context, st State)
	// Seen is called every SeenInterval with the triggers consumed: their
	// states are current. Nil: not called.
	Seen func(ctx context.Context, triggerIDs []string)
	// PollInterval is how often List is called (default 1s); SeenInterval
	// how often Seen is (default 10s).
	PollInterval, SeenInterval time.Duration
	// Workers is how many messages of one trigger are handled at once
	// (default 8).
	Workers int
	// MinBackoff and MaxBackoff bound the wait before reconnecting after
	// a failed or lost connection (defaults 500ms and 30s); it doubles
	// with each failure, with jitter (retrypolicy.Reconnect).
	MinBackoff, MaxBackoff time.Duration
	// HandleTimeout bounds one message's handling (default 30s).
	HandleTimeout time.Duration
	// Name identifies this process to the brokers (connection names).
	Name string
	// Dialer connects to the brokers (every connection of a nats:, tls:,
	// ws: or amqp(s): URL); its Control is the address guard. Nil: a
	// plain dialler with a 5 s timeout.
	Dialer *net.Dialer
	Logger *slog.Logger
}

// Service consumes every listed trigger until Stop.
type Service struct {
	p         Params
	mu        sync.Mutex
	consumers map[string]*consumer
	lifecycle startstop.Base
}

// New returns a Service; Start runs it.
func New(p Params) *Service {
	if p.PollInterval <= 0 {
		p.PollInterval = time.Second
	}
	if p.SeenInterval <= 0 {
		p.SeenInterval = 10 * time.Second
	}
	if p.Workers <= 0 {
		p.Workers = 8
	}
	if p.MinBackoff <= 0 {
		p.MinBackoff = 500 * time.Millisecond
	}
	if p.MaxBackoff < p.MinBackoff {
		p.MaxBackoff = max(30*time.Second, p.MinBackoff)
	}
	if p.HandleTimeout <= 0 {
		p.HandleTimeout = 30 * time.Second
	}
	if p.Name == "" {
		p.Name = "stitchd"
	}
	if p.Dialer == nil {
		p.Dialer = &net.Dialer{Timeout: 5 * time.Second}
	}
	if p.Logger == nil {
		p.Logger = slog.Default()
	}
	if p.Report == nil {
		p.Report = func(context.Context, State) {}
	}
	return &Service{p: p, consumers: map[string]*consumer{}}
}

// Start watches the trigger list and consumes its triggers until Stop
// (startstop.Service: on a running service it does nothing).
func (s *Service) Start(ctx context.Context) error {
	return s.lifecycle.StartWith(ctx, func(ctx context.Context) error {
		s.lifecycle.Go(ctx, s.watch)
		return nil
	})
}

// Stop stops every consumer: no message is taken any more, the ones being
// handled are finished (within HandleTimeout) and acknowledged, and the
// connections are closed.
func (s *Service) Stop() {
	s.lifecycle.Stop()
	s.mu.Lock()
	cs := s.consumers
	s.consumers = map[string]*consumer{}
	s.mu.Unlock()
	for _, c := range cs {
		c.stop()
	}
}

// Consuming returns the ids of the triggers consumed now.
func (s *Service) Consuming() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	ids := make([]string, 0, len(s.consumers))
	for id := range s.consumers {
		ids = append(ids, id)
	}
	return ids
}

func (s *Service) watch(ctx context.Context) {
	tick := time.NewTicker(s.p.PollInterval)
	defer tick.Stop()
	lastSeen := time.Now()
	for {
		s.sync(ctx)
		if s.p.Seen != nil && time.Since(lastSeen) >= s.p.SeenInterval {
			s.p.Seen(ctx, s.Consuming())
			lastSeen = time.Now()
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// sync starts the consumers of new triggers, restarts changed ones and
// stops removed ones.
func (s *Service) sync(ctx context.Context) {
	ts, err := s.p.List(ctx)
	if err != nil {
		if ctx.Err() == nil {
			s.p.Logger.Warn("broker triggers: error listing triggers", "error", err)
		}
		return
	}
	want := make(map[string]Trigger, len(ts))
	for _, t := range ts {
		want[t.ID] = t
	}
	s.mu.Lock()
	var stop []*consumer
	for id, c := range s.consumers {
		if t, ok := want[id]; !ok || t.Version != c.t.Version {
			stop = append(stop, c)
			delete(s.consumers, id)
		}
	}
	s.mu.Unlock()
	for _, c := range stop {
		c.stop()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for id, t := range want {
		if _, ok := s.consumers[id]; ok || ctx.Err() != nil {
			continue
		}
		c := &consumer{t: t, p: &s.p, done: make(chan struct{})}
		var cctx context.Context
		cctx, c.cancel = context.WithCancel(ctx)
		s.consumers[id] = c
		go c.run(cctx)
	}
}

// consumer consumes one trigger: it connects, consumes until the
// connection is lost, and connects again after a backoff.
type consumer struct {
	t      Trigger
	p      *Params
	cancel context.CancelFunc
	done   chan struct{}

	mu         sync.Mutex
	state      State
	reportedAt time.Time
}

func (c *consumer) stop() {
	c.cancel()
	<-c.done
}

func (c *consumer) run(ctx context.Context) {
	defer close(c.done)
	c.state.TriggerID = c.t.ID
	defer c.stopped(ctx)
	failures := 0
	for ctx.Err() == nil {
		var err error
		switch c.t.Kind {
		case KindNATS:
			err = c.natsSession(ctx, func() { failures = 0; c.connected(ctx) })
		case KindAMQP:
			err = c.amqpSession(ctx, func() { failures = 0; c.connected(ctx) })
		default:
			err = fmt.Errorf("unknown broker trigger kind %q", c.t.Kind)
		}
		if ctx.Err() != nil {
			return
		}
		if err == nil {
			err = errors.New("the connection ended")
		}
		c.disconnected(ctx, errors.New(shownError(err)))
		wait := retrypolicy.Reconnect(failures, c.p.MinBackoff, c.p.MaxBackoff)
		failures++
		c.p.Logger.Warn("broker trigger: connection failed or lost; retrying", "trigger_id", c.t.ID, "kind", c.t.Kind,
			"error", err, "retry_in", wait)
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
	}
}

// errUnreachable marks a failure to reach a broker: the address was
// refused, nothing answered, or what answered did not speak the broker's
// protocol. Its detail goes to the log only.
var errUnreachable = errors.New("could not connect to the broker (nothing answered as one at this address, or the address guard refused it: the server log says which)")

// unreachable wraps a connection failure in which no broker answered.
type unreachable struct {
	url string // redacted
	err error
}

func (e *unreachable) Error() string {
	return fmt.Sprintf("error connecting to %s: %s: %v", e.url, errUnreachable, e.err)
}
func (e *unreachable) Unwrap() error { return e.err }

// shownError is an error as a trigger's last_error shows it (to editors):
// a connection no broker answered says only that, whatever the cause — a
// refused port, a timeout, another service's EOF or banner would tell
// which ports of a host are open. What a broker said (bad credentials, a
// missing queue) is shown as it is.
func shownError(err error) string {
	var u *unreachable
	if errors.As(err, &u) {
		return fmt.Sprintf("error connecting to %s: %s", u.url, errUnreachable)
	}
	return err.Error()
}

func (c *consumer) connected(ctx context.Context) {
	now := time.Now().UTC()
	c.mu.Lock()
	c.state.Connected, c.state.ConnectedAt = true, &now
	st := c.state
	c.reportedAt = now
	c.mu.Unlock()
	c.p.Logger.Info("broker trigger connected", "trigger_id", c.t.ID, "kind", c.t.Kind)
	c.p.Report(ctx, st)
}

// stopped reports the consumer no longer connected: its trigger was
// disabled, changed or deleted, or the process stops.
func (c *consumer) stopped(ctx context.Context) {
	c.mu.Lock()
	was := c.state.Connected
	c.state.Connected = false
	st := c.state
	c.mu.Unlock()
	if was {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		c.p.Report(rctx, st)
	}
}

func (c *consumer) disconnected(ctx context.Context, err error) {
	now := time.Now().UTC()
	c.mu.Lock()
	c.state.Connected = false
	c.state.LastError, c.state.LastErrorAt = err.Error(), &now
	st := c.state
	c.reportedAt = now
	c.mu.Unlock()
	c.p.Report(ctx, st)
}

// messageFailed records a message's failure as the last error; the same
// error again at most once a second (a broken database fails every
// message).
func (c *consumer) messageFailed(ctx context.Context, m Message, what string, err error) {
	now := time.Now().UTC()
	msg := fmt.Sprintf("message %s: %s: %s", m.ID, what, LastErrorText(err))
	c.mu.Lock()
	report := msg != c.state.LastError || now.Sub(c.reportedAt) >= time.Second
	c.state.LastError, c.state.LastErrorAt = msg, &now
	st := c.state
	if report {
		c.reportedAt = now
	}
	c.mu.Unlock()
	if report {
		c.p.Report(context.WithoutCancel(ctx), st)
	}
}

// delivery is a message and how to settle it with its broker.
type delivery struct {
	msg Message
	// ack acknowledges it; retry has it delivered again (after delay, where
	// the broker can wait); drop refuses it for good.
	ack   func() error
	retry func(delay time.Duration) error
	drop  func() error
}

// handle hands d to the handler and settles it. The handling is not cut
// short by ctx ending (a stop): it finishes, within HandleTimeout, and the
// message is acknowledged.
func (c *consumer) handle(ctx context.Context, d delivery) {
	hctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), c.p.HandleTimeout)
	defer cancel()
	err := c.p.Handle(hctx, d.msg)
	var serr error
	switch {
	case err == nil:
		serr = d.ack()
	case IsPermanent(err):
		c.p.Logger.Warn("broker trigger: message dropped", "trigger_id", c.t.ID, "message_id", d.msg.ID, "error", err)
		c.messageFailed(ctx, d.msg, "dropped", err)
		serr = d.drop()
	default:
		if ctx.Err() == nil {
			c.p.Logger.Warn("broker trigger: message not handled; it will be redelivered", "trigger_id", c.t.ID,
				"message_id", d.msg.ID, "error", err)
			c.messageFailed(ctx, d.msg, "will be redelivered", err)
		}
		serr = d.retry(time.Second)
	}
	if serr != nil && ctx.Err() == nil {
		// Not settled: the broker redelivers it, and its id makes that
		// harmless.
		c.p.Logger.Debug("broker trigger: error settling a message", "trigger_id", c.t.ID, "message_id", d.msg.ID, "error", serr)
	}
}
