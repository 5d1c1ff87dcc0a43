package compiler_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/stitchd/stitchd/compiler"
)

func TestNodeIDs(t *testing.T) {
	t.Parallel()
	ok := []string{"a", "A", "0", "fetch", "step_2", "score-v2", "a.b", "worker1", "approval_1", "Z9._-x",
		strings.Repeat("x", compiler.MaxNodeIDLen)}
	for _, id := range ok {
		compileOK(t, graph(nodes(worker(id))), compiler.Options{})
	}
	bad := []string{"a\nb", "a b", "a/b", "a;b", "a=b", "a'b", `a"b`, "a<b", "a>b", "a?b", "a#b", "a%2F", "_a", ".a", "-a", "..",
		"é", "a\tb", "a\x00b", strings.Repeat("x", compiler.MaxNodeIDLen+1)}
	for _, id := range bad {
		ps := compileErr(t, graph(nodes(worker(id))), compiler.Options{})
		require.Contains(t, strip(ps), prob{compiler.CodeInvalidID, id, "", "nodes[0].id"}, "%q", id)
	}
	// Every bad node of a graph is reported, each at its path.
	ps := compileErr(t, graph(nodes(worker("ok"), worker("no way"), ux("a/b")), edges(edge("e1", "ok", "no way"))),
		compiler.Options{})
	require.Equal(t, []prob{
		{compiler.CodeInvalidID, "no way", "", "nodes[1].id"},
		{compiler.CodeInvalidID, "a/b", "", "nodes[2].id"},
	}, strip(ps))
	// A long id is cut in the message.
	long := strings.Repeat("y", 5000)
	ps = compileErr(t, graph(nodes(worker(long))), compiler.Options{})
	require.Less(t, len(ps[0].Message), 300)
}

func TestEdgeIDsAndLabels(t *testing.T) {
	t.Parallel()
	two := nodes(worker("a"), worker("b"))
	compileOK(t, graph(two, edges(edge("reactflow__edge-a-b with spaces/and:more", "a", "b"))), compiler.Options{})
	compileOK(t, graph(two, edges(edge(strings.Repeat("e", compiler.MaxEdgeIDLen), "a", "b"))), compiler.Options{})
	for _, id := range []string{"e\n1", strings.Repeat("e", compiler.MaxEdgeIDLen+1)} {
		ps := compileErr(t, graph(two, edges(edge(id, "a", "b"))), compiler.Options{})
		require.Contains(t, strip(ps), prob{compiler.CodeInvalidID, "", id, "edges[0].id"})
	}

	label := func(n int) string { return `"label":"` + strings.Repeat("é", n) + `"` }
	compileOK(t, graph(nodes(workerWith("a", label(compiler.MaxLabelLen)), workerWith("b", label(1))),
		edges(edgeData("e1", "a", "b", `{`+label(compiler.MaxLabelLen)+`}`))), compiler.Options{})
	ps := compileErr(t, graph(nodes(workerWith("a", label(compiler.MaxLabelLen+1)), node("b", "UX", `{`+label(1000)+`}`)),
		edges(edgeData("e1", "a", "b", `{`+label(compiler.MaxLabelLen+1)+`}`))), compiler.Options{})
	require.Equal(t, []prob{
		{compiler.CodeTooLong, "a", "", "nodes[0].data.label"},
		{compiler.CodeTooLong, "b", "", "nodes[1].data.label"},
		{compiler.CodeTooLong, "", "e1", "edges[0].data.label"},
	}, strip(ps))
}
