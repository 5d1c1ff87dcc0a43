package browser_test

import (
	"fmt"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"
)

// TestUIOperations drives the operator's repair tools of issue 30 from the
// UI. A run waiting at an approval on version 1 of its flow is migrated
// from the run view: version 3, which lacks the approval the run has
// started, is refused with the server's message and the missing step; version
// 2, which adds a step after the approval, is accepted — the canvas shows
// the new step, and the run goes through it to the end. On the runs
// list, the bulk action bar counts the running runs of a flow (a dry run,
// which changes nothing; the count is for one action only), then cancels
// them, and says how many it cancelled; another flow's run is left alone.
// A Collector that tolerates one failed item lists it (index, key, error)
// in its panel.
func TestUIOperations(t *testing.T) {
	s := newStack(t)
	node := func(id, status string) string {
		return fmt.Sprintf(`!!document.querySelector('.snode[data-node-id="%s"][data-status="%s"]')`, id, status)
	}
	runStatus := func(status string) string {
		return fmt.Sprintf(`document.querySelector(".editor-bar .status")?.innerText === %q`, status)
	}
	x := map[string]int{"ask": 0, "review": 0, "wait": 0, "check": 320, "done": 640}
	worker := func(id, label string) map[string]any {
		return map[string]any{"id": id, "type": "Worker", "position": map[string]any{"x": x[id], "y": 0},
			"data": map[string]any{"label": label, "webhookUrl": s.worker.URL + "/" + id, "timeoutSeconds": 30}}
	}
	ux := func(id string) map[string]any {
		return map[string]any{"id": id, "type": "UX", "position": map[string]any{"x": x[id], "y": 0},
			"data": map[string]any{"label": "Look it over", "prompt": "Go on?"}}
	}
	edge := func(id, from, to string) map[string]any {
		return map[string]any{"id": id, "source": from, "target": to}
	}
	type versionJSON struct {
		ID     string
		Number int
	}
	type runJSON struct {
		Status        string
		FlowVersionID string `json:"flow_version_id"`
		Nodes         map[string]struct {
			Status string
			Output map[string]any
		}
	}

	// 1. Migration. v1: ask → done; v2 adds check between them; v3 has
	// review instead of ask.
	var flow struct{ ID string }
	s.api("POST", "/flows", map[string]any{"name": "Migrate me", "graph": map[string]any{
		"nodes": []map[string]any{ux("ask"), worker("done", "Finish")},
		"edges": []map[string]any{edge("e1", "ask", "done")},
	}}, &flow)
	s.api("PUT", "/flows/"+flow.ID, map[string]any{"message": "check before finishing", "graph": map[string]any{
		"nodes": []map[string]any{ux("ask"), worker("check", "Check"), worker("done", "Finish")},
		"edges": []map[string]any{edge("e1", "ask", "check"), edge("e2", "check", "done")},
	}}, nil)
	s.api("PUT", "/flows/"+flow.ID, map[string]any{"message": "review instead of ask", "graph": map[string]any{
		"nodes": []map[string]any{ux("review"), worker("done", "Finish")},
		"edges": []map[string]any{edge("e1", "review", "done")},
	}}, nil)
	var versions struct{ Versions []versionJSON }
	s.api("GET", "/flows/"+flow.ID+"/versions", nil, &versions)
	ids := map[int]string{}
	for _, v := range versions.Versions {
		ids[v.Number] = v.ID
	}
	require.Len(t, ids, 3)
	var run struct{ ID string }
	s.api("POST", "/flows/"+flow.ID+"/runs", map[string]any{"input": map[string]any{"n": 1}, "version": 1}, &run)

	s.run("open", chromedp.Navigate(s.url+"/runs/"+run.ID), tokenSignIn(token))
	s.waitJS("ask waiting", node("ask", "waiting_for_user"))
	s.waitJS("v1", `document.querySelector(".run-title h1")?.innerText.includes("v1")`)
	require.False(t, s.exists(`.snode[data-node-id="check"]`))
	s.run("migrate", chromedp.Click(`.editor-bar [data-action="migrate"]`, chromedp.ByQuery),
		chromedp.WaitVisible("#migrate-version", chromedp.ByQuery))
	var options []string
	s.run("version options", chromedp.Evaluate(`[...document.querySelectorAll("#migrate-version option")].map(o => o.value)`, &options))
	require.Equal(t, []string{"3", "2"}, options, "the other versions, newest first; not the run's own")
	var label string
	s.run("v2 label", chromedp.Evaluate(`document.querySelector('#migrate-version option[value="2"]').textContent`, &label))
	require.Contains(t, label, "v2 — check before finishing")

	// v3 lacks ask, which the run has started: refused, and said why.
	s.run("pick v3", setValue("#migrate-version", "3"))
	s.waitJS("v3 picked", `document.querySelector('[data-action="confirm-migrate"]')?.innerText === "Migrate to v3"`)
	s.run("migrate to v3", chromedp.Click(`[data-action="confirm-migrate"]`, chromedp.ByQuery))
	s.waitJS("refused", `!!document.querySelector(".migrate-form [data-missing-nodes]")`)
	refused := s.text(".migrate-form [data-server-error]")
	require.Contains(t, refused, "Not migrated: the target version lacks nodes this run has started: ask")
	var missing []string
	s.run("missing", chromedp.Evaluate(`[...document.querySelectorAll(".migrate-form [data-missing-nodes] li")].map(li => li.innerText)`, &missing))
	require.Equal(t, []string{"ask"}, missing)
	s.shot("o01-migrate-refused")
	var got runJSON
	s.api("GET", "/runs/"+run.ID, nil, &got)
	require.Equal(t, ids[1], got.FlowVersionID, "a refused migration changes nothing")
	require.Equal(t, "running", got.Status)

	// v2 has every started step: accepted; the canvas is v2's.
	s.run("pick v2", setValue("#migrate-version", "2"))
	s.waitJS("refusal cleared", `!document.querySelector(".migrate-form [data-server-error]")`)
	s.run("migrate to v2", chromedp.Click(`[data-action="confirm-migrate"]`, chromedp.ByQuery))
	s.waitJS("migrated", `!!document.querySelector('[data-migrated="2"]') && !document.querySelector(".migrate-form")`)
	s.waitJS("v2 canvas", `document.querySelector(".run-title h1")?.innerText.includes("v2")`+` && `+node("check", "pending"))
	s.waitJS("still waiting", node("ask", "waiting_for_user"))
	s.api("GET", "/runs/"+run.ID, nil, &got)
	require.Equal(t, ids[2], got.FlowVersionID)
	require.Equal(t, "pending", got.Nodes["check"].Status)
	s.settle(`.react-flow__node[data-id="check"]`)
	s.shot("o02-migrated")
	// The run goes on through the step v2 added.
	s.api("POST", "/runs/"+run.ID+"/nodes/ask/complete", map[string]any{"outcome": "approve"}, nil)
	s.waitJS("check completed", node("check", "completed"))
	s.waitJS("run completed", runStatus("completed"))
	require.False(t, s.exists(`.editor-bar [data-action="migrate"]`), "a completed run is not migrated")
	s.waitJS("migrated event", `document.querySelector('.timeline li[data-event="run.migrated"]')?.innerText.includes("run migrated to version 2 by admin")`)
	s.api("GET", "/runs/"+run.ID, nil, &got)
	require.Equal(t, "completed", got.Status)
	require.Equal(t, "check", got.Nodes["check"].Output["scored_by"])

	// 2. Bulk: cancel the running runs of one flow from the runs list.
	var bulkFlow, otherFlow struct{ ID string }
	s.api("POST", "/flows", map[string]any{"name": "Bulk me", "graph": map[string]any{"nodes": []map[string]any{ux("wait")}, "edges": []any{}}}, &bulkFlow)
	s.api("POST", "/flows", map[string]any{"name": "Leave me", "graph": map[string]any{"nodes": []map[string]any{ux("wait")}, "edges": []any{}}}, &otherFlow)
	var bulkRuns []string
	for i := range 3 {
		var r struct{ ID string }
		s.api("POST", "/flows/"+bulkFlow.ID+"/runs", map[string]any{"input": map[string]any{"n": i}}, &r)
		bulkRuns = append(bulkRuns, r.ID)
	}
	var other struct{ ID string }
	s.api("POST", "/flows/"+otherFlow.ID+"/runs", map[string]any{"input": map[string]any{}}, &other)
	s.run("runs list", chromedp.Navigate(s.url+"/runs?flow_id="+bulkFlow.ID+"&status=running"))
	s.waitJS("three running", `document.querySelectorAll("tbody tr").length === 3`)
	s.run("open bulk", chromedp.Click(`[data-action="bulk-open"]`, chromedp.ByQuery), chromedp.WaitVisible("#bulk-action", chromedp.ByQuery),
		setValue("#bulk-action", "cancel"))
	require.Contains(t, s.text("[data-bulk-filter]"), "Picks the runs of flow Bulk me, status running.")
	require.False(t, s.exists(`[data-action="bulk-apply"]`), "nothing is applied before a count")
	s.run("count", chromedp.Click(`[data-action="bulk-dry-run"]`, chromedp.ByQuery))
	s.waitJS("counted", `!!document.querySelector('[data-bulk-matched="3"]')`)
	require.Contains(t, s.text("[data-bulk-matched]"), "3 runs match")
	require.Equal(t, "Cancel 3 runs", s.text(`[data-action="bulk-apply"]`))
	for _, id := range bulkRuns {
		s.api("GET", "/runs/"+id, nil, &got)
		require.Equal(t, "running", got.Status, "a dry run changes nothing")
	}
	s.shot("o03-bulk-counted")
	// The count is for one action: another asks again.
	s.run("other action", setValue("#bulk-action", "pause"))
	s.waitJS("count dropped", `!document.querySelector("[data-bulk-matched]") && !document.querySelector('[data-action="bulk-apply"]')`)
	s.run("cancel again", setValue("#bulk-action", "cancel"), chromedp.Click(`[data-action="bulk-dry-run"]`, chromedp.ByQuery))
	s.waitJS("counted again", `!!document.querySelector('[data-bulk-matched="3"] [data-action="bulk-apply"]')`)
	s.run("apply", chromedp.Click(`[data-action="bulk-apply"]`, chromedp.ByQuery))
	s.waitJS("applied", `!!document.querySelector('[data-bulk-result][data-applied="3"][data-skipped="0"][data-failed="0"]')`)
	require.Contains(t, s.text("[data-bulk-result]"), "Cancel: 3 matched, 3 applied, 0 skipped")
	s.waitJS("list empty", `document.querySelectorAll("tbody tr").length === 0 && document.body.innerText.includes("No runs here yet")`)
	s.shot("o04-bulk-applied")
	for _, id := range bulkRuns {
		s.api("GET", "/runs/"+id, nil, &got)
		require.Equal(t, "cancelled", got.Status)
	}
	s.api("GET", "/runs/"+other.ID, nil, &got)
	require.Equal(t, "running", got.Status, "another flow's run is left alone")

	// 3. A Collector tolerating one failed item lists it in its panel.
	var fan struct{ ID string }
	s.api("POST", "/flows", map[string]any{"name": "Tolerant", "graph": map[string]any{
		"nodes": []map[string]any{
			{"id": "split", "type": "Splitter", "data": map[string]any{"arrayPath": "items"}},
			{"id": "score", "type": "Worker", "data": map[string]any{"webhookUrl": s.worker.URL + "/score", "retry": map[string]any{"maxAttempts": 1}}},
			{"id": "merge", "type": "Collector", "data": map[string]any{"toleratedFailures": 1}},
		},
		"edges": []map[string]any{edge("e1", "split", "score"), edge("e2", "score", "merge")},
	}}, &fan)
	items := make([]map[string]any, 5)
	for i := range items {
		items[i] = map[string]any{"n": i, "fail": i == 2}
	}
	var fanRun struct{ ID string }
	s.api("POST", "/flows/"+fan.ID+"/runs", map[string]any{"input": map[string]any{"items": items}}, &fanRun)
	s.run("open fan-out", chromedp.Navigate(s.url+"/runs/"+fanRun.ID))
	s.waitJS("fan-out completed", runStatus("completed")+` && `+node("merge", "completed"))
	s.settle(`.react-flow__node[data-id="merge"]`)
	s.run("open merge", chromedp.Click(`.react-flow__node[data-id="merge"]`, chromedp.ByQuery),
		chromedp.WaitVisible(`.node-detail [data-tolerated-failures="1"]`, chromedp.ByQuery))
	var rows [][]string
	s.run("tolerated rows", chromedp.Evaluate(`[...document.querySelectorAll(".node-detail [data-tolerated-failures] tbody tr")]
		.map(tr => [...tr.cells].map(td => td.innerText))`, &rows))
	require.Equal(t, [][]string{{"2", "score_2", "this item is marked to fail"}}, rows)
	require.Contains(t, s.text(".node-detail [data-tolerated-failures]"), "1 item of 5 failed within the tolerance")
	s.shot("o05-tolerated-failures")
}
