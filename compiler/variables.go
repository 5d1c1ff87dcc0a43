package compiler

import (
	"regexp"
	"slices"
	"strings"

	"github.com/tidwall/gjson"

	"github.com/stitchd/stitchd/engine"
)

// maxVariables bounds the variables one node sets.
const maxVariables = 50

var variableName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]{0,63}$`)

// setVar is one variable a node sets when it completes.
type setVar struct {
	node, name, src string
	path            string
}

// checkSetVariables checks node vi's data.setVariables: an object of
// variable names to expressions over what an edge condition sees (output,
// input, run, entity, steps, vars), and keeps them (checkVariables; build).
func (c *compiler) checkSetVariables(vi int, id string, cfg []byte) {
	r := gjson.GetBytes(cfg, "setVariables")
	if !present(r) {
		return
	}
	base := nodeLoc(vi).field("data").field("setVariables")
	if !r.IsObject() {
		c.errAt(CodeInvalidConfig, id, "", base, `node %q: setVariables must be an object of names to expressions ({"total": "output.amount * 2"}), got %s`, id, r.Raw)
		return
	}
	n := 0
	r.ForEach(func(k, v gjson.Result) bool {
		n++
		path := base.field(k.Str)
		switch {
		case n > maxVariables:
			c.errAt(CodeInvalidConfig, id, "", base, "node %q sets more than %d variables", id, maxVariables)
			return false
		case !variableName.MatchString(k.Str):
			c.errAt(CodeInvalidConfig, id, "", path, "node %q: %q is not a variable name (letters, digits and _, not starting with a digit, at most 64)", id, k.Str)
		case v.Type != gjson.String || strings.TrimSpace(v.Str) == "":
			c.errAt(CodeInvalidExpression, id, "", path, "node %q: variable %s needs an expression (expr-lang over output, input, run, entity, steps and vars)", id, k.Str)
		case len(v.Str) > maxConditionLen:
			c.errAt(CodeInvalidExpression, id, "", path, "node %q: the expression of variable %s is longer than %d characters", id, k.Str, maxConditionLen)
		default:
			val, err := engine.CompileVariable(v.Str)
			if err != nil {
				c.errAt(CodeInvalidExpression, id, "", path, "node %q: variable %s: %s", id, k.Str, engine.ExprMessage(err))
				break
			}
			c.sets = append(c.sets, setVar{node: id, name: k.Str, src: v.Str, path: path.String()})
			if len(val.Steps) > 0 || val.UsesItem || len(val.Vars) > 0 || len(val.InputFields) > 0 || len(val.OutputFields) > 0 {
				c.refs = append(c.refs, exprRef{node: id, path: path.String(), refs: val.Refs, self: true})
			}
		}
		return true
	})
}

// checkVariables checks who sets and who reads the run's variables: a
// variable is set outside fan-out regions (which item's value would it
// be?), never by two steps that may run at once (neither before the
// other), and read only when some step sets it.
func (c *compiler) checkVariables() {
	byName := map[string][]setVar{}
	for _, s := range c.sets {
		v, ok := c.byID[s.node]
		if !ok {
			continue
		}
		if st := c.stack[v]; st != nil {
			c.errorf(CodeInvalidConfig, s.node, "", s.path,
				"node %q sets variable %s inside the fan-out of splitter %q: a run's variable has one value; set it after the Collector",
				s.node, s.name, c.nodes[st.splitter].id)
			continue
		}
		for _, o := range byName[s.name] {
			w := c.byID[o.node]
			if !c.ancestors(v)[w] && !c.ancestors(w)[v] {
				c.errorf(CodeInvalidConfig, s.node, "", s.path,
					"nodes %q and %q may run at once, and both set variable %s: set it in one, or after both", o.node, s.node, s.name)
			}
		}
		byName[s.name] = append(byName[s.name], s)
	}
	for _, r := range c.refs {
		for _, name := range r.refs.Vars {
			if len(byName[name]) == 0 && !slices.ContainsFunc(c.sets, func(s setVar) bool { return s.name == name }) {
				c.errorf(CodeInvalidExpression, r.nodeID(), r.edge, r.path, "%s: vars.%s: no step sets variable %q (data.setVariables)", r.where(), name, name)
			}
		}
	}
}

// setVariables is what build writes to the graph: node → name → source.
func (c *compiler) setVariables() map[string]map[string]string {
	if len(c.sets) == 0 {
		return nil
	}
	m := map[string]map[string]string{}
	for _, s := range c.sets {
		if m[s.node] == nil {
			m[s.node] = map[string]string{}
		}
		m[s.node][s.name] = s.src
	}
	return m
}
