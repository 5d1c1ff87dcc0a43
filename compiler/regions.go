package compiler

import (
	"fmt"
	"slices"
	"strings"

	"github.com/stitchd/stitchd/engine"
)

// frame is one open parallel region on a path: the Splitter that opened it
// and the enclosing region. Each Splitter opens exactly one frame, so two
// nodes lie in the same nest of regions exactly when their frame pointers
// are equal.
type frame struct {
	splitter int32 // node index of the Splitter
	depth    int32 // number of frames from here to the outermost, inclusive
	parent   *frame
}

func (f *frame) depthOf() int {
	if f == nil {
		return 0
	}
	return int(f.depth)
}

// analyzeRegions computes the parallel regions of an acyclic graph in one
// pass over the nodes in topological order.
//
// Every node has a stack of open regions (a *frame, nil for none). The
// stack that flows out of a node along its edges is the node's own stack,
// with the Splitter's region pushed for a Splitter. A Collector closes (pops)
// the innermost region flowing into it. All the edges into a node must carry
// the same stack; an edge that does not crosses a region boundary (it enters
// a region from outside, leaves one other than through its Collector, or
// joins a node at two nesting levels). This is the per-Splitter forward walk
// of the specification (entering a Splitter raises the level, a Collector
// lowers it, the Collector reached at level 0 closes the Splitter) done for
// all Splitters at once, in O(nodes + edges).
func (c *compiler) analyzeRegions() {
	n := len(c.nodes)
	c.stack = make([]*frame, n)
	c.collectorOf = make([]int32, n)
	splitters := 0
	for i := range c.nodes {
		c.collectorOf[i] = -1
		if c.nodes[i].caps.FansOut {
			splitters++
		}
	}
	out := make([]*frame, n)
	frames := make([]frame, 0, splitters) // never reallocated: frames are pointed to
	var extraCollectors map[int32][]int32

	for _, v := range c.order {
		in := c.inEdges(v)
		var st *frame
		if len(in) > 0 {
			// The stack of the node comes from its first inbound edge, or from
			// its first Splitter or Collector upstream (their edges say the
			// most about where the node belongs); other edges are checked
			// against it.
			ref := in[0]
			for _, e := range in {
				if k := c.nodes[c.edges[e].src].caps; k.FansOut || k.Collects {
					ref = e
					break
				}
			}
			st = out[c.edges[ref].src]
			for _, e := range in {
				u := c.edges[e].src
				if c.nodes[u].caps.FansOut && c.nodes[v].caps.Collects {
					ve := c.v.Edges[c.edges[e].vi]
					c.errorf(CodeRegionBoundary, c.nodes[u].id, ve.ID, edgePath(c.edges[e].vi),
						"edge %q joins splitter %q directly to collector %q: a parallel region needs at least one node between them",
						ve.ID, c.nodes[u].id, c.nodes[v].id)
					continue
				}
				if out[u] != st {
					c.reportCrossing(e, out[u], st)
				}
			}
		}
		switch k := c.nodes[v].caps; {
		case k.Collects:
			if st == nil {
				c.errorf(CodeOrphanCollector, c.nodes[v].id, "", nodePath(c.nodes[v].vi),
					"collector %q closes no splitter: no splitter's parallel region leads into it", c.nodes[v].id)
				break
			}
			s := st.splitter
			switch first := c.collectorOf[s]; {
			case first == -1:
				c.collectorOf[s] = v
			case first != v:
				if extraCollectors == nil {
					extraCollectors = make(map[int32][]int32)
				}
				extraCollectors[s] = append(extraCollectors[s], v)
			}
			c.stack[v] = st.parent
			out[v] = st.parent
		case k.FansOut:
			c.stack[v] = st
			depth := int32(st.depthOf() + 1) //nolint:gosec // G115: nesting stops at MaxNestingDepth, checked below
			if depth == MaxNestingDepth+1 {
				c.errorf(CodeNestingTooDeep, c.nodes[v].id, "", nodePath(c.nodes[v].vi),
					"splitter %q opens a parallel region nested %d levels deep; at most %d levels are allowed", c.nodes[v].id, depth, MaxNestingDepth)
			}
			frames = append(frames, frame{splitter: v, depth: depth, parent: st})
			out[v] = &frames[len(frames)-1]
		default:
			c.stack[v] = st
			out[v] = st
		}
	}

	// A path that ends while a region is still open never reaches the
	// region's Collector.
	for i := range c.nodes {
		v := int32(i)
		f := out[v]
		if f == nil || len(c.outEdges(v)) > 0 {
			continue
		}
		id := c.nodes[v].id
		if f.splitter == v {
			c.errorf(CodeNoCollector, id, "", nodePath(c.nodes[v].vi),
				"splitter %q has no outgoing edges: its parallel region never reaches a collector", id)
			continue
		}
		c.errorf(CodeNoCollector, id, "", nodePath(c.nodes[v].vi),
			"a path from splitter %q ends at node %q without reaching a collector", c.nodes[f.splitter].id, id)
	}

	for i := range c.nodes {
		s := int32(i)
		extra, ok := extraCollectors[s]
		if !ok {
			continue
		}
		ids := []string{c.nodes[c.collectorOf[s]].id}
		for _, x := range extra {
			ids = append(ids, c.nodes[x].id)
		}
		slices.Sort(ids)
		c.errorf(CodeMultipleCollectors, c.nodes[s].id, "", nodePath(c.nodes[s].vi),
			"the paths from splitter %q reach different collectors (%s); they must all meet at one", c.nodes[s].id, strings.Join(ids, ", "))
	}
}

// reportCrossing reports edge e, which carries the region stack have into a
// node whose stack is want.
func (c *compiler) reportCrossing(e int32, have, want *frame) {
	ce := c.edges[e]
	ve := c.v.Edges[ce.vi]
	u, v := c.nodes[ce.src].id, c.nodes[ce.dst].id
	common := commonFrame(have, want)
	h, w := frameBelow(have, common), frameBelow(want, common)
	var detail string
	switch {
	case c.nodes[ce.dst].caps.Collects && want != nil && h == nil:
		detail = fmt.Sprintf("collector %q gathers the parallel region of splitter %q, so every edge into it must come from inside that region",
			v, c.nodes[want.splitter].id)
	case w == nil:
		detail = fmt.Sprintf("it leaves the parallel region of splitter %q, which %q is not part of, without passing through the region's collector",
			c.nodes[h.splitter].id, v)
	case h == nil:
		detail = fmt.Sprintf("%q is inside the parallel region of splitter %q, which may only be entered from its splitter",
			v, c.nodes[w.splitter].id)
	default:
		detail = fmt.Sprintf("it joins the parallel region of splitter %q to the parallel region of splitter %q",
			c.nodes[h.splitter].id, c.nodes[w.splitter].id)
	}
	c.errorf(CodeRegionBoundary, v, ve.ID, edgePath(ce.vi), "edge %q (%s → %s) crosses a parallel-region boundary: %s", ve.ID, u, v, detail)
}

// commonFrame returns the innermost region enclosing both a and b.
func commonFrame(a, b *frame) *frame {
	for a.depthOf() > b.depthOf() {
		a = a.parent
	}
	for b.depthOf() > a.depthOf() {
		b = b.parent
	}
	for a != b {
		a, b = a.parent, b.parent
	}
	return a
}

// frameBelow returns the frame of f's chain just inside ancestor, or nil
// when f is ancestor.
func frameBelow(f, ancestor *frame) *frame {
	if f == ancestor {
		return nil
	}
	for f.parent != ancestor {
		f = f.parent
	}
	return f
}

// checkKeyCollisions rejects every node whose id could equal an instance key
// <p>_<i>[_<j>…] of a parallel node p. For each id it strips trailing
// _<digits> groups one at a time and looks the prefix up among the parallel
// ids: O(total id length).
func (c *compiler) checkKeyCollisions() {
	var parallel map[string]struct{}
	for i := range c.nodes {
		if c.stack[i] != nil {
			if parallel == nil {
				parallel = make(map[string]struct{})
			}
			parallel[c.nodes[i].id] = struct{}{}
		}
	}
	if parallel == nil {
		return
	}
	for i := range c.nodes {
		id := c.nodes[i].id
		prefix := id
		for {
			j := strings.LastIndexByte(prefix, '_')
			if j < 0 || !allDigits(prefix[j+1:]) {
				break
			}
			prefix = prefix[:j]
			if _, ok := parallel[prefix]; ok {
				c.errorf(CodeKeyCollision, id, "", nodePath(c.nodes[i].vi)+".id",
					"node id %q could equal a runtime instance key of parallel node %q (%s_<i>…); rename one of them", id, prefix, prefix)
				break
			}
		}
	}
}

func allDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// buildRegions fills g.Regions for a valid graph. Members and Direct come
// out sorted because nodes are visited in id order.
func (c *compiler) buildRegions(g *engine.ExecutionGraph) {
	n := len(c.nodes)
	var splitters []int32
	for i := range c.nodes {
		if c.nodes[i].caps.FansOut {
			splitters = append(splitters, int32(i))
		}
	}
	if len(splitters) == 0 {
		return
	}
	memCount := make([]int32, n)
	dirCount := make([]int32, n)
	totalMem, totalDir := 0, 0
	for i := range c.nodes {
		st := c.stack[i]
		if st == nil {
			continue
		}
		dirCount[st.splitter]++
		totalDir++
		for f := st; f != nil; f = f.parent {
			memCount[f.splitter]++
			totalMem++
		}
	}
	memSlab := make([]string, totalMem)
	dirSlab := make([]string, totalDir)
	members := make([][]string, n)
	direct := make([][]string, n)
	mpos, dpos := 0, 0
	regions := make([]engine.Region, len(splitters))
	for k, s := range splitters {
		members[s] = memSlab[mpos : mpos : mpos+int(memCount[s])]
		mpos += int(memCount[s])
		direct[s] = dirSlab[dpos : dpos : dpos+int(dirCount[s])]
		dpos += int(dirCount[s])
		r := &regions[k]
		r.Splitter = c.nodes[s].id
		if col := c.collectorOf[s]; col >= 0 {
			r.Collector = c.nodes[col].id
		}
		if p := c.stack[s]; p != nil {
			r.Parent = c.nodes[p.splitter].id
		}
		g.Regions[r.Splitter] = r
	}
	byID := make([]int32, n)
	for i := range byID {
		byID[i] = int32(i)
	}
	slices.SortFunc(byID, func(a, b int32) int { return strings.Compare(c.nodes[a].id, c.nodes[b].id) })
	for _, v := range byID {
		st := c.stack[v]
		if st == nil {
			continue
		}
		id := c.nodes[v].id
		direct[st.splitter] = append(direct[st.splitter], id)
		for f := st; f != nil; f = f.parent {
			members[f.splitter] = append(members[f.splitter], id)
		}
	}
	for k, s := range splitters {
		regions[k].Members = members[s]
		regions[k].Direct = direct[s]
	}
}
