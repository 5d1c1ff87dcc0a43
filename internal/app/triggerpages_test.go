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
