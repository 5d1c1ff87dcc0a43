package compiler

import (
	"github.com/stitchd/stitchd/engine"
	"github.com/tidwall/gjson"
)

// MaxLoopIterations bounds a loop's maxIterations.
const MaxLoopIterations = 10000

// edgeLoop reads an edge's data.loop {"maxIterations": N}: the edge leads
// back to an earlier node and taking it starts a new iteration. It marks
// rule as a loop edge and returns N.
func (c *compiler) edgeLoop(vi int, ve VisualEdge, rule *engine.EdgeRule) (int, bool) {
	if len(ve.Data) == 0 {
		return 0, true
	}
	l := gjson.GetBytes(ve.Data, "loop")
	if !present(l) {
		return 0, true
	}
	path := edgeLoc(vi).field("data").field("loop")
	if !l.IsObject() {
		c.errAt(CodeInvalidLoop, "", ve.ID, path, `edge %q: loop must be an object {"maxIterations": N}`, ve.ID)
		return 0, false
	}
	m := l.Get("maxIterations")
	if m.Type != gjson.Number || m.Num != float64(int(m.Num)) || m.Num < 1 || m.Num > MaxLoopIterations {
		c.errAt(CodeInvalidLoop, "", ve.ID, path.field("maxIterations"), "edge %q: loop.maxIterations must be a whole number from 1 to %d", ve.ID, MaxLoopIterations)
		return 0, false
	}
	if rule.Condition == "" && rule.Outcome == "" {
		c.errAt(CodeInvalidLoop, "", ve.ID, path, "edge %q: a loop edge needs a condition or an outcome (else it would loop until its maxIterations)", ve.ID)
		return 0, false
	}
	rule.Loop = true
	return int(m.Num), true
}

// checkLoops checks each back edge src → head of an acyclic forward graph:
// head must reach src (the body is every node on a path from head to src);
// only src has edges leaving the body; a body holds no Splitter or
// Collector, lies in one parallel region, and shares no node with another
// loop.
func (c *compiler) checkLoops() {
	owner := map[int32]int{}
	for li, e := range c.loops {
		ve := c.v.Edges[e.vi]
		body := c.loopBody(e.src, e.dst)
		if body == nil {
			c.errorf(CodeInvalidLoop, "", ve.ID, edgePath(e.vi), "edge %q: a loop edge must lead back to a node before its source (%s does not lead to %s)", ve.ID, ve.Target, ve.Source)
			continue
		}
		for _, v := range body {
			n := &c.nodes[v]
			if n.caps.FansOut || n.caps.Collects {
				c.errorf(CodeInvalidLoop, n.id, ve.ID, edgePath(e.vi), "edge %q: a loop cannot contain %s node %q yet; put the fan-out inside a sub-flow or before the loop", ve.ID, n.typ, n.id)
			}
			if c.stack[v] != c.stack[e.src] {
				c.errorf(CodeInvalidLoop, n.id, ve.ID, edgePath(e.vi), "edge %q: node %q is in another parallel region than the loop's source", ve.ID, n.id)
			}
			if other, ok := owner[v]; ok {
				c.errorf(CodeInvalidLoop, n.id, ve.ID, edgePath(e.vi), "edge %q: node %q is also on the loop of %s; loops may not share nodes", ve.ID, n.id, edgePath(c.loops[other].vi))
			}
			owner[v] = li
			if v == e.src {
				continue
			}
			for _, oe := range c.outEdges(v) {
				if d := c.edges[oe].dst; !contains32(body, d) {
					c.errorf(CodeInvalidLoop, n.id, c.v.Edges[c.edges[oe].vi].ID, edgePath(c.edges[oe].vi), "edge %q leaves the loop of %s from %q: only the loop's last node (%q) may have edges out of it", c.v.Edges[c.edges[oe].vi].ID, edgePath(e.vi), n.id, c.nodes[e.src].id)
				}
			}
		}
	}
}

// loopBody returns the nodes on a path from head to src (head first, in
// topological order), or nil when head does not lead to src.
func (c *compiler) loopBody(src, head int32) []int32 {
	fromHead := make([]bool, len(c.nodes))
	fromHead[head] = true
	for _, v := range c.order { // topological: a node's parents come first
		if !fromHead[v] {
			continue
		}
		for _, e := range c.outEdges(v) {
			fromHead[c.edges[e].dst] = true
		}
	}
	if !fromHead[src] {
		return nil
	}
	toSrc := make([]bool, len(c.nodes))
	toSrc[src] = true
	for i := len(c.order) - 1; i >= 0; i-- {
		v := c.order[i]
		for _, e := range c.outEdges(v) {
			if toSrc[c.edges[e].dst] {
				toSrc[v] = true
			}
		}
	}
	var body []int32
	for _, v := range c.order {
		if fromHead[v] && toSrc[v] {
			body = append(body, v)
		}
	}
	return body
}

func contains32(s []int32, v int32) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// buildLoops records the loops and adds each back edge's rule to its
// source's branches.
func (c *compiler) buildLoops(g *engine.ExecutionGraph) {
	if len(c.loops) == 0 {
		return
	}
	g.LoopOf = map[string]int{}
	for _, e := range c.loops {
		src, head := c.nodes[e.src].id, c.nodes[e.dst].id
		body := c.loopBody(e.src, e.dst)
		l := engine.Loop{EdgeID: c.v.Edges[e.vi].ID, Source: src, Head: head, MaxIterations: e.maxIter,
			Inner: make(map[string]int, len(body))}
		for _, v := range body {
			id := c.nodes[v].id
			l.Body = append(l.Body, id)
			g.LoopOf[id] = len(g.Loops)
			for _, ie := range c.inEdges(v) {
				if contains32(body, c.edges[ie].src) {
					l.Inner[id]++
				}
			}
		}
		g.Loops = append(g.Loops, l)
		rule := e.rule
		rule.Target = head
		if g.Branches == nil {
			g.Branches = map[string][]engine.EdgeRule{}
		}
		if _, ok := g.Branches[src]; !ok {
			// Its forward edges are plain: taken when it completes (and
			// the loop's edge is not).
			for _, d := range g.Adjacency[src] {
				g.Branches[src] = append(g.Branches[src], engine.EdgeRule{Target: d})
			}
		}
		g.Branches[src] = append(g.Branches[src], rule)
	}
}
