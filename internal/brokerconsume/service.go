package brokerconsume

import (
	"context"
	"encoding/json"
	"log/slog"
	"net"
	"time"

	"github.com/google/uuid"

	"github.com/stitchd/stitchd/engine"
	"github.com/stitchd/stitchd/internal/broker"
	"github.com/stitchd/stitchd/store"
)

// Store lists the broker triggers, records their consumers' states, reads
// flows and stores events (store.Store).
type Store interface {
	ActiveBrokerTriggers(ctx context.Context) ([]store.BrokerTrigger, error)
	SetBrokerConsumer(ctx context.Context, c store.BrokerConsumer) error
	TouchBrokerConsumers(ctx context.Context, instanceID string, triggerIDs []string) error
	DeleteBrokerConsumers(ctx context.Context, instanceID string) error
	GetFlow(ctx context.Context, id string) (*store.Flow, error)
	PostEvent(ctx context.Context, ev store.NewEvent) (duplicate bool, waiters []store.Waiter, err error)
	EventTriggersFor(ctx context.Context, ws, name string) ([]store.EventTrigger, error)
}

// Engine starts the messages' runs and delivers their events
// (engine.Engine).
type Engine interface {
	StartRun(ctx context.Context, p engine.StartRunParams) (run *engine.Run, created bool, err error)
	DeliverEvent(ctx context.Context, p engine.DeliverEventParams) error
	EvalValue(src string, env engine.ValueEnv) (any, error)
}

// Params configures a Service.
type Params struct {
	Store  Store
	Engine Engine
	// Dialer connects to the brokers: its Control is the address guard
	// (the brokers are where an editor says, as a Worker's URL).
	Dialer *net.Dialer
	// PollInterval is how often the trigger list is read (at least
	// 100ms; default 1s).
	PollInterval time.Duration
	// BodyLimit bounds a message's body (default 1 MiB, as a request's).
	BodyLimit int64
	Logger    *slog.Logger
}

// Service consumes the broker triggers until Stop; Close also removes
// this process's consumer states.
type Service struct {
	p Params
	// instanceID names this process in the consumer states.
	instanceID string
	consumer   *broker.Service
}

// New returns a Service; Start runs it.
func New(p Params) *Service {
	if p.Logger == nil {
		p.Logger = slog.Default()
	}
	if p.BodyLimit <= 0 {
		p.BodyLimit = 1 << 20
	}
	s := &Service{p: p, instanceID: uuid.NewString()}
	s.consumer = broker.New(broker.Params{
		List:         s.activeTriggers,
		Handle:       s.handle,
		Report:       s.report,
		Seen:         s.seen,
		Dialer:       p.Dialer,
		PollInterval: max(p.PollInterval, 100*time.Millisecond),
		Name:         "stitchd " + s.instanceID,
		Logger:       p.Logger,
	})
	return s
}

// Start consumes the triggers until Stop (startstop.Service).
func (s *Service) Start(ctx context.Context) error { return s.consumer.Start(ctx) }

// Stop stops consuming (broker.Service.Stop).
func (s *Service) Stop() { s.consumer.Stop() }

// Close stops consuming and removes this process's consumer states: the
// triggers' pages no longer count it.
func (s *Service) Close(ctx context.Context) {
	s.Stop()
	if err := s.p.Store.DeleteBrokerConsumers(ctx, s.instanceID); err != nil {
		s.p.Logger.Warn("broker triggers: error removing their states", "error", err)
	}
}

// report records a consumer's state when it changes.
func (s *Service) report(ctx context.Context, st broker.State) {
	c := store.BrokerConsumer{TriggerID: st.TriggerID, InstanceID: s.instanceID, Connected: st.Connected,
		ConnectedAt: st.ConnectedAt, LastErrorAt: st.LastErrorAt}
	if st.LastError != "" {
		c.LastError = &st.LastError
	}
	if err := s.p.Store.SetBrokerConsumer(ctx, c); err != nil && ctx.Err() == nil {
		s.p.Logger.Warn("broker trigger: error recording its state", "trigger_id", st.TriggerID, "error", err)
	}
}

// seen marks the consumed triggers' states current.
func (s *Service) seen(ctx context.Context, ids []string) {
	if err := s.p.Store.TouchBrokerConsumers(ctx, s.instanceID, ids); err != nil && ctx.Err() == nil {
		s.p.Logger.Warn("broker triggers: error refreshing their states", "error", err)
	}
}

// activeTriggers lists the triggers to consume; one whose config cannot be
// read is left out (and logged).
func (s *Service) activeTriggers(ctx context.Context) ([]broker.Trigger, error) {
	rows, err := s.p.Store.ActiveBrokerTriggers(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]broker.Trigger, 0, len(rows))
	for _, r := range rows {
		t := broker.Trigger{ID: r.ID, FlowID: r.FlowID, Kind: r.Kind, Version: r.UpdatedAt.UTC().Format(time.RFC3339Nano)}
		if err := json.Unmarshal(r.Config, &t.Config); err != nil {
			s.p.Logger.Warn("broker trigger: unreadable config; not consumed", "trigger_id", r.ID, "error", err)
			continue
		}
		out = append(out, t)
	}
	return out, nil
}
