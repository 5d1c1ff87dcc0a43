package engine

import (
	"encoding/json"
	"maps"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// ExecutionGraph is the lean, validated form of a visual graph that the
// engine walks. It is produced by compiler.Compile, stored as JSON beside the
// visual graph in an immutable flow version, and never mutated afterwards.
type ExecutionGraph struct {
	// Workspace is the workspace of the flow the version is of (set as it
	// is loaded, not stored in the graph): its runs' deliveries are shared
	// out by it (docs/workspaces.md#fairness).
	Workspace string `json:"-"`
	// FlowID is the flow the version is of (set as it is loaded): a
	// speculated step's run, not read, names its flow by it.
	FlowID string `json:"-"`
	// Nodes by id: id, type and config (no positions or styles).
	Nodes map[string]*Node `json:"nodes"`
	// Adjacency maps a node id to its downstream node ids, in edge order.
	Adjacency map[string][]string `json:"adjacency"`
	// Upstream maps a node id to its upstream node ids, in edge order.
	Upstream map[string][]string `json:"upstream"`
	// EdgeData holds edge mappings keyed "source->target": target input key
	// → gjson path into the upstream output.
	EdgeData map[string]map[string]string `json:"edgeData"`
	// SetVariables are the run variables a node sets when it completes:
	// node id → variable name → expression (CompileVariable).
	SetVariables map[string]map[string]string `json:"setVariables,omitempty"`
	// EntryNodes have no inbound edges; sorted.
	EntryNodes []string `json:"entryNodes"`
	// TerminalNodes have no outbound edges; sorted.
	TerminalNodes []string `json:"terminalNodes"`
	// Regions maps each Splitter id to its parallel region.
	Regions map[string]*Region `json:"regions"`
	// Branches holds, for each node with at least one conditional,
	// default, outcome or failure edge, the rules of all its outbound
	// edges in edge order. A node not in it has plain edges only: all
	// taken when it completes. A graph without branches runs exactly as
	// before they existed.
	Branches map[string][]EdgeRule `json:"branches,omitempty"`
	// MaySkip holds the nodes downstream of a node with branches: only
	// they can have an inbound edge not taken, so only their readiness
	// looks at which edges were taken (a plain graph never does).
	MaySkip map[string]bool `json:"maySkip,omitempty"`
	// DeadlineSeconds is the flow's run deadline (settings.deadlineSeconds;
	// 0: none).
	DeadlineSeconds int `json:"deadlineSeconds,omitempty"`
	// RetentionDays keeps the flow's finished runs that many days
	// (settings.retentionDays; 0: the server's --retention).
	RetentionDays int `json:"retentionDays,omitempty"`
	// EntityConcurrency is what starting a run for an entity with a run
	// of the flow still active does (settings.entityConcurrency): allow,
	// skip or queue ("": queue).
	EntityConcurrency string `json:"entityConcurrency,omitempty"`
	// Loops are the graph's loops (back edges marked data.loop); LoopOf
	// maps each node on one to its index in Loops.
	Loops  []Loop         `json:"loops,omitempty"`
	LoopOf map[string]int `json:"loopOf,omitempty"`
	// Warnings are problems that do not stop the graph from running
	// (isolated nodes, for example).
	Warnings []Problem `json:"warnings,omitempty"`
	// Secrets are the graph's {{ secret "NAME" }} references, in node
	// order (names only: values are never in a graph).
	Secrets []SecretRef `json:"secrets,omitempty"`
	// Compensation maps each step with an undo node (an edge marked
	// data.on "compensate") to that node. Undo nodes stay out of the
	// forward graph: no row at a run's start, neither entry nor terminal
	// nodes; they run only when the run is compensated (compensate.go).
	Compensation map[string]string `json:"compensation,omitempty"`
	// JoinAny holds the nodes with data.join "any" (fired by their first
	// upstream arrival), each with the nodes its firing cancels: those
	// upstream of it whose every path leads through it (docs/state_machine.md).
	JoinAny map[string][]string `json:"joinAny,omitempty"`

	// undoOf maps an undo node to its step (Compensation reversed), set at
	// load (Prepare).
	undoOf map[string]string
}

// Prepare sets what the engine derives from a loaded graph — undo nodes
// by id, the nodes a join's first arrival may cancel — once, before the
// graph is shared.
func (g *ExecutionGraph) Prepare() {
	for _, ids := range g.JoinAny {
		for _, id := range ids {
			if n := g.Nodes[id]; n != nil {
				n.joinBranch = true
			}
		}
	}
	if len(g.Compensation) == 0 {
		return
	}
	g.undoOf = make(map[string]string, len(g.Compensation))
	for step, undo := range g.Compensation {
		g.undoOf[undo] = step
	}
}

// UndoStep returns the step whose undo node id is ("" when id is no undo
// node).
func (g *ExecutionGraph) UndoStep(id string) string {
	if g.undoOf == nil {
		return ""
	}
	return g.undoOf[id]
}

// SecretRef is one use of a secret in a node's templates.
type SecretRef struct {
	NodeID string `json:"node_id"`
	// Path is the templated string's JSON path in the visual graph.
	Path string `json:"path"`
	Name string `json:"name"`
	// HostTemplated: the node's url takes its host from a template, so
	// the secret may be used only if it has allowed hosts.
	HostTemplated bool `json:"host_templated,omitempty"`
}

// Node is one node of an execution graph.
type Node struct {
	ID     string          `json:"id"`
	Type   NodeType        `json:"type"`
	Config json.RawMessage `json:"config"`
	// Region is the id of the innermost Splitter whose parallel region holds
	// this node, or "" for a static node.
	Region string `json:"region,omitempty"`
	// Depth is the number of parallel regions enclosing the node: 0 for a
	// static node, 1 inside one Splitter, 2 inside a nested one, ...
	Depth int `json:"depth"`
	// SubFlow is the flow version a SubFlow node starts, resolved and
	// pinned when the flow version was saved (compiler.LinkSubFlows).
	SubFlow *SubFlowTarget `json:"subFlow,omitempty"`
	// Caps are its type's capabilities (NodeTypeSpec.Caps), set from the
	// registry when the graph is compiled and again when the engine loads
	// it: never stored, so a graph saved before a type gained one has it.
	Caps Capabilities `json:"-"`
	// joinBranch: a join's first arrival may cancel or skip the node
	// (ExecutionGraph.JoinAny), so its start is never taken for granted
	// (soleParent); set by Prepare.
	joinBranch bool
}

// SetCaps sets every node's capabilities from caps, by type.
func (g *ExecutionGraph) SetCaps(caps map[NodeType]Capabilities) {
	for _, n := range g.Nodes {
		n.Caps = caps[n.Type]
	}
}

// SubFlowVersions lists the flow versions the graph's SubFlow nodes run,
// by node id.
func (g *ExecutionGraph) SubFlowVersions() []string {
	var ids []string
	for _, id := range slices.Sorted(maps.Keys(g.Nodes)) {
		if sf := g.Nodes[id].SubFlow; sf != nil {
			ids = append(ids, sf.VersionID)
		}
	}
	return ids
}

// SubFlowTarget is the flow version a SubFlow node runs.
type SubFlowTarget struct {
	FlowID    string `json:"flowId"`
	FlowName  string `json:"flowName"`
	VersionID string `json:"versionId"`
	Version   int    `json:"version"`
}

// Region is the parallel region of one Splitter: every node strictly
// between the Splitter and its Collector.
type Region struct {
	Splitter  string `json:"splitter"`
	Collector string `json:"collector"`
	// Parent is the enclosing Splitter's id, or "" for a top-level region.
	Parent string `json:"parent,omitempty"`
	// Members are all nodes strictly inside the region, nested regions
	// included; sorted.
	Members []string `json:"members"`
	// Direct are the members whose innermost region is this one (the nodes
	// instantiated once per item when this Splitter fires); sorted.
	Direct []string `json:"direct"`
}

// Problem is one validation finding about a graph, addressed so that a UI
// can paint it on the canvas.
type Problem struct {
	Code    string `json:"code"`
	NodeID  string `json:"node_id,omitempty"`
	EdgeID  string `json:"edge_id,omitempty"`
	Path    string `json:"path"`
	Message string `json:"message"`
}

// EdgeRule says when one outbound edge of a node is taken.
type EdgeRule struct {
	// ID is the visual edge's id; Target its target node.
	ID     string `json:"id"`
	Target string `json:"target"`
	// Condition, an expr-lang expression over output, input, run and
	// entity: taken when it is true after the source completes.
	Condition string `json:"condition,omitempty"`
	// Default: taken when no conditional or outcome edge of the source was.
	Default bool `json:"default,omitempty"`
	// OnFailure: taken only when the source fails for good (the failure is
	// then handled); every other edge is taken only on completion.
	OnFailure bool `json:"onFailure,omitempty"`
	// Outcome: taken when a person chose this outcome of a UX node.
	Outcome string `json:"outcome,omitempty"`
	// Loop: the edge leads back to its loop's head (Loop); taking it
	// starts a new iteration.
	Loop bool `json:"loop,omitempty"`
	// Compensate: the edge (data.on "compensate") links a step to its
	// undo node; it is never walked (ExecutionGraph.Compensation).
	Compensate bool `json:"compensate,omitempty"`
}

// Plain reports whether the edge is taken whenever its source completes.
func (r EdgeRule) Plain() bool {
	return r.Condition == "" && !r.Default && !r.OnFailure && r.Outcome == "" && !r.Compensate
}

// EdgeKey is the key of an edge in ExecutionGraph.EdgeData.
func EdgeKey(source, target string) string { return source + "->" + target }

// parseKey finds the node and index path of an instance key (InstanceKey
// reversed). A node id may itself end in "_<digits>", so every split is
// tried; ok is false unless exactly one names a node of the graph at the
// depth its index path has.
func (g *ExecutionGraph) parseKey(key string) (n *Node, idx []int, ok bool) {
	if m := g.Nodes[key]; m != nil && m.Depth == 0 {
		n, ok = m, true
	}
	var rev []int
	for end := len(key); ; {
		i := strings.LastIndexByte(key[:end], '_')
		if i < 0 || i == end-1 {
			break
		}
		v, err := strconv.Atoi(key[i+1 : end])
		if err != nil || v < 0 || strconv.Itoa(v) != key[i+1:end] {
			break
		}
		rev = append(rev, v)
		end = i
		if m := g.Nodes[key[:end]]; m != nil && m.Depth == len(rev) {
			if ok {
				return nil, nil, false // ambiguous
			}
			n, ok = m, true
			idx = make([]int, len(rev))
			for j := range rev {
				idx[j] = rev[len(rev)-1-j]
			}
		}
	}
	if !ok {
		return nil, nil, false
	}
	if idx == nil {
		idx = []int{}
	}
	return n, idx, true
}

// sortedStatic lists the graph's static (depth 0) node ids, sorted: the
// nodes a run has a row of from its start (undo nodes get theirs when the
// run is compensated).
func sortedStatic(g *ExecutionGraph) []string {
	ids := make([]string, 0, len(g.Nodes))
	for id, n := range g.Nodes {
		if n.Depth == 0 && g.UndoStep(id) == "" {
			ids = append(ids, id)
		}
	}
	sort.Strings(ids)
	return ids
}
