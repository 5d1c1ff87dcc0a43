package app_test

import (
	"bytes"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/stitchd/stitchd/internal/app"
)

func TestAbusiveBodies(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	flow := h.createFlow([]map[string]any{wnode(h, "a")}, nil)
	r := h.startRun(flow, map[string]any{})
	d := h.waitDispatch(r.ID, "a", 1)
	deep := strings.Repeat(`{"a":`, 200) + "1" + strings.Repeat("}", 200)
	bodies := map[string]string{
		"deep":        `{"status":"completed","output":` + deep + `}`,
		"bad utf-8":   "{\"status\":\"completed\",\"output\":\"\xff\"}",
		"escaped NUL": `{"status":"completed","output":"a\u0000b"}`,
	}
	for name, b := range bodies {
		code, body := h.post(d.Payload.CallbackURL, b)
		require.Equal(t, 400, code, "%s: %s", name, body)
		require.Contains(t, body, `"invalid_request"`)
	}
	require.Equal(t, "running", h.run(r.ID).Nodes["a"].Status, "nothing changed")

	post := func(path, body string) int {
		req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, h.app.URL+path, bytes.NewBufferString(body))
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := h.client.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		return resp.StatusCode
	}
	require.Equal(t, 400, post("/api/v1/flows/"+flow+"/runs", `{"input":`+deep+`}`))
	require.Equal(t, 400, post("/api/v1/flows/"+flow+"/runs", `{"input":{"x":"\u0000"}}`))
	require.Equal(t, 400, post("/api/v1/flows/"+flow+"/runs", "{\"input\":\"\xc3\x28\"}"))
	require.Equal(t, 413, post("/api/v1/flows/"+flow+"/runs", `{"input":"`+strings.Repeat("x", 2<<20)+`"}`))
	var runs struct {
		Runs []any `json:"runs"`
	}
	require.Equal(t, 200, h.do("GET", "/api/v1/runs?flow_id="+flow, nil, &runs))
	require.Len(t, runs.Runs, 1, "no run was started by a rejected body")

	// A good callback still works afterwards.
	h.complete(d, `{"ok":true}`)
	h.waitRun(r.ID, "completed")
}

func TestSplitterItemLimit(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	flow := h.createFlow([]map[string]any{splitter("s", "xs"), wnode(h, "w"), node("c", "Collector", nil)},
		[]map[string]any{edge("s", "w", nil), edge("w", "c", nil)})
	xs := make([]int, 100_001)
	r := h.startRun(flow, map[string]any{"xs": xs})
	fin := h.waitRun(r.ID, "failed")
	require.Contains(t, *fin.Nodes["s"].Error, "100001 items, more than the maximum of 100000")
}

func TestSplitterItemLimitConfigured(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(c *app.Config) { c.MaxFanOutItems = 3 })
	flow := h.createFlow([]map[string]any{splitter("s", "xs"), wnode(h, "w"), node("c", "Collector", nil)},
		[]map[string]any{edge("s", "w", nil), edge("w", "c", nil)})
	r := h.startRun(flow, map[string]any{"xs": []int{1, 2, 3, 4}})
	fin := h.waitRun(r.ID, "failed")
	require.Contains(t, *fin.Nodes["s"].Error, "4 items, more than the maximum of 3")

	r = h.startRun(flow, map[string]any{"xs": []int{1, 2, 3}})
	for i := range 3 {
		h.complete(h.waitDispatch(r.ID, fmt.Sprintf("w_%d", i), 1), fmt.Sprintf(`{"i":%d}`, i))
	}
	h.waitRun(r.ID, "completed")
}
