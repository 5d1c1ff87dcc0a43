package app_test

import (
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/stitchd/stitchd/engine"
)

// TestTryNode: POST /api/v1/flows/{id}/nodes/{key}/test runs one step
// alone — a Transform reading an earlier step's sample and a variable, a
// Condition's edges, an HTTP step's request sent for real, a step of the
// editor's unsaved graph, a step of a flow not saved yet (POST
// /api/v1/nodes/{key}/test) — answers its output, edges and time, and
// writes no run; a Worker is not_testable; an unknown step is 404.
func TestTryNode(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	var hits atomic.Int32
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		b, _ := io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"approved": true, "path": "` + r.URL.Path + `", "sent": ` + string(b) + `}`))
	}))
	t.Cleanup(api.Close)

	flow := h.createFlow([]map[string]any{
		node("req", "Transform", map[string]any{"expression": `{"amount": run.input.amount}`, "setVariables": map[string]any{"limit": "1000"}}),
		node("budget", "HTTP", map[string]any{"method": "POST", "url": api.URL + "/budget/{{ steps.req.output.amount }}",
			"body": map[string]any{"amount": "{{ steps.req.output.amount }}"}}),
		node("check", "Condition", nil),
		node("calc", "Transform", map[string]any{"expression": `{"over": steps.req.output.amount - vars.limit, "ok": input.body.approved}`}),
		wnode(h, "big"), wnode(h, "small"),
	}, []map[string]any{edge("req", "budget", nil), edge("budget", "check", nil), edge("check", "calc", nil),
		redge("calc", "big", map[string]any{"condition": "output.over > 0"}), redge("calc", "small", map[string]any{"default": true})})

	type answer struct {
		Output     json.RawMessage `json:"output"`
		Error      *string         `json:"error"`
		DurationMs *int64          `json:"duration_ms"`
		Edges      []struct {
			Target string `json:"target"`
			Label  string `json:"label"`
			Taken  bool   `json:"taken"`
		} `json:"edges"`
	}
	try := func(key string, body map[string]any) (int, answer, string) {
		var raw json.RawMessage
		code := h.do("POST", "/api/v1/flows/"+flow+"/nodes/"+key+"/test", body, &raw)
		var a answer
		_ = json.Unmarshal(raw, &a)
		return code, a, string(raw)
	}
	sample := map[string]any{"input": map[string]any{"body": map[string]any{"approved": true}},
		"steps": map[string]any{"req": map[string]any{"output": map[string]any{"amount": 1500}}}, "vars": map[string]any{"limit": 1000}}

	code, a, raw := try("calc", sample)
	require.Equal(t, 200, code, raw)
	require.JSONEq(t, `{"over": 500, "ok": true}`, string(a.Output))
	require.Nil(t, a.Error)
	require.NotNil(t, a.DurationMs)
	require.Len(t, a.Edges, 2)
	require.Equal(t, "big", a.Edges[0].Target)
	require.True(t, a.Edges[0].Taken, "500 > 0")
	require.Equal(t, "output.over > 0", a.Edges[0].Label)
	require.False(t, a.Edges[1].Taken, "the default is not taken when a condition holds")

	sample["steps"] = map[string]any{"req": map[string]any{"output": map[string]any{"amount": 700}}}
	_, a, _ = try("calc", sample)
	require.JSONEq(t, `{"over": -300, "ok": true}`, string(a.Output))
	require.False(t, a.Edges[0].Taken)
	require.True(t, a.Edges[1].Taken, "no condition holds: the default")

	// The HTTP step, sent for real, with its template over the sample.
	code, a, raw = try("budget", map[string]any{"steps": map[string]any{"req": map[string]any{"output": map[string]any{"amount": 42}}}})
	require.Equal(t, 200, code, raw)
	require.EqualValues(t, 1, hits.Load())
	var resp struct {
		Status int            `json:"status"`
		Body   map[string]any `json:"body"`
	}
	require.NoError(t, json.Unmarshal(a.Output, &resp), string(a.Output))
	require.Equal(t, 200, resp.Status)
	require.Equal(t, "/budget/42", resp.Body["path"])
	require.Equal(t, map[string]any{"amount": 42.0}, resp.Body["sent"], "a sole template keeps its value's type")

	// A failing expression is the step's error, not the request's.
	code, a, raw = try("calc", map[string]any{"input": map[string]any{}})
	require.Equal(t, 200, code, raw)
	require.NotNil(t, a.Error, raw)
	require.Equal(t, "null", string(a.Output), "no output")

	// The editor's unsaved graph: a step not saved yet.
	code, a, raw = try("draft", map[string]any{"input": map[string]any{"n": 2}, "graph": map[string]any{
		"nodes": []map[string]any{node("draft", "Transform", map[string]any{"expression": "input.n * 21"})}, "edges": []any{}}})
	require.Equal(t, 200, code, raw)
	require.JSONEq(t, `42`, string(a.Output))

	// A Worker waits for its callback: not testable. No such step: 404.
	code, _, raw = try("big", map[string]any{})
	require.Equal(t, 400, code, raw)
	require.Contains(t, raw, `"not_testable"`)
	code, _, raw = try("ghost", map[string]any{})
	require.Equal(t, 404, code, raw)

	// A flow not saved yet (the editor of a new flow): the graph is the
	// flow; without one, 400; its problems, 422; a step it lacks, 404.
	draft := map[string]any{"nodes": []map[string]any{node("draft", "Transform", map[string]any{"expression": "input.n * 21"})}, "edges": []any{}}
	var da struct {
		Output json.RawMessage `json:"output"`
	}
	require.Equal(t, 200, h.do("POST", "/api/v1/nodes/draft/test", map[string]any{"input": map[string]any{"n": 2}, "graph": draft}, &da))
	require.JSONEq(t, `42`, string(da.Output))
	require.Equal(t, 400, h.do("POST", "/api/v1/nodes/draft/test", map[string]any{"input": map[string]any{"n": 2}}, nil))
	require.Equal(t, 404, h.do("POST", "/api/v1/nodes/ghost/test", map[string]any{"graph": draft}, nil))
	require.Equal(t, 422, h.do("POST", "/api/v1/nodes/draft/test", map[string]any{"graph": map[string]any{
		"nodes": []map[string]any{node("draft", "Transform", map[string]any{"expression": "1 +"})}, "edges": []any{}}}, nil))

	// Nothing ran.
	var runs struct {
		Runs []json.RawMessage `json:"runs"`
	}
	require.Equal(t, 200, h.do("GET", "/api/v1/runs?flow_id="+flow, nil, &runs))
	require.Empty(t, runs.Runs, "trying steps writes no run")
	require.EqualValues(t, 1, hits.Load(), "only the HTTP step's try sent a request")
}

// TestTryNodeRedactsSecrets: an HTTP step tried alone sends its secret and
// its credential for real, and answers what came back redacted exactly as
// a run stores it: a server echoing every request header in its body and a
// header (the output), in a refusal's body (the error), and an error
// quoting the URL carry [redacted], and neither value is anywhere in the
// answers' bytes.
func TestTryNodeRedactsSecrets(t *testing.T) {
	t.Parallel()
	h := newHarness(t, withSecretKey(t))
	const token, value = "SUPERSECRET123", "hunter2-very-secret-value"
	echo := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		headers, _ := json.Marshal(r.Header)
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("X-Echo", r.Header.Get("Authorization")+" "+r.Header.Get("X-Key"))
		if r.URL.Path == "/deny" {
			w.WriteHeader(http.StatusUnauthorized)
		}
		_, _ = w.Write([]byte(`{"headers": ` + string(headers) + `}`))
	}))
	t.Cleanup(echo.Close)
	closed, err := (&net.ListenConfig{}).Listen(t.Context(), "tcp", "127.0.0.1:0")
	require.NoError(t, err)
	gone := "http://" + closed.Addr().String()
	require.NoError(t, closed.Close())

	require.Equal(t, http.StatusCreated, h.do("POST", "/api/v1/credentials", map[string]any{"name": "crm", "type": "bearer",
		"data": map[string]any{"token": token}, "allowed_hosts": []string{"127.0.0.1"}}, nil))
	require.Equal(t, http.StatusCreated, h.do("POST", "/api/v1/secrets", map[string]any{"name": "TOPSECRET", "value": value,
		"allowed_hosts": []string{"127.0.0.1"}}, nil))
	call := func(url string) map[string]any {
		return map[string]any{"url": url, "credential": "crm", "headers": map[string]any{"X-Key": `{{ secret "TOPSECRET" }}`},
			"retry": map[string]any{"maxAttempts": 1}}
	}
	flow := h.createFlow([]map[string]any{
		node("echo", "HTTP", call(echo.URL+"/t")),
		node("deny", "HTTP", call(echo.URL+"/deny")),
		node("down", "HTTP", call(gone+`/x?k={{ secret "TOPSECRET" }}`)),
	}, nil)

	// A run of the echo stores it redacted: the try must answer the same.
	ran := h.waitRun(h.startRun(flow, map[string]any{}).ID, "failed")
	require.Contains(t, string(ran.Nodes["echo"].Output), "Bearer [redacted]", "%s", ran.Nodes["echo"].Output)

	answers := map[string]string{}
	for _, key := range []string{"echo", "deny", "down"} {
		var raw json.RawMessage
		code := h.do("POST", "/api/v1/flows/"+flow+"/nodes/"+key+"/test", map[string]any{"input": map[string]any{}}, &raw)
		require.Equal(t, http.StatusOK, code, "%s: %s", key, raw)
		answers[key] = string(raw)
	}
	var echoed struct {
		Output struct {
			Status  int               `json:"status"`
			Headers map[string]string `json:"headers"`
			Body    struct {
				Headers map[string][]string `json:"headers"`
			} `json:"body"`
		} `json:"output"`
		Error *string `json:"error"`
	}
	require.NoError(t, json.Unmarshal([]byte(answers["echo"]), &echoed))
	require.Nil(t, echoed.Error, answers["echo"])
	require.Equal(t, 200, echoed.Output.Status)
	require.Equal(t, []string{"Bearer [redacted]"}, echoed.Output.Body.Headers["Authorization"], "the echoed credential")
	require.Equal(t, []string{"[redacted]"}, echoed.Output.Body.Headers["X-Key"], "the echoed secret")
	require.Equal(t, "Bearer [redacted] [redacted]", echoed.Output.Headers["x-echo"])
	var stored struct {
		Body struct {
			Headers map[string][]string `json:"headers"`
		} `json:"body"`
	}
	require.NoError(t, json.Unmarshal(ran.Nodes["echo"].Output, &stored))
	require.Equal(t, stored.Body.Headers["Authorization"], echoed.Output.Body.Headers["Authorization"], "as the run stored it")
	require.Equal(t, stored.Body.Headers["X-Key"], echoed.Output.Body.Headers["X-Key"], "as the run stored it")

	var failed struct {
		Error *string `json:"error"`
	}
	require.NoError(t, json.Unmarshal([]byte(answers["deny"]), &failed))
	require.NotNil(t, failed.Error, answers["deny"])
	require.Contains(t, *failed.Error, "HTTP 401")
	require.Contains(t, *failed.Error, "Bearer [redacted]", "the refusal's echo")
	require.NoError(t, json.Unmarshal([]byte(answers["down"]), &failed))
	require.NotNil(t, failed.Error, answers["down"])
	require.Contains(t, *failed.Error, "request failed")
	require.Contains(t, *failed.Error, "k=[redacted]", "the error quoting the URL")

	for key, raw := range answers {
		for _, form := range append(secretForms(token), secretForms(value)...) {
			require.NotContains(t, raw, form, "the value in the answer of %s", key)
		}
		require.Contains(t, raw, engine.Redacted, key)
	}
}

// TestTryConditionFailsAsARun: a Condition whose edge condition cannot be
// evaluated over its input fails in a run; tried alone over the same
// input, the answer says so with the run's message — not that the
// default edge would be taken.
func TestTryConditionFailsAsARun(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	flow := h.createFlow([]map[string]any{node("c", "Condition", nil), wnode(h, "big"), wnode(h, "small")},
		[]map[string]any{redge("c", "big", map[string]any{"condition": "output.n > 10"}), redge("c", "small", map[string]any{"default": true})})

	ran := h.waitRun(h.startRun(flow, map[string]any{}).ID, "failed")
	require.Equal(t, "failed", ran.Nodes["c"].Status)
	require.NotNil(t, ran.Nodes["c"].Error)
	require.Contains(t, *ran.Nodes["c"].Error, "the condition of edge c-big could not be evaluated: invalid operation: <nil> > int")

	var a struct {
		Output json.RawMessage `json:"output"`
		Error  *string         `json:"error"`
		Edges  []struct {
			ID    string `json:"id"`
			Taken bool   `json:"taken"`
			Error string `json:"error"`
		} `json:"edges"`
	}
	var raw json.RawMessage
	require.Equal(t, http.StatusOK, h.do("POST", "/api/v1/flows/"+flow+"/nodes/c/test", map[string]any{"input": map[string]any{}}, &raw), "%s", raw)
	require.NoError(t, json.Unmarshal(raw, &a))
	require.NotNil(t, a.Error, "%s", raw)
	require.Equal(t, *ran.Nodes["c"].Error, *a.Error, "the run's message")
	require.JSONEq(t, `{}`, string(a.Output), "the value the step made (its expression's preview shows it)")
	require.Len(t, a.Edges, 2)
	for _, e := range a.Edges {
		require.False(t, e.Taken, "%s: a failed step takes no edge but a failure edge", e.ID)
	}
	require.Equal(t, "c-big", a.Edges[0].ID)
	require.Contains(t, a.Edges[0].Error, "invalid operation: <nil> > int")

	// Where the condition holds, both take its edge.
	require.Equal(t, http.StatusOK, h.do("POST", "/api/v1/flows/"+flow+"/nodes/c/test", map[string]any{"input": map[string]any{"n": 11}}, &raw))
	a.Error = nil
	require.NoError(t, json.Unmarshal(raw, &a))
	require.Nil(t, a.Error)
	require.True(t, a.Edges[0].Taken)
	require.False(t, a.Edges[1].Taken)
}
