package compiler

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/stitchd/stitchd/engine"
)

// Options tune a compilation.
type Options struct {
	// BoardSections, when non-nil, is the set of section ids of the flow's
	// board: every entityMovement targetSectionId must be one of them. Nil
	// skips the check (the flow has no board, or the caller checks later).
	BoardSections []string
	// Types are the node types a flow may use: the registry
	// (handlers.Types and any added), each an engine.NodeTypeSpec. A node's
	// data is checked against its type's ConfigSchema and by its Check —
	// but for the ten first built-in types, whose data the compiler's own
	// rules check (config.go: they need the flow around the node) — and
	// the graph's rules read its Caps: a node that fans out opens a region,
	// one that collects closes it, a person's outcomes may label edges.
	Types []engine.NodeTypeSpec
}

// Compile validates a visual graph whose nodes have the given types and
// compiles it into an execution graph: CompileWithOptions with only Types.
func Compile(v VisualGraph, types []engine.NodeTypeSpec) (*engine.ExecutionGraph, error) {
	return CompileWithOptions(v, Options{Types: types})
}

// CompileWithOptions validates a visual graph and compiles it into an
// execution graph. When the graph is invalid it returns a nil graph and an
// *Error listing every problem found. The result is deterministic: the same
// input always marshals to the same bytes, and the order of the nodes in the
// visual graph does not matter (the order of the edges does: it is the order
// of Adjacency and Upstream).
func CompileWithOptions(v VisualGraph, opts Options) (*engine.ExecutionGraph, error) {
	if len(opts.Types) == 0 {
		return nil, errors.New("compiler: no node types (Options.Types)")
	}
	c := &compiler{v: v, opts: opts}
	c.run()
	if len(c.problems) > 0 {
		sortProblems(c.problems)
		return nil, &Error{Problems: c.problems}
	}
	return c.build(), nil
}

// canonicalType matches t case-insensitively (ASCII only) against the
// registry (Options.Types).
func (c *compiler) canonicalType(t string) (*engine.NodeTypeSpec, bool) {
	for i, s := range c.opts.Types {
		if asciiEqualFold(t, string(s.Type)) {
			return &c.opts.Types[i], true
		}
	}
	return nil, false
}

// typeNames lists the types a node may have, for the message of an
// unknown one.
func (c *compiler) typeNames() string {
	names := make([]string, 0, len(c.opts.Types))
	for _, s := range c.opts.Types {
		names = append(names, string(s.Type))
	}
	if len(names) == 1 {
		return names[0]
	}
	return strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
}

func asciiEqualFold(a, b string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := 0; i < len(a); i++ {
		x, y := a[i], b[i]
		if 'A' <= x && x <= 'Z' {
			x += 'a' - 'A'
		}
		if 'A' <= y && y <= 'Z' {
			y += 'a' - 'A'
		}
		if x != y {
			return false
		}
	}
	return true
}

// cnode is a node that takes part in the graph: non-empty id, first
// occurrence of that id.
type cnode struct {
	id  string
	vi  int             // index in VisualGraph.Nodes
	typ engine.NodeType // "" when unknown
	// caps are its type's capabilities (zero when unknown).
	caps engine.Capabilities
	cfg  json.RawMessage // canonical data ({} when absent); nil when invalid
	// joinAny: data.join is "any" (saga.go).
	joinAny bool
}

// cedge is an edge that takes part in the graph: both ends exist, not a
// self-loop, first edge between its ends.
type cedge struct {
	vi       int // index in VisualGraph.Edges
	src, dst int32
	mapping  map[string]string
	// rule says when the edge is taken (branches.go); zero for a plain edge.
	rule engine.EdgeRule
	// maxIter is a loop edge's maxIterations (loops.go).
	maxIter int
}

type compiler struct {
	canon    canonicalizer
	v        VisualGraph
	opts     Options
	sections map[string]struct{}

	problems []engine.Problem
	warnings []engine.Problem
	// secrets are the {{ secret "NAME" }} references (http.go).
	secrets []engine.SecretRef
	// refs are what the flow's expressions read of other steps
	// (steps.go).
	refs []exprRef
	// sets are the run variables nodes set (variables.go).
	sets []setVar
	// schemas are the added types' compiled config schemas (typeSchema).
	schemas map[engine.NodeType]*engine.Form

	nodes []cnode
	byID  map[string]int32
	edges []cedge
	// loops are the back edges (data.loop), kept out of edges.
	loops []cedge
	// comps are the compensation edges (data.on "compensate": a step →
	// its undo node), kept out of edges too (saga.go).
	comps []cedge
	// deadline is the flow's settings.deadlineSeconds (0: none).
	deadline int
	// retention is settings.retentionDays (0: none).
	retention int
	// entityConcurrency is settings.entityConcurrency ("": queue).
	entityConcurrency string

	// Compressed adjacency: the outbound edges of node i are
	// outList[outStart[i]:outStart[i+1]] (indexes into edges, edge order);
	// likewise inbound.
	outStart, outList []int32
	inStart, inList   []int32

	hasCycle bool
	order    []int32 // topological order, when acyclic

	// Region analysis results (acyclic graphs only).
	stack       []*frame // innermost enclosing region of each node
	collectorOf []int32  // Splitter → its Collector, -1 when none
}

func (c *compiler) errorf(code, nodeID, edgeID, path, format string, args ...any) {
	c.problems = append(c.problems, engine.Problem{
		Code: code, NodeID: nodeID, EdgeID: edgeID, Path: path,
		Message: fmt.Sprintf(format, args...),
	})
}

func (c *compiler) errAt(code, nodeID, edgeID string, at loc, format string, args ...any) {
	c.errorf(code, nodeID, edgeID, at.String(), format, args...)
}

func (c *compiler) outEdges(n int32) []int32 { return c.outList[c.outStart[n]:c.outStart[n+1]] }
func (c *compiler) inEdges(n int32) []int32  { return c.inList[c.inStart[n]:c.inStart[n+1]] }

func (c *compiler) run() {
	if c.opts.BoardSections != nil {
		c.sections = make(map[string]struct{}, len(c.opts.BoardSections))
		for _, s := range c.opts.BoardSections {
			c.sections[s] = struct{}{}
		}
	}
	if len(c.v.Nodes) == 0 {
		c.errorf(CodeEmptyGraph, "", "", "nodes", "the graph has no nodes")
	}
	c.collectNodes()
	c.checkIDs()
	c.collectEdges()
	c.collectSettings()
	c.buildAdjacency()
	c.checkIsolated()
	c.sortTopologically()
	if c.hasCycle {
		c.reportCycles()
		return // regions and instance keys are undefined on a cyclic graph
	}
	c.analyzeRegions()
	c.checkKeyCollisions()
	c.checkBranches()
	c.checkLoops()
	c.checkCompensation()
	c.checkJoins()
	c.checkStepRefs()
	c.checkVariables()
	c.checkShapes()
}

func (c *compiler) collectNodes() {
	c.nodes = make([]cnode, 0, len(c.v.Nodes))
	c.byID = make(map[string]int32, len(c.v.Nodes))
	for i, vn := range c.v.Nodes {
		spec, known := c.canonicalType(vn.Type)
		var typ engine.NodeType
		var caps engine.Capabilities
		if known {
			typ, caps = spec.Type, spec.Caps
		} else {
			c.errorf(CodeUnknownType, vn.ID, "", nodePath(i)+".type", "node %q has unknown type %q (want %s)", vn.ID, vn.Type, c.typeNames())
		}
		cfg, ok := c.canonicalData(vn.Data, vn.ID, "", nodeLoc(i).field("data"))
		switch {
		case ok && known && ownRules(typ):
			c.validateNodeConfig(i, vn.ID, typ, cfg)
		case ok && known:
			c.checkAddedType(i, vn.ID, spec, cfg)
		}
		joinAny := false
		if ok && known {
			c.checkSetVariables(i, vn.ID, cfg)
			joinAny = c.checkJoin(i, vn.ID, spec, cfg)
		}
		if vn.ID == "" {
			c.errorf(CodeMissingID, "", "", nodePath(i)+".id", "node has an empty id")
			continue
		}
		if first, dup := c.byID[vn.ID]; dup {
			c.errorf(CodeDuplicateID, vn.ID, "", nodePath(i)+".id", "node id %q is already used by %s", vn.ID, nodePath(c.nodes[first].vi))
			continue
		}
		c.byID[vn.ID] = int32(len(c.nodes)) //nolint:gosec // G115: node counts are bounded by the request body limit
		c.nodes = append(c.nodes, cnode{id: vn.ID, vi: i, typ: typ, caps: caps, cfg: cfg, joinAny: joinAny})
	}
}

// canonicalData canonicalizes a node's or edge's data, which must be a JSON
// object or absent/null ({}).
func (c *compiler) canonicalData(data json.RawMessage, nodeID, edgeID string, at loc) (json.RawMessage, bool) {
	if len(data) == 0 {
		return json.RawMessage("{}"), true
	}
	cd, err := c.canon.canonical(data)
	if err != nil {
		c.errAt(CodeInvalidConfig, nodeID, edgeID, at, "data is not valid JSON")
		return nil, false
	}
	switch {
	case string(cd) == "null":
		return json.RawMessage("{}"), true
	case cd[0] != '{':
		c.errAt(CodeInvalidConfig, nodeID, edgeID, at, "data must be an object")
		return nil, false
	}
	return cd, true
}

func (c *compiler) collectEdges() {
	c.edges = make([]cedge, 0, len(c.v.Edges))
	edgeIDs := make(map[string]int, len(c.v.Edges))
	pairs := make(map[[2]int32]int, len(c.v.Edges))
	for i, ve := range c.v.Edges {
		if ve.ID == "" {
			c.errorf(CodeMissingID, "", "", edgePath(i)+".id", "edge %s → %s has an empty id", ve.Source, ve.Target)
		} else if first, dup := edgeIDs[ve.ID]; dup {
			c.errorf(CodeDuplicateID, "", ve.ID, edgePath(i)+".id", "edge id %q is already used by %s", ve.ID, edgePath(first))
		} else {
			edgeIDs[ve.ID] = i
		}
		src, srcOK := c.endpoint(ve, ve.Source, i, "source")
		dst, dstOK := c.endpoint(ve, ve.Target, i, "target")
		mapping, mapOK := c.edgeMapping(i, ve)
		rule, ruleOK := c.edgeRule(i, ve)
		maxIter, loopOK := c.edgeLoop(i, ve, &rule)
		if !srcOK || !dstOK || !mapOK || !ruleOK || !loopOK {
			continue
		}
		if rule.Loop {
			// Back edges stay out of the forward graph (checkLoops).
			c.loops = append(c.loops, cedge{vi: i, src: src, dst: dst, mapping: mapping, rule: rule, maxIter: maxIter})
			continue
		}
		if rule.Compensate {
			// Compensation edges stay out of the forward graph too
			// (checkCompensation).
			c.compensationEdge(i, ve, src, dst, mapping, rule)
			continue
		}
		if src == dst {
			c.hasCycle = true
			c.errorf(CodeCycle, ve.Source, ve.ID, edgePath(i), "cycle: %s → %s (edge %q joins a node to itself)", ve.Source, ve.Source, ve.ID)
			continue
		}
		pair := [2]int32{src, dst}
		if first, dup := pairs[pair]; dup {
			c.errorf(CodeDuplicateEdge, "", ve.ID, edgePath(i), "edge %q duplicates %s: both join %s → %s", ve.ID, edgePath(first), ve.Source, ve.Target)
			continue
		}
		pairs[pair] = i
		c.edges = append(c.edges, cedge{vi: i, src: src, dst: dst, mapping: mapping, rule: rule})
	}
}

func (c *compiler) endpoint(ve VisualEdge, id string, vi int, end string) (int32, bool) {
	if id == "" {
		c.errorf(CodeMissingNode, "", ve.ID, edgePath(vi)+"."+end, "edge %q has an empty %s", ve.ID, end)
		return -1, false
	}
	n, ok := c.byID[id]
	if !ok {
		c.errorf(CodeMissingNode, "", ve.ID, edgePath(vi)+"."+end, "edge %q: %s node %q does not exist", ve.ID, end, id)
		return -1, false
	}
	return n, true
}

func (c *compiler) buildAdjacency() {
	n := len(c.nodes)
	c.outStart = make([]int32, n+1)
	c.inStart = make([]int32, n+1)
	for _, e := range c.edges {
		c.outStart[e.src+1]++
		c.inStart[e.dst+1]++
	}
	for i := 0; i < n; i++ {
		c.outStart[i+1] += c.outStart[i]
		c.inStart[i+1] += c.inStart[i]
	}
	c.outList = make([]int32, len(c.edges))
	c.inList = make([]int32, len(c.edges))
	outPos := slices.Clone(c.outStart[:n])
	inPos := slices.Clone(c.inStart[:n])
	for k, e := range c.edges {
		c.outList[outPos[e.src]] = int32(k)
		outPos[e.src]++
		c.inList[inPos[e.dst]] = int32(k)
		inPos[e.dst]++
	}
}

func (c *compiler) checkIsolated() {
	if len(c.v.Nodes) < 2 {
		return
	}
	for i := range c.nodes {
		n := int32(i)
		if len(c.outEdges(n)) == 0 && len(c.inEdges(n)) == 0 && !c.onCompensation(n) {
			c.warnings = append(c.warnings, engine.Problem{
				Code: CodeIsolatedNode, NodeID: c.nodes[i].id, Path: nodePath(c.nodes[i].vi),
				Message: fmt.Sprintf("node %q is not connected to any other node", c.nodes[i].id),
			})
		}
	}
}

// sortTopologically runs Kahn's algorithm; nodes left over lie on or after
// a cycle.
func (c *compiler) sortTopologically() {
	n := len(c.nodes)
	indeg := make([]int32, n)
	c.order = make([]int32, 0, n)
	for i := 0; i < n; i++ {
		indeg[i] = c.inStart[i+1] - c.inStart[i]
		if indeg[i] == 0 {
			c.order = append(c.order, int32(i))
		}
	}
	for head := 0; head < len(c.order); head++ {
		for _, e := range c.outEdges(c.order[head]) {
			d := c.edges[e].dst
			indeg[d]--
			if indeg[d] == 0 {
				c.order = append(c.order, d)
			}
		}
	}
	if len(c.order) < n {
		c.hasCycle = true
	}
}

// reportCycles finds the strongly connected components of the nodes that
// Kahn's algorithm could not order (iterative Tarjan) and reports one cycle
// per component of two or more nodes, through its smallest id.
func (c *compiler) reportCycles() {
	n := len(c.nodes)
	ordered := make([]bool, n)
	for _, v := range c.order {
		ordered[v] = true
	}
	const unvisited = -1
	index := make([]int32, n)
	low := make([]int32, n)
	comp := make([]int32, n) // component number, -1 while on the stack or unvisited
	for i := range index {
		index[i], comp[i] = unvisited, unvisited
	}
	type callFrame struct {
		v   int32
		pos int32
	}
	var (
		next   int32
		stack  []int32
		calls  []callFrame
		ncomp  int32
		cycles [][]int32
	)
	for s := 0; s < n; s++ {
		if ordered[s] || index[s] != unvisited {
			continue
		}
		index[s], low[s] = next, next
		next++
		stack = append(stack, int32(s))
		calls = append(calls, callFrame{v: int32(s), pos: c.outStart[s]})
		for len(calls) > 0 {
			top := &calls[len(calls)-1]
			v := top.v
			if top.pos < c.outStart[v+1] {
				w := c.edges[c.outList[top.pos]].dst
				top.pos++
				switch {
				case ordered[w]:
				case index[w] == unvisited:
					index[w], low[w] = next, next
					next++
					stack = append(stack, w)
					calls = append(calls, callFrame{v: w, pos: c.outStart[w]})
				case comp[w] == unvisited: // on the stack
					low[v] = min(low[v], index[w])
				}
				continue
			}
			calls = calls[:len(calls)-1]
			if len(calls) > 0 {
				p := calls[len(calls)-1].v
				low[p] = min(low[p], low[v])
			}
			if low[v] != index[v] {
				continue
			}
			i := len(stack) - 1
			for stack[i] != v {
				i--
			}
			members := stack[i:]
			for _, m := range members {
				comp[m] = ncomp
			}
			ncomp++
			if len(members) > 1 {
				cycles = append(cycles, slices.Clone(members))
			}
			stack = stack[:i]
		}
	}

	// One cycle per component: the shortest cycle through its smallest id,
	// found by a breadth-first search inside the component.
	parent := make([]int32, n)
	seen := make([]bool, n)
	for _, members := range cycles {
		start := members[0]
		for _, m := range members[1:] {
			if c.nodes[m].id < c.nodes[start].id {
				start = m
			}
		}
		cid := comp[start]
		queue := []int32{start}
		seen[start] = true
		last := int32(-1)
	search:
		for head := 0; head < len(queue); head++ {
			v := queue[head]
			for _, e := range c.outEdges(v) {
				w := c.edges[e].dst
				if comp[w] != cid {
					continue
				}
				if w == start {
					last = v
					break search
				}
				if !seen[w] {
					seen[w] = true
					parent[w] = v
					queue = append(queue, w)
				}
			}
		}
		var path []string
		for v := last; v != start; v = parent[v] {
			path = append(path, c.nodes[v].id)
		}
		path = append(path, c.nodes[start].id)
		slices.Reverse(path)
		path = append(path, c.nodes[start].id)
		c.errorf(CodeCycle, c.nodes[start].id, "", nodePath(c.nodes[start].vi), "cycle: %s", strings.Join(path, " → "))
	}
}

// build assembles the execution graph of a valid graph.
func (c *compiler) build() *engine.ExecutionGraph {
	n := len(c.nodes)
	g := &engine.ExecutionGraph{
		Nodes:         make(map[string]*engine.Node, n),
		Adjacency:     make(map[string][]string, n),
		Upstream:      make(map[string][]string, n),
		EdgeData:      map[string]map[string]string{},
		EntryNodes:    []string{},
		TerminalNodes: []string{},
		Regions:       make(map[string]*engine.Region),
		Warnings:      c.warnings,
		Secrets:       c.secrets,
		SetVariables:  c.setVariables(),
	}
	slab := make([]engine.Node, n)
	down := make([]string, len(c.edges))
	up := make([]string, len(c.edges))
	for i := range c.nodes {
		nd := &c.nodes[i]
		v := int32(i)
		st := c.stack[i]
		slab[i] = engine.Node{ID: nd.id, Type: nd.typ, Config: nd.cfg, Depth: st.depthOf(), Caps: nd.caps}
		if st != nil {
			slab[i].Region = c.nodes[st.splitter].id
		}
		g.Nodes[nd.id] = &slab[i]

		lo, hi := c.outStart[i], c.outStart[i+1]
		for k := lo; k < hi; k++ {
			down[k] = c.nodes[c.edges[c.outList[k]].dst].id
		}
		g.Adjacency[nd.id] = down[lo:hi:hi]
		lo, hi = c.inStart[i], c.inStart[i+1]
		for k := lo; k < hi; k++ {
			up[k] = c.nodes[c.edges[c.inList[k]].src].id
		}
		g.Upstream[nd.id] = up[lo:hi:hi]

		// An undo node runs only when the run is compensated: neither an
		// entry nor a terminal node.
		if len(c.inEdges(v)) == 0 && !c.isUndo(v) {
			g.EntryNodes = append(g.EntryNodes, nd.id)
		}
		if len(c.outEdges(v)) == 0 && !c.isUndo(v) {
			g.TerminalNodes = append(g.TerminalNodes, nd.id)
		}
	}
	for _, e := range c.edges {
		if len(e.mapping) > 0 {
			g.EdgeData[engine.EdgeKey(c.nodes[e.src].id, c.nodes[e.dst].id)] = e.mapping
		}
	}
	slices.Sort(g.EntryNodes)
	slices.Sort(g.TerminalNodes)
	c.buildRegions(g)
	c.buildBranches(g)
	c.buildLoops(g)
	c.buildCompensation(g)
	c.buildJoins(g)
	g.DeadlineSeconds = c.deadline
	g.RetentionDays = c.retention
	g.EntityConcurrency = c.entityConcurrency
	return g
}
