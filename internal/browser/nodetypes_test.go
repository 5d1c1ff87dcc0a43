package browser_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/stitchd/stitchd/engine"
	"github.com/stitchd/stitchd/internal/app"
	"github.com/stitchd/stitchd/internal/testtypes"
)

// TestUIAddedNodeType: the test-only Shout type, registered in
// app.Config.NodeTypes and defined in one file, is in the palette with its
// colour, lands on the canvas with its look and its default data, is set up
// through the form its config schema describes, saves, and runs to the end
// in the run view — with no line of the editor written for it.
func TestUIAddedNodeType(t *testing.T) {
	s := newStack(t, func(c *app.Config) { c.NodeTypes = []engine.NodeTypeSpec{testtypes.Shout()} })
	node := func(id string) string { return fmt.Sprintf(`.react-flow__node[data-id="%s"]`, id) }

	s.run("new flow", chromedp.Navigate(s.url+"/flows/new"), tokenSignIn(token))
	s.waitJS("Shout in the palette", `!!document.querySelector('[data-palette="Shout"]')`)
	require.Contains(t, s.text(`[data-palette="Shout"]`), "Says a field of its input in capitals")
	var colour string
	s.run("palette colour", chromedp.Evaluate(`getComputedStyle(document.querySelector('[data-palette="Shout"]')).getPropertyValue("--c").trim()`, &colour))
	require.Equal(t, "#b91c1c", colour)

	s.run("add Shout", chromedp.Click(`[data-palette="Shout"]`, chromedp.ByQuery),
		chromedp.WaitVisible(`form[aria-label="Shout shout1 settings"]`, chromedp.ByQuery))
	s.waitJS("the node shown", fmt.Sprintf(`(document.querySelector(%q)?.innerText || "") !== ""`, node("shout1")))
	var look struct{ Colour, Mark string }
	s.run("node look", chromedp.Evaluate(fmt.Sprintf(`({Colour: getComputedStyle(document.querySelector(%q)).getPropertyValue("--c").trim(),
		Mark: document.querySelector(%q)?.innerText ?? ""})`, node("shout1")+" .snode", node("shout1")+" .snode-mark"), &look))
	require.Equal(t, "#b91c1c", look.Colour)
	require.Equal(t, "!", strings.TrimSpace(look.Mark))

	// The settings form is the type's schema, filled with its default data.
	form := `[data-type-config="Shout"]`
	s.waitJS("schema form", fmt.Sprintf(`!!document.querySelector(%q)`, form+` input[id$="_field"]`))
	var field string
	s.run("default", chromedp.Value(form+` input[id$="_field"]`, &field, chromedp.ByQuery))
	require.Equal(t, "name", field)
	require.False(t, s.exists(form+` input[id$="_label"]`), "the label has its own field above")
	s.run("set up", setValue(form+` input[id$="_suffix"]`, "?!"), setValue("#flow-name", "Shouting"),
		chromedp.Click(`//button[text()="Save"]`, chromedp.BySearch))
	s.waitJS("saved", `document.body.innerText.includes("saved as version 1")`)
	var href string
	s.run("url", chromedp.Location(&href))
	flowID := href[strings.LastIndex(href, "/")+1:]
	var flow struct {
		Graph struct {
			Nodes []struct {
				ID, Type string
				Data     map[string]any
			}
		}
	}
	s.api("GET", "/flows/"+flowID, nil, &flow)
	require.Len(t, flow.Graph.Nodes, 1)
	require.Equal(t, "Shout", flow.Graph.Nodes[0].Type)
	require.Equal(t, map[string]any{"field": "name", "suffix": "?!"}, flow.Graph.Nodes[0].Data)

	// A run, from the editor to the run view: the step completes with its
	// output.
	s.run("start run", chromedp.Click(`//button[text()="Start run"]`, chromedp.BySearch), chromedp.WaitVisible("#run-input", chromedp.ByQuery),
		setValue("#run-input", `{"name": "ada"}`), chromedp.Click(`.modal button[type="submit"]`, chromedp.ByQuery))
	s.waitJS("run view", `location.pathname.startsWith("/runs/")`)
	s.waitJS("completed", `!!document.querySelector('.snode[data-node-id="shout1"][data-status="completed"]')`)
	s.shot("nt01-added-type-run")
	var loc string
	s.run("run url", chromedp.Location(&loc))
	var run struct {
		Status string
		Output map[string]any
	}
	s.api("GET", "/runs/"+loc[strings.LastIndex(loc, "/")+1:], nil, &run)
	require.Equal(t, "completed", run.Status)
	require.Equal(t, map[string]any{"shout": "ADA?!"}, run.Output)
}

// TestUILogType: a built-in type registered by its spec alone (Log: a
// handler file and one line in handlers.Types) is in the palette with its
// look, set up by the form its schema describes, saved, run, and its
// node.log shown in the run view.
func TestUILogType(t *testing.T) {
	s := newStack(t)
	node := `.react-flow__node[data-id="log1"]`
	s.run("new flow", chromedp.Navigate(s.url+"/flows/new"), tokenSignIn(token))
	s.waitJS("Log in the palette", `!!document.querySelector('[data-palette="Log"]')`)
	require.Contains(t, s.text(`[data-palette="Log"]`), "Writes a message and its input to the run's events")
	s.run("add Log", chromedp.Click(`[data-palette="Log"]`, chromedp.ByQuery),
		chromedp.WaitVisible(`form[aria-label="Log log1 settings"]`, chromedp.ByQuery))
	var look struct{ Colour, Mark, Palette string }
	s.waitJS("the node shown", fmt.Sprintf(`(document.querySelector(%q)?.innerText || "") !== ""`, node))
	s.run("look", chromedp.Evaluate(fmt.Sprintf(`({Colour: getComputedStyle(document.querySelector(%q)).getPropertyValue("--c").trim(),
		Mark: document.querySelector(%q)?.innerText ?? "",
		Palette: getComputedStyle(document.querySelector('[data-palette="Log"]')).getPropertyValue("--c").trim()})`,
		node+" .snode", node+" .snode-mark"), &look))
	require.Equal(t, "#475569", look.Colour, "the spec's colour")
	require.Equal(t, "#475569", look.Palette)
	require.Equal(t, "✎", strings.TrimSpace(look.Mark))

	form := `[data-type-config="Log"]`
	s.waitJS("schema form", fmt.Sprintf(`!!document.querySelector(%q)`, form+` input[id$="_message"]`))
	require.False(t, s.exists(form+` [id*="entityMovement"]`), "entity movement is not part of the schema form")
	s.run("set up", setValue(form+` input[id$="_message"]`, "reached the end"), setValue("#flow-name", "Logging"),
		chromedp.Click(`//button[text()="Save"]`, chromedp.BySearch))
	s.waitJS("saved", `document.body.innerText.includes("saved as version 1")`)

	s.run("start run", chromedp.Click(`//button[text()="Start run"]`, chromedp.BySearch), chromedp.WaitVisible("#run-input", chromedp.ByQuery),
		setValue("#run-input", `{"lead": "ada"}`), chromedp.Click(`.modal button[type="submit"]`, chromedp.ByQuery))
	s.waitJS("run view", `location.pathname.startsWith("/runs/")`)
	s.waitJS("completed", `!!document.querySelector('.snode[data-node-id="log1"][data-status="completed"]')`)
	s.settleInCanvas(canvasNode("log1"))
	s.run("open the step", chromedp.Click(canvasNode("log1"), chromedp.ByQuery))
	s.waitJS("the log shown", `document.body.innerText.includes("reached the end") && document.body.innerText.includes('{"lead":"ada"}')`)
	s.shot("nt02-log-run")
}
