package app_test

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestTransform(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	// Reshape a lead, then compute a score from it and the run's input,
	// and route on it.
	flow := h.createFlow(
		[]map[string]any{
			node("shape", "Transform", map[string]any{"expression": `{"name": upper(input.first) + " " + input.last, "employees": input.company.size}`}),
			node("score", "Transform", map[string]any{"expression": `{"name": input.name, "score": input.employees > 100 ? 80 : 20, "source": run.input.source}`}),
			node("hot", "Condition", nil), node("cold", "Condition", nil),
		},
		[]map[string]any{edge("shape", "score", nil),
			redge("score", "hot", map[string]any{"condition": "output.score >= 50"}), redge("score", "cold", map[string]any{"default": true})})
	r := h.startRun(flow, map[string]any{"first": "ada", "last": "Lovelace", "company": map[string]any{"size": 250}, "source": "hook"})
	fin := h.waitRun(r.ID, "completed")
	require.JSONEq(t, `{"name": "ADA Lovelace", "employees": 250}`, string(fin.Nodes["shape"].Output))
	require.JSONEq(t, `{"name": "ADA Lovelace", "score": 80, "source": "hook"}`, string(fin.Nodes["score"].Output))
	require.Equal(t, "completed", fin.Nodes["hot"].Status)
	require.Equal(t, "skipped", fin.Nodes["cold"].Status)

	// A runtime error fails the node with the reason.
	r = h.startRun(flow, map[string]any{"first": 7})
	fin = h.waitRun(r.ID, "failed")
	require.Equal(t, "failed", fin.Nodes["shape"].Status)
	require.Contains(t, *fin.Nodes["shape"].Error, "the expression could not be evaluated")
	require.Equal(t, "pending", fin.Nodes["score"].Status)

	// Compile errors: 422 with the node and path; nothing saved.
	graph := map[string]any{"nodes": []map[string]any{
		node("a", "Transform", map[string]any{"expression": "input.x +"}),
		node("b", "Transform", map[string]any{"expression": "output.x"}),
		node("c", "Transform", nil),
	}, "edges": []map[string]any{edge("a", "b", nil), edge("b", "c", nil)}}
	code, details := h.refused(422, "POST", "/api/v1/flows", map[string]any{"name": "bad transform", "graph": graph})
	require.Equal(t, "invalid_graph", code)
	require.Len(t, details, 3)
	for i, d := range details {
		require.Equal(t, []string{"a", "b", "c"}[i], d.NodeID)
		require.Equal(t, "invalid_expression", d.Code)
		require.Equal(t, []string{"nodes[0]", "nodes[1]", "nodes[2]"}[i]+".data.expression", d.Path)
	}
	require.Contains(t, details[1].Message, "unknown name output")
}
