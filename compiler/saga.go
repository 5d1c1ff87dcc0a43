package compiler

import (
	"github.com/tidwall/gjson"

	"github.com/stitchd/stitchd/engine"
)

// Process semantics a business process needs (docs/state_machine.md):
// compensation edges (a step → its undo node, data.on "compensate") and
// first-wins joins (data.join "any").

// compensationEdge keeps edge vi, a step → its undo node, for
// checkCompensation: it is never walked.
func (c *compiler) compensationEdge(vi int, ve VisualEdge, src, dst int32, mapping map[string]string, rule engine.EdgeRule) {
	switch {
	case len(mapping) > 0:
		c.errAt(CodeInvalidCompensation, "", ve.ID, edgeLoc(vi).field("data").field("mapping"),
			`edge %q: a compensation edge has no mapping: its undo node's input is {"output", "input", "error"} of %q`, ve.ID, ve.Source)
	case src == dst:
		c.errorf(CodeInvalidCompensation, ve.Source, ve.ID, edgePath(vi), "edge %q: a step cannot be its own undo node", ve.ID)
	default:
		c.comps = append(c.comps, cedge{vi: vi, src: src, dst: dst, rule: rule})
		return
	}
}

// onCompensation reports whether node v is a step or an undo node of a
// compensation edge.
func (c *compiler) onCompensation(v int32) bool {
	for _, e := range c.comps {
		if e.src == v || e.dst == v {
			return true
		}
	}
	return false
}

// isUndo reports whether node v is an undo node.
func (c *compiler) isUndo(v int32) bool {
	for _, e := range c.comps {
		if e.dst == v {
			return true
		}
	}
	return false
}

// checkCompensation checks each compensation edge step → undo: the undo
// node has no other edge (its only way in is the compensation of its
// step, and it hands nothing on), the step has one undo node, is not a
// Splitter and lies outside parallel regions and loops, and the undo
// node neither fans out nor collects.
func (c *compiler) checkCompensation() {
	if len(c.comps) == 0 {
		return
	}
	inLoop := map[int32]bool{}
	for _, l := range c.loops {
		for _, v := range c.loopBody(l.src, l.dst) {
			inLoop[v] = true
		}
	}
	undoOf := map[int32]int{} // step → its first compensation edge
	for k, e := range c.comps {
		ve := c.v.Edges[e.vi]
		step, undo := &c.nodes[e.src], &c.nodes[e.dst]
		at := edgePath(e.vi)
		others := len(c.inEdges(e.dst)) + len(c.outEdges(e.dst))
		for _, l := range c.loops {
			if l.src == e.dst || l.dst == e.dst {
				others++
			}
		}
		for j, o := range c.comps {
			if j != k && (o.dst == e.dst || o.src == e.dst) {
				others++
			}
		}
		switch {
		case others > 0:
			c.errorf(CodeInvalidCompensation, undo.id, ve.ID, at,
				"edge %q: %q is %q's undo node, and an undo node has no other edge (it runs only when the run is compensated, and hands nothing on)",
				ve.ID, undo.id, step.id)
		case step.caps.FansOut:
			c.errorf(CodeInvalidCompensation, step.id, ve.ID, at, "edge %q: a Splitter has no undo node; give the steps of its region's sub-flow one", ve.ID)
		case undo.caps.FansOut || undo.caps.Collects:
			c.errorf(CodeInvalidCompensation, undo.id, ve.ID, at, "edge %q: an undo node cannot be a %s", ve.ID, undo.typ)
		case c.stack != nil && c.stack[e.src] != nil:
			c.errorf(CodeInvalidCompensation, step.id, ve.ID, at,
				"edge %q: %q is inside a parallel region, and steps there cannot have an undo node yet (undo the region's work after its Collector)", ve.ID, step.id)
		case inLoop[e.src]:
			c.errorf(CodeInvalidCompensation, step.id, ve.ID, at, "edge %q: %q is on a loop, and steps on a loop cannot have an undo node yet", ve.ID, step.id)
		}
		if first, dup := undoOf[e.src]; dup {
			c.errorf(CodeInvalidCompensation, step.id, ve.ID, at, "edge %q: %q already has an undo node (%s); a step has one",
				ve.ID, step.id, edgePath(c.comps[first].vi))
		} else {
			undoOf[e.src] = k
		}
	}
}

// buildCompensation records each step's undo node.
func (c *compiler) buildCompensation(g *engine.ExecutionGraph) {
	if len(c.comps) == 0 {
		return
	}
	g.Compensation = make(map[string]string, len(c.comps))
	for _, e := range c.comps {
		g.Compensation[c.nodes[e.src].id] = c.nodes[e.dst].id
	}
}

// checkJoin checks a node's data.join, "all" (the default) or "any", and
// reports whether it is "any". An added type whose schema declares join
// has it checked there.
func (c *compiler) checkJoin(vi int, id string, spec *engine.NodeTypeSpec, cfg []byte) bool {
	j := gjson.GetBytes(cfg, "join")
	if !present(j) {
		return false
	}
	if j.Type == gjson.String && (j.Str == "all" || j.Str == "any") {
		return j.Str == "any"
	}
	if ownRules(spec.Type) || !gjson.GetBytes(spec.ConfigSchema, "properties.join").Exists() {
		c.errAt(CodeInvalidJoin, id, "", nodeLoc(vi).field("data").field("join"),
			`node %q: join must be "all" (fire once every upstream step has arrived, the default) or "any" (fire on the first arrival and cancel the other branches), got %s`,
			id, j.Raw)
	}
	return false
}

// checkJoins checks the nodes with data.join "any": not a Collector
// (its count is of items), not an undo node; with fewer than two
// inbound edges it changes nothing (a warning).
func (c *compiler) checkJoins() {
	for i := range c.nodes {
		n := &c.nodes[i]
		if !n.joinAny {
			continue
		}
		at := nodeLoc(n.vi).field("data").field("join")
		switch {
		case n.caps.Collects:
			c.errAt(CodeInvalidJoin, n.id, "", at, `node %q: a %s waits for every item of its region; join "any" is for a step after branches`, n.id, n.typ)
		case c.isUndo(int32(i)):
			c.errAt(CodeInvalidJoin, n.id, "", at, `node %q is an undo node: it has no upstream steps to join`, n.id)
		case c.afterSplitter(int32(i)):
			c.errAt(CodeInvalidJoin, n.id, "", at, `node %q: an edge from a Splitter brings each item at once, so join "any" would always fire on it; join the branches after the region's first steps`, n.id)
		case len(c.inEdges(int32(i))) < 2:
			c.warnings = append(c.warnings, engine.Problem{Code: CodeInvalidJoin, NodeID: n.id, Path: at.String(),
				Message: "node \"" + n.id + "\": join \"any\" changes nothing on a node with fewer than two incoming edges"})
		}
	}
}

// afterSplitter reports whether node v has an inbound edge from a
// Splitter.
func (c *compiler) afterSplitter(v int32) bool {
	for _, e := range c.inEdges(v) {
		if c.nodes[c.edges[e].src].caps.FansOut {
			return true
		}
	}
	return false
}

// buildJoins records, for each node with data.join "any", the nodes its
// first arrival cancels: every node upstream of it whose every path to
// the end of the flow leads through it — the other branches' steps, which
// have nothing left to do once it fired. A node with a way around it
// (another edge out, a failure edge elsewhere) goes on.
func (c *compiler) buildJoins(g *engine.ExecutionGraph) {
	for i := range c.nodes {
		if !c.nodes[i].joinAny || c.nodes[i].caps.Collects {
			continue
		}
		j := int32(i)
		// escapes[v]: v reaches the end of the flow without passing j.
		escapes := make([]bool, len(c.nodes))
		for k := len(c.order) - 1; k >= 0; k-- {
			v := c.order[k]
			if v == j {
				continue
			}
			out := c.outEdges(v)
			escapes[v] = len(out) == 0
			for _, e := range out {
				if d := c.edges[e].dst; d != j && escapes[d] {
					escapes[v] = true
					break
				}
			}
		}
		// Upstream of j, in topological order.
		up := make([]bool, len(c.nodes))
		up[j] = true
		for k := len(c.order) - 1; k >= 0; k-- {
			v := c.order[k]
			for _, e := range c.outEdges(v) {
				if up[c.edges[e].dst] {
					up[v] = true
					break
				}
			}
		}
		set := []string{}
		for _, v := range c.order {
			if v != j && up[v] && !escapes[v] {
				set = append(set, c.nodes[v].id)
			}
		}
		if g.JoinAny == nil {
			g.JoinAny = map[string][]string{}
		}
		g.JoinAny[c.nodes[i].id] = set
	}
}
