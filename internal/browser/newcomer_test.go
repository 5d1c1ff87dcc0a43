package browser_test

import (
	"fmt"

	"strings"
	"testing"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"
)

// TestUINewcomer covers rough edges a first week found (issue 34): the runs
// list tells runs apart and says which wait for a person, with their
// error, duration and entity, and finds a run by its id; the nav counts
// the approvals waiting.
func TestUINewcomer(t *testing.T) {
	s := newStack(t)
	var flow struct{ ID string }
	s.api("POST", "/flows", map[string]any{"name": "Newcomer", "graph": map[string]any{
		"nodes": []map[string]any{
			{"id": "work", "type": "Worker", "position": map[string]any{"x": 0, "y": 0},
				"data": map[string]any{"label": "Work", "webhookUrl": s.worker.URL + "/work", "timeoutSeconds": 30}},
			{"id": "ask", "type": "UX", "position": map[string]any{"x": 320, "y": 0},
				"data": map[string]any{"label": "Look it over", "prompt": "Is this lead worth a call?"}},
		},
		"edges": []map[string]any{{"id": "e1", "source": "work", "target": "ask"}},
	}}, &flow)
	var failed, waiting struct{ ID string }
	s.api("POST", "/flows/"+flow.ID+"/runs", map[string]any{"input": map[string]any{"fail": true}}, &failed)
	s.api("POST", "/flows/"+flow.ID+"/runs", map[string]any{"input": map[string]any{}}, &waiting)

	// The runs list: whole ids, the waiting run marked, the failed one's error.
	s.run("runs", chromedp.Navigate(s.url+"/runs"), tokenSignIn(token))
	row := func(id string) string { return fmt.Sprintf(`tbody tr[data-run=%q]`, id) }
	s.waitJS("waiting marked", fmt.Sprintf(`!!document.querySelector(%q)`, row(waiting.ID)+"[data-waiting] .waiting-chip"))
	s.waitJS("failed shown", fmt.Sprintf(`document.querySelector(%q)?.innerText.includes("failed")`, row(failed.ID)))
	require.Contains(t, s.text(row(waiting.ID)), waiting.ID, "the whole id is shown")
	require.Contains(t, s.text(row(failed.ID)+" .run-error"), "this item is marked to fail")
	require.False(t, s.exists(row(failed.ID)+"[data-waiting]"), "a failed run waits for nobody")
	for _, h := range []string{"Duration", "Entity", "Error"} {
		require.Contains(t, strings.ToLower(s.text("thead")), strings.ToLower(h))
	}
	// "Waiting for a person" is a filter too.
	s.run("waiting filter", setValue("#runs-status", "waiting"))
	s.waitJS("waiting only", fmt.Sprintf(`location.search.includes("status=waiting") && document.querySelectorAll("tbody tr").length === 1 && !!document.querySelector(%q)`, row(waiting.ID)))
	s.run("any status", setValue("#runs-status", ""))
	s.waitJS("all again", `document.querySelectorAll("tbody tr").length === 2`)

	// The flows list shows each flow's last run.
	s.run("flows", chromedp.Navigate(s.url+"/flows"))
	s.waitJS("last run", `[...document.querySelectorAll("tbody tr")].some(tr => tr.innerText.includes("Newcomer") && tr.querySelector("[data-last-run]"))`)
	s.run("runs back", chromedp.Navigate(s.url+"/runs"), chromedp.WaitVisible("tbody tr", chromedp.ByQuery))

	// The nav counts the approvals waiting, live: one, then none once decided.
	s.waitJS("nav badge", `document.querySelector('nav a[href="/approvals"] .nav-badge')?.dataset.count === "1"`)
	s.shot("n01-runs-list")

	// Part of an id narrows the list; a whole id opens the run.
	tail := failed.ID[len(failed.ID)-6:]
	s.run("narrow", setValue("#runs-find", tail))
	s.waitJS("narrowed", `document.querySelectorAll("tbody tr").length === 1`)
	require.True(t, s.exists(row(failed.ID)))
	s.run("jump", setValue("#runs-find", waiting.ID), chromedp.Evaluate(`document.querySelector("#runs-find").form.requestSubmit()`, nil))
	s.waitJS("opened", fmt.Sprintf(`location.pathname === "/runs/%s"`, waiting.ID))
	// The UX step's panel shows what it asks.
	s.settle(`.react-flow__node[data-id="ask"]`)
	s.run("open ask", chromedp.Click(`.react-flow__node[data-id="ask"]`, chromedp.ByQuery), chromedp.WaitVisible(".node-detail [data-ux-prompt]", chromedp.ByQuery))
	require.Contains(t, s.text(".node-detail [data-ux-prompt]"), "Is this lead worth a call?")
	require.Contains(t, s.text(".node-detail [data-ux-prompt]"), "Look it over")
	s.api("POST", "/runs/"+waiting.ID+"/nodes/ask/complete", map[string]any{"outcome": "approve"}, nil)
	s.waitJS("badge gone", `!document.querySelector('nav a[href="/approvals"] .nav-badge')`)

	// Dark mode follows the system's choice, the canvas too.
	bg := `getComputedStyle(document.documentElement).backgroundColor`
	s.waitJS("light canvas", `!!document.querySelector(".react-flow.light .snode")`)
	var light string
	s.run("light", chromedp.Evaluate(bg, &light))
	require.Equal(t, "rgb(246, 247, 251)", light)
	s.run("dark", emulation.SetEmulatedMedia().WithFeatures([]*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: "dark"}}))
	s.waitJS("dark page", bg+` === "rgb(15, 17, 21)"`)
	s.waitJS("dark canvas", `!!document.querySelector(".react-flow.dark .snode")`)
	var node string
	s.run("node colour", chromedp.Evaluate(`getComputedStyle(document.querySelector(".snode")).backgroundColor`, &node))
	require.NotEqual(t, "rgb(255, 255, 255)", node, "a node is not white in the dark")
	s.shot("n02-dark-run")
	s.run("light again", emulation.SetEmulatedMedia().WithFeatures([]*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: "light"}}))

	// Links that lead nowhere say so, with a way back. (Page after page,
	// each with its inbox stream: a stream the page leaves is closed, or a
	// few loads later the browser's connections to the server are all
	// taken and nothing loads.)
	for _, c := range []struct{ path, what, back string }{
		{"/nowhere", "page", "/flows"},
		{"/flows/" + flow.ID + "?version=9", "version", "/flows/" + flow.ID},
		{"/runs/" + flow.ID, "run", "/runs"},
		{"/runs/not-an-id", "run", "/runs"},
		{"/flows/" + waiting.ID, "flow", "/flows"},
		{"/boards/" + flow.ID, "board", "/boards"},
	} {
		s.run("open "+c.what, chromedp.Navigate(s.url+c.path))
		s.waitJS("not found "+c.path, fmt.Sprintf(`!!document.querySelector('[data-not-found=%q] a.btn[href=%q]')`, c.what, c.back))
		require.Contains(t, s.text(".not-found h3"), "not found", c.path)
	}
	s.run("back", chromedp.Click(".not-found a.btn", chromedp.ByQuery))
	s.waitJS("back on the list", `location.pathname === "/boards"`)

	// Failed runs by step and error text.
	s.run("runs again", chromedp.Navigate(s.url+"/runs"), chromedp.WaitVisible("#runs-error", chromedp.ByQuery))
	s.run("error filter", setValue("#runs-error", "marked to fail"), chromedp.Click(`[data-action="runs-filter"]`, chromedp.ByQuery))
	s.waitJS("filtered", fmt.Sprintf(`location.search.includes("error=") && document.querySelectorAll("tbody tr").length === 1 && !!document.querySelector(%q)`, row(failed.ID)))

	// The editor: a Worker's long settings scroll in the side panel; the
	// canvas and the Save bar stay in the viewport.
	s.run("editor", chromedp.Navigate(s.url+"/flows/"+flow.ID), chromedp.WaitVisible(`.react-flow__node[data-id="work"]`, chromedp.ByQuery))
	s.settle(`.react-flow__node[data-id="work"]`)
	s.run("select worker", chromedp.Click(`.react-flow__node[data-id="work"]`, chromedp.ByQuery), chromedp.WaitVisible("#node-label", chromedp.ByQuery))
	var fit struct{ Page, View, CanvasBottom, SideScroll, SideHeight float64 }
	s.run("measure", chromedp.Evaluate(`({Page: document.scrollingElement.scrollHeight, View: innerHeight,
		CanvasBottom: document.querySelector(".canvas").getBoundingClientRect().bottom,
		SideScroll: document.querySelector(".side").scrollHeight, SideHeight: document.querySelector(".side").clientHeight})`, &fit))
	require.LessOrEqual(t, fit.Page, fit.View, "the page does not scroll: %+v", fit)
	require.LessOrEqual(t, fit.CanvasBottom, fit.View, "the canvas ends in the viewport: %+v", fit)
	require.Greater(t, fit.SideScroll, fit.SideHeight, "the side panel scrolls instead: %+v", fit)
	s.shot("n03-editor-worker-selected")

	// Nodes added by keyboard land in the visible pane, on top of none.
	for i := 0; i < 3; i++ {
		s.run("add by keyboard", chromedp.Focus(`[data-palette="Worker"]`, chromedp.ByQuery), chromedp.KeyEvent("\r"))
	}
	s.waitJS("three added", `document.querySelectorAll(".react-flow__node").length === 5`)
	// A node added beyond a full pane refits the view: seen once it settles.
	s.settle(`.react-flow__node[data-id="worker3"]`)
	var bad string
	s.run("placement", chromedp.Evaluate(`(() => {
		const pane = document.querySelector(".canvas .react-flow").getBoundingClientRect();
		const rs = [...document.querySelectorAll(".react-flow__node")].map(n => [n.dataset.id, n.getBoundingClientRect()]);
		for (const [id, r] of rs) {
			if (r.left < pane.left || r.top < pane.top || r.right > pane.right || r.bottom > pane.bottom) return id + " is outside the pane";
			for (const [id2, r2] of rs) if (id < id2 && r.left < r2.right && r2.left < r.right && r.top < r2.bottom && r2.top < r.bottom) return id + " overlaps " + id2;
		}
		return "";
	})()`, &bad))
	require.Empty(t, bad)
	s.shot("n04-editor-added")

	// Starting a run by hand can make an entity on the flow's board for it.
	var board struct{ ID string }
	s.api("POST", "/boards", map[string]any{"name": "Leads", "sections": []map[string]any{{"id": "new", "name": "New"}}}, &board)
	var boarded struct{ ID string }
	s.api("POST", "/flows", map[string]any{"name": "On a board", "board_id": board.ID, "graph": map[string]any{
		"nodes": []map[string]any{{"id": "work", "type": "Worker", "position": map[string]any{"x": 0, "y": 0},
			"data": map[string]any{"webhookUrl": s.worker.URL + "/work"}}}, "edges": []any{}}}, &boarded)
	s.run("boarded editor", chromedp.Navigate(s.url+"/flows/"+boarded.ID), chromedp.WaitVisible(`.react-flow__node[data-id="work"]`, chromedp.ByQuery))
	s.run("start run", chromedp.Click(`//button[text()="Start run"]`, chromedp.BySearch), chromedp.WaitVisible("#run-input", chromedp.ByQuery),
		chromedp.Click(`input[name="run-entity"][value="new"]`, chromedp.ByQuery), chromedp.WaitVisible("#run-entity-name", chromedp.ByQuery),
		setValue("#run-entity-name", "Ada Lovelace"), chromedp.Click(`.modal button[type="submit"]`, chromedp.ByQuery))
	s.waitJS("run page", `location.pathname.startsWith("/runs/")`)
	var started string
	s.run("run id", chromedp.Evaluate(`location.pathname.split("/")[2]`, &started))
	var withEntity struct {
		EntityID *string `json:"entity_id"`
	}
	s.api("GET", "/runs/"+started, nil, &withEntity)
	require.NotNil(t, withEntity.EntityID, "the run has the new entity")
	var ent struct {
		Name    string `json:"name"`
		BoardID string `json:"board_id"`
	}
	s.api("GET", "/entities/"+*withEntity.EntityID, nil, &ent)
	require.Equal(t, "Ada Lovelace", ent.Name)
	require.Equal(t, board.ID, ent.BoardID)

	// A fan-out's instance list shows 200, then 200 more at a time.
	var fan struct{ ID string }
	s.api("POST", "/flows", map[string]any{"name": "Wide", "graph": map[string]any{
		"nodes": []map[string]any{
			{"id": "split", "type": "Splitter", "position": map[string]any{"x": 0, "y": 0}, "data": map[string]any{"arrayPath": "items"}},
			{"id": "t", "type": "Transform", "position": map[string]any{"x": 320, "y": 0}, "data": map[string]any{"expression": `{"n": input.n}`}},
			{"id": "merge", "type": "Collector", "position": map[string]any{"x": 640, "y": 0}, "data": map[string]any{}},
		},
		"edges": []map[string]any{{"id": "e1", "source": "split", "target": "t"}, {"id": "e2", "source": "t", "target": "merge"}},
	}}, &fan)
	items := make([]map[string]any, 230)
	for i := range items {
		items[i] = map[string]any{"n": i}
	}
	var wide struct{ ID string }
	s.api("POST", "/flows/"+fan.ID+"/runs", map[string]any{"input": map[string]any{"items": items}}, &wide)
	s.run("wide run", chromedp.Navigate(s.url+"/runs/"+wide.ID))
	s.waitJS("all done", `(document.querySelector('.snode[data-node-id="t"] .snode-counts')?.innerText ?? "").includes("230 ✓")`)
	s.settle(`.react-flow__node[data-id="t"]`)
	s.run("open t", chromedp.Click(`.react-flow__node[data-id="t"]`, chromedp.ByQuery), chromedp.WaitVisible(`[data-action="more-instances"]`, chromedp.ByQuery))
	require.Contains(t, s.text(`[data-action="more-instances"]`), "Show 30 more")
	s.run("more", chromedp.Click(`[data-action="more-instances"]`, chromedp.ByQuery))
	s.waitJS("all listed", `document.querySelectorAll('ul[aria-label="Instances"] li button.linklike').length === 230 && !document.querySelector('[data-action="more-instances"]')`)
}
