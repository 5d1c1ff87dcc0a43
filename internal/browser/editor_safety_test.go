package browser_test

import (
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
	"github.com/stretchr/testify/require"
)

// The safe editor (issue 44, the authoring loop): unsaved work is not
// lost, renaming a node keeps the focus, a flow opens seen from its start,
// the palette can be searched, Tidy up lays a flow out, the toolbar holds
// at 1440 px and every node's data can be edited as JSON.

// editorFlow makes a flow through the API and returns its id.
func (s *stack) editorFlow(name string, nodes []map[string]any, edges []map[string]any, extra map[string]any) string {
	s.t.Helper()
	if edges == nil {
		edges = []map[string]any{}
	}
	body := map[string]any{"name": name, "graph": map[string]any{"nodes": nodes, "edges": edges}}
	for k, v := range extra {
		body[k] = v
	}
	var f struct{ ID string }
	s.api("POST", "/flows", body, &f)
	return f.ID
}

func transformNode(id string, x, y int) map[string]any {
	return map[string]any{"id": id, "type": "Transform", "position": map[string]any{"x": x, "y": y}, "data": map[string]any{"expression": "input"}}
}

func canvasNode(id string) string { return fmt.Sprintf(`.react-flow__node[data-id=%q]`, id) }

// beforeUnloadAsks dispatches a beforeunload event as the browser does
// when the tab is closed or reloaded, and says whether a handler asked to
// stay (the browser then shows its prompt).
func (s *stack) beforeUnloadAsks() bool {
	s.t.Helper()
	var asks bool
	s.run("beforeunload", chromedp.Evaluate(`(() => { const e = new Event("beforeunload", {cancelable: true});
		window.dispatchEvent(e); return e.defaultPrevented; })()`, &asks))
	return asks
}

func (s *stack) path() string {
	s.t.Helper()
	var p string
	s.run("path", chromedp.Evaluate(`location.pathname`, &p))
	return p
}

// TestUIUnsavedGuard (M1): with unsaved changes — also right after a
// failed save — a nav link (or Back) asks "You have unsaved changes" with Save,
// Discard and Stay; Stay keeps the edits, a Save that fails stays, a Save
// that works and Discard go on; closing or reloading the tab is asked by
// the browser, and only while there is something to lose.
func TestUIUnsavedGuard(t *testing.T) {
	s := newStack(t)
	id := s.editorFlow("Guarded", []map[string]any{transformNode("t1", 0, 0)}, nil, nil)
	s.run("open", chromedp.Navigate(s.url+"/flows/"+id), tokenSignIn(token))
	s.settleInCanvas(canvasNode("t1"))
	require.False(t, s.beforeUnloadAsks(), "nothing to lose yet")

	// An added step: the nav asks, Stay keeps it.
	s.run("add Wait", chromedp.Click(`[data-palette="Wait"]`, chromedp.ByQuery), chromedp.WaitVisible(canvasNode("wait1"), chromedp.ByQuery))
	s.waitJS("dirty", `document.body.innerText.includes("Unsaved changes.")`)
	require.True(t, s.beforeUnloadAsks(), "a tab closed with unsaved changes asks")
	s.run("to Boards", chromedp.Click(`nav a[href="/boards"]`, chromedp.ByQuery), chromedp.WaitVisible(`[data-unsaved-dialog]`, chromedp.ByQuery))
	require.Contains(t, s.text(`.modal`), "You have unsaved changes")
	for _, b := range []string{"unsaved-save", "unsaved-discard", "unsaved-stay"} {
		require.True(t, s.exists(fmt.Sprintf(`[data-action=%q]`, b)), b)
	}
	require.Equal(t, "/flows/"+id, s.path(), "asked, not gone")
	s.shot("es01-unsaved-dialog")
	s.run("stay", chromedp.Click(`[data-action="unsaved-stay"]`, chromedp.ByQuery))
	s.waitJS("dialog closed", `!document.querySelector("[data-unsaved-dialog]")`)
	require.Equal(t, "/flows/"+id, s.path())
	require.True(t, s.exists(canvasNode("wait1")), "Stay keeps the edits")

	// A failed save (a Wait without a duration): the nav still asks, and
	// Save in the dialog, failing again, stays with the problems shown.
	s.run("save", chromedp.Click(`//button[text()="Save"]`, chromedp.BySearch))
	s.waitJS("not saved", `document.body.innerText.includes("The flow was not saved")`)
	s.run("to Runs", chromedp.Click(`nav a[href="/runs"]`, chromedp.ByQuery), chromedp.WaitVisible(`[data-unsaved-dialog]`, chromedp.ByQuery))
	s.run("save in dialog", chromedp.Click(`[data-action="unsaved-save"]`, chromedp.ByQuery))
	s.waitJS("stays", `!document.querySelector("[data-unsaved-dialog]") && document.body.innerText.includes("The flow was not saved")`)
	require.Equal(t, "/flows/"+id, s.path(), "a failed save stays")
	require.True(t, s.beforeUnloadAsks())

	// Fixed: Save in the dialog saves and goes on.
	s.run("select wait1", chromedp.WaitVisible(`#node-duration`, chromedp.ByQuery), setValue("#node-duration", "10s"))
	s.run("to Flows", chromedp.Click(`nav a[href="/flows"]`, chromedp.ByQuery), chromedp.WaitVisible(`[data-unsaved-dialog]`, chromedp.ByQuery),
		chromedp.Click(`[data-action="unsaved-save"]`, chromedp.ByQuery))
	s.waitJS("on the flows page", `location.pathname === "/flows"`)
	require.False(t, s.beforeUnloadAsks(), "saved: nothing to lose")
	var flow struct {
		Version struct{ Number int }
		Graph   struct{ Nodes []struct{ ID string } }
	}
	s.api("GET", "/flows/"+id, nil, &flow)
	require.Equal(t, 2, flow.Version.Number)
	require.Len(t, flow.Graph.Nodes, 2)

	// Discard goes on and drops the edits.
	s.run("reopen", chromedp.Navigate(s.url+"/flows/"+id))
	s.settleInCanvas(canvasNode("wait1"))
	require.False(t, s.beforeUnloadAsks())
	s.run("add Condition", chromedp.Click(`[data-palette="Condition"]`, chromedp.ByQuery), chromedp.WaitVisible(`form[aria-label^="Condition"]`, chromedp.ByQuery))
	s.run("to Boards", chromedp.Click(`nav a[href="/boards"]`, chromedp.ByQuery), chromedp.WaitVisible(`[data-unsaved-dialog]`, chromedp.ByQuery),
		chromedp.Click(`[data-action="unsaved-discard"]`, chromedp.ByQuery))
	s.waitJS("on the boards page", `location.pathname === "/boards"`)
	require.False(t, s.beforeUnloadAsks(), "the editor is gone, and its handler with it")
	s.api("GET", "/flows/"+id, nil, &flow)
	require.Equal(t, 2, flow.Version.Number, "discarded, not saved")

	// Browser Back to the editor: the discarded step is gone. A reload
	// with unsaved changes (at the end) raises the browser's own prompt,
	// which the harness accepts.
	s.run("back", chromedp.NavigateBack())
	s.settleInCanvas(canvasNode("wait1"))
	require.False(t, s.exists(canvasNode("branch1")), "the discarded step is gone")
	var prompted atomic.Bool
	chromedp.ListenTarget(s.ctx, func(ev any) {
		if e, ok := ev.(*page.EventJavascriptDialogOpening); ok && e.Type == page.DialogTypeBeforeunload {
			prompted.Store(true)
		}
	})
	// Back and Forward within the app ask too: to the flow's triggers
	// (nothing to lose), Back, an edit, then Forward — asked, and Stay
	// keeps the page.
	s.run("to its triggers", chromedp.Click(`[data-link="triggers"]`, chromedp.ByQuery))
	s.waitJS("triggers page", `location.pathname.endsWith("/triggers")`)
	s.run("back to the editor", chromedp.Evaluate(`history.back()`, nil))
	s.settleInCanvas(canvasNode("wait1"))
	s.run("add Condition", chromedp.Click(`[data-palette="Condition"]`, chromedp.ByQuery), chromedp.WaitVisible(`form[aria-label^="Condition"]`, chromedp.ByQuery))
	s.run("forward", chromedp.Evaluate(`history.forward()`, nil), chromedp.WaitVisible(`[data-unsaved-dialog]`, chromedp.ByQuery))
	require.Equal(t, "/flows/"+id, s.path(), "the address stays on the editor")
	s.run("stay", chromedp.Click(`[data-action="unsaved-stay"]`, chromedp.ByQuery))
	s.waitJS("dialog closed", `!document.querySelector("[data-unsaved-dialog]")`)
	require.True(t, s.exists(canvasNode("branch1")), "Stay keeps the edit")
	s.run("reload", chromedp.Reload())
	require.True(t, prompted.Load(), "reloading with unsaved changes raises the browser's prompt")
}

// TestUINodeIdRenameKeepsFocus (M2): typing a node id, Tab, then a label
// keeps both: committing the id does not re-mount the panel.
func TestUINodeIdRenameKeepsFocus(t *testing.T) {
	s := newStack(t)
	s.run("new flow", chromedp.Navigate(s.url+"/flows/new"), tokenSignIn(token))
	s.run("add Condition", chromedp.WaitVisible(`[data-palette="Condition"]`, chromedp.ByQuery),
		chromedp.Click(`[data-palette="Condition"]`, chromedp.ByQuery),
		chromedp.WaitVisible(`form[aria-label="Condition branch1 settings"]`, chromedp.ByQuery))
	s.run("type id, Tab, label", chromedp.Click("#node-id", chromedp.ByQuery),
		chromedp.Evaluate(`document.querySelector("#node-id").select()`, nil),
		chromedp.KeyEvent("tmp_x"), chromedp.KeyEvent(kb.Tab), chromedp.KeyEvent("Temp label"))
	s.waitJS("renamed", `!!document.querySelector('form[aria-label="Condition tmp_x settings"]')`)
	var got struct{ Label, Focus string }
	s.run("read", chromedp.Evaluate(`({Label: document.querySelector("#node-label").value, Focus: document.activeElement?.id ?? ""})`, &got))
	require.Equal(t, "Temp label", got.Label, "the label typed after the id is kept")
	require.Equal(t, "node-label", got.Focus)
	s.waitJS("on the canvas", fmt.Sprintf(`(document.querySelector(%q)?.innerText ?? "").includes("Temp label")`, canvasNode("tmp_x")))
	s.shot("es02-rename-then-label")
}

// inCanvas says whether the first element matching sel is wholly inside
// the canvas.
func (s *stack) inCanvas(sel string) bool {
	s.t.Helper()
	var in bool
	s.run("in canvas "+sel, chromedp.Evaluate(fmt.Sprintf(`(() => { const b = document.querySelector(%q).getBoundingClientRect();
		const p = document.querySelector(".react-flow__renderer").getBoundingClientRect();
		return b.left >= p.left && b.top >= p.top && b.right <= p.right && b.bottom <= p.bottom; })()`, sel), &in))
	return in
}

// TestUIFitOnOpen (m6): a flow wider than the canvas opens, in the editor
// and in the run view, at a readable zoom with its first steps in view —
// not centred with its start cut off.
func TestUIFitOnOpen(t *testing.T) {
	s := newStack(t)
	var nodes, edges []map[string]any
	for i := 1; i <= 8; i++ {
		nodes = append(nodes, transformNode(fmt.Sprintf("t%d", i), (i-1)*290, 0))
		if i > 1 {
			edges = append(edges, map[string]any{"id": fmt.Sprintf("e%d", i), "source": fmt.Sprintf("t%d", i-1), "target": fmt.Sprintf("t%d", i)})
		}
	}
	id := s.editorFlow("Long line", nodes, edges, nil)
	zoom := func() float64 {
		var z float64
		s.run("zoom", chromedp.Evaluate(`new DOMMatrix(getComputedStyle(document.querySelector(".react-flow__viewport")).transform).a`, &z))
		return z
	}

	s.run("editor", chromedp.Navigate(s.url+"/flows/"+id), tokenSignIn(token))
	s.settle(canvasNode("t1"))
	s.settle(".react-flow__viewport")
	require.True(t, s.inCanvas(canvasNode("t1")), "the first step is in view")
	require.True(t, s.inCanvas(canvasNode("t2")))
	require.GreaterOrEqual(t, zoom(), 0.9, "readable")
	s.shot("es03-editor-opened")

	var run struct{ ID string }
	s.api("POST", "/flows/"+id+"/runs", map[string]any{"input": map[string]any{"a": 1}}, &run)
	s.run("run view", chromedp.Navigate(s.url+"/runs/"+run.ID))
	s.settle(canvasNode("t1"))
	s.settle(".react-flow__viewport")
	require.True(t, s.inCanvas(canvasNode("t1")), "the first step is in view")
	require.GreaterOrEqual(t, zoom(), 0.9, "readable")
	s.shot("es04-run-opened")
}

// TestUIPaletteSearch: "/" focuses the palette's search, typing filters
// the steps by label and help (a label that starts with the search
// first), Enter adds the first match, ↓ reaches the
// matches, and a search matching nothing says so and adds nothing.
func TestUIPaletteSearch(t *testing.T) {
	s := newStack(t)
	shown := func() []string {
		var out []string
		s.run("palette", chromedp.Evaluate(`[...document.querySelectorAll("[data-palette]")].map(b => b.dataset.palette)`, &out))
		return out
	}
	s.run("new flow", chromedp.Navigate(s.url+"/flows/new"), tokenSignIn(token))
	s.waitJS("palette", `document.querySelectorAll("[data-palette]").length > 5`)
	all := len(shown())
	// "/" pressed as a keyboard does (one keyDown carrying its text, which
	// the page's preventDefault keeps out of the field it focuses).
	s.run("slash", chromedp.Click(".canvas-empty", chromedp.ByQuery),
		input.DispatchKeyEvent(input.KeyDown).WithKey("/").WithCode("Slash").WithText("/").WithWindowsVirtualKeyCode(191),
		input.DispatchKeyEvent(input.KeyUp).WithKey("/").WithCode("Slash").WithWindowsVirtualKeyCode(191))
	s.waitJS("search focused", `document.activeElement?.matches("[data-palette-search]")`)
	s.run("type wai", chromedp.KeyEvent("wai"))
	s.waitJS("filtered", `document.querySelector("[data-palette]")?.dataset.palette === "Wait"`)
	got := shown()
	require.Less(t, len(got), all, "filtered")
	require.Contains(t, got, "UX", `by its help ("Waits for a person")`)
	require.NotContains(t, got, "Transform")
	s.run("enter", chromedp.KeyEvent(kb.Enter), chromedp.WaitVisible(`form[aria-label="Wait wait1 settings"]`, chromedp.ByQuery))
	s.waitJS("cleared", fmt.Sprintf(`document.querySelector("[data-palette-search]").value === "" && document.querySelectorAll("[data-palette]").length === %d`, all))

	// By its help: "REST" is only in the HTTP step's.
	s.run("type rest", chromedp.Focus("[data-palette-search]", chromedp.ByQuery), chromedp.KeyEvent("rest api"))
	s.waitJS("filtered", `document.querySelectorAll("[data-palette]").length === 1`)
	require.Equal(t, []string{"HTTP"}, shown())
	s.shot("es05-palette-search")
	s.run("down, enter", chromedp.KeyEvent(kb.ArrowDown), chromedp.KeyEvent(kb.Enter),
		chromedp.WaitVisible(`form[aria-label="HTTP http1 settings"]`, chromedp.ByQuery))

	s.run("type nothing", chromedp.Focus("[data-palette-search]", chromedp.ByQuery), chromedp.KeyEvent(kb.Escape), chromedp.KeyEvent("zzqq"))
	s.waitJS("none", `!!document.querySelector("[data-palette-none]") && document.querySelectorAll("[data-palette]").length === 0`)
	s.run("enter", chromedp.KeyEvent(kb.Enter))
	var count int
	s.run("nodes", chromedp.Evaluate(`document.querySelectorAll(".react-flow__node").length`, &count))
	require.Equal(t, 2, count, "Enter with no match adds nothing")
}

// positions reads where the canvas draws each node (flow coordinates).
func (s *stack) positions() map[string][2]float64 {
	s.t.Helper()
	var out map[string][2]float64
	s.run("positions", chromedp.Evaluate(`Object.fromEntries([...document.querySelectorAll(".react-flow__node")].map(n => {
		const m = new DOMMatrix(getComputedStyle(n).transform); return [n.dataset.id, [m.e, m.f]]; }))`, &out))
	return out
}

// TestUITidyUp: Tidy up lays a messy flow out left to right — each step
// right of the one before it, the loop's back edge not counted, no two
// steps overlapping — as one change that marks the flow unsaved, that
// Undo takes back, and that Save keeps.
func TestUITidyUp(t *testing.T) {
	s := newStack(t)
	id := s.editorFlow("Messy", []map[string]any{
		transformNode("a", 600, 300), transformNode("b", 0, 0), transformNode("c", 300, 520), transformNode("d", 40, 420),
	}, []map[string]any{
		{"id": "e1", "source": "a", "target": "b"},
		{"id": "e2", "source": "b", "target": "c"},
		{"id": "e3", "source": "c", "target": "a", "data": map[string]any{"condition": "input.again == true", "loop": map[string]any{"maxIterations": 3}}},
		{"id": "e4", "source": "c", "target": "d", "data": map[string]any{"default": true}},
	}, nil)
	s.run("open", chromedp.Navigate(s.url+"/flows/"+id), tokenSignIn(token))
	s.settle(canvasNode("a"))
	before := s.positions()
	require.Equal(t, [2]float64{600, 300}, before["a"])
	require.True(t, s.exists(`[data-action="undo"]:disabled`), "nothing to undo yet")

	check := func(p map[string][2]float64) {
		t.Helper()
		require.Less(t, p["a"][0], p["b"][0], "a, then b")
		require.Less(t, p["b"][0], p["c"][0], "b, then c (the loop back to a is not counted)")
		require.Less(t, p["c"][0], p["d"][0], "c, then d")
		ids := []string{"a", "b", "c", "d"}
		for i, x := range ids {
			for _, y := range ids[i+1:] {
				apart := p[x][0]+150 <= p[y][0] || p[y][0]+150 <= p[x][0] || p[x][1]+50 <= p[y][1] || p[y][1]+50 <= p[x][1]
				require.True(t, apart, "%s and %s overlap: %v %v", x, y, p[x], p[y])
			}
		}
	}
	s.run("tidy", chromedp.Click(`[data-action="tidy"]`, chromedp.ByQuery))
	s.waitJS("dirty", `document.body.innerText.includes("Unsaved changes.")`)
	s.settle(canvasNode("d"))
	check(s.positions())
	s.shot("es06-tidy")

	s.run("undo", chromedp.Click(`[data-action="undo"]`, chromedp.ByQuery))
	s.waitJS("undone", `document.querySelector('[data-action="undo"]').disabled && !document.querySelector('[data-action="redo"]').disabled`)
	require.Equal(t, before, s.positions(), "Undo puts every step back")

	s.run("tidy and save", chromedp.Click(`[data-action="tidy"]`, chromedp.ByQuery), chromedp.Click(`//button[text()="Save"]`, chromedp.BySearch))
	s.waitJS("saved", `document.body.innerText.includes("Saved as version 2")`)
	var flow struct {
		Graph struct {
			Nodes []struct {
				ID       string
				Position struct{ X, Y float64 }
			}
		}
	}
	s.api("GET", "/flows/"+id, nil, &flow)
	saved := map[string][2]float64{}
	for _, n := range flow.Graph.Nodes {
		saved[n.ID] = [2]float64{n.Position.X, n.Position.Y}
	}
	check(saved)
}

// TestUIToolbarAt1440 (m7): on a 1440 × 900 screen, with a board and a
// long version note, the editor's toolbar shows every button whole, in
// one or two rows, and no field, label or button lies over another.
func TestUIToolbarAt1440(t *testing.T) {
	s := newStack(t)
	var board struct{ ID string }
	s.api("POST", "/boards", map[string]any{"name": "Purchase requests", "sections": []map[string]string{{"id": "new", "name": "New"}}}, &board)
	id := s.editorFlow("Purchase request", []map[string]any{transformNode("t1", 0, 0)}, nil,
		map[string]any{"board_id": board.ID, "message": "stitchd demo: the purchase request with its approval and order"})
	s.run("viewport", chromedp.EmulateViewport(1440, 900))
	s.run("open", chromedp.Navigate(s.url+"/flows/"+id), tokenSignIn(token))
	s.waitJS("toolbar", `!!document.querySelector("#flow-version") && !!document.querySelector("#flow-board")`)
	s.run("a long change note", chromedp.Click("#flow-message", chromedp.ByQuery), chromedp.KeyEvent("tidied the steps and renamed the approval"))
	s.shot("es07-toolbar-1440")

	var r struct {
		Buttons  []string
		Hidden   []string
		Rows     int
		Overlaps []string
	}
	s.run("measure", chromedp.Evaluate(`(() => {
		const bar = document.querySelector(".editor-bar"), B = bar.getBoundingClientRect();
		const name = el => el.id || el.getAttribute("for") || el.dataset.action || el.textContent.trim();
		const buttons = [...bar.querySelectorAll("button, a.btn")];
		const hidden = buttons.filter(b => { const r = b.getBoundingClientRect(), cx = r.left + r.width/2, cy = r.top + r.height/2;
			return r.width === 0 || r.left < B.left || r.right > B.right || r.top < B.top || r.bottom > B.bottom || r.right > innerWidth
				|| !b.contains(document.elementFromPoint(cx, cy)); }).map(name);
		const rows = new Set(buttons.map(b => Math.round(b.getBoundingClientRect().top / 8))).size;
		const parts = [...bar.querySelectorAll("label, input, select, button, a.btn")];
		const overlaps = [];
		for (let i = 0; i < parts.length; i++) for (let j = i + 1; j < parts.length; j++) {
			const a = parts[i].getBoundingClientRect(), b = parts[j].getBoundingClientRect();
			const w = Math.min(a.right, b.right) - Math.max(a.left, b.left), h = Math.min(a.bottom, b.bottom) - Math.max(a.top, b.top);
			if (w > 1 && h > 1) overlaps.push(name(parts[i]) + " / " + name(parts[j]));
		}
		return {Buttons: buttons.map(name), Hidden: hidden, Rows: rows, Overlaps: overlaps};
	})()`, &r))
	require.Empty(t, r.Overlaps, "nothing lies over anything else")
	require.Empty(t, r.Hidden, "every button shown whole")
	require.LessOrEqual(t, r.Rows, 2, "one or two rows")
	require.Subset(t, r.Buttons, []string{"tidy", "Save", "Start run", "Runs", "Triggers"})
}

// TestUINodeJSONTab: every node's panel has a JSON tab with the node's
// data; invalid JSON is refused with a message and changes nothing; valid
// JSON replaces the data — a setting the panel has no field for (a UX
// step's summary) is saved.
func TestUINodeJSONTab(t *testing.T) {
	s := newStack(t)
	id := s.editorFlow("Ask", []map[string]any{{"id": "ask", "type": "UX", "position": map[string]any{"x": 0, "y": 0}, "data": map[string]any{"prompt": "OK?"}}}, nil, nil)
	s.run("open", chromedp.Navigate(s.url+"/flows/"+id), tokenSignIn(token))
	s.settleInCanvas(canvasNode("ask"))
	s.run("select", chromedp.Click(canvasNode("ask"), chromedp.ByQuery), chromedp.WaitVisible(`form[aria-label="UX ask settings"]`, chromedp.ByQuery))
	s.run("JSON tab", chromedp.Click(`[data-tab="json"]`, chromedp.ByQuery), chromedp.WaitVisible("#node-json-ask", chromedp.ByQuery))
	var text string
	s.run("read", chromedp.Value("#node-json-ask", &text, chromedp.ByQuery))
	require.JSONEq(t, `{"prompt": "OK?"}`, text)

	// Invalid: said, and nothing changed.
	s.run("invalid", setValue("#node-json-ask", `{"prompt": "Changed?",`), chromedp.Click(`[data-action="json-apply"]`, chromedp.ByQuery))
	s.waitJS("error", `(document.querySelector("[data-json-error]")?.innerText ?? "").includes("Not valid JSON")`)
	// The node's data is unchanged; the text waiting to be applied is
	// unsaved work all the same (TestUIJSONTabTextNotAppliedIsUnsaved).
	require.True(t, s.exists(`.banner.subtle`), "the text not applied is marked unsaved")
	s.run("an array", setValue("#node-json-ask", `["prompt"]`), chromedp.Click(`[data-action="json-apply"]`, chromedp.ByQuery))
	s.waitJS("error", `(document.querySelector("[data-json-error]")?.innerText ?? "").includes("JSON object")`)
	s.shot("es08-json-invalid")
	s.run("settings tab", chromedp.Click(`[data-tab="settings"]`, chromedp.ByQuery), chromedp.WaitVisible("#node-prompt", chromedp.ByQuery))
	var prompt string
	s.run("prompt", chromedp.Value("#node-prompt", &prompt, chromedp.ByQuery))
	require.Equal(t, "OK?", prompt)

	// Valid: the data is replaced, the Settings tab shows it, Save keeps it.
	s.run("JSON tab", chromedp.Click(`[data-tab="json"]`, chromedp.ByQuery), chromedp.WaitVisible("#node-json-ask", chromedp.ByQuery),
		setValue("#node-json-ask", `{"prompt": "Order it?", "summary": [{"label": "Amount", "path": "amount"}, "item"]}`),
		chromedp.Click(`[data-action="json-apply"]`, chromedp.ByQuery))
	s.waitJS("applied", `document.body.innerText.includes("Unsaved changes.") && !document.querySelector("[data-json-error]")`)
	s.run("settings tab", chromedp.Click(`[data-tab="settings"]`, chromedp.ByQuery), chromedp.WaitVisible("#node-prompt", chromedp.ByQuery),
		chromedp.Value("#node-prompt", &prompt, chromedp.ByQuery))
	require.Equal(t, "Order it?", prompt)
	s.run("save", chromedp.Click(`//button[text()="Save"]`, chromedp.BySearch))
	s.waitJS("saved", `document.body.innerText.includes("Saved as version 2")`)
	var flow struct {
		Graph struct {
			Nodes []struct {
				ID   string
				Data map[string]any
			}
		}
	}
	s.api("GET", "/flows/"+id, nil, &flow)
	require.Len(t, flow.Graph.Nodes, 1)
	require.Equal(t, "Order it?", flow.Graph.Nodes[0].Data["prompt"])
	require.Equal(t, []any{map[string]any{"label": "Amount", "path": "amount"}, "item"}, flow.Graph.Nodes[0].Data["summary"])
	require.Contains(t, s.text(`[data-tab="json"]`), "JSON")
}
