package compiler

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/stitchd/stitchd/engine"
	"github.com/tidwall/gjson"
)

// checkWait checks a Wait node's data: duration (a Go or ISO-8601
// duration, not negative) or until (a time, or an expression over input,
// run and entity), and an optional IANA timezone.
func (c *compiler) checkWait(id string, base loc, root gjson.Result) {
	dur, until, tz := root.Get("duration"), root.Get("until"), root.Get("timezone")
	switch {
	case present(dur) && present(until):
		c.errAt(CodeInvalidConfig, id, "", base, "Wait node %q: give duration or until, not both", id)
		return
	case !present(dur) && !present(until):
		c.errAt(CodeInvalidConfig, id, "", base.field("duration"), "Wait node %q needs a duration (48h, P2D) or an until time", id)
		return
	}
	loc := time.UTC
	if present(tz) {
		l, err := time.LoadLocation(tz.Str)
		if tz.Type != gjson.String || tz.Str == "" || err != nil {
			c.errAt(CodeInvalidConfig, id, "", base.field("timezone"), "Wait node %q: timezone %s is not an IANA time zone (Europe/Paris, America/New_York)", id, tz.Raw)
		} else {
			loc = l
		}
	}
	if present(dur) {
		if dur.Type != gjson.String {
			c.errAt(CodeInvalidConfig, id, "", base.field("duration"), "Wait node %q: duration must be a string (48h, 90m, P2D, PT1H30M)", id)
			return
		}
		d, err := engine.ParseWaitDuration(dur.Str)
		switch {
		case err != nil:
			c.errAt(CodeInvalidConfig, id, "", base.field("duration"), "Wait node %q: %v", id, err)
		case d < 0:
			c.errAt(CodeInvalidConfig, id, "", base.field("duration"), "Wait node %q: duration %q is negative", id, dur.Str)
		}
		return
	}
	if until.Type != gjson.String || strings.TrimSpace(until.Str) == "" {
		c.errAt(CodeInvalidConfig, id, "", base.field("until"), "Wait node %q: until must be a time (RFC 3339) or an expression giving one", id)
		return
	}
	if _, ok := engine.ParseWaitTime(until.Str, loc); ok {
		return
	}
	if len(until.Str) > maxConditionLen {
		c.errAt(CodeInvalidExpression, id, "", base.field("until"), "Wait node %q: until is longer than %d characters", id, maxConditionLen)
		return
	}
	if _, err := engine.CompileValue(until.Str); err != nil {
		c.errAt(CodeInvalidExpression, id, "", base.field("until"), "Wait node %q: until is neither a time (RFC 3339) nor an expression: %s", id, engine.ExprMessage(err))
	} else {
		c.noteRefs(id, "", base.field("until").String(), until.Str, false)
	}
}

// checkOnTimeout checks a UX node's onTimeout: "fail" or one of its
// outcomes, with a timeoutSeconds.
func (c *compiler) checkOnTimeout(id string, base loc, root gjson.Result) {
	on := root.Get("onTimeout")
	if !present(on) {
		return
	}
	outcomes := engine.UXOutcomes(&engine.Node{Config: []byte(root.Raw)})
	switch {
	case on.Type != gjson.String || (on.Str != "fail" && !slices.Contains(outcomes, on.Str)):
		c.errAt(CodeInvalidConfig, id, "", base.field("onTimeout"), "UX node %q: onTimeout must be \"fail\" or one of its outcomes %q", id, outcomes)
	case !present(root.Get("timeoutSeconds")):
		c.errAt(CodeInvalidConfig, id, "", base.field("onTimeout"), "UX node %q: onTimeout needs a timeoutSeconds", id)
	}
}

// maxEventNameLen bounds an Event node's event name.
const maxEventNameLen = 200

// checkEvent checks an Event node's data: a non-empty event name, a key
// expression over input, run and entity, an optional timeoutSeconds with
// onTimeout "fail".
func (c *compiler) checkEvent(id string, base loc, root gjson.Result) {
	if ev := root.Get("event"); ev.Type != gjson.String || strings.TrimSpace(ev.Str) == "" || len(ev.Str) > maxEventNameLen {
		c.errAt(CodeInvalidConfig, id, "", base.field("event"), "Event node %q needs an event name (1 to %d characters, e.g. payment.received)", id, maxEventNameLen)
	}
	key := root.Get("key")
	switch {
	case key.Type != gjson.String || strings.TrimSpace(key.Str) == "":
		c.errAt(CodeInvalidExpression, id, "", base.field("key"), "Event node %q needs a key: an expression over input, run and entity (input.order_id)", id)
	case len(key.Str) > maxConditionLen:
		c.errAt(CodeInvalidExpression, id, "", base.field("key"), "Event node %q: the key is longer than %d characters", id, maxConditionLen)
	default:
		if _, err := engine.CompileValue(key.Str); err != nil {
			c.errAt(CodeInvalidExpression, id, "", base.field("key"), "Event node %q: %s", id, engine.ExprMessage(err))
		} else {
			c.noteRefs(id, "", base.field("key").String(), key.Str, false)
		}
	}
	c.checkTimeout(id, base, root.Get("timeoutSeconds"))
	if on := root.Get("onTimeout"); present(on) && (on.Type != gjson.String || on.Str != "fail") {
		c.errAt(CodeInvalidConfig, id, "", base.field("onTimeout"), "Event node %q: onTimeout can only be \"fail\" (a failure edge routes it)", id)
	}
}

// maxRunDeadline bounds settings.deadlineSeconds (a year).
const maxRunDeadline = 366 * 24 * 3600

// maxRetentionDays bounds settings.retentionDays (ten years).
const maxRetentionDays = 3660

// settingKeys are the flow settings there are.
var settingKeys = []string{"deadlineSeconds", "retentionDays", "entityConcurrency"}

// collectSettings reads the flow's settings: an object with an optional
// deadlineSeconds (a whole number of seconds, 1 to a year) and an optional
// retentionDays (a whole number of days, 1 to ten years).
func (c *compiler) collectSettings() {
	if len(c.v.Settings) == 0 || string(c.v.Settings) == "null" {
		return
	}
	root := gjson.ParseBytes(c.v.Settings)
	if !root.IsObject() {
		c.errorf(CodeInvalidConfig, "", "", "settings", "settings must be an object")
		return
	}
	root.ForEach(func(k, _ gjson.Result) bool {
		if slices.Contains(settingKeys, k.Str) {
			return true
		}
		msg := fmt.Sprintf("settings has a field %q that no setting reads (ignored)", k.Str)
		if near := nearestKey(k.Str, settingKeys); near != "" {
			msg += fmt.Sprintf("; did you mean %q?", near)
		}
		c.warnings = append(c.warnings, engine.Problem{Code: CodeUnknownField, Path: "settings." + k.Str, Message: msg})
		return true
	})
	if d := root.Get("deadlineSeconds"); present(d) {
		if d.Type != gjson.Number || d.Num != float64(int(d.Num)) || d.Num < 1 || d.Num > maxRunDeadline {
			c.errorf(CodeInvalidConfig, "", "", "settings.deadlineSeconds", "settings.deadlineSeconds must be a whole number of seconds from 1 to %d", maxRunDeadline)
			return
		}
		c.deadline = int(d.Num)
	}
	if d := root.Get("retentionDays"); present(d) {
		if d.Type != gjson.Number || d.Num != float64(int(d.Num)) || d.Num < 1 || d.Num > maxRetentionDays {
			c.errorf(CodeInvalidConfig, "", "", "settings.retentionDays", "settings.retentionDays must be a whole number of days from 1 to %d", maxRetentionDays)
			return
		}
		c.retention = int(d.Num)
	}
	if m := root.Get("entityConcurrency"); present(m) {
		if m.Type != gjson.String || !slices.Contains(engine.EntityModes, m.Str) {
			c.errorf(CodeInvalidConfig, "", "", "settings.entityConcurrency", "settings.entityConcurrency must be one of %s, got %s",
				strings.Join(engine.EntityModes, ", "), m.Raw)
			return
		}
		c.entityConcurrency = m.Str
	}
}
