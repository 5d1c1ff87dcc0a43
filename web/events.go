package web

import (
	"encoding/json"
	"net/http"
	"strings"

	"github.com/google/uuid"
	"github.com/labstack/echo/v4"

	"github.com/stitchd/stitchd/engine"
	"github.com/stitchd/stitchd/store"
)

// Event limits.
const (
	maxEventName      = 200
	maxEventKey       = 500
	maxEventID        = 255
	defaultEventTTL   = 24 * 3600
	maxEventTTLSecond = 30 * 24 * 3600
)

// postEvent wakes every node waiting on the event's name and key, one
// transaction per run: {"name", "key", "payload"?, "id"?, "ttlSeconds"?}
// → 202 {"delivered": n}. No waiter: the event is kept ttlSeconds for the
// first wait that begins on it. A repeated id delivers nothing twice.
func (s *Server) postEvent(c echo.Context) error {
	var b struct {
		ID         string          `json:"id"`
		Name       string          `json:"name"`
		Key        *string         `json:"key"`
		Payload    json.RawMessage `json:"payload"`
		TTLSeconds *int            `json:"ttlSeconds"`
	}
	if err := bind(c, &b); err != nil {
		return err
	}
	switch {
	case strings.TrimSpace(b.Name) == "" || len(b.Name) > maxEventName:
		return badRequest("name must be 1 to 200 characters (e.g. payment.received)")
	case b.Key == nil || *b.Key == "" || len(*b.Key) > maxEventKey:
		return badRequest(`key must be a string of 1 to 500 bytes (e.g. "42")`)
	case len(b.ID) > maxEventID:
		return badRequest("id must be at most 255 characters")
	case b.TTLSeconds != nil && (*b.TTLSeconds < 0 || *b.TTLSeconds > maxEventTTLSecond):
		return badRequest("ttlSeconds must be from 0 to 2592000 (30 days)")
	}
	ev := store.NewEvent{Workspace: workspaceOf(c), ID: b.ID, Name: b.Name, Key: *b.Key, Payload: nullJSON(b.Payload), TTLSeconds: defaultEventTTL}
	if ev.ID == "" {
		ev.ID = uuid.NewString()
	}
	if b.TTLSeconds != nil {
		ev.TTLSeconds = *b.TTLSeconds
	}
	ctx := c.Request().Context()
	dup, waiters, err := s.cfg.Store.PostEvent(ctx, ev)
	if err != nil {
		return err
	}
	for _, w := range waiters {
		// Delivered now; one that fails, or that the process does not get
		// to (it stops), is delivered by a sweeper from its stored row.
		if err := s.cfg.Engine.DeliverEvent(ctx, engine.DeliverEventParams{RunID: w.RunID, Key: w.Key, Attempt: w.Attempt,
			EventID: w.EventID, Name: ev.Name, On: ev.Key, Payload: ev.Payload}); err != nil {
			s.cfg.Logger.Warn("error delivering an event; a sweeper will", "event_id", ev.ID, "run_id", w.RunID,
				"node_key", w.Key, "error", err)
		}
	}
	started, err := s.startEventRuns(c, ev)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusAccepted, map[string]any{"id": ev.ID, "delivered": len(waiters), "duplicate": dup,
		"kept": !dup && len(waiters) == 0, "started": started})
}

// startEventRuns starts a run of every flow with an enabled event trigger
// for ev's name, its input ev's payload. The run's idempotency key is the
// event's id: a repeated post (a client's retry after a lost answer)
// starts what a first one could not, and nothing twice.
func (s *Server) startEventRuns(c echo.Context, ev store.NewEvent) ([]string, error) {
	ctx := c.Request().Context()
	trigs, err := s.cfg.Store.EventTriggersFor(ctx, ev.Workspace, ev.Name)
	if err != nil {
		return nil, err
	}
	started := []string{}
	for _, t := range trigs {
		f, err := s.cfg.Store.GetFlow(ctx, t.FlowID)
		if err != nil {
			return nil, err
		}
		trig, err := json.Marshal(map[string]any{"type": "event", "trigger_id": t.ID, "event_id": ev.ID, "name": ev.Name, "key": ev.Key})
		if err != nil {
			return nil, err
		}
		run, _, err := s.cfg.Engine.StartRun(ctx, engine.StartRunParams{FlowID: t.FlowID, VersionID: f.VersionID,
			Input: ev.Payload, Trigger: trig, IdempotencyKey: "event:" + ev.ID})
		if err != nil {
			return nil, err
		}
		started = append(started, run.ID)
	}
	return started, nil
}
