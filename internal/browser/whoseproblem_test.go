package browser_test

import (
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"
)

// TestUIPreviewSaysWhoseProblem: a step that reads a step no longer
// there breaks; another step's preview says that the broken step has a
// problem, not the problem as its own expression's (it showed
// "nodes[1].data.expression: steps.gone: no step has the id" under a
// valid expression).
func TestUIPreviewSaysWhoseProblem(t *testing.T) {
	s := newStack(t)
	id := s.editorFlow("Refs", []map[string]any{
		{"id": "t1", "type": "Transform", "position": map[string]any{"x": 0, "y": 0}, "data": map[string]any{"expression": `{"x": run.input.x}`}},
		{"id": "t2", "type": "Transform", "position": map[string]any{"x": 320, "y": 0}, "data": map[string]any{"expression": `{"y": steps.t1.output.x}`}},
	}, []map[string]any{{"id": "e1", "source": "t1", "target": "t2"}}, nil)
	s.run("open", chromedp.Navigate(s.url+"/flows/"+id), tokenSignIn(token))
	s.settleInCanvas(canvasNode("t2"))
	s.run("select t2", chromedp.Click(canvasNode("t2"), chromedp.ByQuery), chromedp.WaitVisible(`form[aria-label="Transform t2 settings"]`, chromedp.ByQuery))
	s.run("break t2", typeInEditor("node-expression", `{"y": steps.gone.output.x}`))
	s.waitJS("typed", `document.querySelector("#node-expression").value === '{"y": steps.gone.output.x}'`)
	s.run("select t1", chromedp.Click(canvasNode("t1"), chromedp.ByQuery), chromedp.WaitVisible(`form[aria-label="Transform t1 settings"]`, chromedp.ByQuery))
	s.waitJS("previewed", `!!document.querySelector('.settings [data-preview="off"]') || !!document.querySelector('.settings [data-preview="error"]')`)
	s.shot("wp01-preview-beside-a-broken-step")
	require.False(t, s.exists(`.settings [data-preview="error"]`), "t1's own expression is fine: %s", s.text(".settings [data-preview]"))
	got := s.text(`.settings [data-preview="off"]`)
	require.Contains(t, got, "No preview while step t2 has a problem")
	require.Contains(t, got, `"gone"`)
}

// TestUITimelineFollowsTheFlow: steps that ran in one transaction (three
// Transforms: the same start and end) are listed in the flow's order, not
// by their ids.
func TestUITimelineFollowsTheFlow(t *testing.T) {
	s := newStack(t)
	id := s.editorFlow("Ordered", []map[string]any{transformNode("zeta", 0, 0), transformNode("alpha", 320, 0), transformNode("mid", 640, 0)},
		[]map[string]any{{"id": "e1", "source": "zeta", "target": "alpha"}, {"id": "e2", "source": "alpha", "target": "mid"}}, nil)
	var run struct{ ID string }
	s.api("POST", "/flows/"+id+"/runs", map[string]any{"input": map[string]any{}}, &run)
	s.run("open", chromedp.Navigate(s.url+"/runs/"+run.ID), tokenSignIn(token))
	s.waitJS("timeline", `document.querySelectorAll("[data-timeline-node]").length === 3`)
	var order []string
	s.run("order", chromedp.Evaluate(`[...document.querySelectorAll("[data-timeline-node]")].map(li => li.dataset.timelineNode)`, &order))
	require.Equal(t, []string{"zeta", "alpha", "mid"}, order)
}

// TestUICodeCompletionIsJavaScripts: a Code step's editor offers the
// script's names and JavaScript's own, not expr-lang's builtins (abs, all,
// any are no functions in a script).
func TestUICodeCompletionIsJavaScripts(t *testing.T) {
	s := newStack(t)
	id := s.editorFlow("Script", []map[string]any{{"id": "code1", "type": "Code", "position": map[string]any{"x": 0, "y": 0},
		"data": map[string]any{"source": "return input"}}}, nil, nil)
	s.run("open", chromedp.Navigate(s.url+"/flows/"+id), tokenSignIn(token))
	s.settleInCanvas(canvasNode("code1"))
	s.run("select", chromedp.Click(canvasNode("code1"), chromedp.ByQuery), chromedp.WaitVisible(`form[aria-label="Code code1 settings"]`, chromedp.ByQuery))
	s.run("type", typeInEditor("node-code-source", "return a"))
	var got []string
	require.Eventually(t, func() bool {
		s.run("completions", chromedp.Evaluate(completions, &got))
		return len(got) > 0
	}, 10*time.Second, 100*time.Millisecond, "the completion list opens")
	for _, b := range []string{"abs", "all", "any"} {
		require.NotContains(t, got, b, "%v", got)
	}
	s.run("type M", typeInEditor("node-code-source", "return M"))
	require.Eventually(t, func() bool {
		s.run("completions", chromedp.Evaluate(completions, &got))
		return len(got) > 0 && got[0] == "Math"
	}, 10*time.Second, 100*time.Millisecond, "JavaScript's names: %v", got)
}

// TestUIProblemsInPlainWords: a save refused for an expression's syntax
// says the problem in plain words on the canvas and in the Problems list
// (the compiler's message in small print beside it), as its field does.
func TestUIProblemsInPlainWords(t *testing.T) {
	s := newStack(t)
	s.openTransformFlow("Broken")
	s.run("a broken expression", typeInEditor("node-expression", `1 +`))
	s.waitJS("typed", `document.querySelector("#node-expression").value === '1 +'`)
	s.run("save", chromedp.Click(`//button[text()="Save"]`, chromedp.BySearch))
	s.waitJS("refused", `!!document.querySelector(".problems li")`)
	s.shot("wp02-problems-in-plain-words")
	require.Contains(t, s.text(".problems li [data-plain]"), "ends too early")
	require.Contains(t, s.text(".problems li [data-technical]"), "unexpected token EOF", "the compiler's words, in small print")
	require.Contains(t, s.text(canvasNode("t1")), "ends too early")
}

// TestUIPreviewBeforeTheFirstSave: a new flow's expression is previewed,
// its mistake said, and its step tried in the Test tab, before the flow
// was ever saved (both said "Save the flow once").
func TestUIPreviewBeforeTheFirstSave(t *testing.T) {
	s := newStack(t)
	s.run("new flow", chromedp.Navigate(s.url+"/flows/new"), tokenSignIn(token))
	s.waitJS("palette", `!!document.querySelector('[data-palette="Transform"]')`)
	s.run("add Transform", chromedp.Click(`[data-palette="Transform"]`, chromedp.ByQuery), chromedp.WaitVisible(`form[aria-label="Transform transform1 settings"]`, chromedp.ByQuery))
	s.run("an expression", typeInEditor("node-expression", `20 + 22`))
	s.waitJS("previewed", `document.querySelector('.settings [data-preview="value"] [data-preview-value]')?.innerText === "42"`)
	s.run("a mistake", typeInEditor("node-expression", `20 +`))
	s.waitJS("said", `(document.querySelector('.settings [data-preview="error"] [data-plain]')?.innerText ?? "").includes("ends too early")`)
	// The Test tab tries it too.
	s.run("fixed", typeInEditor("node-expression", `input.n * 21`))
	s.run("Test tab", chromedp.Click(`[data-tab="test"]`, chromedp.ByQuery), chromedp.WaitVisible("#node-test-transform1", chromedp.ByQuery),
		setValue("#node-test-transform1", `{"input": {"n": 2}}`), chromedp.Click(`[data-test-step]`, chromedp.ByQuery))
	s.waitJS("tried", `(document.querySelector("[data-test-output]")?.innerText ?? "").trim() === "42"`)
	require.Equal(t, "/flows/new", s.path(), "nothing was saved")
}
