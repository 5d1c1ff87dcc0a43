package handlers

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"strconv"

	"github.com/stitchd/stitchd/engine"
)

// MaxEventKeyLen bounds an event key.
const MaxEventKeyLen = 500

// Event waits for an event: data.event names it, data.key (an expr-lang
// expression over input, run and entity, e.g. input.order_id) gives the
// key it must carry; optional data.timeoutSeconds fails the node when no
// such event arrives in time. The event's payload is the node's output.
type Event struct{}

// Fire evaluates the key and waits (or takes an event that came first).
func (Event) Fire(_ context.Context, fc engine.FireContext) error {
	var cfg struct {
		Event          string  `json:"event"`
		Key            string  `json:"key"`
		TimeoutSeconds float64 `json:"timeoutSeconds"`
	}
	if err := json.Unmarshal(fc.Node().Config, &cfg); err != nil {
		return fc.Fail(fmt.Sprintf("the node's data cannot be read: %v", err))
	}
	v, err := fc.Eval(cfg.Key)
	if err != nil {
		return fc.Fail("the key could not be evaluated: " + engine.ExprMessage(err))
	}
	key, ok := EventKey(v)
	if !ok {
		return fc.Fail(fmt.Sprintf("the key gave %T, not a string or a number", v))
	}
	if key == "" || len(key) > MaxEventKeyLen {
		return fc.Fail(fmt.Sprintf("the key must be 1 to %d bytes, got %d", MaxEventKeyLen, len(key)))
	}
	return fc.WaitForEvent(engine.EventWait{Name: cfg.Event, Key: key}, int(math.Ceil(cfg.TimeoutSeconds)))
}

// EventKey is the text of an event key: a string as is, a whole number
// without decimals (42, not 42.0), another number as Go prints it.
func EventKey(v any) (string, bool) {
	switch x := v.(type) {
	case string:
		return x, true
	case int:
		return strconv.Itoa(x), true
	case float64:
		if x == math.Trunc(x) && math.Abs(x) < 1e15 {
			return strconv.FormatInt(int64(x), 10), true
		}
		return strconv.FormatFloat(x, 'g', -1, 64), true
	}
	return "", false
}

// eventType is the Event type's registration (handlers.Types).
func eventType() engine.NodeTypeSpec {
	return engine.NodeTypeSpec{Type: engine.NodeTypeEvent, IDPrefix: "event", Panel: true,
		Label: "Event", Color: "#0f766e", Icon: "✉",
		Help:          "Waits for an event (payment.received) with a key from its input, posted to /api/v1/events.",
		DefaultConfig: raw(`{"event":"","key":""}`), Handler: Event{},
		ConfigSchema: object(`"required":["event","key"],"properties":{
			"event":{"type":"string","minLength":1},
			"key":{"type":"string","minLength":1,"title":"Key (expr-lang over the input)"},
			"timeoutSeconds":{"type":"number","exclusiveMinimum":0},
			"onTimeout":{"type":"string"},` + common + `}`),
		Statuses: statuses(engine.StatusRunning, engine.StatusWaitingForEvent, engine.StatusCompleted, engine.StatusFailed)}
}
