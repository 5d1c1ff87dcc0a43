package compiler_test

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/stitchd/stitchd/compiler"
	"github.com/stitchd/stitchd/engine"
)

func TestCompileAPIExample(t *testing.T) {
	t.Parallel()
	v, err := compiler.ParseVisual([]byte(apiExample))
	require.NoError(t, err)
	eg := compileOK(t, v, compiler.Options{BoardSections: []string{"qualified", "nurture"}})

	want := &engine.ExecutionGraph{
		Nodes: map[string]*engine.Node{
			"fetch": {ID: "fetch", Type: engine.NodeTypeWorker, Config: json.RawMessage(
				`{"entityMovement":{"onFailure":{"completeAs":"neutral","targetSectionId":"nurture"},` +
					`"onSuccess":{"completeAs":"success","setEntityType":"customer","targetSectionId":"qualified"}},` +
					`"label":"Fetch leads","retry":{"backoff":"exponential","initialDelayMs":1000,"maxAttempts":3,"maxDelayMs":60000},` +
					`"timeoutSeconds":300,"webhookUrl":"http://worker.local/fetch"}`), Caps: engine.Capabilities{CallsBack: true}},
			"split": {ID: "split", Type: engine.NodeTypeSplitter, Config: json.RawMessage(`{"arrayPath":"leads"}`), Caps: engine.Capabilities{FansOut: true}},
			"score": {ID: "score", Type: engine.NodeTypeWorker, Config: json.RawMessage(`{"webhookUrl":"http://worker.local/score"}`), Region: "split", Depth: 1,
				Caps: engine.Capabilities{CallsBack: true}},
			"merge":   {ID: "merge", Type: engine.NodeTypeCollector, Config: json.RawMessage(`{}`), Caps: engine.Capabilities{Collects: true}},
			"approve": {ID: "approve", Type: engine.NodeTypeUX, Config: json.RawMessage(`{"label":"Approve the batch","prompt":"Send these leads to sales?"}`), Caps: engine.Capabilities{WaitsForPerson: true}},
		},
		Adjacency: map[string][]string{
			"fetch": {"split"}, "split": {"score"}, "score": {"merge"}, "merge": {"approve"}, "approve": {},
		},
		Upstream: map[string][]string{
			"fetch": {}, "split": {"fetch"}, "score": {"split"}, "merge": {"score"}, "approve": {"merge"},
		},
		EdgeData:      map[string]map[string]string{"merge->approve": {"scores": "@this"}},
		EntryNodes:    []string{"fetch"},
		TerminalNodes: []string{"approve"},
		Regions: map[string]*engine.Region{
			"split": {Splitter: "split", Collector: "merge", Members: []string{"score"}, Direct: []string{"score"}},
		},
	}
	require.Equal(t, want, eg)
	require.JSONEq(t, string(mustJSON(t, want)), string(mustJSON(t, eg)))

	// The JSON form is uniform: empty lists are [], never null.
	b := string(mustJSON(t, eg))
	require.Contains(t, b, `"approve":[]`)
	require.NotContains(t, b, "null")
	require.NotContains(t, b, "warnings")
}

func TestCompileValid(t *testing.T) {
	t.Parallel()
	type nodeWant struct {
		region string
		depth  int
	}
	tests := []struct {
		name      string
		g         compiler.VisualGraph
		adjacency map[string][]string
		upstream  map[string][]string
		entry     []string
		terminal  []string
		regions   map[string]*engine.Region
		nodes     map[string]nodeWant // only nodes with a region
		warnings  []prob
	}{
		{
			name:      "single node",
			g:         graph(nodes(worker("a"))),
			adjacency: map[string][]string{"a": {}},
			upstream:  map[string][]string{"a": {}},
			entry:     []string{"a"},
			terminal:  []string{"a"},
		},
		{
			name:      "linear chain",
			g:         graph(nodes(worker("a"), ux("b"), worker("c")), chain("e", "a", "b", "c")),
			adjacency: map[string][]string{"a": {"b"}, "b": {"c"}, "c": {}},
			upstream:  map[string][]string{"a": {}, "b": {"a"}, "c": {"b"}},
			entry:     []string{"a"},
			terminal:  []string{"c"},
		},
		{
			name: "diamond keeps edge order",
			g: graph(nodes(worker("top"), worker("right"), worker("left"), worker("bottom")), edges(
				edge("e1", "top", "right"), edge("e2", "top", "left"),
				edge("e3", "left", "bottom"), edge("e4", "right", "bottom"))),
			adjacency: map[string][]string{"top": {"right", "left"}, "left": {"bottom"}, "right": {"bottom"}, "bottom": {}},
			upstream:  map[string][]string{"top": {}, "left": {"top"}, "right": {"top"}, "bottom": {"left", "right"}},
			entry:     []string{"top"},
			terminal:  []string{"bottom"},
		},
		{
			name: "several entries and terminals are sorted",
			g: graph(nodes(worker("z1"), worker("a1"), worker("m"), worker("z2"), worker("a2")), edges(
				edge("e1", "z1", "m"), edge("e2", "a1", "m"), edge("e3", "m", "z2"), edge("e4", "m", "a2"))),
			adjacency: map[string][]string{"z1": {"m"}, "a1": {"m"}, "m": {"z2", "a2"}, "z2": {}, "a2": {}},
			upstream:  map[string][]string{"z1": {}, "a1": {}, "m": {"z1", "a1"}, "z2": {"m"}, "a2": {"m"}},
			entry:     []string{"a1", "z1"},
			terminal:  []string{"a2", "z2"},
		},
		{
			name: "parallel branches and a chain inside a branch",
			g: graph(nodes(splitter("s"), worker("a1"), worker("a2"), worker("b"), ux("c"), collector("col"), worker("after")), edges(
				edge("e1", "s", "a1"), edge("e2", "a1", "a2"), edge("e3", "a2", "col"),
				edge("e4", "s", "b"), edge("e5", "b", "col"),
				edge("e6", "s", "c"), edge("e7", "c", "col"),
				edge("e8", "col", "after"))),
			adjacency: map[string][]string{"s": {"a1", "b", "c"}, "a1": {"a2"}, "a2": {"col"}, "b": {"col"}, "c": {"col"}, "col": {"after"}, "after": {}},
			upstream:  map[string][]string{"s": {}, "a1": {"s"}, "a2": {"a1"}, "b": {"s"}, "c": {"s"}, "col": {"a2", "b", "c"}, "after": {"col"}},
			entry:     []string{"s"},
			terminal:  []string{"after"},
			regions: map[string]*engine.Region{
				"s": {Splitter: "s", Collector: "col", Members: []string{"a1", "a2", "b", "c"}, Direct: []string{"a1", "a2", "b", "c"}},
			},
			nodes: map[string]nodeWant{"a1": {"s", 1}, "a2": {"s", 1}, "b": {"s", 1}, "c": {"s", 1}},
		},
		{
			name: "branch joins inside the region",
			g: graph(nodes(splitter("s"), worker("a"), worker("b"), worker("j"), collector("col")), edges(
				edge("e1", "s", "a"), edge("e2", "s", "b"), edge("e3", "a", "j"), edge("e4", "b", "j"), edge("e5", "j", "col"))),
			adjacency: map[string][]string{"s": {"a", "b"}, "a": {"j"}, "b": {"j"}, "j": {"col"}, "col": {}},
			upstream:  map[string][]string{"s": {}, "a": {"s"}, "b": {"s"}, "j": {"a", "b"}, "col": {"j"}},
			entry:     []string{"s"},
			terminal:  []string{"col"},
			regions: map[string]*engine.Region{
				"s": {Splitter: "s", Collector: "col", Members: []string{"a", "b", "j"}, Direct: []string{"a", "b", "j"}},
			},
			nodes: map[string]nodeWant{"a": {"s", 1}, "b": {"s", 1}, "j": {"s", 1}},
		},
		{
			name: "nested three levels",
			g: graph(nodes(
				worker("fetch"), splitter("s1"), worker("a"), splitter("s2"), worker("b"), splitter("s3"),
				worker("c"), worker("x"), collector("c3"), worker("d"), collector("c2"), worker("e"), collector("c1"), ux("end"),
			), edges(
				edge("e01", "fetch", "s1"), edge("e02", "s1", "a"), edge("e03", "a", "s2"), edge("e04", "s2", "b"),
				edge("e05", "b", "s3"), edge("e06", "s3", "c"), edge("e07", "s3", "x"), edge("e08", "c", "c3"),
				edge("e09", "x", "c3"), edge("e10", "c3", "d"), edge("e11", "d", "c2"), edge("e12", "c2", "e"),
				edge("e13", "e", "c1"), edge("e14", "c1", "end"),
			)),
			adjacency: map[string][]string{
				"fetch": {"s1"}, "s1": {"a"}, "a": {"s2"}, "s2": {"b"}, "b": {"s3"}, "s3": {"c", "x"}, "c": {"c3"}, "x": {"c3"},
				"c3": {"d"}, "d": {"c2"}, "c2": {"e"}, "e": {"c1"}, "c1": {"end"}, "end": {},
			},
			upstream: map[string][]string{
				"fetch": {}, "s1": {"fetch"}, "a": {"s1"}, "s2": {"a"}, "b": {"s2"}, "s3": {"b"}, "c": {"s3"}, "x": {"s3"},
				"c3": {"c", "x"}, "d": {"c3"}, "c2": {"d"}, "e": {"c2"}, "c1": {"e"}, "end": {"c1"},
			},
			entry:    []string{"fetch"},
			terminal: []string{"end"},
			regions: map[string]*engine.Region{
				"s1": {Splitter: "s1", Collector: "c1",
					Members: []string{"a", "b", "c", "c2", "c3", "d", "e", "s2", "s3", "x"},
					Direct:  []string{"a", "c2", "e", "s2"}},
				"s2": {Splitter: "s2", Collector: "c2", Parent: "s1",
					Members: []string{"b", "c", "c3", "d", "s3", "x"},
					Direct:  []string{"b", "c3", "d", "s3"}},
				"s3": {Splitter: "s3", Collector: "c3", Parent: "s2",
					Members: []string{"c", "x"},
					Direct:  []string{"c", "x"}},
			},
			nodes: map[string]nodeWant{
				"a": {"s1", 1}, "s2": {"s1", 1}, "c2": {"s1", 1}, "e": {"s1", 1},
				"b": {"s2", 2}, "s3": {"s2", 2}, "c3": {"s2", 2}, "d": {"s2", 2},
				"c": {"s3", 3}, "x": {"s3", 3},
			},
		},
		{
			name: "two regions in sequence and in parallel",
			g: graph(nodes(worker("in"), splitter("s1"), worker("p"), collector("k1"), splitter("s2"), worker("q"), collector("k2"),
				splitter("s3"), worker("r"), collector("k3"), worker("out")), edges(
				edge("e1", "in", "s1"), edge("e2", "s1", "p"), edge("e3", "p", "k1"), edge("e4", "k1", "s2"),
				edge("e5", "s2", "q"), edge("e6", "q", "k2"), edge("e7", "k2", "out"),
				edge("e8", "in", "s3"), edge("e9", "s3", "r"), edge("e10", "r", "k3"), edge("e11", "k3", "out"))),
			adjacency: map[string][]string{
				"in": {"s1", "s3"}, "s1": {"p"}, "p": {"k1"}, "k1": {"s2"}, "s2": {"q"}, "q": {"k2"}, "k2": {"out"},
				"s3": {"r"}, "r": {"k3"}, "k3": {"out"}, "out": {},
			},
			upstream: map[string][]string{
				"in": {}, "s1": {"in"}, "p": {"s1"}, "k1": {"p"}, "s2": {"k1"}, "q": {"s2"}, "k2": {"q"},
				"s3": {"in"}, "r": {"s3"}, "k3": {"r"}, "out": {"k2", "k3"},
			},
			entry:    []string{"in"},
			terminal: []string{"out"},
			regions: map[string]*engine.Region{
				"s1": {Splitter: "s1", Collector: "k1", Members: []string{"p"}, Direct: []string{"p"}},
				"s2": {Splitter: "s2", Collector: "k2", Members: []string{"q"}, Direct: []string{"q"}},
				"s3": {Splitter: "s3", Collector: "k3", Members: []string{"r"}, Direct: []string{"r"}},
			},
			nodes: map[string]nodeWant{"p": {"s1", 1}, "q": {"s2", 1}, "r": {"s3", 1}},
		},
		{
			name: "case-insensitive types",
			g: graph(nodes(
				node("w", "worker", `{"webhookUrl":"https://w.example/x"}`), node("s", "SPLITTER", `{"arrayPath":"a"}`),
				node("u", "ux", ""), node("c", "CoLlEcToR", "null")),
				chain("e", "w", "s", "u", "c")),
			adjacency: map[string][]string{"w": {"s"}, "s": {"u"}, "u": {"c"}, "c": {}},
			upstream:  map[string][]string{"w": {}, "s": {"w"}, "u": {"s"}, "c": {"u"}},
			entry:     []string{"w"},
			terminal:  []string{"c"},
			regions: map[string]*engine.Region{
				"s": {Splitter: "s", Collector: "c", Members: []string{"u"}, Direct: []string{"u"}},
			},
			nodes: map[string]nodeWant{"u": {"s", 1}},
		},
		{
			name:      "isolated node is a warning",
			g:         graph(nodes(worker("a"), worker("b"), worker("lonely")), chain("e", "a", "b")),
			adjacency: map[string][]string{"a": {"b"}, "b": {}, "lonely": {}},
			upstream:  map[string][]string{"a": {}, "b": {"a"}, "lonely": {}},
			entry:     []string{"a", "lonely"},
			terminal:  []string{"b", "lonely"},
			warnings:  []prob{{compiler.CodeIsolatedNode, "lonely", "", "nodes[2]"}},
		},
		{
			name:      "static ids that look like instance keys are fine",
			g:         graph(nodes(worker("step"), worker("step_2"), worker("step_2_1")), chain("e", "step", "step_2", "step_2_1")),
			adjacency: map[string][]string{"step": {"step_2"}, "step_2": {"step_2_1"}, "step_2_1": {}},
			upstream:  map[string][]string{"step": {}, "step_2": {"step"}, "step_2_1": {"step_2"}},
			entry:     []string{"step"},
			terminal:  []string{"step_2_1"},
		},
		{
			name: "parallel a_1 next to static a is fine",
			g:    graph(nodes(worker("a"), splitter("s"), worker("a_1"), collector("c")), chain("e", "a", "s", "a_1", "c")),
			adjacency: map[string][]string{
				"a": {"s"}, "s": {"a_1"}, "a_1": {"c"}, "c": {},
			},
			upstream: map[string][]string{"a": {}, "s": {"a"}, "a_1": {"s"}, "c": {"a_1"}},
			entry:    []string{"a"},
			terminal: []string{"c"},
			regions: map[string]*engine.Region{
				"s": {Splitter: "s", Collector: "c", Members: []string{"a_1"}, Direct: []string{"a_1"}},
			},
			nodes: map[string]nodeWant{"a_1": {"s", 1}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			eg := compileOK(t, tt.g, compiler.Options{})
			require.Equal(t, tt.adjacency, eg.Adjacency)
			require.Equal(t, tt.upstream, eg.Upstream)
			require.Equal(t, tt.entry, eg.EntryNodes)
			require.Equal(t, tt.terminal, eg.TerminalNodes)
			wantRegions := tt.regions
			if wantRegions == nil {
				wantRegions = map[string]*engine.Region{}
			}
			require.Equal(t, wantRegions, eg.Regions)
			for id, n := range eg.Nodes {
				w := tt.nodes[id]
				require.Equal(t, w.region, n.Region, "region of %s", id)
				require.Equal(t, w.depth, n.Depth, "depth of %s", id)
			}
			require.Equal(t, tt.warnings, nilIfEmpty(strip(eg.Warnings)))
		})
	}
}

func nilIfEmpty(ps []prob) []prob {
	if len(ps) == 0 {
		return nil
	}
	return ps
}

func TestCompileConfig(t *testing.T) {
	t.Parallel()
	eg := compileOK(t, graph(nodes(
		node("w", "Worker", `{ "webhookUrl" : "HTTPS://Example.COM:8443/hook?x=1", "label":"L", "style":{"b":1,"a":2} }`),
		node("u", "UX", "null"),
	), chain("e", "w", "u")), compiler.Options{})
	require.JSONEq(t, `{"webhookUrl":"HTTPS://Example.COM:8443/hook?x=1","label":"L","style":{"b":1,"a":2}}`, string(eg.Nodes["w"].Config))
	require.Equal(t, `{"label":"L","style":{"a":2,"b":1},"webhookUrl":"HTTPS://Example.COM:8443/hook?x=1"}`, string(eg.Nodes["w"].Config)) //nolint:testifylint // the exact bytes: keys sorted, no spaces
	require.Equal(t, `{}`, string(eg.Nodes["u"].Config))
}

func TestCompileEdgeData(t *testing.T) {
	t.Parallel()
	eg := compileOK(t, graph(nodes(worker("a"), worker("b"), worker("c"), worker("d")), edges(
		edgeData("e1", "a", "b", `{"mapping":{"x":"items.#.id","y":"@this"},"label":"hi"}`),
		edgeData("e2", "b", "c", `{"label":"no mapping"}`),
		edgeData("e3", "c", "d", `{"mapping":null}`),
	)), compiler.Options{})
	require.Equal(t, map[string]map[string]string{"a->b": {"x": "items.#.id", "y": "@this"}}, eg.EdgeData)

	eg = compileOK(t, graph(nodes(worker("a"), worker("b")), chain("e", "a", "b")), compiler.Options{})
	require.Equal(t, map[string]map[string]string{}, eg.EdgeData)
	require.Contains(t, string(mustJSON(t, eg)), `"edgeData":{}`)
}

func TestCompileProblems(t *testing.T) {
	t.Parallel()
	okChain := chain("e", "a", "b")
	tests := []struct {
		name string
		g    compiler.VisualGraph
		opts compiler.Options
		want []prob
		msg  string // substring of the first problem's message
	}{
		{
			name: "empty graph",
			g:    compiler.VisualGraph{},
			want: []prob{{compiler.CodeEmptyGraph, "", "", "nodes"}},
		},
		{
			name: "empty graph with dangling edge",
			g:    graph(nil, edges(edge("e1", "a", "b"))),
			want: []prob{
				{compiler.CodeEmptyGraph, "", "", "nodes"},
				{compiler.CodeMissingNode, "", "e1", "edges[0].source"},
				{compiler.CodeMissingNode, "", "e1", "edges[0].target"},
			},
		},
		{
			name: "node without id",
			g:    graph(nodes(worker("a"), worker("")), okChain[:0]),
			want: []prob{{compiler.CodeMissingID, "", "", "nodes[1].id"}},
		},
		{
			name: "duplicate node ids",
			g:    graph(nodes(worker("a"), worker("b"), worker("a")), okChain),
			want: []prob{{compiler.CodeDuplicateID, "a", "", "nodes[2].id"}},
			msg:  "nodes[0]",
		},
		{
			name: "unknown type",
			g:    graph(nodes(worker("a"), node("b", "Timer", `{}`)), okChain),
			want: []prob{{compiler.CodeUnknownType, "b", "", "nodes[1].type"}},
			msg:  `"Timer"`,
		},
		{
			name: "empty type",
			g:    graph(nodes(worker("a"), node("b", "", "")), okChain),
			want: []prob{{compiler.CodeUnknownType, "b", "", "nodes[1].type"}},
		},
		{
			name: "edge without id",
			g:    graph(nodes(worker("a"), worker("b")), edges(edge("", "a", "b"))),
			want: []prob{{compiler.CodeMissingID, "", "", "edges[0].id"}},
		},
		{
			name: "duplicate edge ids",
			g:    graph(nodes(worker("a"), worker("b"), worker("c")), edges(edge("e", "a", "b"), edge("e", "b", "c"))),
			want: []prob{{compiler.CodeDuplicateID, "", "e", "edges[1].id"}},
		},
		{
			name: "missing source and target",
			g:    graph(nodes(worker("a"), worker("b")), edges(edge("e1", "a", "b"), edge("e2", "ghost", "b"), edge("e3", "a", "phantom"), edge("e4", "", "b"))),
			want: []prob{
				{compiler.CodeMissingNode, "", "e2", "edges[1].source"},
				{compiler.CodeMissingNode, "", "e3", "edges[2].target"},
				{compiler.CodeMissingNode, "", "e4", "edges[3].source"},
			},
		},
		{
			name: "edge to a node whose id was empty",
			g:    graph(nodes(worker("a"), worker("")), edges(edge("e1", "a", ""))),
			want: []prob{
				{compiler.CodeMissingID, "", "", "nodes[1].id"},
				{compiler.CodeMissingNode, "", "e1", "edges[0].target"},
			},
		},
		{
			name: "duplicate edge between the same pair",
			g:    graph(nodes(worker("a"), worker("b")), edges(edge("e1", "a", "b"), edge("e2", "a", "b"))),
			want: []prob{{compiler.CodeDuplicateEdge, "", "e2", "edges[1]"}},
		},
		{
			name: "self-loop",
			g:    graph(nodes(worker("a"), worker("b")), edges(edge("e1", "a", "b"), edge("e2", "b", "b"))),
			want: []prob{{compiler.CodeCycle, "b", "e2", "edges[1]"}},
			msg:  "cycle: b → b",
		},
		{
			name: "cycle of three",
			g:    graph(nodes(worker("x"), worker("b"), worker("c"), worker("a")), edges(edge("e0", "x", "a"), edge("e1", "a", "b"), edge("e2", "b", "c"), edge("e3", "c", "a"))),
			want: []prob{{compiler.CodeCycle, "a", "", "nodes[3]"}},
			msg:  "cycle: a → b → c → a",
		},
		{
			name: "one cycle per strongly connected component",
			g: graph(nodes(worker("a"), worker("b"), worker("c"), worker("d"), worker("z")), edges(
				edge("e1", "a", "b"), edge("e2", "b", "a"), edge("e3", "b", "c"), edge("e4", "c", "d"), edge("e5", "d", "c"), edge("e6", "d", "z"))),
			want: []prob{{compiler.CodeCycle, "a", "", "nodes[0]"}, {compiler.CodeCycle, "c", "", "nodes[2]"}},
			msg:  "cycle: a → b → a",
		},
		{
			name: "cycle skips region analysis but not the other checks",
			g: graph(nodes(splitter("s"), worker("a"), worker("b"), node("c", "Worker", `{}`)), edges(
				edge("e1", "s", "a"), edge("e2", "a", "b"), edge("e3", "b", "a"), edge("e4", "b", "c"))),
			want: []prob{
				{compiler.CodeCycle, "a", "", "nodes[1]"},
				{compiler.CodeInvalidWebhookURL, "c", "", "nodes[3].data.webhookUrl"},
			},
		},
		{
			name: "data not an object",
			g:    graph(nodes(node("a", "UX", `[1]`), worker("b")), edges(edge("e1", "b", "a"))),
			want: []prob{{compiler.CodeInvalidConfig, "a", "", "nodes[0].data"}},
		},
		{
			name: "data not valid JSON",
			g:    graph(nodes(node("a", "UX", `{"x":`), worker("b")), edges(edge("e1", "b", "a"))),
			want: []prob{{compiler.CodeInvalidConfig, "a", "", "nodes[0].data"}},
		},
		{
			name: "webhook urls",
			g: graph(nodes(
				node("a", "Worker", `{}`),
				node("b", "Worker", `{"webhookUrl":"ftp://x.example/hook"}`),
				node("c", "Worker", `{"webhookUrl":"/relative/hook"}`),
				node("d", "Worker", `{"webhookUrl":"http://"}`),
				node("e", "Worker", `{"webhookUrl":42}`),
				node("f", "Worker", `{"webhookUrl":"http://:8080/x"}`),
				node("g", "Worker", `{"webhookUrl":null}`),
				node("h", "Worker", `{"webhookUrl":"https://ok.example"}`),
			), chain("e", "a", "b", "c", "d", "e", "f", "g", "h")),
			want: []prob{
				{compiler.CodeInvalidWebhookURL, "a", "", "nodes[0].data.webhookUrl"},
				{compiler.CodeInvalidWebhookURL, "b", "", "nodes[1].data.webhookUrl"},
				{compiler.CodeInvalidWebhookURL, "c", "", "nodes[2].data.webhookUrl"},
				{compiler.CodeInvalidWebhookURL, "d", "", "nodes[3].data.webhookUrl"},
				{compiler.CodeInvalidWebhookURL, "e", "", "nodes[4].data.webhookUrl"},
				{compiler.CodeInvalidWebhookURL, "f", "", "nodes[5].data.webhookUrl"},
				{compiler.CodeInvalidWebhookURL, "g", "", "nodes[6].data.webhookUrl"},
			},
		},
		{
			name: "timeouts",
			g: graph(nodes(
				workerWith("a", `"timeoutSeconds":0`),
				workerWith("b", `"timeoutSeconds":-5`),
				workerWith("c", `"timeoutSeconds":"10"`),
				workerWith("d", `"timeoutSeconds":1e300`),
				workerWith("e", `"timeoutSeconds":0.5`),
				workerWith("f", `"timeoutSeconds":null`),
			), chain("e", "a", "b", "c", "d", "e", "f")),
			want: []prob{
				{compiler.CodeInvalidConfig, "a", "", "nodes[0].data.timeoutSeconds"},
				{compiler.CodeInvalidConfig, "b", "", "nodes[1].data.timeoutSeconds"},
				{compiler.CodeInvalidConfig, "c", "", "nodes[2].data.timeoutSeconds"},
				{compiler.CodeInvalidConfig, "d", "", "nodes[3].data.timeoutSeconds"},
			},
		},
		{
			name: "retry policies",
			g: graph(nodes(
				workerWith("a", `"retry":5`),
				workerWith("b", `"retry":{"maxAttempts":0}`),
				workerWith("c", `"retry":{"maxAttempts":101}`),
				workerWith("d", `"retry":{"maxAttempts":2.5}`),
				workerWith("e", `"retry":{"maxAttempts":"3"}`),
				workerWith("f", `"retry":{"backoff":"random"}`),
				workerWith("g", `"retry":{"initialDelayMs":-1,"maxDelayMs":"x"}`),
				workerWith("h", `"retry":{"initialDelayMs":5000,"maxDelayMs":1000}`),
				workerWith("i", `"retry":{"maxAttempts":100,"backoff":"linear","initialDelayMs":0,"maxDelayMs":0}`),
				workerWith("j", `"retry":{"maxAttempts":1.0,"backoff":"fixed"}`),
				workerWith("k", `"retry":{}`),
			), chain("e", "a", "b", "c", "d", "e", "f", "g", "h", "i", "j", "k")),
			want: []prob{
				{compiler.CodeInvalidConfig, "a", "", "nodes[0].data.retry"},
				{compiler.CodeInvalidConfig, "b", "", "nodes[1].data.retry.maxAttempts"},
				{compiler.CodeInvalidConfig, "c", "", "nodes[2].data.retry.maxAttempts"},
				{compiler.CodeInvalidConfig, "d", "", "nodes[3].data.retry.maxAttempts"},
				{compiler.CodeInvalidConfig, "e", "", "nodes[4].data.retry.maxAttempts"},
				{compiler.CodeInvalidConfig, "f", "", "nodes[5].data.retry.backoff"},
				{compiler.CodeInvalidConfig, "g", "", "nodes[6].data.retry.initialDelayMs"},
				{compiler.CodeInvalidConfig, "g", "", "nodes[6].data.retry.maxDelayMs"},
				{compiler.CodeInvalidConfig, "h", "", "nodes[7].data.retry.initialDelayMs"},
			},
		},
		{
			// An added type whose schema has a retry policy gets the
			// compiler's retry rules, each problem said once (an Email's
			// retry was any object: maxAttempts 100000 saved).
			name: "an Email's retry policy",
			g: graph(nodes(
				node("a", "Email", `{"credential":"smtp","to":"a@example.com","subject":"s","text":"hi","retry":{"maxAttempts":100000}}`),
				node("b", "Email", `{"credential":"smtp","to":"a@example.com","subject":"s","text":"hi","retry":{"backoff":"random","maxAttempts":"3"}}`),
				node("c", "Email", `{"credential":"smtp","to":"a@example.com","subject":"s","text":"hi","retry":{"initialDelayMs":5000,"maxDelayMs":1000}}`),
				node("d", "Email", `{"credential":"smtp","to":"a@example.com","subject":"s","text":"hi","retry":5}`),
				node("e", "Email", `{"credential":"smtp","to":"a@example.com","subject":"s","text":"hi","retry":{"maxAttempts":5,"backoff":"linear","jitter":"full","nonRetryable":["550"]}}`),
			), chain("e", "a", "b", "c", "d", "e")),
			want: []prob{
				{compiler.CodeInvalidConfig, "a", "", "nodes[0].data.retry.maxAttempts"},
				{compiler.CodeInvalidConfig, "b", "", "nodes[1].data.retry.maxAttempts"},
				{compiler.CodeInvalidConfig, "b", "", "nodes[1].data.retry.backoff"},
				{compiler.CodeInvalidConfig, "c", "", "nodes[2].data.retry.initialDelayMs"},
				{compiler.CodeInvalidConfig, "d", "", "nodes[3].data.retry"},
			},
		},
		{
			name: "entity movement shapes",
			g: graph(nodes(
				workerWith("a", `"entityMovement":"qualified"`),
				workerWith("b", `"entityMovement":{"onSuccess":"qualified"}`),
				node("c", "UX", `{"entityMovement":{"onFailure":{"completeAs":"success"}}}`),
				node("d", "UX", `{"entityMovement":{"onSuccess":{"targetSectionId":"s1","completeAs":"done","setEntityType":7}}}`),
				node("e", "UX", `{"entityMovement":{"onSuccess":{"targetSectionId":""}}}`),
				node("f", "UX", `{"entityMovement":{"onSuccess":{"targetSectionId":"s1","completeAs":"neutral","setEntityType":"customer"},"onFailure":null}}`),
			), chain("e", "a", "b", "c", "d", "e", "f")),
			want: []prob{
				{compiler.CodeInvalidConfig, "a", "", "nodes[0].data.entityMovement"},
				{compiler.CodeInvalidConfig, "b", "", "nodes[1].data.entityMovement.onSuccess"},
				{compiler.CodeInvalidConfig, "c", "", "nodes[2].data.entityMovement.onFailure.targetSectionId"},
				{compiler.CodeInvalidConfig, "d", "", "nodes[3].data.entityMovement.onSuccess.completeAs"},
				{compiler.CodeInvalidConfig, "d", "", "nodes[3].data.entityMovement.onSuccess.setEntityType"},
				{compiler.CodeInvalidConfig, "e", "", "nodes[4].data.entityMovement.onSuccess.targetSectionId"},
			},
		},
		{
			name: "entity movement setMetadata",
			g: graph(nodes(
				workerWith("a", `"entityMovement":{"onSuccess":{"targetSectionId":"s1","setMetadata":{"score":"score","":"x","plan":"","n":7}}}`),
				workerWith("b", `"entityMovement":{"onSuccess":{"targetSectionId":"s1","setMetadata":["score"]},"onFailure":{"targetSectionId":"s1","setMetadata":{"e":"error"}}}`),
				node("c", "UX", `{"entityMovement":{"onOutcome":{"approve":{"targetSectionId":"s1","setMetadata":{"by":"decision.by","long key":"a"}}}}}`),
				workerWith("d", `"entityMovement":{"onSuccess":{"targetSectionId":"s1","setMetadata":`+manyKeys(51)+`}}`),
			), chain("e", "a", "b", "c", "d")),
			want: []prob{
				{compiler.CodeInvalidConfig, "a", "", `nodes[0].data.entityMovement.onSuccess.setMetadata[""]`},
				{compiler.CodeInvalidConfig, "a", "", "nodes[0].data.entityMovement.onSuccess.setMetadata.n"},
				{compiler.CodeInvalidConfig, "a", "", "nodes[0].data.entityMovement.onSuccess.setMetadata.plan"},
				{compiler.CodeInvalidConfig, "b", "", "nodes[1].data.entityMovement.onSuccess.setMetadata"},
				{compiler.CodeInvalidConfig, "b", "", "nodes[1].data.entityMovement.onFailure.setMetadata"},
				{compiler.CodeInvalidConfig, "d", "", "nodes[3].data.entityMovement.onSuccess.setMetadata"},
			},
		},
		{
			name: "unknown board section",
			g: graph(nodes(
				workerWith("a", `"entityMovement":{"onSuccess":{"targetSectionId":"won"},"onFailure":{"targetSectionId":"lost"}}`),
				node("b", "UX", `{"entityMovement":{"onSuccess":{"targetSectionId":"qualified"}}}`),
			), chain("e", "a", "b")),
			opts: compiler.Options{BoardSections: []string{"qualified", "won"}},
			want: []prob{{compiler.CodeUnknownSection, "a", "", "nodes[0].data.entityMovement.onFailure.targetSectionId"}},
			msg:  `"lost"`,
		},
		{
			name: "empty board has no sections",
			g:    graph(nodes(node("b", "UX", `{"entityMovement":{"onSuccess":{"targetSectionId":"qualified"}}}`))),
			opts: compiler.Options{BoardSections: []string{}},
			want: []prob{{compiler.CodeUnknownSection, "b", "", "nodes[0].data.entityMovement.onSuccess.targetSectionId"}},
		},
		{
			name: "entity movement on splitter and collector",
			g: graph(nodes(
				node("s", "Splitter", `{"arrayPath":"items","entityMovement":{"onSuccess":{"targetSectionId":"x"}}}`),
				worker("w"),
				node("c", "Collector", `{"entityMovement":{}}`),
			), chain("e", "s", "w", "c")),
			want: []prob{
				{compiler.CodeInvalidConfig, "s", "", "nodes[0].data.entityMovement"},
				{compiler.CodeInvalidConfig, "c", "", "nodes[2].data.entityMovement"},
			},
		},
		{
			name: "splitter array paths",
			g: graph(nodes(
				node("s1", "Splitter", ""), node("s2", "Splitter", `{"arrayPath":""}`), node("s3", "Splitter", `{"arrayPath":7}`),
				node("s4", "Splitter", `{"arrayPath":"  "}`),
				worker("w1"), worker("w2"), worker("w3"), worker("w4"),
				collector("c1"), collector("c2"), collector("c3"), collector("c4"),
			), chain("a", "s1", "w1", "c1"), chain("b", "s2", "w2", "c2"), chain("c", "s3", "w3", "c3"), chain("d", "s4", "w4", "c4")),
			want: []prob{
				{compiler.CodeMissingArrayPath, "s1", "", "nodes[0].data.arrayPath"},
				{compiler.CodeMissingArrayPath, "s2", "", "nodes[1].data.arrayPath"},
				{compiler.CodeMissingArrayPath, "s3", "", "nodes[2].data.arrayPath"},
				{compiler.CodeMissingArrayPath, "s4", "", "nodes[3].data.arrayPath"},
			},
		},
		{
			name: "edge mappings",
			g: graph(nodes(worker("a"), worker("b"), worker("c"), worker("d"), worker("e"), worker("f")), edges(
				edgeData("e1", "a", "b", `{"mapping":"x"}`),
				edgeData("e2", "b", "c", `{"mapping":{"x":""}}`),
				edgeData("e3", "c", "d", `{"mapping":{"x":1,"y":"ok"}}`),
				edgeData("e4", "d", "e", `{"mapping":{"":"a","in put":null}}`),
				edgeData("e5", "e", "f", `"mapping"`),
			)),
			want: []prob{
				{compiler.CodeInvalidMapping, "", "e1", "edges[0].data.mapping"},
				{compiler.CodeInvalidMapping, "", "e2", "edges[1].data.mapping.x"},
				{compiler.CodeInvalidMapping, "", "e3", "edges[2].data.mapping.x"},
				{compiler.CodeInvalidMapping, "", "e4", `edges[3].data.mapping[""]`},
				{compiler.CodeInvalidMapping, "", "e4", `edges[3].data.mapping["in put"]`},
				{compiler.CodeInvalidConfig, "", "e5", "edges[4].data"},
			},
		},
		{
			name: "splitter reaches a terminal node without collector",
			g: graph(nodes(worker("in"), splitter("s"), worker("a"), worker("dead"), collector("c")), edges(
				edge("e1", "in", "s"), edge("e2", "s", "a"), edge("e3", "a", "c"), edge("e4", "s", "dead"))),
			want: []prob{{compiler.CodeNoCollector, "dead", "", "nodes[3]"}},
			msg:  `splitter "s" ends at node "dead"`,
		},
		{
			name: "splitter without outgoing edges",
			g:    graph(nodes(worker("in"), splitter("s")), edges(edge("e1", "in", "s"))),
			want: []prob{{compiler.CodeNoCollector, "s", "", "nodes[1]"}},
		},
		{
			name: "nested region closed only once",
			g: graph(nodes(splitter("s1"), splitter("s2"), worker("a"), collector("c")), edges(
				edge("e1", "s1", "s2"), edge("e2", "s2", "a"), edge("e3", "a", "c"))),
			want: []prob{{compiler.CodeNoCollector, "c", "", "nodes[3]"}},
			msg:  `splitter "s1"`,
		},
		{
			name: "multiple collectors",
			g: graph(nodes(splitter("s"), worker("a"), worker("b"), collector("c2"), collector("c1"), worker("end")), edges(
				edge("e1", "s", "a"), edge("e2", "s", "b"), edge("e3", "a", "c2"), edge("e4", "b", "c1"),
				edge("e5", "c1", "end"), edge("e6", "c2", "end"))),
			want: []prob{{compiler.CodeMultipleCollectors, "s", "", "nodes[0]"}},
			msg:  "(c1, c2)",
		},
		{
			name: "orphan collector",
			g:    graph(nodes(worker("a"), collector("c"), worker("b")), chain("e", "a", "c", "b")),
			want: []prob{{compiler.CodeOrphanCollector, "c", "", "nodes[1]"}},
		},
		{
			name: "entry collector is an orphan",
			g:    graph(nodes(collector("c"), worker("b")), chain("e", "c", "b")),
			want: []prob{{compiler.CodeOrphanCollector, "c", "", "nodes[0]"}},
		},
		{
			name: "collector after a closed region is an orphan",
			g:    graph(nodes(splitter("s"), worker("a"), collector("c1"), collector("c2")), chain("e", "s", "a", "c1", "c2")),
			want: []prob{{compiler.CodeOrphanCollector, "c2", "", "nodes[3]"}},
		},
		{
			name: "edge into a region from outside",
			g: graph(nodes(worker("f"), splitter("s"), worker("a"), collector("c")), edges(
				edge("e1", "f", "s"), edge("e2", "s", "a"), edge("e3", "a", "c"), edge("e4", "f", "a"))),
			want: []prob{{compiler.CodeRegionBoundary, "a", "e4", "edges[3]"}},
			msg:  `"a" is inside the parallel region of splitter "s"`,
		},
		{
			name: "edge out of a region other than through its collector",
			g: graph(nodes(splitter("s"), worker("a"), collector("c"), worker("z")), edges(
				edge("e1", "s", "a"), edge("e2", "a", "c"), edge("e3", "c", "z"), edge("e4", "a", "z"))),
			want: []prob{{compiler.CodeRegionBoundary, "z", "e4", "edges[3]"}},
			msg:  `leaves the parallel region of splitter "s"`,
		},
		{
			name: "node reached at two nesting levels",
			g: graph(nodes(splitter("s1"), splitter("s2"), worker("b"), collector("c2"), collector("c1")), edges(
				edge("e1", "s1", "s2"), edge("e2", "s2", "b"), edge("e3", "b", "c2"), edge("e4", "c2", "c1"), edge("e5", "s1", "b"))),
			want: []prob{{compiler.CodeRegionBoundary, "b", "e5", "edges[4]"}},
		},
		{
			name: "edge between two sibling regions",
			g: graph(nodes(worker("in"), splitter("s1"), worker("a"), collector("k1"), splitter("s2"), worker("b"), collector("k2"), worker("out")), edges(
				edge("e1", "in", "s1"), edge("e2", "s1", "a"), edge("e3", "a", "k1"), edge("e4", "k1", "out"),
				edge("e5", "in", "s2"), edge("e6", "s2", "b"), edge("e7", "b", "k2"), edge("e8", "k2", "out"),
				edge("e9", "a", "b"))),
			want: []prob{{compiler.CodeRegionBoundary, "b", "e9", "edges[8]"}},
			msg:  `joins the parallel region of splitter "s1" to the parallel region of splitter "s2"`,
		},
		{
			name: "edge from outside into a collector",
			g: graph(nodes(worker("f"), splitter("s"), worker("a"), collector("c")), edges(
				edge("e1", "f", "s"), edge("e2", "s", "a"), edge("e3", "a", "c"), edge("e4", "f", "c"))),
			want: []prob{{compiler.CodeRegionBoundary, "c", "e4", "edges[3]"}},
			msg:  `collector "c" gathers the parallel region of splitter "s"`,
		},
		{
			name: "splitter joined directly to its collector",
			g:    graph(nodes(splitter("s"), collector("c")), edges(edge("e1", "s", "c"))),
			want: []prob{{compiler.CodeRegionBoundary, "s", "e1", "edges[0]"}},
		},
		{
			name: "splitter with a shortcut to its collector",
			g: graph(nodes(splitter("s"), worker("a"), collector("c")), edges(
				edge("e1", "s", "a"), edge("e2", "a", "c"), edge("e3", "s", "c"))),
			want: []prob{{compiler.CodeRegionBoundary, "s", "e3", "edges[2]"}},
		},
		{
			name: "instance key collision",
			g: graph(nodes(worker("in"), splitter("s"), worker("score"), collector("c"), worker("score_0"), worker("score_1_2"), worker("score_x"), worker("score_")), edges(
				edge("e1", "in", "s"), edge("e2", "s", "score"), edge("e3", "score", "c"), edge("e4", "c", "score_0"),
				edge("e5", "score_0", "score_1_2"), edge("e6", "score_1_2", "score_x"), edge("e7", "score_x", "score_"))),
			want: []prob{
				{compiler.CodeKeyCollision, "score_0", "", "nodes[4].id"},
				{compiler.CodeKeyCollision, "score_1_2", "", "nodes[5].id"},
			},
			msg: `"score"`,
		},
		{
			name: "instance key collision between parallel nodes",
			g: graph(nodes(splitter("s"), worker("a"), splitter("t"), worker("a_1"), collector("k"), collector("c")),
				chain("e", "s", "a", "t", "a_1", "k", "c")),
			want: []prob{{compiler.CodeKeyCollision, "a_1", "", "nodes[3].id"}},
		},
		{
			name: "parallel splitter and collector ids collide too",
			g: graph(nodes(splitter("s"), splitter("t"), worker("w"), collector("k"), collector("c"), worker("t_0"), worker("k_3")),
				chain("e", "s", "t", "w", "k", "c", "t_0", "k_3")),
			want: []prob{
				{compiler.CodeKeyCollision, "t_0", "", "nodes[5].id"},
				{compiler.CodeKeyCollision, "k_3", "", "nodes[6].id"},
			},
		},
		{
			name: "multiple problems reported together in order",
			g: graph(nodes(
				node("a", "Worker", `{"webhookUrl":"nope"}`),
				node("b", "Gadget", ""),
				worker("a"),
				node("s", "splitter", ""),
				worker(""),
			), edges(
				edge("e1", "a", "b"), edge("e1", "b", "ghost"), edge("e3", "s", "s"), edge("e4", "a", "b"),
				edgeData("e5", "b", "s", `{"mapping":[1]}`),
			)),
			want: []prob{
				{compiler.CodeInvalidWebhookURL, "a", "", "nodes[0].data.webhookUrl"},
				{compiler.CodeUnknownType, "b", "", "nodes[1].type"},
				{compiler.CodeDuplicateID, "a", "", "nodes[2].id"},
				{compiler.CodeMissingArrayPath, "s", "", "nodes[3].data.arrayPath"},
				{compiler.CodeMissingID, "", "", "nodes[4].id"},
				{compiler.CodeDuplicateID, "", "e1", "edges[1].id"},
				{compiler.CodeMissingNode, "", "e1", "edges[1].target"},
				{compiler.CodeCycle, "s", "e3", "edges[2]"},
				{compiler.CodeDuplicateEdge, "", "e4", "edges[3]"},
				{compiler.CodeInvalidMapping, "", "e5", "edges[4].data.mapping"},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ps := compileErr(t, tt.g, tt.opts)
			require.Equal(t, tt.want, strip(ps))
			if tt.msg != "" {
				require.Contains(t, ps[0].Message, tt.msg)
			}
			// Deterministic: a second compilation gives the same problems.
			require.Equal(t, ps, compileErr(t, tt.g, tt.opts))
		})
	}
}

func TestErrorMessage(t *testing.T) {
	t.Parallel()
	_, err := compiler.Compile(graph(nodes(node("a", "Worker", ""), node("b", "Worker", "")), chain("e", "a", "b")), builtins)
	require.EqualError(t, err, `invalid graph: nodes[0].data.webhookUrl: worker "a" needs a webhookUrl (push) or a queue (pull); nodes[1].data.webhookUrl: worker "b" needs a webhookUrl (push) or a queue (pull)`)

	var ns []compiler.VisualNode
	for i := range 25 {
		ns = append(ns, node(strings.Repeat("n", i+1), "Worker", ""))
	}
	_, err = compiler.Compile(graph(ns), builtins)
	require.ErrorContains(t, err, "; and 15 more")
	require.Equal(t, "invalid graph", (&compiler.Error{}).Error())
}

func TestCompileDeterministic(t *testing.T) {
	t.Parallel()
	base := graph(nodes(
		worker("fetch"), splitter("s1"), worker("a"), worker("a2"), splitter("s2"), worker("b"), worker("b2"),
		collector("c2"), collector("c1"), ux("approve"), worker("side"),
	), edges(
		edge("e1", "fetch", "s1"), edge("e2", "s1", "a"), edge("e3", "s1", "a2"), edge("e4", "a", "s2"),
		edge("e5", "s2", "b"), edge("e6", "s2", "b2"), edge("e7", "b", "c2"), edge("e8", "b2", "c2"),
		edge("e9", "c2", "c1"), edge("e10", "a2", "c1"), edgeData("e11", "c1", "approve", `{"mapping":{"all":"@this"}}`),
		edge("e12", "fetch", "side"), edge("e13", "side", "approve"),
	))
	eg := compileOK(t, base, compiler.Options{})
	want := mustJSON(t, eg)
	for range 5 {
		again, err := compiler.Compile(base, builtins)
		require.NoError(t, err)
		require.Equal(t, want, mustJSON(t, again))
	}

	// Node order does not matter.
	rng := rand.New(rand.NewPCG(1, 2))
	for range 20 {
		shuffled := base
		shuffled.Nodes = slices.Clone(base.Nodes)
		rng.Shuffle(len(shuffled.Nodes), func(i, j int) { shuffled.Nodes[i], shuffled.Nodes[j] = shuffled.Nodes[j], shuffled.Nodes[i] })
		got, err := compiler.Compile(shuffled, builtins)
		require.NoError(t, err)
		require.Equal(t, string(want), string(mustJSON(t, got)))
	}

	// Edge order matters for adjacency and upstream, and only there.
	reversed := base
	reversed.Edges = slices.Clone(base.Edges)
	slices.Reverse(reversed.Edges)
	got := compileOK(t, reversed, compiler.Options{})
	require.Equal(t, []string{"side", "s1"}, got.Adjacency["fetch"])
	require.Equal(t, []string{"s1"}, got.Upstream["a"])
	require.Equal(t, []string{"side", "c1"}, got.Upstream["approve"])
	require.Equal(t, []string{"c1", "side"}, eg.Upstream["approve"])
	require.Equal(t, eg.Regions, got.Regions)
	require.Equal(t, eg.Nodes, got.Nodes)
	require.Equal(t, eg.EntryNodes, got.EntryNodes)
	require.Equal(t, eg.TerminalNodes, got.TerminalNodes)
	require.Equal(t, eg.EdgeData, got.EdgeData)

	// Problems are deterministic too, whatever the map iteration order.
	bad := base
	bad.Edges = append(slices.Clone(base.Edges), edge("x1", "fetch", "b"), edge("x2", "a2", "approve"))
	first := compileErr(t, bad, compiler.Options{})
	for range 5 {
		require.Equal(t, first, compileErr(t, bad, compiler.Options{}))
	}
}

func TestCompileLarge(t *testing.T) {
	t.Parallel()
	for _, g := range []compiler.VisualGraph{chainGraph(10000), fanOutGraph(10000), nestedChainsGraph(10000)} {
		eg := compileOK(t, g, compiler.Options{})
		require.Len(t, eg.Nodes, len(g.Nodes))
	}
	// A fan-out graph whose members all collide with instance keys.
	g := fanOutGraph(1000)
	for i, n := 1, len(g.Nodes); i < n-1; i++ {
		g.Nodes = append(g.Nodes, worker(g.Nodes[i].ID+"_0"))
		g.Edges = append(g.Edges, edge("k"+g.Nodes[i].ID, "collect", g.Nodes[i].ID+"_0"))
	}
	ps := compileErr(t, g, compiler.Options{})
	require.Len(t, ps, 998)
	for _, p := range ps {
		require.Equal(t, compiler.CodeKeyCollision, p.Code)
	}
}

func TestNestingTooDeep(t *testing.T) {
	t.Parallel()
	build := func(depth int) compiler.VisualGraph {
		var g compiler.VisualGraph
		prev := ""
		link := func(id string) {
			if prev != "" {
				g.Edges = append(g.Edges, edge("e"+id, prev, id))
			}
			prev = id
		}
		for i := range depth {
			g.Nodes = append(g.Nodes, splitter("s"+strings.Repeat("x", i)))
			link("s" + strings.Repeat("x", i))
		}
		g.Nodes = append(g.Nodes, worker("w"))
		link("w")
		for i := range depth {
			g.Nodes = append(g.Nodes, collector("c"+strings.Repeat("x", i)))
			link("c" + strings.Repeat("x", i))
		}
		return g
	}
	eg := compileOK(t, build(compiler.MaxNestingDepth), compiler.Options{})
	require.Equal(t, compiler.MaxNestingDepth, eg.Nodes["w"].Depth)
	ps := compileErr(t, build(compiler.MaxNestingDepth+2), compiler.Options{})
	require.Equal(t, []prob{{compiler.CodeNestingTooDeep, "s" + strings.Repeat("x", compiler.MaxNestingDepth), "", "nodes[32]"}}, strip(ps))
}

// manyKeys is a setMetadata object of n keys.
func manyKeys(n int) string {
	parts := make([]string, n)
	for i := range parts {
		parts[i] = fmt.Sprintf(`"k%d":"p"`, i)
	}
	return "{" + strings.Join(parts, ",") + "}"
}
