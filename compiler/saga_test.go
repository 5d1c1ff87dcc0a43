package compiler_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/stitchd/stitchd/compiler"
)

func undoEdge(id, step, undo string) compiler.VisualEdge {
	return edgeData(id, step, undo, `{"on":"compensate"}`)
}

// TestCompileCompensation: an edge marked data.on "compensate" links a
// step to its undo node, out of the forward graph: the undo node is
// neither an entry nor a terminal node, nor warned of as isolated.
func TestCompileCompensation(t *testing.T) {
	t.Parallel()
	g := compileOK(t, graph(nodes(worker("a"), worker("b"), worker("ua")), chain("e", "a", "b"), edges(undoEdge("u", "a", "ua"))),
		compiler.Options{})
	require.Equal(t, map[string]string{"a": "ua"}, g.Compensation)
	require.Equal(t, []string{"a"}, g.EntryNodes)
	require.Equal(t, []string{"b"}, g.TerminalNodes)
	require.Empty(t, g.Adjacency["a"][1:], "the compensation edge is not walked")
	require.Empty(t, g.Upstream["ua"])
	require.Empty(t, g.Branches, "a compensation edge is no branch")
	require.Empty(t, g.Warnings)
	g.Prepare()
	require.Equal(t, "a", g.UndoStep("ua"))
	require.Empty(t, g.UndoStep("a"))
}

// TestCompileCompensationProblems: an undo node has no other edge (in or
// out); a step has one undo node; no Splitter, region member or loop
// member has one; a compensation edge has no mapping and no other rule.
func TestCompileCompensationProblems(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		g    compiler.VisualGraph
		want []prob
	}{
		{"the undo node has another incoming edge",
			graph(nodes(worker("a"), worker("b"), worker("ua")), chain("e", "a", "b"), edges(edge("x", "b", "ua"), undoEdge("u", "a", "ua"))),
			[]prob{{compiler.CodeInvalidCompensation, "ua", "u", "edges[2]"}}},
		{"the undo node hands on",
			graph(nodes(worker("a"), worker("b"), worker("ua")), edges(edge("x", "ua", "b"), undoEdge("u", "a", "ua"))),
			[]prob{{compiler.CodeInvalidCompensation, "ua", "u", "edges[1]"}}},
		{"two steps share an undo node",
			graph(nodes(worker("a"), worker("b"), worker("ua")), chain("e", "a", "b"), edges(undoEdge("u1", "a", "ua"), undoEdge("u2", "b", "ua"))),
			[]prob{{compiler.CodeInvalidCompensation, "ua", "u1", "edges[1]"}, {compiler.CodeInvalidCompensation, "ua", "u2", "edges[2]"}}},
		{"a step with two undo nodes",
			graph(nodes(worker("a"), worker("u1"), worker("u2")), edges(undoEdge("x", "a", "u1"), undoEdge("y", "a", "u2"))),
			[]prob{{compiler.CodeInvalidCompensation, "a", "y", "edges[1]"}}},
		{"a step inside a parallel region",
			graph(nodes(splitter("s"), worker("w"), collector("c"), worker("uw")), chain("e", "s", "w", "c"), edges(undoEdge("u", "w", "uw"))),
			[]prob{{compiler.CodeInvalidCompensation, "w", "u", "edges[2]"}}},
		{"a mapping",
			graph(nodes(worker("a"), worker("ua")), edges(edgeData("u", "a", "ua", `{"on":"compensate","mapping":{"x":"y"}}`))),
			[]prob{{compiler.CodeInvalidCompensation, "", "u", "edges[0].data.mapping"}}},
		{"another rule",
			graph(nodes(worker("a"), worker("ua")), edges(edgeData("u", "a", "ua", `{"on":"compensate","condition":"true"}`))),
			[]prob{{compiler.CodeInvalidBranch, "", "u", "edges[0].data"}}},
		{"an unknown on",
			graph(nodes(worker("a"), worker("ua")), edges(edgeData("u", "a", "ua", `{"on":"undo"}`))),
			[]prob{{compiler.CodeInvalidBranch, "", "u", "edges[0].data.on"}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tc.want, strip(compileErr(t, tc.g, compiler.Options{})))
		})
	}
}

// TestCompileJoin: data.join is "all" (the default) or "any"; a node
// with "any" gets the nodes its first arrival cancels: those upstream of
// it with no way to the end of the flow but through it. A node with a
// way around (b2 also leads to side) goes on; a Collector cannot join
// "any"; "any" on a node with one way in is a warning.
func TestCompileJoin(t *testing.T) {
	t.Parallel()
	g := compileOK(t, graph(nodes(worker("start"), worker("a"), worker("b1"), worker("b2"), worker("side"), ux("ask"),
		workerWith("j", `"join":"any"`), worker("after")),
		edges(edge("e1", "start", "a"), edge("e2", "start", "b1"), edge("e3", "b1", "b2"), edge("e4", "start", "ask"),
			edge("e5", "a", "j"), edge("e6", "b2", "j"), edge("e7", "ask", "j"), edge("e8", "j", "after"), edge("e9", "b1", "side"))),
		compiler.Options{})
	require.Equal(t, map[string][]string{"j": {"a", "ask", "b2"}}, g.JoinAny,
		"b1 (and start before it) lead to side as well: they go on")

	g = compileOK(t, graph(nodes(worker("a"), worker("b"), workerWith("j", `"join":"all"`)), edges(edge("e1", "a", "j"), edge("e2", "b", "j"))),
		compiler.Options{})
	require.Empty(t, g.JoinAny)

	g = compileOK(t, graph(nodes(worker("a"), workerWith("j", `"join":"any"`)), chain("e", "a", "j")), compiler.Options{})
	require.Len(t, g.Warnings, 1)
	require.Equal(t, compiler.CodeInvalidJoin, g.Warnings[0].Code)

	probs := compileErr(t, graph(nodes(worker("a"), workerWith("j", `"join":"first"`)), chain("e", "a", "j")), compiler.Options{})
	require.Equal(t, []prob{{compiler.CodeInvalidJoin, "j", "", "nodes[1].data.join"}}, strip(probs))

	probs = compileErr(t, graph(nodes(splitter("s"), worker("w"), worker("v"), node("c", "Collector", `{"join":"any"}`)),
		edges(edge("e1", "s", "w"), edge("e2", "s", "v"), edge("e3", "w", "c"), edge("e4", "v", "c"))), compiler.Options{})
	require.Equal(t, []prob{{compiler.CodeInvalidJoin, "c", "", "nodes[3].data.join"}}, strip(probs))

	probs = compileErr(t, graph(nodes(splitter("s"), worker("w"), workerWith("j", `"join":"any"`), collector("c")),
		edges(edge("e1", "s", "w"), edge("e2", "s", "j"), edge("e3", "w", "j"), edge("e4", "j", "c"))), compiler.Options{})
	require.Equal(t, []prob{{compiler.CodeInvalidJoin, "j", "", "nodes[2].data.join"}}, strip(probs), "an item arrives from its Splitter at once")

	// A type checked by its schema (Log) says it there, once.
	probs = compileErr(t, graph(nodes(worker("a"), node("l", "Log", `{"message":"x","join":"first"}`)), chain("e", "a", "l")), compiler.Options{})
	require.Len(t, probs, 1)
	require.Equal(t, compiler.CodeInvalidConfig, probs[0].Code)
}
