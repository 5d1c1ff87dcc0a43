package browser_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
	"github.com/stretchr/testify/require"
)

// dataPanelFlow makes a flow and runs it once: request sets the variable
// limit; check reads steps.request and vars; check's edge "big" leads to
// approve and notify (an HTTP step), its "small" (else) to auto.
func dataPanelFlow(t *testing.T, s *stack) string {
	ext := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"ok": true}`))
	}))
	t.Cleanup(ext.Close)
	var flow struct{ ID string }
	pos := func(x, y int) map[string]int { return map[string]int{"x": x, "y": y} }
	s.api("POST", "/flows", map[string]any{"name": "Purchase check", "graph": map[string]any{
		"nodes": []map[string]any{
			{"id": "request", "type": "Transform", "position": pos(0, 0), "data": map[string]any{
				"expression": `{"amount": run.input.amount, "buyer": {"email": run.input.email}}`, "setVariables": map[string]any{"limit": "1000"}}},
			{"id": "check", "type": "Transform", "position": pos(260, 0), "data": map[string]any{"expression": `{"over": steps.request.output.amount - vars.limit}`}},
			{"id": "approve", "type": "Transform", "position": pos(520, -90), "data": map[string]any{"expression": `"needs approval"`}},
			{"id": "auto", "type": "Transform", "position": pos(520, 90), "data": map[string]any{"expression": `"approved"`}},
			{"id": "notify", "type": "HTTP", "position": pos(260, 170), "data": map[string]any{"method": "POST", "url": ext.URL + "/notify"}},
		},
		"edges": []map[string]any{
			{"id": "e1", "source": "request", "target": "check"},
			{"id": "big", "source": "check", "target": "approve", "data": map[string]any{"condition": "output.over > 0"}},
			{"id": "small", "source": "check", "target": "auto", "data": map[string]any{"default": true}},
			{"id": "e4", "source": "approve", "target": "notify"},
		}}}, &flow)
	var run struct{ ID, Status string }
	s.api("POST", "/flows/"+flow.ID+"/runs", map[string]any{"input": map[string]any{"amount": 1500, "email": "ada@example.com"}}, &run)
	require.Eventually(t, func() bool {
		s.api("GET", "/runs/"+run.ID, nil, &run)
		return run.Status == "completed" || run.Status == "failed"
	}, 20*time.Second, 100*time.Millisecond)
	require.Equal(t, "completed", run.Status)
	return flow.ID
}

// typeInEditor clicks into the CodeMirror editor of the field id, clears it
// and types text, as a person would.
func typeInEditor(id, text string) chromedp.Action {
	cm := fmt.Sprintf(`[data-expr-input=%q] .cm-content`, id)
	return chromedp.Tasks{
		chromedp.WaitVisible(fmt.Sprintf(`[data-expr-input=%q][data-ready="true"] .cm-content`, id), chromedp.ByQuery),
		chromedp.Click(cm, chromedp.ByQuery),
		chromedp.KeyEvent("a", chromedp.KeyModifiers(input.ModifierCtrl)),
		chromedp.KeyEvent(kb.Backspace),
		chromedp.KeyEvent(text),
	}
}

// enter presses Enter as a keyboard does (a raw key down): it accepts
// the completion chosen. CodeMirror ignores an Enter within 75 ms of the
// list opening (a keystroke meant for the text): a person is slower.
var enter = chromedp.Tasks{
	chromedp.Sleep(150 * time.Millisecond),
	input.DispatchKeyEvent(input.KeyRawDown).WithKey("Enter").WithCode("Enter").WithWindowsVirtualKeyCode(13),
	input.DispatchKeyEvent(input.KeyUp).WithKey("Enter").WithCode("Enter").WithWindowsVirtualKeyCode(13),
}

// answered waits until the expression field id holds text and what its
// form shows under it is done changing: the preview worked out for that
// text (aria-busy off) and the check made a moment after typing, check
// (or none). The data panel is below both: a click in it sent before
// they change can land where a field was (seen 3 runs in 8).
func answered(s *stack, id, text, check string) {
	s.t.Helper()
	form := fmt.Sprintf(`document.querySelector('[data-expr-input=%q]').closest("form")`, id)
	s.waitJS("typed "+id, fmt.Sprintf(`document.querySelector("#%s").value === %q`, id, text))
	s.waitJS("previewed "+id, form+`.querySelector("[data-preview]").getAttribute("aria-busy") === "false"`)
	local := form + `.querySelector('[data-check="local"]')`
	if check == "" {
		s.waitJS("no check "+id, "!"+local)
	} else {
		s.waitJS("checked "+id, fmt.Sprintf(`!!%s?.innerText.includes(%q)`, local, check))
	}
}

// completions is the JS listing the autocomplete popup's options.
const completions = `[...document.querySelectorAll(".cm-tooltip-autocomplete li")].map(li => li.querySelector(".cm-completionLabel").innerText)`

// TestUIDataPanel: a step's data panel shows its input and output from the
// flow's last run and what its expressions can reach — run.input, only the
// steps upstream of it, the run's variables; clicking a field inserts its
// path at the cursor of the expression being edited. The expression
// editor completes step ids and fields; its preview shows the value
// against the sample; a mistake is said in plain words, the compiler's
// message in small print underneath.
func TestUIDataPanel(t *testing.T) {
	s := newStack(t)
	flowID := dataPanelFlow(t, s)
	node := func(id string) string { return fmt.Sprintf(`.react-flow__node[data-id="%s"]`, id) }

	s.run("open", chromedp.Navigate(s.url+"/flows/"+flowID), tokenSignIn(token))
	s.waitJS("canvas", fmt.Sprintf(`!!document.querySelector(%q)`, node("check")))
	s.settle(node("check"))
	s.run("select check", chromedp.Click(node("check"), chromedp.ByQuery),
		chromedp.WaitVisible(`form[aria-label="Transform check settings"]`, chromedp.ByQuery))

	// The panel, from the last run: check's input (request's output), its
	// output, run.input, request's output, the variable limit — and no
	// step that runs after check or beside it.
	s.waitJS("data from the run", `!!document.querySelector('[data-data-panel] [data-path="steps.request.output.amount"]')`)
	var paths []string
	s.run("paths", chromedp.Evaluate(`[...document.querySelectorAll("[data-data-panel] [data-path]")].map(e => e.dataset.path)`, &paths))
	require.Contains(t, paths, "input.amount")
	require.Contains(t, paths, "input.buyer.email")
	require.Contains(t, paths, "run.input.email")
	require.Contains(t, paths, "vars.limit")
	require.Contains(t, paths, "output.over", "its output from the run is shown")
	for _, p := range paths {
		require.NotContains(t, p, "steps.approve", "approve runs after check")
		require.NotContains(t, p, "steps.auto")
		require.NotContains(t, p, "steps.check", "check's own output is not yet made")
	}
	require.Contains(t, s.text(`[data-data-panel] [data-path="steps.request.output.amount"]`+"~ .dp-value"), "1500")
	require.Contains(t, s.text(`[data-data-panel] [data-path="vars.limit"] ~ .dp-value`), "1000")
	// A tree folds.
	s.run("fold input", chromedp.Click(`[data-data-panel] [aria-label="Input"] > li > details > summary`, chromedp.ByQuery))
	s.waitJS("folded", `!document.querySelector('[data-data-panel] [aria-label="Input"] > li > details').open`)
	s.run("unfold input", chromedp.Click(`[data-data-panel] [aria-label="Input"] > li > details > summary`, chromedp.ByQuery))

	// Completion: after steps. the upstream ids; after .output. the fields.
	s.run("type steps.", typeInEditor("node-expression", "steps."))
	s.waitJS("step ids offered", completions+`.includes("request")`)
	var offered []string
	s.run("offered", chromedp.Evaluate(completions, &offered))
	require.Equal(t, []string{"request"}, offered, "only the step upstream of check")
	s.run("accept", enter, chromedp.KeyEvent(".output."))
	s.waitJS("fields offered", completions+`.includes("amount") && `+completions+`.includes("buyer")`)
	s.run("am + Enter", chromedp.KeyEvent("am"))
	s.waitJS("filtered", completions+`.join() === "amount"`)
	s.run("accept field", enter, chromedp.KeyEvent(" > "))
	answered(s, "node-expression", "steps.request.output.amount > ", "ends with an operator")
	// A click in the panel inserts at the cursor.
	s.run("insert vars.limit", chromedp.Click(`[data-data-panel] [data-path="vars.limit"]`, chromedp.ByQuery))
	s.waitJS("inserted", `document.querySelector("#node-expression").value === "steps.request.output.amount > vars.limit"`)
	require.Contains(t, s.text(`[data-expr-input="node-expression"] .cm-content`), "steps.request.output.amount > vars.limit")
	// The preview: the value against the sample (the last run's).
	s.waitJS("preview", `document.querySelector('.settings [data-preview="value"] [data-preview-value]')?.innerText === "true"`)
	s.shot("dp01-data-panel")

	// Names complete too, with the builtins.
	s.run("type up", typeInEditor("node-expression", "upp"))
	s.waitJS("upper offered", completions+`.includes("upper")`)
	s.run("accept upper", enter, chromedp.KeyEvent("("))
	answered(s, "node-expression", "upper()", "")
	s.run("insert email", chromedp.Click(`[data-data-panel] [data-path="input.buyer.email"]`, chromedp.ByQuery))
	s.waitJS("preview upper", `document.querySelector('.settings [data-preview="value"] [data-preview-value]')?.innerText === '"ADA@EXAMPLE.COM"'`)
	require.Equal(t, "upper(input.buyer.email)", s.value("#node-expression"))

	// A mistake, in plain words: the preview at once, the server's at save.
	s.run("broken", typeInEditor("node-expression", "steps.request.output.amount >"))
	s.waitJS("preview error", `document.querySelector('.settings [data-preview="error"] [data-plain]')?.innerText.includes("ends too early")`)
	require.Contains(t, s.text(`.settings [data-preview="error"] [data-technical]`), "unexpected token EOF", "the compiler's message, in small print")
	s.run("save", chromedp.Click(`//button[text()="Save"]`, chromedp.BySearch))
	s.waitJS("server message", `!!document.querySelector('.settings [data-check="server"] [data-plain]')`)
	require.Contains(t, s.text(`.settings [data-check="server"] [data-plain]`), "The expression ends too early — something is missing after")
	require.Contains(t, s.text(`.settings [data-check="server"] [data-technical]`), "nodes[1].data.expression")
	require.Contains(t, s.text(`.settings [data-check="server"] [data-technical]`), "unexpected token EOF")
	s.shot("dp02-plain-problem")

	// An edge's condition: the panel's output is its source's; the
	// preview says whether the edge would be taken.
	s.run("fix", typeInEditor("node-expression", `{"over": steps.request.output.amount - vars.limit`))
	s.waitJS("fixed", `document.querySelector('.settings [data-preview="value"] [data-preview-value]')?.innerText === '{"over":500}'`)
	s.run("open edge big", chromedp.Click(`button[aria-label="Edit edge big to approve"]`, chromedp.ByQuery),
		chromedp.WaitVisible(`form[aria-label="Edge big settings"]`, chromedp.ByQuery))
	s.waitJS("taken", `document.querySelector('.edge-settings [data-preview]')?.dataset.taken === "true"`)
	s.run("condition", typeInEditor("edge-condition", ""))
	answered(s, "edge-condition", "", "Write an expression")
	s.run("insert output.over", chromedp.Click(`[data-data-panel] [data-path="output.over"]`, chromedp.ByQuery), chromedp.KeyEvent(" > 1000"))
	s.waitJS("condition typed", `document.querySelector("#edge-condition").value === "output.over > 1000"`)
	s.waitJS("not taken", `document.querySelector('.edge-settings [data-preview]')?.dataset.taken === "false"`)
	require.Contains(t, s.text(`.edge-settings [data-preview]`), "would not be taken")
	s.shot("dp03-edge-preview")

	// An HTTP step's url: the path goes in as a {{ }} template, at the cursor.
	s.settle(node("notify"))
	s.run("select notify", chromedp.Click(node("notify"), chromedp.ByQuery), chromedp.WaitVisible("#node-http-url", chromedp.ByQuery))
	var before string
	s.run("url", chromedp.Value("#node-http-url", &before, chromedp.ByQuery), chromedp.Click("#node-http-url", chromedp.ByQuery), chromedp.KeyEvent(kb.End), chromedp.KeyEvent("/"))
	s.waitJS("notify panel", `!!document.querySelector('[data-data-panel] [data-path="steps.approve.output"]')`)
	s.run("insert amount", chromedp.Click(`[data-data-panel] [data-path="steps.request.output.amount"]`, chromedp.ByQuery))
	s.waitJS("templated", fmt.Sprintf(`document.querySelector("#node-http-url").value === %q`, before+"/{{ steps.request.output.amount }}"))
}
