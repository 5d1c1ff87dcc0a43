package web

import (
	"context"
	"encoding/json"
	"net/http"
	"time"

	"github.com/google/uuid"
	"github.com/labstack/echo/v4"

	"github.com/stitchd/stitchd/engine"
	"github.com/stitchd/stitchd/internal/broker"
	"github.com/stitchd/stitchd/store"
)

// consumerMaxAge is how long a process's consumer state counts after it
// was last refreshed: a process refreshes it every 10 s while it lives.
const consumerMaxAge = 30 * time.Second

// brokerBody is a broker trigger's settings as created or patched (name
// and enabled are read beside it).
type brokerBody struct {
	broker.Patch
}

// configure applies b (and name, when set) to cfg and validates the
// result for kind: every problem is a 422 with its path.
func (b brokerBody) configure(kind string, cfg *broker.Config, name *string) error {
	p := b.Patch
	p.EventName = name
	p.Apply(cfg)
	problems := cfg.Validate(kind)
	if len(problems) == 0 {
		return nil
	}
	details := make([]engine.Problem, len(problems))
	for i, pr := range problems {
		details[i] = engine.Problem{Code: "invalid_trigger", Path: pr.Path, Message: pr.Message}
	}
	return &apiError{Status: http.StatusUnprocessableEntity, Code: "invalid_trigger",
		Message: "the " + kind + " trigger has " + plural(len(problems), "problem"), Details: details}
}

func (s *Server) createBrokerTrigger(c echo.Context, flowID, kind string, b brokerBody, name string, enabled *bool) error {
	ctx := c.Request().Context()
	if _, err := s.cfg.Store.GetFlow(ctx, flowID); err != nil {
		return err
	}
	var cfg broker.Config
	var np *string
	if name != "" {
		np = &name
	}
	if err := b.configure(kind, &cfg, np); err != nil {
		return err
	}
	raw, _ := json.Marshal(cfg)
	t := &store.BrokerTrigger{ID: uuid.NewString(), FlowID: flowID, Kind: kind, Config: raw, Enabled: enabled == nil || *enabled}
	if err := s.cfg.Store.CreateBrokerTrigger(ctx, t); err != nil {
		return err
	}
	return c.JSON(http.StatusCreated, brokerTriggerJSON(t, nil))
}

func (s *Server) patchBrokerTrigger(c echo.Context, t *store.BrokerTrigger) error {
	var b struct {
		brokerBody
		Name    *string `json:"name"`
		Enabled *bool   `json:"enabled"`
	}
	if err := bind(c, &b); err != nil {
		return err
	}
	var cfg broker.Config
	if err := json.Unmarshal(t.Config, &cfg); err != nil {
		return err
	}
	if err := b.configure(t.Kind, &cfg, b.Name); err != nil {
		return err
	}
	t.Config, _ = json.Marshal(cfg)
	if b.Enabled != nil {
		t.Enabled = *b.Enabled
	}
	ctx := c.Request().Context()
	if err := s.cfg.Store.SaveBrokerTrigger(ctx, t); err != nil {
		return err
	}
	return s.answerBrokerTrigger(c, http.StatusOK, t)
}

// answerBrokerTrigger answers t with its consumers' states.
func (s *Server) answerBrokerTrigger(c echo.Context, status int, t *store.BrokerTrigger) error {
	cons, err := s.brokerConsumers(c.Request().Context(), []string{t.ID})
	if err != nil {
		return err
	}
	return c.JSON(status, brokerTriggerJSON(t, cons[t.ID]))
}

// brokerConsumers maps each trigger id to its live consumers' states.
func (s *Server) brokerConsumers(ctx context.Context, ids []string) (map[string][]store.BrokerConsumer, error) {
	cs, err := s.cfg.Store.BrokerConsumers(ctx, ids, consumerMaxAge)
	if err != nil {
		return nil, err
	}
	out := map[string][]store.BrokerConsumer{}
	for _, c := range cs {
		out[c.TriggerID] = append(out[c.TriggerID], c)
	}
	return out, nil
}

// brokerTriggerJSON is a broker trigger as answered: its config (the
// URL's password hidden), whether a process is connected, the latest
// error of any, and each process's state.
func brokerTriggerJSON(t *store.BrokerTrigger, cons []store.BrokerConsumer) map[string]any {
	m := map[string]any{}
	_ = json.Unmarshal(t.Config, &m)
	if u, ok := m["url"].(string); ok {
		m["url"] = broker.Redact(u)
	}
	connected := false
	var lastErr *string
	var lastErrAt *time.Time
	consumers := make([]map[string]any, 0, len(cons))
	for _, c := range cons {
		connected = connected || c.Connected
		if c.LastError != nil && c.LastErrorAt != nil && (lastErrAt == nil || c.LastErrorAt.After(*lastErrAt)) {
			lastErr, lastErrAt = c.LastError, c.LastErrorAt
		}
		consumers = append(consumers, map[string]any{"instance_id": c.InstanceID, "connected": c.Connected,
			"connected_at": utcOrNil(c.ConnectedAt), "last_error": c.LastError, "last_error_at": utcOrNil(c.LastErrorAt),
			"seen_at": c.SeenAt.UTC()})
	}
	for k, v := range map[string]any{"id": t.ID, "kind": t.Kind, "flow_id": t.FlowID, "enabled": t.Enabled,
		"connected": connected, "last_error": lastErr, "last_error_at": utcOrNil(lastErrAt), "consumers": consumers,
		"created_at": t.CreatedAt.UTC(), "updated_at": t.UpdatedAt.UTC()} {
		m[k] = v
	}
	return m
}

func utcOrNil(t *time.Time) any {
	if t == nil {
		return nil
	}
	return t.UTC()
}
