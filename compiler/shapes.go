package compiler

import (
	"fmt"
	"slices"
	"strings"

	"github.com/stitchd/stitchd/engine"
)

// httpFields are an HTTP step's output: its response.
var httpFields = []string{"status", "headers", "body"}

// checkShapes warns — it does not refuse — of an expression reading a
// field of input or output that cannot be there, where the step that
// makes it has a known shape: an HTTP step's output is its response
// ({status, headers, body}), a Collector's an array, and an edge's
// mapping names every field of the input it makes. The warning says where
// the field likely is (input.body.x, steps.<id>.output.x, run.input.x).
func (c *compiler) checkShapes() {
	for _, r := range c.refs {
		v, ok := c.byID[r.node]
		if !ok {
			continue
		}
		if r.self { // an edge condition, a variable: output is v's own
			for _, f := range r.refs.OutputFields {
				if msg := c.outputLacks(v, f); msg != "" {
					c.warnAt(r, fmt.Sprintf("%s: output.%s: %s", r.where(), f, msg))
				}
			}
		}
		for _, f := range r.refs.InputFields {
			if msg := c.inputLacks(v, f); msg != "" {
				c.warnAt(r, fmt.Sprintf("%s: input.%s: %s", r.where(), f, msg))
			}
		}
	}
}

func (c *compiler) warnAt(r exprRef, msg string) {
	c.warnings = append(c.warnings, engine.Problem{Code: CodeUnknownPath, NodeID: r.nodeID(), EdgeID: r.edge, Path: r.path, Message: msg})
}

// outputLacks says why node v's output cannot have field f ("" when it
// may).
func (c *compiler) outputLacks(v int32, f string) string {
	switch n := c.nodes[v]; {
	case n.typ == engine.NodeTypeHTTP && !slices.Contains(httpFields, f):
		return fmt.Sprintf("the output of HTTP step %q is its response {status, headers, body}; did you mean output.body.%s?", n.id, f)
	case n.caps.Collects:
		return fmt.Sprintf("the output of Collector %q is an array of its items' outputs, which has no fields", n.id)
	}
	return ""
}

// inputLacks says why node v's input cannot have field f ("" when it may
// or the compiler cannot tell): its one inbound edge maps fields, or comes
// from a step whose output has a known shape.
func (c *compiler) inputLacks(v int32, f string) string {
	in := c.inList[c.inStart[v]:c.inStart[v+1]]
	if len(in) != 1 {
		return "" // merged from several steps (or an entry step: the run's input)
	}
	e := c.edges[in[0]]
	u := c.nodes[e.src]
	hint := fmt.Sprintf("steps.%s.output.%s or run.input.%s", u.id, f, f)
	switch {
	case len(e.mapping) > 0:
		if _, ok := e.mapping[f]; ok {
			return ""
		}
		keys := make([]string, 0, len(e.mapping))
		for k := range e.mapping {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		return fmt.Sprintf("the edge from %q maps only %s into the input; did you mean %s?", u.id, strings.Join(keys, ", "), hint)
	case u.typ == engine.NodeTypeHTTP && !slices.Contains(httpFields, f):
		return fmt.Sprintf("the input here is the response of HTTP step %q {status, headers, body}: did you mean input.body.%s, or an earlier step's field (steps.<id>.output.%s, run.input.%s)?",
			u.id, f, f, f)
	case u.caps.Collects && f != u.id:
		return fmt.Sprintf("the input here is {%q: [the items' outputs]} from Collector %q; did you mean input.%s?", u.id, u.id, u.id)
	}
	return ""
}
