package browser_test

import (
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"
)

// TestUIFanOutAndCredentialSettingsShow: the settings a process owner
// gives a fan-out and an HTTP call are in their panels, not only in the
// JSON tab. A Splitter shows its maxConcurrency ("At most at once") beside
// its array path, a Collector its toleratedFailures (a count or a percent,
// a wrong one said at once in words), and an HTTP step its credential
// (the workspace's credentials offered; a name there is none of said).
// Before, the three were in no panel: a flow's maxConcurrency: 2 or
// toleratedFailures: "10%" could not be seen or changed but as JSON.
// Changed in the panels and saved, the flow keeps the new values.
func TestUIFanOutAndCredentialSettingsShow(t *testing.T) {
	s := newStack(t, withSecretKey(t))
	s.api("POST", "/credentials", map[string]any{"name": "crm", "type": "bearer", "data": map[string]any{"token": "x"},
		"allowed_hosts": []string{"api.example.com"}}, nil)
	n := func(id, typ string, x int, data map[string]any) map[string]any {
		return map[string]any{"id": id, "type": typ, "position": map[string]any{"x": x, "y": 0}, "data": data}
	}
	id := s.editorFlow("Fan-out", []map[string]any{
		n("split", "Splitter", 0, map[string]any{"arrayPath": "items", "maxConcurrency": 2}),
		n("work", "Transform", 250, map[string]any{"expression": "input"}),
		n("collect", "Collector", 500, map[string]any{"toleratedFailures": "10%"}),
		n("call", "HTTP", 750, map[string]any{"url": "https://api.example.com/x", "method": "POST", "credential": "crm"}),
	}, []map[string]any{
		{"id": "e1", "source": "split", "target": "work"},
		{"id": "e2", "source": "work", "target": "collect"},
		{"id": "e3", "source": "collect", "target": "call"},
	}, nil)
	s.run("open", chromedp.EmulateViewport(1440, 1000), chromedp.Navigate(s.url+"/flows/"+id), tokenSignIn(token))
	s.waitJS("editor", `!!document.querySelector('.react-flow__node[data-id="call"]')`)
	pick := func(nid, typ string) {
		s.settle(canvasNode(nid))
		s.run("select "+nid, chromedp.Click(canvasNode(nid), chromedp.ByQuery),
			chromedp.WaitVisible(`form[aria-label="`+typ+` `+nid+` settings"]`, chromedp.ByQuery))
	}

	pick("split", "Splitter")
	require.Equal(t, "items", s.value("#node-array"))
	require.Equal(t, "2", s.value("#node-max-concurrency"), "the Splitter's maxConcurrency shows")
	s.run("at most 4", setValue("#node-max-concurrency", "4"))

	pick("collect", "Collector")
	require.Equal(t, "10%", s.value("#node-tolerated"), "the Collector's toleratedFailures shows")
	s.run("150%", setValue("#node-tolerated", "150%"))
	s.waitJS("said at once", `document.querySelector('#node-tolerated')?.closest('.field')?.querySelector('.field-error')?.textContent.includes("0% to 100%")`)
	s.shot("qa36c-collector-tolerance")
	s.run("3 items", setValue("#node-tolerated", "3"))
	s.waitJS("fine", `!document.querySelector('#node-tolerated').closest('.field').querySelector('.field-error')`)

	pick("call", "HTTP")
	require.Equal(t, "crm", s.value("#node-credential"), "the HTTP step's credential shows")
	s.waitJS("credentials offered", `!!document.querySelector('#node-credential-names option[value="crm"]')`)
	s.run("unknown credential", setValue("#node-credential", "crm2"))
	s.waitJS("none of that name", `document.querySelector('#node-credential').closest('.field').querySelector('.field-error')?.textContent.includes("no credential named crm2")`)
	s.shot("qa36c-http-credential")
	s.run("back to crm", setValue("#node-credential", "crm"))

	s.run("save", chromedp.Click(`//button[text()="Save"]`, chromedp.BySearch))
	s.waitJS("saved", `document.body.innerText.includes("Saved as version 2")`)
	_, g := s.savedGraph(id)
	require.InDelta(t, 4, g["split"]["maxConcurrency"], 0)
	require.InDelta(t, 3, g["collect"]["toleratedFailures"], 0)
	require.Equal(t, "crm", g["call"]["credential"])
}
