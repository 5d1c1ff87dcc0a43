package app_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestPinnedSampleStaysInTheLayout: a node's pinned sample (the editor's
// "Pin this input") is saved with the visual graph and read back, but it
// is not the step's config: the version's execution graph does not hold
// it, and a real run reads its own input, never the pin.
func TestPinnedSampleStaysInTheLayout(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	const marker = "PINNED-SAMPLE-7f3a"
	pinned := map[string]any{"input": map[string]any{"amount": 99999, "note": marker}, "steps": map[string]any{}, "run": map[string]any{"input": map[string]any{"amount": 99999}}, "vars": map[string]any{}}
	req := node("req", "Transform", map[string]any{"expression": `{"amount": input.amount}`})
	req["pinned"] = pinned
	flow := h.createFlow([]map[string]any{req}, nil)

	var got struct {
		Graph struct {
			Nodes []struct {
				ID     string `json:"id"`
				Pinned struct {
					Input struct {
						Note string `json:"note"`
					} `json:"input"`
				} `json:"pinned"`
				Data map[string]any `json:"data"`
			} `json:"nodes"`
		} `json:"graph"`
	}
	require.Equal(t, 200, h.do("GET", "/api/v1/flows/"+flow, nil, &got))
	require.Len(t, got.Graph.Nodes, 1)
	require.Equal(t, marker, got.Graph.Nodes[0].Pinned.Input.Note, "the pin is saved with the layout")
	require.NotContains(t, got.Graph.Nodes[0].Data, "pinned")

	var version map[string]json.RawMessage
	require.Equal(t, 200, h.do("GET", "/api/v1/flows/"+flow+"/versions/1", nil, &version))
	exec, ok := version["execution_graph"]
	require.True(t, ok, "the version has an execution graph: %v", keys(version))
	require.Contains(t, string(exec), `"req"`)
	require.NotContains(t, string(exec), marker, "the pin never reaches the execution graph")
	require.Contains(t, string(version["graph"]), marker, "…while the visual graph keeps it")

	r := h.waitRun(h.startRun(flow, map[string]any{"amount": 5}).ID, "completed")
	require.JSONEq(t, `{"amount": 5}`, string(r.Output), "a real run reads its own input, not the pin")
}

func keys(m map[string]json.RawMessage) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}
