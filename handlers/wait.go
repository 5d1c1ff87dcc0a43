package handlers

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/stitchd/stitchd/engine"
)

// WaitConfig is a Wait node's data: duration, or until (an RFC 3339 time,
// or an expr-lang expression over input, run and entity giving one) with
// an optional IANA timezone for times without an offset.
type WaitConfig struct {
	Duration string `json:"duration"`
	Until    string `json:"until"`
	Timezone string `json:"timezone"`
}

// Wait sleeps: the node moves to sleeping with its wake_at, and completes
// with its input when the sweeper wakes it. A time already past completes
// it at once.
type Wait struct{}

// Fire computes the wake time and sleeps.
func (Wait) Fire(_ context.Context, fc engine.FireContext) error {
	var cfg WaitConfig
	if err := json.Unmarshal(fc.Node().Config, &cfg); err != nil {
		return fc.Fail(fmt.Sprintf("the node's data cannot be read: %v", err))
	}
	if cfg.Duration != "" {
		d, err := engine.ParseWaitDuration(cfg.Duration)
		if err != nil {
			return fc.Fail(err.Error())
		}
		if d <= 0 {
			return fc.Complete(fc.Input())
		}
		// From the database's clock, like every due time.
		return fc.Sleep(engine.Wake{SleepSeconds: d.Seconds()})
	}
	loc := time.UTC
	if cfg.Timezone != "" {
		l, err := time.LoadLocation(cfg.Timezone)
		if err != nil {
			return fc.Fail(fmt.Sprintf("unknown timezone %q", cfg.Timezone))
		}
		loc = l
	}
	at, ok := engine.ParseWaitTime(cfg.Until, loc)
	if !ok {
		v, err := fc.Eval(cfg.Until)
		if err != nil {
			return fc.Fail("until could not be evaluated: " + engine.ExprMessage(err))
		}
		switch x := v.(type) {
		case time.Time:
			at = x
		case string:
			if at, ok = engine.ParseWaitTime(x, loc); !ok {
				return fc.Fail(fmt.Sprintf("until gave %q, not a time (RFC 3339, e.g. 2026-12-01T09:00:00+01:00)", x))
			}
		default:
			return fc.Fail(fmt.Sprintf("until gave %T, not a time", v))
		}
	}
	if !at.After(fc.Now()) {
		return fc.Complete(fc.Input())
	}
	return fc.Sleep(engine.Wake{At: &at})
}

// waitType is the Wait type's registration (handlers.Types).
func waitType() engine.NodeTypeSpec {
	return engine.NodeTypeSpec{Type: engine.NodeTypeWait, IDPrefix: "wait", Panel: true,
		Label: "Wait", Color: "#4a5f8f", Icon: "◷",
		Help:          "Pauses the run for a duration (48h, P2D) or until a time, then passes its input on.",
		DefaultConfig: raw(`{}`), Handler: Wait{},
		ConfigSchema: object(`"properties":{
			"duration":{"type":"string","title":"Duration (48h, P2D)"},
			"until":{"type":"string","title":"Until (a time, or an expression)"},
			"timezone":{"type":"string"},` + common + `}`),
		Statuses: statuses(engine.StatusRunning, engine.StatusSleeping, engine.StatusCompleted, engine.StatusFailed)}
}
