package compiler_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/stitchd/stitchd/compiler"
)

// TestPinnedSampleIsNotConfig: a node's "pinned" (the editor's pinned
// sample, kept beside its data) is layout: the compiled node's config is
// its data alone, and nothing of the pin is in the execution graph.
func TestPinnedSampleIsNotConfig(t *testing.T) {
	t.Parallel()
	const marker = "PINNED-SAMPLE-c41d"
	v, err := compiler.ParseVisual([]byte(`{"nodes": [
	  {"id": "a", "type": "Transform", "position": {"x": 0, "y": 0}, "data": {"expression": "input"},
	   "pinned": {"input": {"note": "` + marker + `"}, "steps": {}, "run": {"input": {}}, "vars": {}}},
	  {"id": "b", "type": "Condition", "data": {}, "pinned": {"input": {"note": "` + marker + `"}}}],
	 "edges": [{"id": "e", "source": "a", "target": "b"}]}`))
	require.NoError(t, err)
	eg := compileOK(t, v, compiler.Options{})
	require.JSONEq(t, `{"expression": "input"}`, string(eg.Nodes["a"].Config))
	require.JSONEq(t, `{}`, string(eg.Nodes["b"].Config))
	out, err := json.Marshal(eg)
	require.NoError(t, err)
	require.NotContains(t, string(out), marker)
}
