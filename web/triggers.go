package web

import (
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/labstack/echo/v4"

	"github.com/stitchd/stitchd/engine"
	"github.com/stitchd/stitchd/internal/schedule"
	"github.com/stitchd/stitchd/store"
)

// scheduleBody is a schedule trigger's settings, as created or patched.
type scheduleBody struct {
	Cron     *string         `json:"cron"`
	Timezone *string         `json:"timezone"`
	Input    json.RawMessage `json:"input"`
	Overlap  *string         `json:"overlap"`
	CatchUp  *string         `json:"catch_up"`
	Enabled  *bool           `json:"enabled"`
}

// apply checks b and writes it into sc (only the fields b sets); every
// problem is a 422 with its path, and sc is then not to be saved.
func (b scheduleBody) apply(sc *store.Schedule) error {
	var problems []engine.Problem
	bad := func(path, msg string) {
		problems = append(problems, engine.Problem{Code: "invalid_schedule", Path: path, Message: msg})
	}
	if b.Cron != nil {
		sc.Cron = strings.TrimSpace(*b.Cron)
	}
	if b.Timezone != nil {
		sc.Timezone = *b.Timezone
	}
	if sc.Cron == "" {
		bad("cron", `cron is required ("0 9 * * MON-FRI", "@daily", or six fields with seconds)`)
	} else if b.Cron != nil || b.Timezone != nil || (b.Enabled != nil && *b.Enabled) {
		// Checked when given or enabled: another change (disabling it) goes
		// through for a schedule saved before a rule that refuses it now.
		_, perrs := schedule.Parse(sc.Cron, sc.Timezone)
		for _, perr := range perrs {
			bad(perr.Field, perr.Message)
		}
	}
	if len(b.Input) > 0 && string(b.Input) != "null" {
		if in := strings.TrimSpace(string(b.Input)); in == "" || in[0] != '{' {
			bad("input", "input must be a JSON object")
		}
		sc.Input = b.Input
	}
	if b.Overlap != nil {
		sc.Overlap = *b.Overlap
	}
	if sc.Overlap != "skip" && sc.Overlap != "allow" {
		bad("overlap", `overlap must be "skip" (no tick while the last run runs) or "allow"`)
	}
	if b.CatchUp != nil {
		sc.CatchUp = *b.CatchUp
	}
	if sc.CatchUp != "one" && sc.CatchUp != "none" {
		bad("catch_up", `catch_up must be "one" (missed ticks start one run) or "none"`)
	}
	if b.Enabled != nil {
		sc.Enabled = *b.Enabled
	}
	if len(problems) > 0 {
		return &apiError{Status: http.StatusUnprocessableEntity, Code: "invalid_schedule",
			Message: "the schedule has " + plural(len(problems), "problem"), Details: problems}
	}
	return nil
}

func (s *Server) createSchedule(c echo.Context, flowID string, b scheduleBody) error {
	ctx := c.Request().Context()
	if _, err := s.cfg.Store.GetFlow(ctx, flowID); err != nil {
		return err
	}
	sc := &store.Schedule{ID: uuid.NewString(), FlowID: flowID, Timezone: "UTC", Input: json.RawMessage("{}"),
		Overlap: "skip", CatchUp: "one", Enabled: true}
	if err := b.apply(sc); err != nil {
		return err
	}
	spec, _ := schedule.Parse(sc.Cron, sc.Timezone)
	sc.NextFireAt = spec.Next(time.Now())
	if err := s.cfg.Store.CreateSchedule(ctx, sc); err != nil {
		return err
	}
	return c.JSON(http.StatusCreated, scheduleJSON(sc))
}

func (s *Server) listTriggers(c echo.Context) error {
	flowID, err := s.pathUUID(c, "id", "flow")
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	if _, err := s.cfg.Store.GetFlow(ctx, flowID); err != nil {
		return err
	}
	// A page of every kind after the cursor, merged by (created_at, id):
	// each kind reads at most a page and one more.
	pp, err := pageParams(c)
	if err != nil {
		return err
	}
	limit := pp.Limit
	if limit <= 0 {
		limit = store.DefaultPageSize
	}
	w := store.TriggerWindow{Limit: limit + 1}
	if pp.Cursor != "" {
		if w.AfterAt, w.AfterID, err = store.DecodeTimeIDCursor(pp.Cursor); err != nil {
			return err
		}
	}
	hooks, err := s.cfg.Store.FlowTriggers(ctx, flowID, w)
	if err != nil {
		return err
	}
	scheds, err := s.cfg.Store.FlowSchedules(ctx, flowID, w)
	if err != nil {
		return err
	}
	evs, err := s.cfg.Store.FlowEventTriggers(ctx, flowID, w)
	if err != nil {
		return err
	}
	brokers, err := s.cfg.Store.FlowBrokerTriggers(ctx, flowID, w)
	if err != nil {
		return err
	}
	ids := make([]string, len(brokers))
	for i := range brokers {
		ids[i] = brokers[i].ID
	}
	cons, err := s.brokerConsumers(ctx, ids)
	if err != nil {
		return err
	}
	type item struct {
		at   time.Time
		id   string
		json map[string]any
	}
	all := make([]item, 0, len(hooks)+len(scheds)+len(evs)+len(brokers))
	for i := range hooks {
		all = append(all, item{hooks[i].CreatedAt, hooks[i].ID, webhookJSON(&hooks[i])})
	}
	for i := range scheds {
		all = append(all, item{scheds[i].CreatedAt, scheds[i].ID, scheduleJSON(&scheds[i])})
	}
	for i := range evs {
		all = append(all, item{evs[i].CreatedAt, evs[i].ID, eventTriggerJSON(&evs[i])})
	}
	for i := range brokers {
		all = append(all, item{brokers[i].CreatedAt, brokers[i].ID, brokerTriggerJSON(&brokers[i], cons[brokers[i].ID])})
	}
	// Postgres orders uuids by their bytes, as their text compares.
	sort.Slice(all, func(i, j int) bool {
		if !all[i].at.Equal(all[j].at) {
			return all[i].at.Before(all[j].at)
		}
		return all[i].id < all[j].id
	})
	var next *string
	if len(all) > limit {
		all = all[:limit]
		n := store.EncodeTimeIDCursor(all[limit-1].at, all[limit-1].id)
		next = &n
	}
	out := make([]map[string]any, len(all))
	for i := range all {
		out[i] = all[i].json
	}
	return c.JSON(http.StatusOK, map[string]any{"triggers": out, "next_cursor": next})
}

// anyTrigger is the trigger of the path's id: one of its fields is set.
type anyTrigger struct {
	schedule *store.Schedule
	webhook  *store.Trigger
	event    *store.EventTrigger
	broker   *store.BrokerTrigger
}

// trigger finds the trigger of the path's id: a schedule, an event
// trigger, a broker trigger or a webhook.
func (s *Server) trigger(c echo.Context) (anyTrigger, error) {
	id, err := s.pathUUID(c, "id", "trigger")
	if err != nil {
		return anyTrigger{}, err
	}
	ctx := c.Request().Context()
	if sc, err := s.cfg.Store.GetSchedule(ctx, id); err == nil {
		return anyTrigger{schedule: sc}, nil
	} else if !errors.Is(err, engine.ErrNotFound) {
		return anyTrigger{}, err
	}
	if et, err := s.cfg.Store.GetEventTrigger(ctx, id); err == nil {
		return anyTrigger{event: et}, nil
	} else if !errors.Is(err, engine.ErrNotFound) {
		return anyTrigger{}, err
	}
	if bt, err := s.cfg.Store.GetBrokerTrigger(ctx, id); err == nil {
		return anyTrigger{broker: bt}, nil
	} else if !errors.Is(err, engine.ErrNotFound) {
		return anyTrigger{}, err
	}
	t, err := s.cfg.Store.TriggerByID(ctx, id)
	if err != nil {
		return anyTrigger{}, err
	}
	return anyTrigger{webhook: t}, nil
}

func (s *Server) getTrigger(c echo.Context) error {
	t, err := s.trigger(c)
	if err != nil {
		return err
	}
	switch {
	case t.schedule != nil:
		return c.JSON(http.StatusOK, scheduleJSON(t.schedule))
	case t.event != nil:
		return c.JSON(http.StatusOK, eventTriggerJSON(t.event))
	case t.broker != nil:
		return s.answerBrokerTrigger(c, http.StatusOK, t.broker)
	}
	return c.JSON(http.StatusOK, webhookJSON(t.webhook))
}

func (s *Server) patchTrigger(c echo.Context) error {
	t, err := s.trigger(c)
	if err != nil {
		return err
	}
	if t.broker != nil {
		return s.patchBrokerTrigger(c, t.broker)
	}
	if t.event != nil {
		var b struct {
			Enabled *bool `json:"enabled"`
		}
		if err := bind(c, &b); err != nil {
			return err
		}
		if b.Enabled == nil {
			return badRequest("an event trigger changes only enabled: delete it and create another for another name")
		}
		if err := s.cfg.Store.SetEventTriggerEnabled(c.Request().Context(), t.event, *b.Enabled); err != nil {
			return err
		}
		return c.JSON(http.StatusOK, eventTriggerJSON(t.event))
	}
	sc := t.schedule
	if sc == nil {
		return s.patchWebhook(c, t.webhook)
	}
	var b scheduleBody
	if err := bind(c, &b); err != nil {
		return err
	}
	before := sc.Cron + "\x00" + sc.Timezone
	wasEnabled := sc.Enabled
	if err := b.apply(sc); err != nil {
		return err
	}
	if before != sc.Cron+"\x00"+sc.Timezone || (sc.Enabled && !wasEnabled) {
		// A new rhythm, or a schedule enabled again, starts from now: the
		// ticks it had while disabled are not missed ones.
		spec, _ := schedule.Parse(sc.Cron, sc.Timezone)
		sc.NextFireAt = spec.Next(time.Now())
	}
	sc.UpdatedAt = time.Now()
	if err := s.cfg.Store.SaveSchedule(c.Request().Context(), sc); err != nil {
		return err
	}
	return c.JSON(http.StatusOK, scheduleJSON(sc))
}

func (s *Server) deleteTrigger(c echo.Context) error {
	t, err := s.trigger(c)
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	switch {
	case t.schedule != nil:
		err = s.cfg.Store.DeleteSchedule(ctx, t.schedule.ID)
	case t.event != nil:
		err = s.cfg.Store.DeleteEventTrigger(ctx, t.event.ID)
	case t.broker != nil:
		err = s.cfg.Store.DeleteBrokerTrigger(ctx, t.broker.ID)
	default:
		err = s.cfg.Store.DeleteTrigger(ctx, t.webhook.ID)
	}
	if err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}

func webhookJSON(t *store.Trigger) map[string]any {
	return map[string]any{"id": t.ID, "kind": "webhook", "flow_id": t.FlowID, "slug": t.Slug,
		"has_secret": t.Secret != nil, "entity": orEmpty(t.Entity),
		"url": "/hooks/" + t.Slug, "created_at": t.CreatedAt, "input_schema": orEmpty(t.InputSchema), "respond": t.Respond}
}

// webhookPatchFields are what a PATCH of a webhook trigger may change;
// its slug is its address and its secret changes by rotation.
var webhookPatchFields = []string{"entity", "input_schema", "respond"}

// patchWebhook changes a webhook trigger's settings: its entity mapping
// (an object as at create, or null for none), its input_schema (a JSON
// Schema checked as at create, or null for none) and its respond setting
// (an object, or null for none) — each optional, at least one. Every
// field is checked before any is written: a bad one changes nothing.
func (s *Server) patchWebhook(c echo.Context, t *store.Trigger) error {
	var b map[string]json.RawMessage
	if err := bind(c, &b); err != nil {
		return err
	}
	const which = "a webhook trigger changes its entity, input_schema and respond: its slug stays " +
		"(delete it and create another for a new one) and its secret changes with POST /api/v1/triggers/{id}/rotate-secret"
	if len(b) == 0 {
		return badRequest("nothing to change: " + which)
	}
	for k := range b {
		if !slices.Contains(webhookPatchFields, k) {
			return badRequest(k + " cannot be changed: " + which)
		}
	}
	ctx := c.Request().Context()
	var u store.TriggerSettings
	var err error
	if raw, ok := b["respond"]; ok {
		u.SetRespond = true
		if u.Respond, err = triggerRespond(raw); err != nil {
			return err
		}
	}
	if raw, ok := b["input_schema"]; ok {
		u.SetInputSchema = true
		if u.InputSchema, err = webhookInputSchema(raw); err != nil {
			return err
		}
	}
	if raw, ok := b["entity"]; ok {
		u.SetEntity = true
		if string(raw) != "null" {
			var e webhookEntity
			if strings.TrimSpace(string(raw))[0] != '{' || json.Unmarshal(raw, &e) != nil {
				return badRequest(`entity must be {"board_id", "type", "name_path", "email_path"} or null`)
			}
			f, err := s.cfg.Store.GetFlow(ctx, t.FlowID)
			if err != nil {
				return err
			}
			if u.Entity, err = s.checkWebhookEntity(ctx, f, e); err != nil {
				return err
			}
		}
	}
	saved, err := s.cfg.Store.UpdateTriggerSettings(ctx, t.ID, u)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, webhookJSON(saved))
}

func scheduleJSON(sc *store.Schedule) map[string]any {
	m := map[string]any{"id": sc.ID, "kind": "schedule", "flow_id": sc.FlowID, "cron": sc.Cron, "timezone": sc.Timezone,
		"input": orEmpty(sc.Input), "overlap": sc.Overlap, "catch_up": sc.CatchUp, "enabled": sc.Enabled,
		"next_fire_at": nil, "last_fired_at": sc.LastFiredAt, "last_run_id": sc.LastRunID, "last_error": sc.LastError,
		"created_at": sc.CreatedAt.UTC(), "updated_at": sc.UpdatedAt.UTC()}
	if sc.Enabled {
		m["next_fire_at"] = sc.NextFireAt.UTC()
	}
	return m
}

func (s *Server) createEventTrigger(c echo.Context, flowID, name string, enabled *bool) error {
	if strings.TrimSpace(name) == "" || len(name) > maxEventName {
		return badRequest("an event trigger needs the name of the events that start its runs (1 to 200 characters)")
	}
	ctx := c.Request().Context()
	if _, err := s.cfg.Store.GetFlow(ctx, flowID); err != nil {
		return err
	}
	t := &store.EventTrigger{ID: uuid.NewString(), FlowID: flowID, Name: name, Enabled: enabled == nil || *enabled}
	if err := s.cfg.Store.CreateEventTrigger(ctx, t); err != nil {
		return err
	}
	return c.JSON(http.StatusCreated, eventTriggerJSON(t))
}

func eventTriggerJSON(t *store.EventTrigger) map[string]any {
	return map[string]any{"id": t.ID, "kind": "event", "flow_id": t.FlowID, "name": t.Name, "enabled": t.Enabled,
		"created_at": t.CreatedAt.UTC(), "updated_at": t.UpdatedAt.UTC()}
}
