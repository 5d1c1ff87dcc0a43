package browser_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"
)

// TestUITestStep: a step's Test tab tries it alone, as a person would: the
// sample (an earlier step's output the step reads as steps.<id>), Test
// step, and the answer — its output and which edge a run would take —
// with no run started.
func TestUITestStep(t *testing.T) {
	s := newStack(t)
	var flow struct {
		ID string `json:"id"`
	}
	s.api("POST", "/flows", map[string]any{"name": "Purchase check", "graph": map[string]any{
		"nodes": []map[string]any{
			{"id": "request", "type": "Transform", "position": map[string]int{"x": 0, "y": 0}, "data": map[string]any{"expression": `{"amount": run.input.amount}`}},
			{"id": "budget", "type": "Transform", "position": map[string]int{"x": 250, "y": 0}, "data": map[string]any{"expression": `{"status": 200}`}},
			{"id": "check", "type": "Condition", "position": map[string]int{"x": 500, "y": 0}, "data": map[string]any{}},
			{"id": "approve", "type": "Transform", "position": map[string]int{"x": 750, "y": -80}, "data": map[string]any{"expression": `"needs approval"`}},
			{"id": "auto", "type": "Transform", "position": map[string]int{"x": 750, "y": 80}, "data": map[string]any{"expression": `"approved"`}},
		},
		"edges": []map[string]any{
			{"id": "e1", "source": "request", "target": "budget"}, {"id": "e2", "source": "budget", "target": "check"},
			{"id": "big", "source": "check", "target": "approve", "data": map[string]any{"condition": "steps.request.output.amount > 1000"}},
			{"id": "small", "source": "check", "target": "auto", "data": map[string]any{"default": true}},
		}}}, &flow)

	s.run("open", chromedp.Navigate(s.url+"/flows/"+flow.ID), tokenSignIn(token))
	s.waitJS("canvas", `!!document.querySelector('.react-flow__node[data-id="check"]')`)
	s.run("select check", chromedp.Click(`.react-flow__node[data-id="check"]`, chromedp.ByQuery),
		chromedp.WaitVisible(`form[aria-label="Condition check settings"]`, chromedp.ByQuery),
		chromedp.Click(`[data-tab="test"]`, chromedp.ByQuery), chromedp.WaitVisible(`#node-test-check`, chromedp.ByQuery))
	s.run("sample", setValue(`#node-test-check`, `{"input": {"status": 200}, "steps": {"request": {"output": {"amount": 1500}}}}`),
		chromedp.Click(`[data-test-step]`, chromedp.ByQuery))
	s.waitJS("answer", `!!document.querySelector('[data-test-result="completed"]')`)
	require.Equal(t, "true", s.attr(`[data-edge-target="approve"]`, "data-taken"), "1500 > 1000: the approval edge")
	require.Equal(t, "false", s.attr(`[data-edge-target="auto"]`, "data-taken"))
	require.Contains(t, s.text(`[data-test-output]`), `"status": 200`, "a Condition passes its input on")
	s.shot("ts01-test-step")

	s.run("a small amount", setValue(`#node-test-check`, `{"input": {}, "steps": {"request": {"output": {"amount": 10}}}}`),
		chromedp.Click(`[data-test-step]`, chromedp.ByQuery))
	s.waitJS("default taken", `document.querySelector('[data-edge-target="auto"]')?.dataset.taken === "true"`)
	require.Equal(t, "false", s.attr(`[data-edge-target="approve"]`, "data-taken"))

	var runs struct {
		Runs []any `json:"runs"`
	}
	s.api("GET", "/runs?flow_id="+flow.ID, nil, &runs)
	require.Empty(t, runs.Runs, "testing a step starts no run")
}

// TestUIRunVariables: the run view lists the run's variables.
func TestUIRunVariables(t *testing.T) {
	s := newStack(t)
	var flow struct {
		ID string `json:"id"`
	}
	s.api("POST", "/flows", map[string]any{"name": "Vars", "graph": map[string]any{
		"nodes": []map[string]any{
			{"id": "order", "type": "Transform", "position": map[string]int{"x": 0, "y": 0},
				"data": map[string]any{"expression": `{"amount": run.input.amount}`, "setVariables": map[string]any{"total": "output.amount * 2"}}},
			{"id": "done", "type": "Transform", "position": map[string]int{"x": 250, "y": 0}, "data": map[string]any{"expression": `vars.total`}},
		},
		"edges": []map[string]any{{"id": "e1", "source": "order", "target": "done"}}}}, &flow)
	var run struct {
		ID string `json:"id"`
	}
	s.api("POST", "/flows/"+flow.ID+"/runs", map[string]any{"input": map[string]any{"amount": 21}}, &run)
	s.run("open", chromedp.Navigate(s.url+"/runs/"+run.ID), tokenSignIn(token))
	s.waitJS("completed", `!!document.querySelector('.snode[data-node-id="done"][data-status="completed"]')`)
	s.waitJS("variables", `!!document.querySelector('[data-variable="total"]')`)
	s.run("open the list", chromedp.Click(`[data-run-variables] summary`, chromedp.ByQuery))
	require.Equal(t, "42", s.text(`[data-variable="total"] dd`))
}

// TestUICodeStep: a Code step added from the palette is written in the
// code editor (its schema's contentMediaType is JavaScript), typed as a
// person types, tried with the Test tab, saved and run; the run completes
// with what the script returned.
func TestUICodeStep(t *testing.T) {
	s := newStack(t)
	s.run("new flow", chromedp.Navigate(s.url+"/flows/new"), tokenSignIn(token))
	s.waitJS("Code in the palette", `!!document.querySelector('[data-palette="Code"]')`)
	s.run("add Code", chromedp.Click(`[data-palette="Code"]`, chromedp.ByQuery),
		chromedp.WaitVisible(`form[aria-label="Code code1 settings"]`, chromedp.ByQuery))
	script := "const n = input.items.length; return {count: n, doubled: input.items.map((x) => x * 2)};"
	s.run("write the script", typeInEditor("node-code-source", script))
	s.waitJS("typed", fmt.Sprintf(`document.querySelector("#node-code-source").value === %q`, script))
	s.run("name and save", setValue("#flow-name", "Counting"), chromedp.Click(`//button[text()="Save"]`, chromedp.BySearch))
	s.waitJS("saved", `document.body.innerText.includes("saved as version 1")`)
	s.waitJS("the node again", `!!document.querySelector('.react-flow__node[data-id="code1"]')`)
	// The saved flow is drawn again: a click before the canvas settles
	// can miss the node (seen once in the full suite).
	s.settleInCanvas(`.react-flow__node[data-id="code1"]`)
	s.run("select it", chromedp.Click(`.react-flow__node[data-id="code1"]`, chromedp.ByQuery),
		chromedp.WaitVisible(`form[aria-label="Code code1 settings"]`, chromedp.ByQuery))
	s.run("test tab", chromedp.Click(`[data-tab="test"]`, chromedp.ByQuery), chromedp.WaitVisible(`#node-test-code1`, chromedp.ByQuery),
		setValue(`#node-test-code1`, `{"input": {"items": [1, 2]}}`), chromedp.Click(`[data-test-step]`, chromedp.ByQuery))
	s.waitJS("tried", `(document.querySelector('[data-test-output]')?.innerText || "").includes('"count": 2')`)
	s.run("start run", chromedp.Click(`//button[text()="Start run"]`, chromedp.BySearch), chromedp.WaitVisible("#run-input", chromedp.ByQuery),
		setValue("#run-input", `{"items": [3, 4, 5]}`), chromedp.Click(`.modal button[type="submit"]`, chromedp.ByQuery))
	s.waitJS("run view", `location.pathname.startsWith("/runs/")`)
	s.waitJS("completed", `!!document.querySelector('.snode[data-node-id="code1"][data-status="completed"]')`)
	var loc string
	s.run("run url", chromedp.Location(&loc))
	var run struct {
		Output map[string]any `json:"output"`
	}
	s.api("GET", "/runs/"+loc[strings.LastIndex(loc, "/")+1:], nil, &run)
	require.Equal(t, map[string]any{"count": 3.0, "doubled": []any{6.0, 8.0, 10.0}}, run.Output)
}
