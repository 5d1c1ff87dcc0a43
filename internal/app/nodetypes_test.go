package app_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/stitchd/stitchd/engine"
	"github.com/stitchd/stitchd/handlers"
	"github.com/stitchd/stitchd/internal/app"
	"github.com/stitchd/stitchd/internal/testtypes"
	"github.com/stitchd/stitchd/store/storetest"
)

// TestAddedNodeType: a type registered in app.Config.NodeTypes alone (the
// test-only Shout, one file) is listed by GET /api/v1/node-types after the
// built-in ones, its nodes' data is checked at save against its schema and
// by its own check, and a run of it completes end to end.
func TestAddedNodeType(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(c *app.Config) { c.NodeTypes = []engine.NodeTypeSpec{testtypes.Shout()} })

	var list struct {
		Types []engine.NodeTypeSpec `json:"types"`
	}
	require.Equal(t, 200, h.do("GET", "/api/v1/node-types", nil, &list))
	var names []string
	for _, nt := range list.Types {
		names = append(names, string(nt.Type))
		require.NotEmpty(t, nt.Help, nt.Type)
		require.NotEmpty(t, nt.Color, nt.Type)
		require.Contains(t, nt.Statuses, engine.StatusPending, nt.Type)
		_, err := engine.CompileForm(nt.ConfigSchema)
		require.NoError(t, err, "%s's schema compiles", nt.Type)
		require.True(t, json.Valid(nt.DefaultConfig), nt.Type)
	}
	var want []string
	for _, b := range handlers.Types(handlers.Options{}) {
		want = append(want, string(b.Type))
	}
	require.Equal(t, append(want, "Shout"), names, "the built-in types, then the added one")
	shout := list.Types[len(list.Types)-1]
	require.False(t, shout.Builtin)
	require.False(t, shout.Panel, "the editor renders its schema")
	require.JSONEq(t, `{"field":"name","suffix":"!"}`, string(shout.DefaultConfig))
	require.True(t, list.Types[0].Builtin && list.Types[0].Panel)

	// Bad data: every problem, where it is, and nothing saved.
	for name, tc := range map[string]struct {
		data  map[string]any
		paths []string
	}{
		"no field":        {map[string]any{"suffix": "!"}, []string{"nodes[0].data"}},
		"a long suffix":   {map[string]any{"field": "name", "suffix": "!!!!"}, []string{"nodes[0].data.suffix"}},
		"an unknown key":  {map[string]any{"field": "name", "volume": 11}, []string{"nodes[0].data"}},
		"a path, checked": {map[string]any{"field": "a.b"}, []string{"nodes[0].data"}},
	} {
		var resp struct {
			Error struct {
				Code    string `json:"code"`
				Details []struct {
					Code, Path, Message string
				} `json:"details"`
			} `json:"error"`
		}
		code := h.do("POST", "/api/v1/flows", map[string]any{"name": "bad " + name, "graph": map[string]any{
			"nodes": []map[string]any{{"id": "s", "type": "Shout", "data": tc.data}}, "edges": []any{}}}, &resp)
		require.Equal(t, 422, code, name)
		var paths []string
		for _, d := range resp.Error.Details {
			require.Equal(t, "invalid_config", d.Code, "%s: %s", name, d.Message)
			paths = append(paths, d.Path)
		}
		require.Equal(t, tc.paths, paths, "%s: %+v", name, resp.Error.Details)
	}
	var flows struct {
		Flows []any `json:"flows"`
	}
	require.Equal(t, 200, h.do("GET", "/api/v1/flows", nil, &flows))
	require.Empty(t, flows.Flows, "no bad flow saved")

	// An unknown type names every type a node may have, the added one too.
	var resp json.RawMessage
	require.Equal(t, 422, h.do("POST", "/api/v1/flows", map[string]any{"name": "whisper", "graph": map[string]any{
		"nodes": []map[string]any{{"id": "s", "type": "Whisper"}}, "edges": []any{}}}, &resp))
	require.Contains(t, string(resp), strings.Join(want, ", ")+" or Shout")

	// End to end, after a Transform and before a Worker; the type's name
	// in any case.
	flow := h.createFlow([]map[string]any{
		node("t", "Transform", map[string]any{"expression": `{"name": input.who}`}),
		node("s", "shout", map[string]any{"field": "name", "suffix": "!"}),
		wnode(h, "w"),
	}, []map[string]any{edge("t", "s", nil), edge("s", "w", nil)})
	r := h.startRun(flow, map[string]any{"who": "ada"})
	h.waitNode(r.ID, "w", "running")
	require.JSONEq(t, `{"shout":"ADA!"}`, string(h.run(r.ID).Nodes["s"].Output))
	// A failure of its own is the node's, with its reason.
	r = h.startRun(flow, map[string]any{"who": 42})
	h.waitRun(r.ID, "failed")
	require.Contains(t, *h.run(r.ID).Nodes["s"].Error, "not a string")
}

// TestAddedNodeTypeIsChecked: a type without a handler, or named as a
// built-in one in any case, or whose schema does not compile, stops the
// server from starting, with the reason.
func TestAddedNodeTypeIsChecked(t *testing.T) {
	t.Parallel()
	_, dbURL := storetest.IsolatedDB(t)
	for name, spec := range map[string]engine.NodeTypeSpec{
		"no handler":   {Type: "Quiet"},
		"a taken name": {Type: "worker", Handler: testtypes.Shout().Handler},
		"a bad schema": {Type: "Odd", Handler: testtypes.Shout().Handler, ConfigSchema: json.RawMessage(`{"type": 7}`)},
	} {
		_, err := app.New(t.Context(), app.Config{Addr: "127.0.0.1:0", DatabaseURL: dbURL, AuthToken: token,
			NodeTypes: []engine.NodeTypeSpec{spec}})
		require.ErrorContains(t, err, "error adding node type", name)
	}
}

// TestAddedTypeCallsBack: the engine reads a type's capabilities, not its
// name. Two types added with the Worker's handler and schema: Job, which
// says it callsBack, gets a worker.cancel notice when its run is
// cancelled, as a Worker would; Quiet, which does not, gets none.
func TestAddedTypeCallsBack(t *testing.T) {
	t.Parallel()
	worker := handlers.Types(handlers.Options{})[0]
	require.Equal(t, engine.NodeTypeWorker, worker.Type)
	require.True(t, worker.Caps.CallsBack)
	job, quiet := worker, worker
	job.Type, job.Builtin, job.IDPrefix, job.Panel = "Job", false, "job", false
	quiet.Type, quiet.Builtin, quiet.IDPrefix, quiet.Panel = "Quiet", false, "quiet", false
	quiet.Caps = engine.Capabilities{}
	rcv := newReceiver(t, 0)
	h := newHarness(t, func(c *app.Config) { c.NodeTypes = []engine.NodeTypeSpec{job, quiet} })
	j, q := wnode(h, "j", "cancelUrl", rcv.srv.URL+"/cancel"), wnode(h, "q", "cancelUrl", rcv.srv.URL+"/cancel")
	j["type"], q["type"] = "Job", "Quiet"
	r := h.startRun(h.createFlow([]map[string]any{j, q}, nil), map[string]any{})
	h.waitDispatch(r.ID, "j", 1)
	h.waitDispatch(r.ID, "q", 1)
	require.Equal(t, 200, h.do("POST", "/api/v1/runs/"+r.ID+"/cancel", nil, nil))
	var rows []struct{ Type, Payload string }
	require.NoError(t, h.app.Store.Gorm().Raw(`SELECT type, payload::text AS payload FROM notifications WHERE run_id = ?`, r.ID).
		Scan(&rows).Error)
	require.Len(t, rows, 1, "a notice for the type that calls back only: %+v", rows)
	require.Equal(t, "worker.cancel", rows[0].Type)
	require.Contains(t, rows[0].Payload, `"nodeId": "j"`)
}
