package brokerconsume

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/stitchd/stitchd/engine"
	"github.com/stitchd/stitchd/internal/broker"
	"github.com/stitchd/stitchd/internal/jsonlimit"
	"github.com/stitchd/stitchd/store"
)

// defaultEventTTL is how long an event posted by a broker trigger is kept
// for a wait that has not begun, unless its ttl_seconds says otherwise (as
// POST /api/v1/events).
const defaultEventTTL = 24 * 3600

// handle starts the run of a broker trigger's message, or posts it as an
// event, and returns once that committed. The message's dedupe key
// (<kind>:<trigger id>:<message id>) is the run's idempotency key, or the
// event's id: a redelivered message starts nothing twice.
func (s *Service) handle(ctx context.Context, m broker.Message) error {
	err := s.start(ctx, m)
	if err != nil && !broker.IsPermanent(err) {
		return shown(err)
	}
	return err
}

// start is handle but for the words a failure is shown in.
func (s *Service) start(ctx context.Context, m broker.Message) error {
	limit := s.p.BodyLimit
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
		return s.postEvent(ctx, m)
	}
	f, err := s.p.Store.GetFlow(ctx, t.FlowID)
	if err != nil {
		return fmt.Errorf("error loading flow %s of trigger %s: %w", t.FlowID, t.ID, err)
	}
	_, _, err = s.p.Engine.StartRun(ctx, engine.StartRunParams{FlowID: f.ID, VersionID: f.VersionID, Input: m.Body,
		Trigger: trig, IdempotencyKey: m.DedupeKey()})
	if errors.Is(err, engine.ErrInvalidRequest) {
		return broker.Permanent(err)
	}
	if err != nil {
		return fmt.Errorf("error starting a run of flow %s: %w", f.ID, err)
	}
	return nil
}

// shown marks a failure that redelivery may cure with the words a
// trigger's last_error gives editors, as an API answer would: a limit, a
// busy entity or a sentinel's own words as they are; the database
// unavailable said so; anything else only as an internal error (its text
// may quote a statement; the log keeps it).
func shown(err error) error {
	var le *engine.LimitError
	if errors.As(err, &le) {
		return broker.Internal(err, le.Error())
	}
	if eb, ok := engine.IsEntityBusy(err); ok {
		return broker.Internal(err, eb.Error())
	}
	switch {
	case errors.Is(err, engine.ErrUnavailable):
		return broker.Internal(err, "the database is unavailable")
	case errors.Is(err, engine.ErrNotFound), errors.Is(err, engine.ErrConflict), errors.Is(err, engine.ErrInvalidTransition),
		errors.Is(err, engine.ErrForbidden):
		return err
	}
	return broker.Internal(err, "internal error (the server's log has it)")
}

// postEvent posts a message as an event, as POST /api/v1/events does: it
// wakes the nodes waiting on its name and key (or is kept for them) and
// starts the runs of the flows with an event trigger for its name. The
// event's id is the message's dedupe key.
func (s *Service) postEvent(ctx context.Context, m broker.Message) error {
	cfg := m.Trigger.Config
	key, err := cfg.EventKey(m, s.p.Engine.EvalValue)
	if err != nil {
		return broker.Permanent(err)
	}
	// The event is posted in the workspace of the trigger's flow.
	owner, err := s.p.Store.GetFlow(ctx, m.Trigger.FlowID)
	if err != nil {
		return fmt.Errorf("error loading flow %s of broker trigger %s: %w", m.Trigger.FlowID, m.Trigger.ID, err)
	}
	ev := store.NewEvent{Workspace: owner.Workspace, ID: m.DedupeKey(), Name: cfg.Name, Key: key, Payload: m.Body, TTLSeconds: defaultEventTTL}
	if cfg.TTLSeconds > 0 {
		ev.TTLSeconds = cfg.TTLSeconds
	}
	_, waiters, err := s.p.Store.PostEvent(ctx, ev)
	if err != nil {
		return fmt.Errorf("error posting event %s: %w", ev.ID, err)
	}
	for _, w := range waiters {
		// Delivered now; one that fails is delivered by the sweeper from
		// its stored row.
		if err := s.p.Engine.DeliverEvent(ctx, engine.DeliverEventParams{RunID: w.RunID, Key: w.Key, Attempt: w.Attempt,
			EventID: w.EventID, Name: ev.Name, On: ev.Key, Payload: ev.Payload}); err != nil {
			s.p.Logger.Warn("error delivering an event; a sweeper will", "event_id", ev.ID, "run_id", w.RunID,
				"node_key", w.Key, "error", err)
		}
	}
	trigs, err := s.p.Store.EventTriggersFor(ctx, ev.Workspace, ev.Name)
	if err != nil {
		return fmt.Errorf("error listing the event triggers of %s: %w", ev.Name, err)
	}
	for _, et := range trigs {
		f, err := s.p.Store.GetFlow(ctx, et.FlowID)
		if err != nil {
			return fmt.Errorf("error loading flow %s of event trigger %s: %w", et.FlowID, et.ID, err)
		}
		trig, err := json.Marshal(map[string]any{"type": "event", "trigger_id": et.ID, "event_id": ev.ID, "name": ev.Name, "key": ev.Key})
		if err != nil {
			return fmt.Errorf("error encoding the trigger of event %s: %w", ev.ID, err)
		}
		if _, _, err := s.p.Engine.StartRun(ctx, engine.StartRunParams{FlowID: et.FlowID, VersionID: f.VersionID,
			Input: ev.Payload, Trigger: trig, IdempotencyKey: "event:" + ev.ID}); err != nil {
			return fmt.Errorf("error starting a run of flow %s for event %s: %w", et.FlowID, ev.ID, err)
		}
	}
	return nil
}
