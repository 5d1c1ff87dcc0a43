package browser_test

import (
	"fmt"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"
)

// TestUIPinnedSample: a sample pinned in the Test tab is saved with the
// flow's layout; after a reload the Test tab and the data panel use it
// rather than the last run; Unpin goes back to the run. Real runs never
// see it (TestPinnedSampleStaysInTheLayout, TestPinnedSampleIsNotConfig).
func TestUIPinnedSample(t *testing.T) {
	s := newStack(t)
	flowID := dataPanelFlow(t, s) // its last run: request.output.amount 1500
	node := func(id string) string { return fmt.Sprintf(`.react-flow__node[data-id="%s"]`, id) }
	open := func(signIn chromedp.Action) {
		s.run("open", chromedp.Navigate(s.url+"/flows/"+flowID), signIn)
		s.waitJS("canvas", fmt.Sprintf(`!!document.querySelector(%q)`, node("check")))
		s.settle(node("check"))
		s.run("select check", chromedp.Click(node("check"), chromedp.ByQuery),
			chromedp.WaitVisible(`form[aria-label="Transform check settings"]`, chromedp.ByQuery))
	}
	open(tokenSignIn(token))
	s.waitJS("data from the run", `document.querySelector('[data-data-panel] [data-path="steps.request.output.amount"] ~ .dp-value')?.innerText === "1500"`)

	// Pin a sample of our own in the Test tab.
	s.run("test tab", chromedp.Click(`[data-tab="test"]`, chromedp.ByQuery), chromedp.WaitVisible(`#node-test-check`, chromedp.ByQuery))
	require.Equal(t, "none", s.attr(`[data-pin-state]`, "data-pin-state"))
	s.run("sample and pin", setValue(`#node-test-check`, `{"input": {"amount": 3000}, "steps": {"request": {"output": {"amount": 3000}}}, "vars": {"limit": 1000}}`),
		chromedp.Click(`[data-test-tab] [data-pin]`, chromedp.ByQuery))
	s.waitJS("pinned", `document.querySelector('[data-pin-state]')?.dataset.pinState === "pinned"`)
	s.waitJS("unsaved", `document.body.innerText.includes("Unsaved changes.")`)
	s.run("save", chromedp.Click(`//button[text()="Save"]`, chromedp.BySearch))
	s.waitJS("saved", `document.body.innerText.includes("Saved as version 2")`)

	type pinned = struct {
		Steps struct {
			Request struct {
				Output struct {
					Amount float64 `json:"amount"`
				} `json:"output"`
			} `json:"request"`
		} `json:"steps"`
	}
	pinOf := func() *pinned {
		var flow struct {
			Graph struct {
				Nodes []struct {
					ID     string         `json:"id"`
					Pinned *pinned        `json:"pinned"`
					Data   map[string]any `json:"data"`
				} `json:"nodes"`
			} `json:"graph"`
		}
		s.api("GET", "/flows/"+flowID, nil, &flow)
		for _, n := range flow.Graph.Nodes {
			if n.ID == "check" {
				require.NotContains(t, n.Data, "_pinned", "the pin is not the step's config")
				require.NotContains(t, n.Data, "pinned")
				return n.Pinned
			}
		}
		t.Fatal("no node check")
		return nil
	}
	pin := pinOf()
	require.NotNil(t, pin, "the pin is saved with the flow")
	require.InDelta(t, 3000.0, pin.Steps.Request.Output.Amount, 0)

	// Reloaded: the data panel and the Test tab use the pin, not the run.
	open(chromedp.Tasks{}) // signed in already
	s.waitJS("data from the pin", `document.querySelector('[data-data-panel] [data-path="steps.request.output.amount"] ~ .dp-value')?.innerText === "3000"`)
	require.Contains(t, s.text(`[data-data-panel] .hint`), "from the pinned sample")
	s.run("test tab again", chromedp.Click(`[data-tab="test"]`, chromedp.ByQuery), chromedp.WaitVisible(`#node-test-check`, chromedp.ByQuery))
	require.Equal(t, "pinned", s.attr(`[data-pin-state]`, "data-pin-state"))
	s.run("test step", chromedp.Click(`[data-test-step]`, chromedp.ByQuery))
	s.waitJS("answer", `!!document.querySelector('[data-test-result="completed"]')`)
	require.Contains(t, s.text(`[data-test-output]`), `"over": 2000`, "3000 - 1000: the pinned sample, not the run's 1500")
	require.Equal(t, "true", s.attr(`[data-edge-target="approve"]`, "data-taken"))
	s.shot("pin01-pinned")

	// Unpin: the run again, and the saved flow has no pin.
	s.run("unpin", chromedp.Click(`[data-test-tab] [data-unpin]`, chromedp.ByQuery))
	s.waitJS("unpinned", `document.querySelector('[data-pin-state]')?.dataset.pinState === "none"`)
	s.waitJS("the draft cleared", `document.querySelector("#node-test-check").value === ""`)
	s.run("settings tab", chromedp.Click(`[data-tab="settings"]`, chromedp.ByQuery))
	s.waitJS("data from the run again", `document.querySelector('[data-data-panel] [data-path="steps.request.output.amount"] ~ .dp-value')?.innerText === "1500"`)
	// …and the data panel pins what it shows.
	s.run("pin from the panel", chromedp.Click(`[data-data-panel] [data-pin]`, chromedp.ByQuery))
	s.waitJS("panel pinned", `document.querySelector('[data-data-panel] .hint')?.innerText.includes("from the pinned sample")`)
	s.run("unpin from the panel", chromedp.Click(`[data-data-panel] [data-unpin]`, chromedp.ByQuery))
	s.waitJS("panel unpinned", `document.querySelector('[data-data-panel] .hint')?.innerText.includes("from the flow's last run")`)
	s.run("save", chromedp.Click(`//button[text()="Save"]`, chromedp.BySearch))
	s.waitJS("saved again", `document.body.innerText.includes("Saved as version 3")`)
	require.Nil(t, pinOf(), "unpinned and saved: no pin")
}
