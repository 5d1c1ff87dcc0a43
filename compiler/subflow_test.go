package compiler

import (
	"context"
	"fmt"
	"github.com/stitchd/stitchd/handlers"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/tidwall/gjson"

	"github.com/stitchd/stitchd/engine"
)

// versions is a set of saved flow versions in memory: the resolver the
// store is, for the pure part of LinkSubFlows (resolution and cycles).
type versions struct {
	graphs  map[string]*engine.ExecutionGraph // by version id
	targets []engine.SubFlowTarget
}

func (vs *versions) ResolveSubFlow(_ context.Context, ref string, version int) (engine.SubFlowTarget, error) {
	var found *engine.SubFlowTarget
	for i, t := range vs.targets {
		if (t.FlowID == ref || t.FlowName == ref) && (version == 0 || t.Version == version) {
			if found == nil || t.Version > found.Version {
				found = &vs.targets[i]
			}
		}
	}
	if found == nil {
		return engine.SubFlowTarget{}, engine.ErrNotFound
	}
	return *found, nil
}

func (vs *versions) ExecutionGraph(_ context.Context, id string) (*engine.ExecutionGraph, error) {
	g, ok := vs.graphs[id]
	if !ok {
		return nil, engine.ErrNotFound
	}
	return g, nil
}

// save compiles a graph of SubFlow nodes (id → flow ref) as version n of
// flow, linking it, and records it.
func (vs *versions) save(t *testing.T, flow string, n int, subs ...string) (*engine.ExecutionGraph, error) {
	t.Helper()
	var v VisualGraph
	for i, ref := range subs {
		v.Nodes = append(v.Nodes, VisualNode{ID: fmt.Sprintf("s%d", i), Type: "SubFlow", Data: []byte(`{"flow":"` + ref + `"}`)})
	}
	if len(subs) == 0 {
		v.Nodes = []VisualNode{{ID: "w", Type: "Transform", Data: []byte(`{"expression":"1"}`)}}
	}
	g, err := Compile(v, handlers.Types(handlers.Options{}))
	require.NoError(t, err)
	if err := LinkSubFlows(context.Background(), v, g, flow, vs); err != nil {
		return nil, err
	}
	id := fmt.Sprintf("%s@%d", flow, n)
	vs.graphs[id] = g
	vs.targets = append(vs.targets, engine.SubFlowTarget{FlowID: flow, FlowName: flow, VersionID: id, Version: n})
	return g, nil
}

func TestLinkSubFlowsPinsAndRefusesCycles(t *testing.T) {
	vs := &versions{graphs: map[string]*engine.ExecutionGraph{}}
	_, err := vs.save(t, "kyc", 1)
	require.NoError(t, err)
	g, err := vs.save(t, "onboard", 1, "kyc")
	require.NoError(t, err)
	require.Equal(t, &engine.SubFlowTarget{FlowID: "kyc", FlowName: "kyc", VersionID: "kyc@1", Version: 1}, g.Nodes["s0"].SubFlow)
	require.Equal(t, []string{"kyc@1"}, g.SubFlowVersions())
	_, err = vs.save(t, "account", 1, "onboard")
	require.NoError(t, err)

	// kyc v2 running account would contain itself: kyc → account →
	// onboard → kyc (its v1, pinned by onboard v1).
	_, err = vs.save(t, "kyc", 2, "account")
	var ce *Error
	require.ErrorAs(t, err, &ce, "%v", err)
	require.Len(t, ce.Problems, 1)
	p := ce.Problems[0]
	require.Equal(t, CodeInvalidSubFlow, p.Code)
	require.Equal(t, "nodes[0].data.flow", p.Path)
	require.Contains(t, p.Message, `"account" v1 → "onboard" v1 → "kyc" v1`)

	_, err = vs.save(t, "kyc", 2, "kyc")
	require.ErrorAs(t, err, &ce)
	require.Contains(t, ce.Problems[0].Message, "runs this flow itself")

	// A flow that runs another twice, by two paths, is no cycle.
	_, err = vs.save(t, "both", 1, "onboard", "kyc")
	require.NoError(t, err)

	_, err = vs.save(t, "x", 1, "missing")
	require.ErrorAs(t, err, &ce)
	require.Contains(t, ce.Problems[0].Message, `there is no flow "missing"`)
}

func TestSubFlowVersion(t *testing.T) {
	for src, want := range map[string]int{`{}`: 0, `{"version":"latest"}`: 0, `{"version":3}`: 3, `{"version":null}`: 0} {
		v, ok := subFlowVersion(gjson.Get(src, "version"))
		require.True(t, ok, src)
		require.Equal(t, want, v, src)
	}
	for _, src := range []string{`{"version":0}`, `{"version":-1}`, `{"version":1.5}`, `{"version":"newest"}`, `{"version":true}`, `{"version":3000000000}`} {
		_, ok := subFlowVersion(gjson.Get(src, "version"))
		require.False(t, ok, src)
	}
}
