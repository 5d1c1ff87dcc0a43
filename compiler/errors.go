package compiler

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/stitchd/stitchd/engine"
)

// Problem codes. They are part of the API (the UI and API clients switch on
// them); never change one, only add.
const (
	// CodeEmptyGraph: the graph has no nodes (path "nodes").
	CodeEmptyGraph = "empty_graph"
	// CodeMissingID: a node or edge has an empty id.
	CodeMissingID = "missing_id"
	// CodeDuplicateID: two nodes, or two edges, share an id.
	CodeDuplicateID = "duplicate_id"
	// CodeUnknownType: a node's type is not in the type table.
	CodeUnknownType = "unknown_type"
	// CodeMissingNode: an edge's source or target names no node.
	CodeMissingNode = "missing_node"
	// CodeDuplicateEdge: two edges join the same source to the same target.
	CodeDuplicateEdge = "duplicate_edge"
	// CodeCycle: the graph has a cycle (self-loops included).
	CodeCycle = "cycle"
	// CodeInvalidConfig: a node's (or edge's) data has a wrong shape or value.
	CodeInvalidConfig = "invalid_config"
	// CodeInvalidWebhookURL: a Worker's webhookUrl is missing or is not an
	// absolute http(s) URL with a host.
	CodeInvalidWebhookURL = "invalid_webhook_url"
	// CodeMissingArrayPath: a Splitter has no arrayPath.
	CodeMissingArrayPath = "missing_array_path"
	// CodeInvalidMapping: an edge's data.mapping is not an object of
	// non-empty gjson path strings.
	CodeInvalidMapping = "invalid_mapping"
	// CodeUnknownSection: an entityMovement targets a section that is not on
	// the flow's board.
	CodeUnknownSection = "unknown_section"
	// CodeNoCollector: a path from a Splitter ends without reaching its
	// Collector.
	CodeNoCollector = "no_collector"
	// CodeMultipleCollectors: the paths from a Splitter reach different
	// Collectors.
	CodeMultipleCollectors = "multiple_collectors"
	// CodeOrphanCollector: a Collector closes no Splitter.
	CodeOrphanCollector = "orphan_collector"
	// CodeRegionBoundary: an edge crosses the boundary of a parallel region
	// other than through its Splitter or Collector (or joins a Splitter
	// directly to its own Collector).
	CodeRegionBoundary = "region_boundary"
	// CodeNestingTooDeep: parallel regions are nested more than
	// MaxNestingDepth levels deep.
	CodeNestingTooDeep = "nesting_too_deep"
	// CodeKeyCollision: a node's id could equal a runtime instance key
	// (<id>_<i>, <id>_<i>_<j>, …) of a parallel node.
	CodeKeyCollision = "key_collision"
	// CodeInvalidCondition: an edge's data.condition does not compile, names
	// an unknown variable or does not give a bool.
	CodeInvalidCondition = "invalid_condition"
	// CodeInvalidBranch: an edge's branch rule does not fit its source
	// (a second default edge, an outcome the UX node does not have, an
	// outcome edge from a node that is not UX, a rule on a Splitter's edge)
	// or mixes rules.
	CodeInvalidBranch = "invalid_branch"
	// CodeInvalidExpression: a node's expression (a Transform's) does not
	// compile or names an unknown variable.
	CodeInvalidExpression = "invalid_expression"
	// CodeInvalidLoop: a loop edge (data.loop) is malformed or does not
	// close a loop the engine can run.
	CodeInvalidLoop = "invalid_loop"
	// CodeInvalidForm: a UX node's data.form is not a JSON object that
	// compiles as a draft 2020-12 JSON Schema (or refers to a schema by
	// URL, which stitchd never loads). Path locates the problem inside the
	// form (nodes[i].data.form.properties.amount.minimum).
	CodeInvalidForm = "invalid_form"
	// CodeInvalidCompensation: an edge marked data.on "compensate" (a step
	// → its undo node) does not fit: the undo node has another edge, the
	// step has two undo nodes, lies in a parallel region or on a loop, or
	// the edge carries a mapping.
	CodeInvalidCompensation = "invalid_compensation"
	// CodeInvalidJoin: a node's data.join is neither "all" nor "any", or
	// is "any" on a node that cannot take it (a Collector).
	CodeInvalidJoin = "invalid_join"
	// CodeIsolatedNode (warning): a node has no edges in a graph of several
	// nodes.
	CodeIsolatedNode = "isolated_node"
	// CodeUnknownField (warning): a node's data, or the flow's settings,
	// has a field nothing reads — likely a typo; the message names the
	// nearest known field.
	CodeUnknownField = "unknown_field"
	// CodeUnknownPath (warning): an expression reads a field of input or
	// output that the step that makes it cannot have (after an HTTP step,
	// input is its response {status, headers, body}); the message says
	// where the field is.
	CodeUnknownPath = "unknown_path"
	// CodeUnknownSecret (warning, added by the server when a flow is
	// saved): a {{ secret "NAME" }} names no stored secret; the node fails
	// when it runs unless the secret is set by then.
	CodeUnknownSecret = "unknown_secret"
	// CodeSecretsOff (warning, added by the server): the flow uses secrets
	// and the server has no STITCHD_SECRET_KEY, so it can read none.
	CodeSecretsOff = "secrets_off"
	// CodeSecretHost (an error, added by the server when a flow is saved):
	// an HTTP node whose url takes its scheme, host or port from a template
	// uses a secret without allowed_hosts — whoever supplies the input
	// would choose where the secret goes.
	CodeSecretHost = "secret_host"
)

// MaxNestingDepth is the deepest nesting of parallel regions the compiler
// accepts. It bounds the instance-key length and the size of the Members
// lists of an execution graph.
const MaxNestingDepth = 32

// Error is returned by Compile when validation fails. It carries every
// problem found (not only the first), in a deterministic order: whole-graph
// problems first, then node problems by node position, then edge problems
// by edge position. Warnings are not included.
type Error struct {
	Problems []engine.Problem
}

const maxProblemsInMessage = 10

func (e *Error) Error() string {
	if len(e.Problems) == 0 {
		return "invalid graph"
	}
	var b strings.Builder
	b.WriteString("invalid graph: ")
	for i, p := range e.Problems {
		if i == maxProblemsInMessage {
			fmt.Fprintf(&b, "; and %d more", len(e.Problems)-i)
			break
		}
		if i > 0 {
			b.WriteString("; ")
		}
		b.WriteString(p.Path)
		b.WriteString(": ")
		b.WriteString(p.Message)
	}
	return b.String()
}

// sortProblems sorts problems by location (whole graph, nodes by index,
// edges by index); the stable sort keeps the order in which checks ran for
// problems at the same location.
func sortProblems(ps []engine.Problem) {
	slices.SortStableFunc(ps, func(a, b engine.Problem) int {
		ka, ia := pathOrder(a.Path)
		kb, ib := pathOrder(b.Path)
		if ka != kb {
			return ka - kb
		}
		return ia - ib
	})
}

func pathOrder(path string) (kind, index int) {
	var rest string
	switch {
	case strings.HasPrefix(path, "nodes["):
		kind, rest = 1, path[len("nodes["):]
	case strings.HasPrefix(path, "edges["):
		kind, rest = 2, path[len("edges["):]
	default:
		return 0, 0
	}
	end := strings.IndexByte(rest, ']')
	if end < 0 {
		return kind, 0
	}
	n, _ := strconv.Atoi(rest[:end])
	return kind, n
}

// loc is a location in the visual graph whose path string is only built
// when a problem is reported there.
type loc struct {
	list   string // "nodes" or "edges"
	index  int
	n      int
	fields [6]string
}

func nodeLoc(i int) loc { return loc{list: "nodes", index: i} }
func edgeLoc(i int) loc { return loc{list: "edges", index: i} }

// field returns the location of a field (an object key) of l.
func (l loc) field(name string) loc {
	l.fields[l.n] = name
	l.n++
	return l
}

func (l loc) String() string {
	p := l.list + "[" + strconv.Itoa(l.index) + "]"
	for _, f := range l.fields[:l.n] {
		p = fieldPath(p, f)
	}
	return p
}

func nodePath(i int) string { return "nodes[" + strconv.Itoa(i) + "]" }

func edgePath(i int) string { return "edges[" + strconv.Itoa(i) + "]" }

// fieldPath appends a key to a path: ".key" when the key is a plain
// identifier, `["key"]` otherwise.
func fieldPath(base, key string) string {
	if isIdentifier(key) {
		return base + "." + key
	}
	q, _ := json.Marshal(key)
	return base + "[" + string(q) + "]"
}

func isIdentifier(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		b := s[i]
		if b == '_' || (b >= 'a' && b <= 'z') || (b >= 'A' && b <= 'Z') || (i > 0 && b >= '0' && b <= '9') {
			continue
		}
		return false
	}
	return true
}
