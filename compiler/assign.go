package compiler

import (
	"strconv"
	"strings"

	"github.com/stitchd/stitchd/engine"
	"github.com/tidwall/gjson"
)

// checkPeople checks who decides a UX node (engine/assign.go):
// data.assignees ({users, groups} or an expression over input, run and
// entity), data.requiredApprovals (an integer ≥ 1), data.rejectPolicy
// (any or majority) and data.separationOfDuties (a boolean).
func (c *compiler) checkPeople(id string, base loc, root gjson.Result) {
	static := c.checkAssignees(id, base.field("assignees"), root.Get("assignees"))
	if r := root.Get("requiredApprovals"); present(r) {
		n, ok := integer(r)
		switch {
		case !ok || n < 1 || n > engine.MaxRequiredApprovals:
			c.errAt(CodeInvalidConfig, id, "", base.field("requiredApprovals"), "UX node %q: requiredApprovals must be an integer from 1 to %d, got %s", id, engine.MaxRequiredApprovals, r.Raw)
		case static != nil && len(static.Groups) == 0 && int(n) > len(static.Users):
			c.errAt(CodeInvalidConfig, id, "", base.field("requiredApprovals"), "UX node %q: requiredApprovals %d is more than its %d assigned users: it could never complete", id, n, len(static.Users))
		}
	}
	if r := root.Get("rejectPolicy"); present(r) && (r.Type != gjson.String || (r.Str != engine.RejectAny && r.Str != engine.RejectMajority)) {
		c.errAt(CodeInvalidConfig, id, "", base.field("rejectPolicy"), "UX node %q: rejectPolicy must be \"any\" (one reject decides) or \"majority\" (a reject needs requiredApprovals votes too), got %s", id, r.Raw)
	}
	if r := root.Get("separationOfDuties"); present(r) && !r.IsBool() {
		c.errAt(CodeInvalidConfig, id, "", base.field("separationOfDuties"), "UX node %q: separationOfDuties must be true or false, got %s", id, r.Raw)
	}
}

// maxEscalations bounds a UX node's data.escalation.
const maxEscalations = 20

// checkEscalation checks a UX node's data.escalation: a list of
// {afterSeconds, assignees}, afterSeconds whole seconds rising from one
// step to the next, assignees an object {users, groups} (no expression:
// nothing is evaluated when a node escalates).
func (c *compiler) checkEscalation(id string, path loc, r gjson.Result) {
	if !present(r) {
		return
	}
	if !r.IsArray() || len(r.Array()) == 0 || len(r.Array()) > maxEscalations {
		c.errAt(CodeInvalidConfig, id, "", path, "UX node %q: escalation must be a list of 1 to %d {\"afterSeconds\", \"assignees\"}", id, maxEscalations)
		return
	}
	last := int64(0)
	for i, e := range r.Array() {
		at := path.field(strconv.Itoa(i))
		if !e.IsObject() {
			c.errAt(CodeInvalidConfig, id, "", at, "UX node %q: escalation[%d] must be {\"afterSeconds\", \"assignees\"}", id, i)
			continue
		}
		e.ForEach(func(k, _ gjson.Result) bool {
			if k.Str != "afterSeconds" && k.Str != "assignees" {
				c.errAt(CodeInvalidConfig, id, "", at.field(k.Str), "UX node %q: escalation[%d] has an unknown field %q (afterSeconds, assignees)", id, i, k.Str)
			}
			return true
		})
		n, ok := integer(e.Get("afterSeconds"))
		switch {
		case !ok || n < 1 || float64(n) > maxTimeoutSeconds:
			c.errAt(CodeInvalidConfig, id, "", at.field("afterSeconds"), "UX node %q: escalation[%d].afterSeconds must be a whole number of seconds from 1 to %.0f, got %s", id, i, maxTimeoutSeconds, orMissing(e.Get("afterSeconds")))
		case n <= last:
			c.errAt(CodeInvalidConfig, id, "", at.field("afterSeconds"), "UX node %q: escalation[%d].afterSeconds (%d) must be more than the step before's (%d)", id, i, n, last)
		default:
			last = n
		}
		if a := e.Get("assignees"); !a.IsObject() {
			c.errAt(CodeInvalidConfig, id, "", at.field("assignees"), "UX node %q: escalation[%d].assignees must be {\"users\": [emails], \"groups\": [names]}", id, i)
		} else {
			c.checkAssignees(id, at.field("assignees"), a)
		}
	}
}

// checkAssignees checks data.assignees and returns them when static
// (nil for none, an expression or a wrong shape).
func (c *compiler) checkAssignees(id string, path loc, r gjson.Result) *engine.Assignees {
	if !present(r) {
		return nil
	}
	switch {
	case r.Type == gjson.String:
		switch {
		case strings.TrimSpace(r.Str) == "":
			c.errAt(CodeInvalidExpression, id, "", path, "UX node %q: assignees must be {\"users\": [emails], \"groups\": [names]} or an expression (expr-lang over input, run and entity), got an empty string", id)
		case len(r.Str) > maxConditionLen:
			c.errAt(CodeInvalidExpression, id, "", path, "UX node %q: the assignees expression is longer than %d characters", id, maxConditionLen)
		default:
			if _, err := engine.CompileValue(r.Str); err != nil {
				c.errAt(CodeInvalidExpression, id, "", path, "UX node %q: assignees: %s", id, engine.ExprMessage(err))
			} else {
				c.noteRefs(id, "", path.String(), r.Str, false)
			}
		}
		return nil
	case !r.IsObject():
		c.errAt(CodeInvalidConfig, id, "", path, "UX node %q: assignees must be {\"users\": [emails], \"groups\": [names]} or an expression string, got %s", id, r.Raw)
		return nil
	}
	ok := true
	a := &engine.Assignees{}
	r.ForEach(func(k, v gjson.Result) bool {
		switch k.Str {
		case "users":
			a.Users, ok = c.assigneeList(id, path.field("users"), v, engine.CheckEmail, ok)
		case "groups":
			a.Groups, ok = c.assigneeList(id, path.field("groups"), v, engine.CheckGroup, ok)
		default:
			c.errAt(CodeInvalidConfig, id, "", path.field(k.Str), "UX node %q: assignees has %q; only users and groups are allowed", id, k.Str)
			ok = false
		}
		return true
	})
	if !ok {
		return nil
	}
	switch n := len(a.Users) + len(a.Groups); {
	case n == 0:
		c.errAt(CodeInvalidConfig, id, "", path, "UX node %q: assignees names no one; give users or groups, or leave assignees out (anyone may decide)", id)
		return nil
	case n > engine.MaxAssignees:
		c.errAt(CodeInvalidConfig, id, "", path, "UX node %q: assignees names %d users and groups, more than %d", id, n, engine.MaxAssignees)
		return nil
	}
	return a
}

// assigneeList checks a list of emails or group names (ok: whether all
// was well so far) and returns its distinct entries.
func (c *compiler) assigneeList(id string, path loc, v gjson.Result, check func(string) error, ok bool) ([]string, bool) {
	if !v.IsArray() {
		c.errAt(CodeInvalidConfig, id, "", path, "UX node %q: %s must be a list of strings, got %s", id, path.fields[path.n-1], v.Raw)
		return nil, false
	}
	var out []string
	for i, e := range v.Array() {
		at := path.field(strconv.Itoa(i))
		if e.Type != gjson.String {
			c.errAt(CodeInvalidConfig, id, "", at, "UX node %q: %s must be strings, got %s", id, path.fields[path.n-1], e.Raw)
			ok = false
			continue
		}
		s := strings.ToLower(strings.TrimSpace(e.Str))
		if err := check(strings.TrimSpace(e.Str)); err != nil {
			c.errAt(CodeInvalidConfig, id, "", at, "UX node %q: %s", id, err)
			ok = false
			continue
		}
		if !contains(out, s) {
			out = append(out, s)
		}
	}
	return out, ok
}
