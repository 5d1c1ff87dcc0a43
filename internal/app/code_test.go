package app_test

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stitchd/stitchd/engine"
	"github.com/stitchd/stitchd/internal/app"
	"github.com/stitchd/stitchd/internal/testkit"
)

// TestCodeStep: a Code step runs its script in the dispatcher's sandbox,
// outside the firing transaction: a reduce over the input's items reading
// an earlier step and a variable, its console.log as the step's node.log
// events; a script with no I/O; one that never ends fails at its time
// limit while the server goes on answering; one that allocates 1 GB fails
// at the memory bound with the process barely grown; a syntax error is
// refused at save with its line and column.
func TestCodeStep(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(c *app.Config) { c.CodeMemory = 16 << 20 })
	code := func(id, src string, timeoutMs ...int) map[string]any {
		data := map[string]any{"source": src}
		if len(timeoutMs) > 0 {
			data["timeoutMs"] = timeoutMs[0]
		}
		return node(id, "Code", data)
	}
	flow := h.createFlow([]map[string]any{
		node("order", "Transform", map[string]any{"expression": `{"items": run.input.items, "currency": "EUR"}`,
			"setVariables": map[string]any{"discount": "0.1"}}),
		code("total", `
			console.log("summing", input.items.length, "items");
			const sum = input.items.reduce((s, it) => s + it.price * it.qty, 0);
			return {total: sum * (1 - vars.discount), currency: steps.order.output.currency,
				io: [typeof require, typeof fetch, typeof setTimeout]};`),
	}, []map[string]any{edge("order", "total", nil)})
	r := h.startRun(flow, map[string]any{"items": []map[string]any{{"price": 10, "qty": 2}, {"price": 5, "qty": 4}}})
	got := h.waitRun(r.ID, "completed")
	require.JSONEq(t, `{"total": 36, "currency": "EUR", "io": ["undefined", "undefined", "undefined"]}`, string(got.Nodes["total"].Output))
	var logs []string
	evs, err := h.app.Store.RunEvents(context.Background(), r.ID, 0, 1000)
	require.NoError(t, err)
	for _, e := range evs {
		if e.Type == engine.EventNodeLog {
			logs = append(logs, e.Key+": "+string(e.Payload))
		}
	}
	require.Len(t, logs, 1)
	require.Contains(t, logs[0], `total: `)
	require.Contains(t, logs[0], `"message": "summing 2 items"`)

	// An endless script: stopped at its time; the server answers meanwhile.
	loop := h.createFlow([]map[string]any{code("spin", `while (true) {}`, 1500)}, nil)
	began := time.Now()
	lr := h.startRun(loop, map[string]any{})
	healthy := 0
	for h.run(lr.ID).Status == "running" && time.Since(began) < 30*time.Second {
		req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, h.app.URL+"/healthz", nil)
		require.NoError(t, err)
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			healthy++
		}
		time.Sleep(100 * time.Millisecond)
	}
	failed := h.waitRun(lr.ID, "failed")
	require.NotNil(t, failed.Nodes["spin"].Error)
	require.Contains(t, *failed.Nodes["spin"].Error, "code_limit: the script ran longer than its 1.5s")
	require.Positive(t, healthy, "the server answered /healthz while the script spun")
	t.Logf("the endless script failed %s after its run started (limit 1.5 s)", time.Since(began))

	// 1 GB asked for: refused at the memory bound (16 MiB here).
	before := testkit.RSSMiB(t)
	big := h.createFlow([]map[string]any{code("alloc", `const b = new ArrayBuffer(1024 * 1024 * 1024); return b.byteLength`)}, nil)
	br := h.waitRun(h.startRun(big, map[string]any{}).ID, "failed")
	require.Contains(t, *br.Nodes["alloc"].Error, "code_limit: the script needed more memory than its 16 MiB")
	require.Less(t, testkit.RSSMiB(t)-before, 300, "the process did not take the gigabyte")

	// What Postgres cannot store — a NUL in the value, a log line, a
	// thrown error — fails the step, saying why, or is stored with the
	// NUL replaced; it never fails the transaction (the node stuck).
	for src, want := range map[string]string{
		`console.log("a\0b"); return "c\0d";`: `the output holds a NUL character (\u0000), which cannot be stored`,
		`throw "e\0f";`:                       "e\ufffdf",
	} {
		nul := h.createFlow([]map[string]any{code("nul", src)}, nil)
		nr := h.waitRun(h.startRun(nul, map[string]any{}).ID, "failed")
		require.NotNil(t, nr.Nodes["nul"].Error, src)
		require.Contains(t, *nr.Nodes["nul"].Error, want, src)
	}

	// A syntax error: refused at save, with its line and column.
	var resp struct {
		Error struct {
			Code    string `json:"code"`
			Details []struct {
				Path    string `json:"path"`
				Message string `json:"message"`
			} `json:"details"`
		} `json:"error"`
	}
	require.Equal(t, 422, h.do("POST", "/api/v1/flows", map[string]any{"name": "bad code", "graph": map[string]any{
		"nodes": []map[string]any{code("c", "const a = 1;\nconst b = ;\nreturn a")}, "edges": []any{}}}, &resp))
	require.Equal(t, "invalid_graph", resp.Error.Code)
	require.Len(t, resp.Error.Details, 1)
	require.Equal(t, "nodes[0].data", resp.Error.Details[0].Path)
	require.Contains(t, resp.Error.Details[0].Message, "line 2, column")

	// Tried alone: the same sandbox, nothing written.
	var tried struct {
		Output json.RawMessage `json:"output"`
		Logs   []struct {
			Message string `json:"message"`
		} `json:"logs"`
	}
	require.Equal(t, 200, h.do("POST", "/api/v1/flows/"+flow+"/nodes/total/test", map[string]any{
		"input": map[string]any{"items": []map[string]any{{"price": 1, "qty": 3}}},
		"steps": map[string]any{"order": map[string]any{"output": map[string]any{"currency": "USD"}}},
		"vars":  map[string]any{"discount": 0}}, &tried))
	require.JSONEq(t, `{"total": 3, "currency": "USD", "io": ["undefined", "undefined", "undefined"]}`, string(tried.Output))
	require.Len(t, tried.Logs, 1)
	require.Equal(t, "summing 1 items", tried.Logs[0].Message)
}

// TestCodeStepSeesItsItem: inside a Splitter's region a Code step's item is
// {index, key}, as docs/integrations.md says and an expression reads it —
// not the engine's Go field names — in a run and tried alone; a
// Transform's value holding item, run or a step whole has the same names.
func TestCodeStepSeesItsItem(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	flow := h.createFlow([]map[string]any{
		node("split", "Splitter", map[string]any{"arrayPath": "items"}),
		node("code", "Code", map[string]any{"source": `return {idx: item.index, key: item.key, run: Object.keys(run).sort()};`}),
		node("whole", "Transform", map[string]any{"expression": `{"code": input, "item": item, "run": run, "prev": steps.code}`}),
		node("merge", "Collector", nil),
	}, []map[string]any{edge("split", "code", nil), edge("code", "whole", nil), edge("whole", "merge", nil)})
	r := h.startRun(flow, map[string]any{"items": []string{"a", "b"}})
	got := h.waitRun(r.ID, "completed")
	require.JSONEq(t, `{"idx": 1, "key": "code_1", "run": ["id", "input"]}`, string(got.Nodes["code_1"].Output))
	require.JSONEq(t, `{"code": {"idx": 1, "key": "code_1", "run": ["id", "input"]}, "item": {"index": 1, "key": "whole_1"},
		"run": {"id": "`+r.ID+`", "input": {"items": ["a", "b"]}},
		"prev": {"input": "b", "output": {"idx": 1, "key": "code_1", "run": ["id", "input"]}}}`, string(got.Nodes["whole_1"].Output))

	var tried struct {
		Output json.RawMessage `json:"output"`
		Error  *string         `json:"error"`
	}
	require.Equal(t, 200, h.do("POST", "/api/v1/flows/"+flow+"/nodes/code/test", map[string]any{"input": "a"}, &tried))
	require.Nil(t, tried.Error)
	require.JSONEq(t, `{"idx": 0, "key": "code_0", "run": ["id", "input"]}`, string(tried.Output), "tried alone: item 0")
	require.Equal(t, 200, h.do("POST", "/api/v1/flows/"+flow+"/nodes/whole/test", map[string]any{"input": 1, "run": map[string]any{"input": 2}}, &tried))
	require.Nil(t, tried.Error)
	require.JSONEq(t, `{"code": 1, "item": {"index": 0, "key": "whole_0"}, "run": {"id": "", "input": 2},
		"prev": {"input": null, "output": null}}`, string(tried.Output))
}
