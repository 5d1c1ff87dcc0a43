package app

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/stitchd/stitchd/engine"
	"github.com/stitchd/stitchd/internal/broker"
	"github.com/stitchd/stitchd/internal/jsonlimit"
	"github.com/stitchd/stitchd/store"
)

// defaultEventTTL is how long an event posted by a broker trigger is kept
// for a wait that has not begun, unless its ttl_seconds says otherwise (as
// POST /api/v1/events).
const defaultEventTTL = 24 * 3600

// newBrokers is the service consuming the broker triggers (nats, amqp):
// it looks for added, changed and removed ones every poll interval, and
// records each consumer's state under this process's instance id.
func (a *App) newBrokers() *broker.Service {
	a.instanceID = uuid.NewString()
	return broker.New(broker.Params{
		List:   a.activeBrokerTriggers,
		Handle: a.handleBrokerMessage,
		Report: func(ctx context.Context, st broker.State) {
			c := store.BrokerConsumer{TriggerID: st.TriggerID, InstanceID: a.instanceID, Connected: st.Connected,
				ConnectedAt: st.ConnectedAt, LastErrorAt: st.LastErrorAt}
			if st.LastError != "" {
				c.LastError = &st.LastError
			}
			if err := a.Store.SetBrokerConsumer(ctx, c); err != nil && ctx.Err() == nil {
				a.cfg.Logger.Warn("broker trigger: error recording its state", "trigger_id", st.TriggerID, "error", err)
			}
		},
		Seen: func(ctx context.Context, ids []string) {
			if err := a.Store.TouchBrokerConsumers(ctx, a.instanceID, ids); err != nil && ctx.Err() == nil {
				a.cfg.Logger.Warn("broker triggers: error refreshing their states", "error", err)
			}
		},
		// The brokers are where an editor says, as a Worker's URL: the
		// same guard checks the address dialled.
		Dialer:       a.guard.Dialer(5 * time.Second),
		PollInterval: max(a.cfg.PollInterval, 100*time.Millisecond),
		Name:         "stitchd " + a.instanceID,
		Logger:       a.cfg.Logger,
	})
}

// stopBrokers stops consuming and removes this process's consumer states.
func (a *App) stopBrokers(ctx context.Context) {
	a.brokers.Stop()
	if err := a.Store.DeleteBrokerConsumers(ctx, a.instanceID); err != nil {
		a.cfg.Logger.Warn("broker triggers: error removing their states", "error", err)
	}
}

func (a *App) activeBrokerTriggers(ctx context.Context) ([]broker.Trigger, error) {
	rows, err := a.Store.ActiveBrokerTriggers(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]broker.Trigger, 0, len(rows))
	for _, r := range rows {
		t := broker.Trigger{ID: r.ID, FlowID: r.FlowID, Kind: r.Kind, Version: r.UpdatedAt.UTC().Format(time.RFC3339Nano)}
		if err := json.Unmarshal(r.Config, &t.Config); err != nil {
			a.cfg.Logger.Warn("broker trigger: unreadable config; not consumed", "trigger_id", r.ID, "error", err)
			continue
		}
		out = append(out, t)
	}
	return out, nil
}

// handleBrokerMessage starts the run of a broker trigger's message, or
// posts it as an event, and returns once that committed. The message's
// dedupe key (<kind>:<trigger id>:<message id>) is the run's idempotency
// key, or the event's id: a redelivered message starts nothing twice.
func (a *App) handleBrokerMessage(ctx context.Context, m broker.Message) error {
	limit := a.cfg.BodyLimit
	if limit <= 0 {
		limit = 1 << 20
	}
	switch {
	case int64(len(m.Body)) > limit:
		return broker.Permanent(fmt.Errorf("the body is %d bytes, over the limit of %d", len(m.Body), limit))
	case !json.Valid(m.Body):
		return broker.Permanent(errors.New("the body is not JSON"))
	}
	if err := jsonlimit.Check(m.Body, jsonlimit.MaxDepth); err != nil {
		return broker.Permanent(fmt.Errorf("the body is refused: %w", err))
	}
	t := m.Trigger
	trig, err := json.Marshal(map[string]any{"type": t.Kind, "trigger_id": t.ID, "message_id": m.ID, "id_from": m.IDFrom,
		"subject": m.Subject, "redelivered": m.Redelivered})
	if err != nil {
		return fmt.Errorf("error encoding the trigger of message %s: %w", m.ID, err)
	}
	if t.Config.As == broker.AsEvent {
		return a.postBrokerEvent(ctx, m)
	}
	f, err := a.Store.GetFlow(ctx, t.FlowID)
	if err != nil {
		return fmt.Errorf("error loading flow %s of trigger %s: %w", t.FlowID, t.ID, err)
	}
	_, _, err = a.Engine.StartRun(ctx, engine.StartRunParams{FlowID: f.ID, VersionID: f.VersionID, Input: m.Body,
		Trigger: trig, IdempotencyKey: m.DedupeKey()})
	if errors.Is(err, engine.ErrInvalidRequest) {
		return broker.Permanent(err)
	}
	if err != nil {
		return fmt.Errorf("error starting a run of flow %s: %w", f.ID, err)
	}
	return nil
}

// postBrokerEvent posts a message as an event, as POST /api/v1/events
// does: it wakes the nodes waiting on its name and key (or is kept for
// them) and starts the runs of the flows with an event trigger for its
// name. The event's id is the message's dedupe key.
func (a *App) postBrokerEvent(ctx context.Context, m broker.Message) error {
	cfg := m.Trigger.Config
	key, err := cfg.EventKey(m, a.Engine.EvalValue)
	if err != nil {
		return broker.Permanent(err)
	}
	ev := store.NewEvent{ID: m.DedupeKey(), Name: cfg.Name, Key: key, Payload: m.Body, TTLSeconds: defaultEventTTL}
	if cfg.TTLSeconds > 0 {
		ev.TTLSeconds = cfg.TTLSeconds
	}
	_, waiters, err := a.Store.PostEvent(ctx, ev)
	if err != nil {
		return fmt.Errorf("error posting event %s: %w", ev.ID, err)
	}
	for _, w := range waiters {
		// Delivered now; one that fails is delivered by the sweeper from
		// its stored row.
		if err := a.Engine.DeliverEvent(ctx, engine.DeliverEventParams{RunID: w.RunID, Key: w.Key, Attempt: w.Attempt,
			EventID: ev.ID, Name: ev.Name, On: ev.Key, Payload: ev.Payload}); err != nil {
			a.cfg.Logger.Warn("error delivering an event; a sweeper will", "event_id", ev.ID, "run_id", w.RunID,
				"node_key", w.Key, "error", err)
		}
	}
	trigs, err := a.Store.EventTriggersFor(ctx, ev.Name)
	if err != nil {
		return err
	}
	for _, et := range trigs {
		f, err := a.Store.GetFlow(ctx, et.FlowID)
		if err != nil {
			return fmt.Errorf("error loading flow %s of event trigger %s: %w", et.FlowID, et.ID, err)
		}
		trig, err := json.Marshal(map[string]any{"type": "event", "trigger_id": et.ID, "event_id": ev.ID, "name": ev.Name, "key": ev.Key})
		if err != nil {
			return fmt.Errorf("error encoding the trigger of event %s: %w", ev.ID, err)
		}
		if _, _, err := a.Engine.StartRun(ctx, engine.StartRunParams{FlowID: et.FlowID, VersionID: f.VersionID,
			Input: ev.Payload, Trigger: trig, IdempotencyKey: "event:" + ev.ID}); err != nil {
			return fmt.Errorf("error starting a run of flow %s for event %s: %w", et.FlowID, ev.ID, err)
		}
	}
	return nil
}
