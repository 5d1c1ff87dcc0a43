package compiler_test

import (
	"strconv"
	"testing"

	"github.com/stitchd/stitchd/compiler"
)

// chainGraph is a linear chain of n Workers.
func chainGraph(n int) compiler.VisualGraph {
	g := compiler.VisualGraph{Nodes: make([]compiler.VisualNode, n), Edges: make([]compiler.VisualEdge, 0, n-1)}
	for i := range n {
		g.Nodes[i] = worker("w" + strconv.Itoa(i))
		if i > 0 {
			g.Edges = append(g.Edges, edge("e"+strconv.Itoa(i), g.Nodes[i-1].ID, g.Nodes[i].ID))
		}
	}
	return g
}

// fanOutGraph is a Splitter, n-2 parallel Workers and a Collector.
func fanOutGraph(n int) compiler.VisualGraph {
	g := compiler.VisualGraph{Nodes: []compiler.VisualNode{splitter("split")}}
	for i := range n - 2 {
		id := "w" + strconv.Itoa(i)
		g.Nodes = append(g.Nodes, worker(id))
		g.Edges = append(g.Edges, edge("a"+strconv.Itoa(i), "split", id), edge("b"+strconv.Itoa(i), id, "collect"))
	}
	g.Nodes = append(g.Nodes, collector("collect"))
	return g
}

// nestedChainsGraph is about n nodes: a Splitter whose region holds 50
// branches, each a chain of Workers with a nested Splitter/Collector pair in
// its middle, closed by one Collector.
func nestedChainsGraph(n int) compiler.VisualGraph {
	const branches = 50
	perBranch := (n - 2) / branches
	g := compiler.VisualGraph{Nodes: []compiler.VisualNode{splitter("split")}}
	for b := range branches {
		prev := "split"
		for k := range perBranch {
			id := "b" + strconv.Itoa(b) + "n" + strconv.Itoa(k)
			switch k {
			case perBranch / 3:
				g.Nodes = append(g.Nodes, splitter(id))
			case 2 * perBranch / 3:
				g.Nodes = append(g.Nodes, collector(id))
			default:
				g.Nodes = append(g.Nodes, worker(id))
			}
			g.Edges = append(g.Edges, edge("e"+id, prev, id))
			prev = id
		}
		g.Edges = append(g.Edges, edge("x"+strconv.Itoa(b), prev, "collect"))
	}
	g.Nodes = append(g.Nodes, collector("collect"))
	return g
}

func benchmarkCompile(b *testing.B, g compiler.VisualGraph) {
	b.ReportAllocs()
	for b.Loop() {
		if _, err := compiler.Compile(g, builtins); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkCompile1k(b *testing.B)              { benchmarkCompile(b, chainGraph(1000)) }
func BenchmarkCompile10kChain(b *testing.B)        { benchmarkCompile(b, chainGraph(10000)) }
func BenchmarkCompile1kFanOut(b *testing.B)        { benchmarkCompile(b, fanOutGraph(1000)) }
func BenchmarkCompile10kFanOut(b *testing.B)       { benchmarkCompile(b, fanOutGraph(10000)) }
func BenchmarkCompile10kNestedChains(b *testing.B) { benchmarkCompile(b, nestedChainsGraph(10000)) }
