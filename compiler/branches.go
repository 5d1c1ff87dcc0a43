package compiler

import (
	"slices"
	"strconv"
	"strings"

	"github.com/stitchd/stitchd/engine"
	"github.com/tidwall/gjson"
)

// maxConditionLen bounds an edge condition's source.
const maxConditionLen = 4096

// edgeRule reads when edge vi is taken from its data: condition, default,
// on ("failure") or outcome — at most one of them.
func (c *compiler) edgeRule(vi int, ve VisualEdge) (engine.EdgeRule, bool) {
	r := engine.EdgeRule{ID: ve.ID}
	if len(ve.Data) == 0 {
		return r, true
	}
	cd, err := c.canon.canonical(ve.Data)
	if err != nil || len(cd) == 0 || cd[0] != '{' {
		return r, true // data that is not an object: reported by edgeMapping
	}
	ok := true
	base := edgeLoc(vi).field("data")
	root := gjson.ParseBytes(cd)
	var set []string
	if v := root.Get("condition"); present(v) {
		set = append(set, "condition")
		switch {
		case v.Type != gjson.String || strings.TrimSpace(v.Str) == "":
			c.errAt(CodeInvalidCondition, "", ve.ID, base.field("condition"), "edge %q: condition must be a non-empty expression string", ve.ID)
			ok = false
		case len(v.Str) > maxConditionLen:
			c.errAt(CodeInvalidCondition, "", ve.ID, base.field("condition"), "edge %q: condition is longer than %d characters", ve.ID, maxConditionLen)
			ok = false
		default:
			if _, err := engine.CompileCondition(v.Str); err != nil {
				c.errAt(CodeInvalidCondition, "", ve.ID, base.field("condition"), "edge %q: %s", ve.ID, engine.ExprMessage(err))
				ok = false
			} else {
				c.noteRefs(ve.Source, ve.ID, base.field("condition").String(), v.Str, true)
			}
			r.Condition = v.Str
		}
	}
	if v := root.Get("default"); present(v) {
		switch v.Type {
		case gjson.True:
			set = append(set, "default")
			r.Default = true
		case gjson.False:
		default:
			c.errAt(CodeInvalidBranch, "", ve.ID, base.field("default"), "edge %q: default must be true or false", ve.ID)
			ok = false
		}
	}
	if v := root.Get("on"); present(v) {
		switch {
		case v.Type == gjson.String && v.Str == "failure":
			set = append(set, `on "failure"`)
			r.OnFailure = true
		case v.Type == gjson.String && v.Str == "compensate":
			set = append(set, `on "compensate"`)
			r.Compensate = true
		case v.Type == gjson.String && v.Str == "success":
		default:
			c.errAt(CodeInvalidBranch, "", ve.ID, base.field("on"), `edge %q: on must be "failure", "compensate" (to the step's undo node) or "success" (the same as leaving it out)`, ve.ID)
			ok = false
		}
	}
	if v := root.Get("outcome"); present(v) {
		set = append(set, "outcome")
		if v.Type != gjson.String || strings.TrimSpace(v.Str) == "" {
			c.errAt(CodeInvalidBranch, "", ve.ID, base.field("outcome"), "edge %q: outcome must be the name of one of its UX node's outcomes", ve.ID)
			ok = false
		}
		r.Outcome = v.Str
	}
	if len(set) > 1 {
		c.errAt(CodeInvalidBranch, "", ve.ID, base, "edge %q: choose one of condition, default, on \"failure\", on \"compensate\" and outcome (it has %s)", ve.ID, strings.Join(set, " and "))
		ok = false
	}
	return r, ok
}

// checkBranches checks each node's edge rules together: one default edge
// at most, outcome edges only from a UX node and for its outcomes, no
// rules on a Splitter's edges (they lead into its parallel region).
func (c *compiler) checkBranches() {
	for i := range c.nodes {
		src := &c.nodes[i]
		defaults := -1
		for _, ei := range c.outEdges(int32(i)) {
			e := &c.edges[ei]
			if e.rule.Plain() {
				continue
			}
			ve := c.v.Edges[e.vi]
			at := edgeLoc(e.vi).field("data")
			switch {
			case src.caps.FansOut:
				c.errAt(CodeInvalidBranch, "", ve.ID, at, "edge %q: a Splitter's edges lead into its parallel region and are always taken; branch after its first node instead", ve.ID)
			case e.rule.Default && defaults >= 0:
				c.errAt(CodeInvalidBranch, "", ve.ID, at.field("default"), "edge %q: node %q already has a default edge (%s)", ve.ID, src.id, edgePath(defaults))
			case e.rule.Default:
				defaults = e.vi
			case e.rule.Outcome != "" && !src.caps.WaitsForPerson:
				c.errAt(CodeInvalidBranch, "", ve.ID, at.field("outcome"), "edge %q: only a UX node's edges can have an outcome; %q is a %s node", ve.ID, src.id, src.typ)
			case e.rule.Outcome != "" && src.cfg != nil:
				outcomes := engine.UXOutcomes(&engine.Node{Config: src.cfg})
				if !slices.Contains(outcomes, e.rule.Outcome) {
					c.errAt(CodeInvalidBranch, "", ve.ID, at.field("outcome"), "edge %q: outcome %q is not one of node %q's outcomes %q", ve.ID, e.rule.Outcome, src.id, outcomes)
				}
			}
		}
	}
}

// buildBranches records the rules of the edges of every node that has a
// rule on at least one edge, and the nodes downstream of such a node (the
// only ones that can be skipped).
func (c *compiler) buildBranches(g *engine.ExecutionGraph) {
	var from []string
	for i := range c.nodes {
		out := c.outEdges(int32(i))
		plain := true
		for _, ei := range out {
			plain = plain && c.edges[ei].rule.Plain()
		}
		if plain {
			continue
		}
		rules := make([]engine.EdgeRule, len(out))
		for k, ei := range out {
			rules[k] = c.edges[ei].rule
			rules[k].Target = c.nodes[c.edges[ei].dst].id
		}
		if g.Branches == nil {
			g.Branches = map[string][]engine.EdgeRule{}
		}
		g.Branches[c.nodes[i].id] = rules
		from = append(from, c.nodes[i].id)
	}
	if len(from) == 0 {
		return
	}
	g.MaySkip = map[string]bool{}
	for len(from) > 0 {
		id := from[len(from)-1]
		from = from[:len(from)-1]
		for _, d := range g.Adjacency[id] {
			if !g.MaySkip[d] {
				g.MaySkip[d] = true
				from = append(from, d)
			}
		}
	}
}

// checkOutcomes checks a UX node's data.outcomes: distinct non-empty
// names.
func (c *compiler) checkOutcomes(id string, path loc, r gjson.Result) {
	if !present(r) {
		return
	}
	if !r.IsArray() || len(r.Array()) == 0 {
		c.errAt(CodeInvalidConfig, id, "", path, "UX node %q: outcomes must be a non-empty array of names", id)
		return
	}
	seen := map[string]bool{}
	for i, o := range r.Array() {
		switch {
		case o.Type != gjson.String || strings.TrimSpace(o.Str) == "" || len(o.Str) > 64:
			c.errAt(CodeInvalidConfig, id, "", path.field(strconv.Itoa(i)), "UX node %q: each outcome must be a name of 1 to 64 characters", id)
		case seen[o.Str]:
			c.errAt(CodeInvalidConfig, id, "", path.field(strconv.Itoa(i)), "UX node %q: outcome %q is listed twice", id, o.Str)
		}
		seen[o.Str] = true
	}
}

// checkFormOutcomes checks a UX node's data.formOutcomes: a list of its
// outcomes (those its form applies to), each once.
func (c *compiler) checkFormOutcomes(id string, path loc, root gjson.Result) {
	r := root.Get("formOutcomes")
	if !present(r) {
		return
	}
	if !r.IsArray() {
		c.errAt(CodeInvalidConfig, id, "", path, "UX node %q: formOutcomes must be a list of the node's outcomes", id)
		return
	}
	outcomes := []string{"approve", "reject"}
	if o := root.Get("outcomes"); o.IsArray() && len(o.Array()) > 0 {
		outcomes = nil
		for _, x := range o.Array() {
			outcomes = append(outcomes, x.Str)
		}
	}
	seen := map[string]bool{}
	for i, o := range r.Array() {
		switch {
		case o.Type != gjson.String || !slices.Contains(outcomes, o.Str):
			c.errAt(CodeInvalidConfig, id, "", path.field(strconv.Itoa(i)), "UX node %q: formOutcomes[%d] is %s, not one of its outcomes %q", id, i, o.Raw, outcomes)
		case seen[o.Str]:
			c.errAt(CodeInvalidConfig, id, "", path.field(strconv.Itoa(i)), "UX node %q: outcome %q is listed twice in formOutcomes", id, o.Str)
		}
		seen[o.Str] = true
	}
}

// checkExpression checks a Transform's data.expression: a non-empty
// expr-lang expression over input, run and entity.
func (c *compiler) checkExpression(id string, path loc, r gjson.Result) {
	switch {
	case r.Type != gjson.String || strings.TrimSpace(r.Str) == "":
		c.errAt(CodeInvalidExpression, id, "", path, "node %q needs an expression (expr-lang over input, run and entity)", id)
	case len(r.Str) > maxConditionLen:
		c.errAt(CodeInvalidExpression, id, "", path, "node %q: the expression is longer than %d characters", id, maxConditionLen)
	default:
		if _, err := engine.CompileValue(r.Str); err != nil {
			c.errAt(CodeInvalidExpression, id, "", path, "node %q: %s", id, engine.ExprMessage(err))
		} else {
			c.noteRefs(id, "", path.String(), r.Str, false)
		}
	}
}
