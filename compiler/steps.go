package compiler

import (
	"github.com/stitchd/stitchd/engine"
)

// exprRef is what one expression of the flow reads of other steps
// (steps.<id>) and of its fan-out item, checked once the graph's edges
// and regions are known (checkStepRefs).
type exprRef struct {
	// node is where the expression is evaluated: its node, or an edge
	// condition's source.
	node, edge, path string
	refs             engine.Refs
	// self: it may read its own node (an edge condition, evaluated once
	// the node completed).
	self bool
}

// noteRefs keeps what the expression src (already compiled without error)
// reads, for checkStepRefs.
func (c *compiler) noteRefs(node, edge, path, src string, self bool) {
	compile := engine.CompileValue
	if self {
		compile = engine.CompileVariable // it sees output too
	}
	v, err := compile(src)
	if err != nil {
		return // reported where it was compiled
	}
	if len(v.Steps) > 0 || v.UsesItem || len(v.Vars) > 0 || len(v.InputFields) > 0 || len(v.OutputFields) > 0 {
		c.refs = append(c.refs, exprRef{node: node, edge: edge, path: path, refs: v.Refs, self: self})
	}
}

// checkStepRefs checks every steps.<id> an expression reads: the id is a
// node's, that node runs before the expression's node (upstream of it, by
// forward edges) and it is not inside a fan-out region the expression's
// node is outside of (which item's would it be?); and item is read only
// inside a region.
func (c *compiler) checkStepRefs() {
	var upstream map[int32]map[int32]bool
	for _, r := range c.refs {
		v, ok := c.byID[r.node]
		if !ok {
			continue // an edge whose source is missing: reported already
		}
		if r.refs.UsesItem && c.stack[v] == nil {
			c.errorf(CodeInvalidExpression, r.nodeID(), r.edge, r.path,
				"%s: item is known only inside a fan-out region (between a Splitter and its Collector)", r.where())
		}
		for _, id := range r.refs.Steps {
			u, ok := c.byID[id]
			switch {
			case !ok:
				c.errorf(CodeInvalidExpression, r.nodeID(), r.edge, r.path, "%s: steps.%s: no step has the id %q", r.where(), id, id)
				continue
			case u == v && r.self:
				continue
			case u == v:
				c.errorf(CodeInvalidExpression, r.nodeID(), r.edge, r.path,
					"%s: steps.%s is the step itself, whose output is not made yet: read its input as input", r.where(), id)
				continue
			}
			if upstream == nil {
				upstream = map[int32]map[int32]bool{}
			}
			if upstream[v] == nil {
				upstream[v] = c.ancestors(v)
			}
			if !upstream[v][u] {
				c.errorf(CodeInvalidExpression, r.nodeID(), r.edge, r.path,
					"%s: steps.%s does not run before %s: only a step upstream of it can be read", r.where(), id, r.node)
				continue
			}
			if !encloses(c.stack[v], c.stack[u]) {
				c.errorf(CodeInvalidExpression, r.nodeID(), r.edge, r.path,
					"%s: steps.%s runs once per item of splitter %q, and %s is not in that fan-out: read the Collector's output instead",
					r.where(), id, c.nodes[c.stack[u].splitter].id, r.node)
			}
		}
	}
}

func (r exprRef) nodeID() string {
	if r.edge != "" {
		return ""
	}
	return r.node
}

func (r exprRef) where() string {
	if r.edge != "" {
		return "edge " + quote(r.edge)
	}
	return "node " + quote(r.node)
}

func quote(s string) string { return `"` + s + `"` }

// ancestors are the nodes from which v is reached by forward edges.
func (c *compiler) ancestors(v int32) map[int32]bool {
	seen := map[int32]bool{}
	stack := []int32{v}
	for len(stack) > 0 {
		n := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		for _, e := range c.inList[c.inStart[n]:c.inStart[n+1]] {
			if s := c.edges[e].src; !seen[s] {
				seen[s] = true
				stack = append(stack, s)
			}
		}
	}
	return seen
}

// encloses reports whether region outer is inner or one of inner's
// enclosing regions (nil, no region, encloses every one).
func encloses(inner, outer *frame) bool {
	for f := inner; ; f = f.parent {
		if f == outer {
			return true
		}
		if f == nil {
			return false
		}
	}
}
