package compiler_test

import (
	"encoding/json"
	"fmt"
	"github.com/stitchd/stitchd/handlers"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/stitchd/stitchd/compiler"
	"github.com/stitchd/stitchd/engine"
)

// builtins are stitchd's node types, the registry the compiler is given.
var builtins = handlers.Types(handlers.Options{})

// apiExample is the example graph of openapi.yaml (FlowGraph).
const apiExample = `{
  "nodes": [
    {"id": "fetch", "type": "Worker", "position": {"x": 0, "y": 0},
     "data": {"label": "Fetch leads", "webhookUrl": "http://worker.local/fetch",
              "timeoutSeconds": 300,
              "retry": {"maxAttempts": 3, "backoff": "exponential", "initialDelayMs": 1000, "maxDelayMs": 60000},
              "entityMovement": {"onSuccess": {"targetSectionId": "qualified", "completeAs": "success", "setEntityType": "customer"},
                                 "onFailure": {"targetSectionId": "nurture", "completeAs": "neutral"}}}},
    {"id": "split", "type": "Splitter", "data": {"arrayPath": "leads"}},
    {"id": "score", "type": "Worker", "data": {"webhookUrl": "http://worker.local/score"}},
    {"id": "merge", "type": "Collector", "data": {}},
    {"id": "approve", "type": "UX", "data": {"label": "Approve the batch", "prompt": "Send these leads to sales?"}}
  ],
  "edges": [
    {"id": "e1", "source": "fetch", "target": "split"},
    {"id": "e2", "source": "split", "target": "score"},
    {"id": "e3", "source": "score", "target": "merge"},
    {"id": "e4", "source": "merge", "target": "approve", "data": {"mapping": {"scores": "@this"}}}
  ]
}`

func node(id, typ, data string) compiler.VisualNode {
	n := compiler.VisualNode{ID: id, Type: typ}
	if data != "" {
		n.Data = json.RawMessage(data)
	}
	return n
}

func worker(id string) compiler.VisualNode {
	return node(id, "Worker", fmt.Sprintf(`{"webhookUrl":"http://worker.local/%s"}`, id))
}

// workerWith is a Worker whose data is {"webhookUrl": …, <extra>}.
func workerWith(id, extra string) compiler.VisualNode {
	return node(id, "Worker", fmt.Sprintf(`{"webhookUrl":"http://worker.local/%s",%s}`, id, extra))
}

func ux(id string) compiler.VisualNode        { return node(id, "UX", "") }
func splitter(id string) compiler.VisualNode  { return node(id, "Splitter", `{"arrayPath":"items"}`) }
func collector(id string) compiler.VisualNode { return node(id, "Collector", "") }

func edge(id, source, target string) compiler.VisualEdge {
	return compiler.VisualEdge{ID: id, Source: source, Target: target}
}

func edgeData(id, source, target, data string) compiler.VisualEdge {
	e := edge(id, source, target)
	e.Data = json.RawMessage(data)
	return e
}

// chain returns edges "<prefix><k>" joining ids in sequence.
func chain(prefix string, ids ...string) []compiler.VisualEdge {
	var es []compiler.VisualEdge
	for k := 1; k < len(ids); k++ {
		es = append(es, edge(fmt.Sprintf("%s%d", prefix, k), ids[k-1], ids[k]))
	}
	return es
}

func graph(nodes []compiler.VisualNode, edgeLists ...[]compiler.VisualEdge) compiler.VisualGraph {
	g := compiler.VisualGraph{Nodes: nodes}
	for _, l := range edgeLists {
		g.Edges = append(g.Edges, l...)
	}
	return g
}

func nodes(ns ...compiler.VisualNode) []compiler.VisualNode { return ns }
func edges(es ...compiler.VisualEdge) []compiler.VisualEdge { return es }

// prob is a problem without its message.
type prob struct {
	Code, NodeID, EdgeID, Path string
}

func strip(ps []engine.Problem) []prob {
	out := make([]prob, 0, len(ps))
	for _, p := range ps {
		out = append(out, prob{p.Code, p.NodeID, p.EdgeID, p.Path})
	}
	return out
}

// compileErr compiles g and returns the problems of the *Error it must
// fail with.
func compileErr(t *testing.T, g compiler.VisualGraph, opts compiler.Options) []engine.Problem {
	t.Helper()
	opts.Types = append(slices.Clone(builtins), opts.Types...)
	eg, err := compiler.CompileWithOptions(g, opts)
	require.Error(t, err)
	require.Nil(t, eg)
	var cerr *compiler.Error
	require.ErrorAs(t, err, &cerr, "error %T is not *compiler.Error", err)
	require.NotEmpty(t, cerr.Problems)
	for _, p := range cerr.Problems {
		require.NotEmpty(t, p.Message, "problem %+v has no message", p)
		require.NotEmpty(t, p.Path, "problem %+v has no path", p)
	}
	return cerr.Problems
}

func compileOK(t *testing.T, g compiler.VisualGraph, opts compiler.Options) *engine.ExecutionGraph {
	t.Helper()
	opts.Types = append(slices.Clone(builtins), opts.Types...)
	eg, err := compiler.CompileWithOptions(g, opts)
	require.NoError(t, err)
	require.NotNil(t, eg)
	checkInvariants(t, eg)
	return eg
}

func mustJSON(t testing.TB, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return b
}

// checkInvariants checks the structural promises of an execution graph, in
// linear time so that it can run on large graphs.
func checkInvariants(t testing.TB, eg *engine.ExecutionGraph) {
	t.Helper()
	require.Len(t, eg.Adjacency, len(eg.Nodes))
	require.Len(t, eg.Upstream, len(eg.Nodes))
	require.NotNil(t, eg.EdgeData)
	require.NotNil(t, eg.Regions)
	require.NotNil(t, eg.EntryNodes)
	require.NotNil(t, eg.TerminalNodes)
	direct := map[string]string{} // node → region listing it as direct
	for s, r := range eg.Regions {
		require.Equal(t, s, r.Splitter)
		require.NotNil(t, r.Members)
		require.NotNil(t, r.Direct)
		for _, d := range r.Direct {
			direct[d] = s
		}
	}
	for id, n := range eg.Nodes {
		require.Equal(t, id, n.ID)
		require.NotNil(t, eg.Adjacency[id], "adjacency of %s is nil", id)
		require.NotNil(t, eg.Upstream[id], "upstream of %s is nil", id)
		require.True(t, json.Valid(n.Config))
		require.Equal(t, n.Region, direct[id], "region of %s", id)
		require.Equal(t, n.Region == "", n.Depth == 0, "depth of %s", id)
	}
	edgesDown := map[string]bool{}
	for id, ds := range eg.Adjacency {
		_, ok := eg.Nodes[id]
		require.True(t, ok, "adjacency key %s is not a node", id)
		for _, d := range ds {
			edgesDown[engine.EdgeKey(id, d)] = true
		}
	}
	nUp := 0
	for id, us := range eg.Upstream {
		for _, u := range us {
			require.True(t, edgesDown[engine.EdgeKey(u, id)], "upstream edge %s->%s not in adjacency", u, id)
			nUp++
		}
	}
	require.Equal(t, len(edgesDown), nUp)
	b1 := mustJSON(t, eg)
	b2 := mustJSON(t, eg)
	require.Equal(t, b1, b2)
}
