package app_test

import (
	"fmt"
	"net/url"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestTriggerListPages: a flow's triggers of every kind come a page at a
// time, in the order they were made, each once.
func TestTriggerListPages(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	flow := h.createFlow([]map[string]any{wnode(h, "w")}, nil)
	var made []string
	for i := range 7 {
		var out struct{ ID string }
		body := map[string]any{"kind": "webhook", "slug": fmt.Sprintf("page-%d-%s", i, flow[len(flow)-8:])}
		switch i % 3 {
		case 1:
			body = map[string]any{"kind": "schedule", "cron": "0 9 * * *", "timezone": "UTC", "enabled": false}
		case 2:
			body = map[string]any{"kind": "event", "name": fmt.Sprintf("ev.%d", i)}
		}
		require.Equal(t, 201, h.do("POST", "/api/v1/flows/"+flow+"/triggers", body, &out))
		made = append(made, out.ID)
	}
	var got []string
	cursor := ""
	for pages := 0; ; pages++ {
		require.Less(t, pages, 10)
		var page struct {
			Triggers []struct {
				ID   string `json:"id"`
				Kind string `json:"kind"`
			} `json:"triggers"`
			NextCursor *string `json:"next_cursor"`
		}
		path := "/api/v1/flows/" + flow + "/triggers?limit=3"
		if cursor != "" {
			path += "&cursor=" + url.QueryEscape(cursor)
		}
		require.Equal(t, 200, h.do("GET", path, nil, &page))
		require.LessOrEqual(t, len(page.Triggers), 3)
		for _, tr := range page.Triggers {
			got = append(got, tr.ID)
		}
		if page.NextCursor == nil {
			break
		}
		cursor = *page.NextCursor
	}
	require.Equal(t, made, got, "every trigger once, in the order made")
	require.Equal(t, 400, h.do("GET", "/api/v1/flows/"+flow+"/triggers?cursor=bogus", nil, nil))
	require.Equal(t, 400, h.do("GET", "/api/v1/flows/"+flow+"/triggers?limit=0", nil, nil))
}

// TestHookInputSchema: a webhook trigger's input_schema is compiled when
// the trigger is made (a bad one is a 422 at its path, nothing made) and
// checked on every request (a breaking body is a 400 listing each
// problem, and starts nothing).
func TestHookInputSchema(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	flow := h.createFlow([]map[string]any{wnode(h, "w")}, nil)
	code, details := h.refused(422, "POST", "/api/v1/flows/"+flow+"/triggers", map[string]any{"slug": "bad-schema",
		"input_schema": map[string]any{"type": "object", "properties": map[string]any{"n": map[string]any{"minimum": "one"}}}})
	require.Equal(t, "invalid_schema", code)
	require.NotEmpty(t, details)
	require.Equal(t, "input_schema.properties.n.minimum", details[0].Path)
	require.Equal(t, 404, h.do("POST", "/hooks/bad-schema", map[string]any{}, nil), "nothing was made")

	var tr struct {
		InputSchema map[string]any `json:"input_schema"`
	}
	require.Equal(t, 201, h.do("POST", "/api/v1/flows/"+flow+"/triggers", map[string]any{"slug": "orders",
		"input_schema": map[string]any{"type": "object", "required": []string{"order", "qty"},
			"properties": map[string]any{"order": map[string]any{"type": "string"}, "qty": map[string]any{"type": "integer", "minimum": 1}}}}, &tr))
	require.Equal(t, "object", tr.InputSchema["type"])

	code2, out := h.postHook("orders", []byte(`{"qty": 0}`), map[string]string{"Content-Type": "application/json"})
	require.Equal(t, 400, code2, "%v", out)
	e := as[map[string]any](t, out["error"])
	var paths []string
	for _, d := range as[[]any](t, e["details"]) {
		paths = append(paths, as[string](t, as[map[string]any](t, d)["path"]))
	}
	require.ElementsMatch(t, []string{"$", "$.qty"}, paths, "the missing order and the qty below 1")
	var runs struct {
		Runs []any `json:"runs"`
	}
	require.Equal(t, 200, h.do("GET", "/api/v1/runs?flow_id="+flow, nil, &runs))
	require.Empty(t, runs.Runs)

	code2, out = h.postHook("orders", []byte(`{"order": "A-1", "qty": 2}`), map[string]string{"Content-Type": "application/json"})
	require.Less(t, code2, 300, "%v", out)
}
