package client_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/stitchd/stitchd/internal/client"
)

// TestParseGraphKeepsWhatItDoesNotName: a graph read into the contract's
// type and sent again is the graph given — fields the spec does not name
// (a node's measured size, an edge's label, a setting) and integers past
// 2^53 included — as the server keeps them.
func TestParseGraphKeepsWhatItDoesNotName(t *testing.T) {
	raw := `{"nodes":[{"id":"a","type":"Transform","position":{"x":10.5,"y":-3},"measured":{"width":180},
		"data":{"big":12345678901234567890,"label":"A"},"pinned":{"n":9007199254740993}}],
		"edges":[{"id":"e","source":"a","target":"b","label":"go","data":{"condition":"true","note":"kept"}}],
		"settings":{"retentionDays":7,"custom":1},"viewport":{"zoom":1.25}}`
	g, err := client.ParseGraph([]byte(raw))
	require.NoError(t, err)
	out, err := json.Marshal(g)
	require.NoError(t, err)
	require.JSONEq(t, raw, string(out))
	require.Contains(t, string(out), "12345678901234567890")
	require.Contains(t, string(out), "9007199254740993")
}

// TestAnswersKeepNumbersAndProblems: a run's input comes back with its
// integers as written, and a refused graph's problems are read off the
// contract's Error.
func TestAnswersKeepNumbersAndProblems(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /api/v1/runs/{id}", func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte(`{"id":"0b9e6a3c-9d1e-4a57-8f7c-2f0c8a1d5e60","flow_id":"0b9e6a3c-9d1e-4a57-8f7c-2f0c8a1d5e61",
			"flow_version_id":"0b9e6a3c-9d1e-4a57-8f7c-2f0c8a1d5e62","status":"completed","input":{"n":12345678901234567890},
			"output":null,"error":null,"entity_id":null,"created_at":"2026-01-02T03:04:05Z","updated_at":"2026-01-02T03:04:05Z",
			"finished_at":"2026-01-02T03:04:06Z","nodes":{}}`))
	})
	mux.HandleFunc("POST /api/v1/flows", func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusUnprocessableEntity)
		_, _ = w.Write([]byte(`{"error":{"code":"invalid_graph","message":"the graph has 1 problem",
			"details":[{"code":"unknown_type","node_id":"a","path":"nodes[0].type","message":"unknown type"}]}}`))
	})
	mux.HandleFunc("DELETE /api/v1/flows/{id}", func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusConflict)
		_, _ = w.Write([]byte(`{"error":{"code":"flow_busy","message":"runs go on","details":{"running":1,"paused":0,"queued":0}}}`))
	})
	srv := httptest.NewServer(mux)
	defer srv.Close()
	c := &client.Client{BaseURL: srv.URL}

	r, err := c.GetRun(t.Context(), "0b9e6a3c-9d1e-4a57-8f7c-2f0c8a1d5e60")
	require.NoError(t, err)
	in, err := json.Marshal(r.Input)
	require.NoError(t, err)
	require.JSONEq(t, `{"n":12345678901234567890}`, string(in))
	require.Contains(t, string(in), "12345678901234567890")
	require.True(t, client.Finished(r))

	_, err = c.CreateFlow(t.Context(), client.FlowSpec{Name: "x", Graph: client.Graph{}})
	var ae *client.Error
	require.ErrorAs(t, err, &ae)
	require.Equal(t, http.StatusUnprocessableEntity, ae.Status)
	require.Equal(t, "invalid_graph", ae.Code)
	require.Len(t, ae.Details, 1)
	require.Equal(t, "nodes[0].type", ae.Details[0].Path)
	require.Equal(t, "a", *ae.Details[0].NodeId)

	err = c.Do(t.Context(), http.MethodDelete, "/api/v1/flows/x", nil, nil)
	require.ErrorAs(t, err, &ae)
	require.Equal(t, "flow_busy", ae.Code)
	require.Empty(t, ae.Details, "details that are an object are no problems")
}
