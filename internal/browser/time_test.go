package browser_test

import (
	"fmt"
	"regexp"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"
)

// TestUITransformWait walks the Transform and Wait steps and the UX
// timeout in the web UI: a Wait step is added from the palette and set to
// wait 4s (after trying "until a time" with a timezone), the flow is
// rewired through it, a Transform expression that does not compile is
// refused with the server's message on the node and the field, fixed and
// saved as version 2 with a timeout on the approval step. A run shows the
// Wait step sleeping with a countdown on the node and in its panel, then
// completed; the approvals inbox shows the approval's deadline.
func TestUITransformWait(t *testing.T) {
	s := newStack(t)
	var flow struct{ ID string }
	s.api("POST", "/flows", map[string]any{"name": "Time", "graph": map[string]any{
		"nodes": []map[string]any{
			{"id": "prep", "type": "Transform", "position": map[string]any{"x": 0, "y": 0},
				"data": map[string]any{"label": "Shape the lead", "expression": `{"name": upper(input.first)}`}},
			{"id": "review", "type": "UX", "position": map[string]any{"x": 640, "y": 0},
				"data": map[string]any{"label": "Call the lead", "prompt": "Call them?"}},
		},
		"edges": []map[string]any{{"id": "e1", "source": "prep", "target": "review"}},
	}}, &flow)

	node := func(id string) string { return fmt.Sprintf(`.react-flow__node[data-id="%s"]`, id) }
	s.run("open", chromedp.Navigate(s.url+"/flows/"+flow.ID), tokenSignIn(token))
	s.waitJS("editor", fmt.Sprintf(`!!document.querySelector(%q)`, node("review")))
	// React Flow shows a node once it has measured it: its text is empty
	// (hidden) until then.
	s.waitJS("the Transform node shown", fmt.Sprintf(`(document.querySelector(%q)?.innerText || "") !== ""`, node("prep")))
	require.True(t, s.exists(node("prep")+" .snode-transform"), "the Transform node has its own look")
	require.Contains(t, s.text(node("prep")), `{"name": upper(input.first)}`, "a Transform shows its expression")

	// A Wait step from the palette: it lands between the two, selected.
	require.True(t, s.exists(`[data-palette="Transform"]`))
	s.settle(node("review"))
	s.run("add Wait", chromedp.Click(`[data-palette="Wait"]`, chromedp.ByQuery),
		chromedp.WaitVisible(`form[aria-label="Wait wait1 settings"]`, chromedp.ByQuery))
	require.True(t, s.exists(node("wait1")+" .snode-wait"), "the Wait node has its own look")
	var looks struct{ Wait, Transform, Worker string }
	s.run("looks", chromedp.Evaluate(fmt.Sprintf(`({Wait: getComputedStyle(document.querySelector(%q)).borderTopStyle,
		Transform: getComputedStyle(document.querySelector(%q)).borderLeftWidth, Worker: ""})`, node("wait1")+" .snode", node("prep")+" .snode"), &looks))
	require.Equal(t, "dotted", looks.Wait)
	require.Equal(t, "4px", looks.Transform)

	// Until a time: an expression, a timezone checked as it is typed.
	s.run("until", chromedp.Click(`input[name="wait-mode"][value="until"]`, chromedp.ByQuery), chromedp.WaitVisible("#node-until", chromedp.ByQuery),
		setValue("#node-until", "input.due_at"), setValue("#node-timezone", "Mars/Olympus"))
	s.waitJS("zone refused", `document.querySelector('.wait-fields [data-check="local"]')?.innerText.includes("not an IANA time zone")`)
	require.Contains(t, s.text(".wait-fields [data-wait-preview]"), "An expression")
	s.run("zone", setValue("#node-timezone", "Europe/Paris"))
	s.waitJS("zone accepted", `!document.querySelector('.wait-fields [data-check="local"]')`)
	var zones int
	s.run("zones", chromedp.Evaluate(`document.querySelectorAll("#node-timezones option").length`, &zones))
	require.Greater(t, zones, 10, "a list of time zones to choose from")
	s.shot("t01-wait-until")
	// For a duration: until and its timezone are dropped.
	s.run("duration", chromedp.Click(`input[name="wait-mode"][value="duration"]`, chromedp.ByQuery), chromedp.WaitVisible("#node-duration", chromedp.ByQuery),
		setValue("#node-duration", "2 days"))
	s.waitJS("not a duration", `document.querySelector('.wait-fields [data-check="local"]')?.innerText.includes("Not a duration")`)
	s.run("4s", setValue("#node-duration", "4s"))
	s.waitJS("preview", `document.querySelector(".wait-fields [data-wait-preview]")?.innerText === "Waits 4s after the step starts."`)
	s.waitJS("summary on node", fmt.Sprintf(`document.querySelector(%q)?.innerText === "for 4s"`, node("wait1")+" .snode-summary"))

	// Rewire prep → wait1 → review.
	s.run("wait1 → review", setValue("#node-connect", "review"), chromedp.Click(`//button[text()="Add edge"]`, chromedp.BySearch))
	s.waitJS("edge added", `document.querySelectorAll(".react-flow__edge").length === 2`)
	s.settle(node("prep"))
	s.run("open prep", chromedp.Click(node("prep"), chromedp.ByQuery), chromedp.WaitVisible("#node-expression", chromedp.ByQuery),
		chromedp.Click(`button[aria-label="Edit edge e1 to review"]`, chromedp.ByQuery),
		chromedp.WaitVisible(`form[aria-label="Edge e1 settings"]`, chromedp.ByQuery),
		chromedp.Click(`//button[text()="Delete edge"]`, chromedp.BySearch))
	s.waitJS("edge deleted", `document.querySelectorAll(".react-flow__edge").length === 1`)
	s.run("prep → wait1", chromedp.Click(node("prep"), chromedp.ByQuery), chromedp.WaitVisible("#node-connect", chromedp.ByQuery),
		setValue("#node-connect", "wait1"), chromedp.Click(`//button[text()="Add edge"]`, chromedp.BySearch))
	s.waitJS("rewired", `document.querySelectorAll(".react-flow__edge").length === 2`)

	// An expression that does not compile: refused, the server's message
	// on the node and under the field.
	s.run("bad expression", setValue("#node-expression", `{"name": shout(input.first), "hot": input.employees > 100}`),
		chromedp.Click(`//button[text()="Save"]`, chromedp.BySearch))
	s.waitJS("painted", fmt.Sprintf(`!!document.querySelector(%q)`, node("prep")+" .snode.has-error"))
	s.waitJS("field message", `!!document.querySelector('.settings [data-check="server"]')`)
	require.Contains(t, s.text(".problems"), "nodes[0].data.expression")
	require.Contains(t, s.text(".editor-msgs"), "not saved")
	onNode := s.text(node("prep") + " .snode-problem")
	onField := s.text(`.settings [data-check="server"]`)
	require.Contains(t, onNode, "shout", "the server's message names what does not compile")
	require.Contains(t, onField, "shout")
	var invalid string
	s.run("aria-invalid", chromedp.Evaluate(`document.querySelector("#node-expression").getAttribute("aria-invalid")`, &invalid))
	require.Equal(t, "true", invalid)
	s.shot("t02-transform-error")
	var v1 struct{ Version struct{ Number int } }
	s.api("GET", "/flows/"+flow.ID, nil, &v1)
	require.Equal(t, 1, v1.Version.Number, "a flow whose expression does not compile is not saved")

	// Fixed: the message turns stale and leaves the canvas.
	s.run("fix", setValue("#node-expression", `{"name": upper(input.first), "hot": input.employees > 100}`))
	s.waitJS("stale", `document.querySelector('.settings [data-check="server"]')?.innerText.includes("At the last save")`)
	s.waitJS("unpainted", `!document.querySelector(".snode.has-error")`)

	// The approval step times out after 2 hours with "reject".
	s.settle(node("review"))
	s.run("open review", chromedp.Click(node("review"), chromedp.ByQuery), chromedp.WaitVisible("#node-timeout", chromedp.ByQuery))
	require.False(t, s.exists("#node-ontimeout"), "no onTimeout without a timeout")
	s.run("timeout", setValue("#node-timeout", "7200"), chromedp.WaitVisible("#node-ontimeout", chromedp.ByQuery))
	var choices []string
	s.run("choices", chromedp.Evaluate(`[...document.querySelectorAll("#node-ontimeout option")].map(o => o.value)`, &choices))
	require.Equal(t, []string{"fail", "approve", "reject"}, choices)
	s.run("on timeout", setValue("#node-ontimeout", "reject"))
	s.waitJS("timeout on node", fmt.Sprintf(`document.querySelector(%q)?.innerText === "times out after 2h → reject"`, node("review")+" .snode-summary"))
	s.shot("t03-ux-timeout")
	s.run("save", chromedp.Click(`//button[text()="Save"]`, chromedp.BySearch))
	s.waitJS("saved", `document.body.innerText.includes("Saved as version 2")`)
	s.waitJS("no problems", `!document.querySelector(".problems") && !document.querySelector(".snode.has-error")`)

	var saved struct {
		Version struct{ Number int }
		Graph   struct {
			Nodes []struct {
				ID, Type string
				Data     map[string]any
			}
			Edges []struct{ Source, Target string }
		}
	}
	s.api("GET", "/flows/"+flow.ID, nil, &saved)
	require.Equal(t, 2, saved.Version.Number)
	data := map[string]map[string]any{}
	for _, n := range saved.Graph.Nodes {
		data[n.ID] = n.Data
		if n.ID == "wait1" {
			require.Equal(t, "Wait", n.Type)
		}
	}
	require.Equal(t, `{"name": upper(input.first), "hot": input.employees > 100}`, data["prep"]["expression"])
	require.Equal(t, map[string]any{"duration": "4s"}, data["wait1"], "until and timezone were dropped with the duration chosen")
	require.EqualValues(t, 7200, data["review"]["timeoutSeconds"])
	require.Equal(t, "reject", data["review"]["onTimeout"])
	var edges []string
	for _, e := range saved.Graph.Edges {
		edges = append(edges, e.Source+"→"+e.Target)
	}
	require.ElementsMatch(t, []string{"prep→wait1", "wait1→review"}, edges)

	// A run: the Wait step sleeps with a countdown, then completes. A
	// recorder notes what the page shows every 50 ms (4 seconds pass
	// quickly) and opens the step's panel as soon as it is drawn.
	s.run("start run", chromedp.Click(`//button[text()="Start run"]`, chromedp.BySearch), chromedp.WaitVisible("#run-input", chromedp.ByQuery),
		setValue("#run-input", `{"first": "ada", "employees": 150}`), chromedp.Click(`.modal button[type="submit"]`, chromedp.ByQuery))
	s.waitJS("run view", `location.pathname.startsWith("/runs/")`)
	s.run("recorder", chromedp.Evaluate(`window.__seen = []; window.__rec = setInterval(() => {
		// A node is hidden until React Flow has measured it: not shown yet.
		const n = document.querySelector('.react-flow__node[data-id="wait1"]'); if (!n || getComputedStyle(n).visibility === "hidden") return;
		if (!window.__opened) { n.click(); window.__opened = true; }
		const el = n.querySelector(".snode"), badge = n.querySelector(".snode-status");
		window.__seen.push({Status: el?.dataset.status ?? "", Badge: badge?.innerText ?? "",
			BadgeColor: badge ? getComputedStyle(badge).color : "", Background: el ? getComputedStyle(el).backgroundColor : "",
			Mark: n.querySelector(".snode-mark")?.innerText ?? "",
			Panel: document.querySelector(".node-detail [data-wake]")?.innerText ?? ""});
	}, 50); true`, nil))
	s.waitJS("sleeping seen", `window.__seen.some(o => o.Status === "sleeping" && o.Panel) || window.__seen.some(o => o.Status === "completed")`)
	s.shot("t04-run-sleeping")
	s.waitJS("wait1 completed", `!!document.querySelector('.snode[data-node-id="wait1"][data-status="completed"]')`)
	s.waitJS("review waiting", `!!document.querySelector('.snode[data-node-id="review"][data-status="waiting_for_user"]')`)
	type seen struct{ Status, Badge, BadgeColor, Background, Mark, Panel string }
	var obs []seen
	s.run("observations", chromedp.Evaluate(`clearInterval(window.__rec); window.__seen`, &obs))
	var sleeping []seen
	for _, o := range obs {
		if o.Status == "sleeping" {
			sleeping = append(sleeping, o)
		}
	}
	require.NotEmpty(t, sleeping, "the run view showed the Wait step sleeping")
	countdown := regexp.MustCompile(`^sleeping · wakes in [1-4]s$`)
	var badges []string // the badge's text may lag the status by a render
	for _, o := range sleeping {
		if o.Badge != "" {
			badges = append(badges, o.Badge)
		}
	}
	require.NotEmpty(t, badges, "the sleeping node's badge")
	require.Regexp(t, countdown, badges[0], "a countdown on the node")
	require.Equal(t, "rgb(74, 95, 143)", sleeping[0].BadgeColor, "sleeping is muted blue")
	require.Equal(t, "rgb(241, 244, 250)", sleeping[0].Background)
	require.Equal(t, "☾", sleeping[0].Mark)
	var panel []string
	for _, o := range sleeping {
		if o.Panel != "" {
			panel = append(panel, o.Panel)
		}
	}
	require.NotEmpty(t, panel, "the node panel showed when it wakes")
	require.Regexp(t, `^wakes in [1-4]s\n`, panel[0])
	s.waitJS("panel completed", `document.querySelector(".node-detail .status")?.innerText === "completed" && !document.querySelector(".node-detail [data-wake]")`)

	var got struct {
		Nodes map[string]struct {
			Status     string
			Output     map[string]any
			Input      map[string]any
			Deadline   *time.Time
			StartedAt  *time.Time `json:"started_at"`
			FinishedAt *time.Time `json:"finished_at"`
		}
	}
	s.api("GET", s.runPath(), nil, &got)
	require.Equal(t, map[string]any{"name": "ADA", "hot": true}, got.Nodes["prep"].Output)
	w := got.Nodes["wait1"]
	require.Equal(t, "completed", w.Status)
	require.GreaterOrEqual(t, w.FinishedAt.Sub(*w.StartedAt), 3900*time.Millisecond, "the Wait step slept its 4 seconds")
	require.Equal(t, "ADA", got.Nodes["review"].Input["name"])
	require.NotNil(t, got.Nodes["review"].Deadline)

	// The review's panel and the approvals inbox count down to its deadline.
	deadline := regexp.MustCompile(`^times out in (2h|1h 59m)$`)
	s.settle(node("review"))
	s.run("open review", chromedp.Click(node("review"), chromedp.ByQuery), chromedp.WaitVisible(".node-detail [data-deadline]", chromedp.ByQuery))
	require.Regexp(t, deadline, s.text(".node-detail [data-deadline] [data-countdown]"))
	s.run("approvals", chromedp.Navigate(s.url+"/approvals"))
	card := `li.approval .approval-head .deadline`
	s.waitJS("deadline", fmt.Sprintf(`!!document.querySelector(%q)`, card))
	require.Regexp(t, deadline, s.text(card))
	var title string
	s.run("title", chromedp.Evaluate(fmt.Sprintf(`document.querySelector(%q).title`, card), &title))
	require.NotEmpty(t, title, "the deadline's time in full on hover")
	s.shot("t05-approvals-deadline")
}

// runPath is the API path of the run the page shows.
func (s *stack) runPath() string {
	s.t.Helper()
	var p string
	s.run("location", chromedp.Evaluate(`location.pathname`, &p))
	require.Regexp(s.t, `^/runs/[0-9a-f-]{36}$`, p)
	return p
}
