package demo_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/stitchd/stitchd/compiler"
	"github.com/stitchd/stitchd/engine"
	"github.com/stitchd/stitchd/handlers"
	"github.com/stitchd/stitchd/internal/demo"
)

// TestBuiltinSchemasAcceptTheDemo: the config schema each built-in node
// type publishes (GET /api/v1/node-types) compiles and accepts the data of every node of the demo flow, which the
// compiler accepts too — the schemas describe what the compiler takes.
func TestBuiltinSchemasAcceptTheDemo(t *testing.T) {
	forms := map[engine.NodeType]*engine.Form{}
	for _, ts := range handlers.Types(handlers.Options{}) {
		f, err := engine.CompileForm(ts.ConfigSchema)
		require.NoError(t, err, ts.Type)
		forms[ts.Type] = f
		var obj map[string]any // a starting point to fill in (a Worker's URL is empty), an object
		require.NoError(t, json.Unmarshal(ts.DefaultConfig, &obj), ts.Type)
	}
	raw := demo.Graph("http://127.0.0.1:1/work")
	_, err := compiler.Compile(mustVisual(t, raw), handlers.Types(handlers.Options{}))
	require.NoError(t, err)
	var g struct {
		Nodes []struct {
			ID   string          `json:"id"`
			Type string          `json:"type"`
			Data json.RawMessage `json:"data"`
		} `json:"nodes"`
	}
	require.NoError(t, json.Unmarshal(raw, &g))
	seen := map[string]bool{}
	for _, n := range g.Nodes {
		f := forms[engine.NodeType(n.Type)]
		require.NotNil(t, f, "node %s: type %s", n.ID, n.Type)
		data := n.Data
		if len(data) == 0 {
			data = json.RawMessage(`{}`)
		}
		require.Empty(t, f.Check(data), "node %s (%s): %s", n.ID, n.Type, data)
		seen[n.Type] = true
	}
	require.GreaterOrEqual(t, len(seen), 4, "the demo uses several types: %v", seen)
}

func mustVisual(t *testing.T, raw json.RawMessage) compiler.VisualGraph {
	v, err := compiler.ParseVisual(raw)
	require.NoError(t, err)
	return v
}
