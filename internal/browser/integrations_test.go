package browser_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"
)

// TestUIHTTPEventTriggers walks the HTTP and Event steps and the Triggers
// page. An HTTP step and an Event step are dragged from the palette and
// set up in their forms (method, url, a header, a JSON body checked as it
// is typed, success codes; the event's name and key); a url template that
// does not compile is refused with the server's message on the node and
// under the field, then fixed and saved. A run calls a loopback API, whose
// 201 shows on the node; the Event step waits, shown waiting for its event
// and key, until the event is posted from its panel, and the run completes
// with the event's payload. On the Triggers page a schedule with a bad
// cron is refused with the message under the cron field, fixed, shown with
// a countdown to its next run, disabled and deleted.
func TestUIHTTPEventTriggers(t *testing.T) {
	s := newStack(t)

	// The REST API the HTTP step calls: it answers 201 with the order id.
	type call struct {
		Method, Path, Test string
		Body               map[string]any
	}
	calls := make(chan call, 4)
	ext := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		c := call{Method: r.Method, Path: r.URL.Path, Test: r.Header.Get("X-Test")}
		_ = json.Unmarshal(b, &c.Body)
		calls <- c
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		_, _ = w.Write([]byte(`{"order_id": 42, "state": "created"}`))
	}))
	t.Cleanup(ext.Close)

	var flow struct{ ID string }
	s.api("POST", "/flows", map[string]any{"name": "Orders", "graph": map[string]any{
		"nodes": []map[string]any{{"id": "prep", "type": "Transform", "position": map[string]any{"x": 0, "y": 0},
			"data": map[string]any{"label": "Order", "expression": `{"id": input.id}`}}},
		"edges": []map[string]any{},
	}}, &flow)

	node := func(id string) string { return fmt.Sprintf(`.react-flow__node[data-id="%s"]`, id) }
	s.run("open", chromedp.Navigate(s.url+"/flows/"+flow.ID), tokenSignIn(token))
	s.waitJS("editor", fmt.Sprintf(`!!document.querySelector(%q)`, node("prep")))
	s.settle(node("prep"))
	px, py := s.center(node("prep"))

	// An HTTP step, dragged from the palette below and left of prep.
	hx, hy := s.paletteItem("HTTP")
	s.drag(hx, hy, px-200, py+120)
	s.run("HTTP settings", chromedp.WaitVisible(`form[aria-label="HTTP http1 settings"]`, chromedp.ByQuery))
	require.True(t, s.exists(node("http1")+" .snode-http"), "the HTTP node has its own look")
	require.Equal(t, "⇄", s.text(node("http1")+" .snode-mark"))
	var methods []string
	s.run("methods", chromedp.Evaluate(`[...document.querySelectorAll("#node-method option")].map(o => o.value)`, &methods))
	require.Equal(t, []string{"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"}, methods)
	// A url whose template does not compile: the server says so at save.
	s.run("request", setValue("#node-method", "POST"), setValue("#node-http-url", ext.URL+"/orders/{{ input.id +* }}"),
		chromedp.Click(`//button[text()="Add header"]`, chromedp.BySearch), chromedp.WaitVisible("#header-k-0", chromedp.ByQuery),
		setValue("#header-k-0", "X-Test"), setValue("#header-v-0", "stitchd {{ input.id }}"))
	s.waitJS("summary on node", fmt.Sprintf(`document.querySelector(%q)?.innerText.startsWith("POST 127.0.0.1:")`, node("http1")+" .snode-summary"))
	// The body is checked as it is typed.
	s.run("json body", chromedp.Click(`input[name="body-mode"][value="json"]`, chromedp.ByQuery), chromedp.WaitVisible("#node-body", chromedp.ByQuery),
		setValue("#node-body", `{"id": "{{ input.id }}", `))
	s.waitJS("not json", `document.querySelector(".body-field [data-json-error]")?.innerText.includes("Not valid JSON")`)
	require.Equal(t, "true", s.attr("#node-body", "aria-invalid"))
	s.run("valid body", setValue("#node-body", `{"id": "{{ input.id }}", "source": "stitchd"}`))
	s.waitJS("json ok", `!!document.querySelector(".body-field [data-json-ok]") && !document.querySelector(".body-field [data-json-error]")`)
	s.run("codes", setValue("#node-success", "201, 20x"))
	s.waitJS("bad code", `document.querySelector(".http-fields [data-check=local]")?.innerText.includes("20x")`)
	s.run("code", setValue("#node-success", "201"), setValue("#node-timeout", "10"))
	s.waitJS("code ok", `!document.querySelector(".http-fields [data-check=local]")`)
	s.shot("i01-http-settings")

	// An Event step, right of the HTTP one.
	ex, ey := s.paletteItem("Event")
	s.drag(ex, ey, px+170, py-170)
	s.run("Event settings", chromedp.WaitVisible(`form[aria-label="Event event1 settings"]`, chromedp.ByQuery),
		setValue("#node-event", "payment.received"), setValue("#node-event-key", "input.body.order_id"))
	require.True(t, s.exists(node("event1")+" .snode-event"), "the Event node has its own look")
	s.waitJS("event summary", fmt.Sprintf(`document.querySelector(%q)?.innerText === "waits for payment.received · key input.body.order_id"`, node("event1")+" .snode-summary"))

	// prep → http1 → event1.
	s.settle(node("prep"))
	s.run("prep → http1", chromedp.Click(node("prep"), chromedp.ByQuery), chromedp.WaitVisible(`form[aria-label="Transform prep settings"]`, chromedp.ByQuery),
		setValue("#node-connect", "http1"), chromedp.Click(`//button[text()="Add edge"]`, chromedp.BySearch))
	s.waitJS("edge 1", `document.querySelectorAll(".react-flow__edge").length === 1`)
	s.settle(node("http1"))
	s.run("http1 → event1", chromedp.Click(node("http1"), chromedp.ByQuery), chromedp.WaitVisible(`form[aria-label="HTTP http1 settings"]`, chromedp.ByQuery),
		setValue("#node-connect", "event1"), chromedp.Click(`//button[text()="Add edge"]`, chromedp.BySearch))
	s.waitJS("edge 2", `document.querySelectorAll(".react-flow__edge").length === 2`)
	// The form kept what was typed when it was closed and opened again.
	require.Equal(t, "X-Test", s.value("#header-k-0"))
	require.Equal(t, "201", s.value("#node-success"))

	// Saved: refused for the url's template, painted on the node and shown
	// under the url.
	s.run("save bad", chromedp.Click(`//button[text()="Save"]`, chromedp.BySearch))
	s.waitJS("painted", fmt.Sprintf(`!!document.querySelector(%q)`, node("http1")+" .snode.has-error"))
	s.waitJS("field message", `!!document.querySelector('.http-fields [data-check="server"]')`)
	require.Regexp(t, `nodes\[\d\]\.data\.url`, s.text(".problems"))
	require.Equal(t, "true", s.attr("#node-http-url", "aria-invalid"))
	require.NotEmpty(t, s.text(node("http1")+" .snode-problem"))
	s.shot("i02-http-error")
	s.run("fix url", setValue("#node-http-url", ext.URL+"/orders/{{ input.id }}"))
	s.waitJS("unpainted", `!document.querySelector(".snode.has-error")`)
	s.run("save", chromedp.Click(`//button[text()="Save"]`, chromedp.BySearch))
	s.waitJS("saved", `document.body.innerText.includes("Saved as version 2")`)

	var saved struct {
		Graph struct {
			Nodes []struct {
				ID   string
				Data map[string]any
			}
		}
	}
	s.api("GET", "/flows/"+flow.ID, nil, &saved)
	data := map[string]map[string]any{}
	for _, n := range saved.Graph.Nodes {
		data[n.ID] = n.Data
	}
	require.Equal(t, map[string]any{"method": "POST", "url": ext.URL + "/orders/{{ input.id }}",
		"headers":      map[string]any{"X-Test": "stitchd {{ input.id }}"},
		"body":         map[string]any{"id": "{{ input.id }}", "source": "stitchd"},
		"successCodes": []any{201.0}, "timeoutSeconds": 10.0}, data["http1"])
	require.Equal(t, map[string]any{"event": "payment.received", "key": "input.body.order_id"}, data["event1"])

	// A run: the API is called, its 201 shows on the node; the Event step
	// waits for payment.received with key 42.
	s.run("start run", chromedp.Click(`//button[text()="Start run"]`, chromedp.BySearch), chromedp.WaitVisible("#run-input", chromedp.ByQuery),
		setValue("#run-input", `{"id": 42}`), chromedp.Click(`.modal button[type="submit"]`, chromedp.ByQuery))
	s.waitJS("run view", `location.pathname.startsWith("/runs/")`)
	select {
	case c := <-calls:
		require.Equal(t, call{Method: "POST", Path: "/orders/42", Test: "stitchd 42", Body: map[string]any{"id": 42.0, "source": "stitchd"}}, c)
	case <-time.After(20 * time.Second):
		t.Fatal("the HTTP step did not call the API")
	}
	s.waitJS("http1 completed", `!!document.querySelector('.snode[data-node-id="http1"][data-status="completed"]')`)
	s.waitJS("HTTP 201", fmt.Sprintf(`document.querySelector(%q)?.innerText === "HTTP 201"`, node("http1")+" .snode-http-status"))
	wait := `.snode[data-node-id="event1"][data-status="waiting_for_event"]`
	s.waitJS("event1 waiting", fmt.Sprintf(`!!document.querySelector(%q)`, wait))
	s.waitJS("badge", fmt.Sprintf(`document.querySelector(%q)?.innerText === "waiting for payment.received · key 42"`, wait+" .snode-status"))
	var look struct{ Color, Mark string }
	s.run("look", chromedp.Evaluate(fmt.Sprintf(`({Color: getComputedStyle(document.querySelector(%q)).color, Mark: document.querySelector(%q).innerText.trim()})`,
		wait+" .snode-status", wait+" .snode-mark"), &look))
	require.Equal(t, "rgb(15, 118, 110)", look.Color, "waiting for an event is teal")
	require.Equal(t, "✉", look.Mark)
	require.True(t, s.exists(`.legend .status-waiting_for_event`), "the legend lists waiting for event")
	s.shot("i03-run-waiting-for-event")

	// Its panel says what it waits for, offers to complete it by hand, and
	// posts the event.
	// The flow is wider than the canvas: it opens from its start, and the
	// Event step is brought into view as a person would (fit view).
	s.settleInCanvas(node("event1"))
	s.run("open event1", chromedp.Click(node("event1"), chromedp.ByQuery), chromedp.WaitVisible(".node-detail [data-event-wait]", chromedp.ByQuery))
	require.Equal(t, "waiting for payment.received · key 42", s.text(".node-detail [data-event-wait]"))
	require.True(t, s.exists(`.node-detail [data-action="complete-by-hand"]`), "a waiting Event step can be completed by hand")
	require.Equal(t, "payment.received", s.value("#event-name"))
	require.Equal(t, "42", s.value("#event-key"))
	s.run("payload", setValue("#event-payload", `{"paid": true, `))
	s.waitJS("payload refused", `!!document.querySelector(".post-event [data-json-error]") && document.querySelector('[data-action="post-event"]').disabled`)
	s.run("post", setValue("#event-payload", `{"paid": true, "amount": 120}`), chromedp.Click(`[data-action="post-event"]`, chromedp.ByQuery))
	s.waitJS("event1 completed", `!!document.querySelector('.snode[data-node-id="event1"][data-status="completed"]')`)
	s.waitJS("run completed", `document.querySelector(".runview")?.dataset.runStatus === "completed"`)
	s.shot("i04-run-completed")
	var run struct {
		Status string
		Output map[string]any
		Nodes  map[string]struct {
			Status string
			Output map[string]any
		}
	}
	s.api("GET", s.runPath(), nil, &run)
	require.Equal(t, "completed", run.Status)
	require.Equal(t, map[string]any{"paid": true, "amount": 120.0}, run.Nodes["event1"].Output)
	require.Equal(t, map[string]any{"paid": true, "amount": 120.0}, run.Output)
	require.EqualValues(t, 201, run.Nodes["http1"].Output["status"])

	// The Triggers page, from the flow list.
	s.run("flows", chromedp.Navigate(s.url+"/flows"), chromedp.WaitVisible(`a[data-link="triggers"]`, chromedp.ByQuery),
		chromedp.Click(`a[data-link="triggers"]`, chromedp.ByQuery))
	s.waitJS("triggers page", fmt.Sprintf(`location.pathname === "/flows/%s/triggers" && !!document.querySelector(".triggers-page .empty")`, flow.ID))
	s.run("new schedule", chromedp.Click(`[data-action="new-schedule"]`, chromedp.ByQuery), chromedp.WaitVisible("#sched-cron", chromedp.ByQuery),
		setValue("#sched-cron", "61 * * * *"), setValue("#sched-timezone", "UTC"), setValue("#sched-input", `{"id": 7}`),
		chromedp.Click(`[data-action="save-schedule"]`, chromedp.ByQuery))
	s.waitJS("cron refused", `!!document.querySelector('[data-field-error="cron"]')`)
	require.Contains(t, s.text(`[data-field-error="cron"]`), "61 * * * *", "the server's message, under the cron field")
	require.Equal(t, "true", s.attr("#sched-cron", "aria-invalid"))
	require.False(t, s.exists(`[data-field-error="timezone"]`))
	s.shot("i05-schedule-bad-cron")
	var list struct{ Triggers []map[string]any }
	s.api("GET", "/flows/"+flow.ID+"/triggers", nil, &list)
	require.Empty(t, list.Triggers, "a refused schedule is not stored")

	s.run("fix cron", setValue("#sched-cron", "*/5 * * * *"))
	s.waitJS("message gone", `!document.querySelector('[data-field-error="cron"]')`)
	s.run("create", chromedp.Click(`[data-action="save-schedule"]`, chromedp.ByQuery))
	card := `li.trigger.schedule`
	s.waitJS("schedule listed", fmt.Sprintf(`!!document.querySelector(%q)`, card+` [data-next] [data-countdown]`))
	require.Equal(t, "*/5 * * * *", s.text(card+" [data-cron]"))
	require.Regexp(t, `^in (\d+s|[1-5]m( \d+s)?)$`, s.text(card+" [data-next] [data-countdown]"), "a countdown to the next run")
	require.False(t, s.exists(card+" [data-last-error]"))
	s.shot("i06-schedule")
	s.api("GET", "/flows/"+flow.ID+"/triggers", nil, &list)
	require.Len(t, list.Triggers, 1)
	require.Equal(t, true, list.Triggers[0]["enabled"])
	require.Equal(t, map[string]any{"id": 7.0}, list.Triggers[0]["input"])

	s.run("disable", chromedp.Click(card+` [data-action="disable"]`, chromedp.ByQuery))
	s.waitJS("disabled", fmt.Sprintf(`document.querySelector(%q)?.dataset.enabled === "false"`, card))
	require.Contains(t, s.text(card+" [data-next]"), "disabled")
	require.False(t, s.exists(card+" [data-next] [data-countdown]"))
	s.api("GET", "/flows/"+flow.ID+"/triggers", nil, &list)
	require.Equal(t, false, list.Triggers[0]["enabled"])
	require.Nil(t, list.Triggers[0]["next_fire_at"])
	s.shot("i07-schedule-disabled")

	s.run("delete", chromedp.Click(card+` [data-action="delete"]`, chromedp.ByQuery))
	s.waitJS("deleted", fmt.Sprintf(`!document.querySelector(%q) && document.body.innerText.includes("Schedule deleted")`, card))
	s.api("GET", "/flows/"+flow.ID+"/triggers", nil, &list)
	require.Empty(t, list.Triggers)
}

// paletteItem scrolls a step of the palette into view and returns its centre.
func (s *stack) paletteItem(typ string) (float64, float64) {
	s.t.Helper()
	sel := fmt.Sprintf(`[data-palette=%q]`, typ)
	s.run("scroll to "+typ, chromedp.ScrollIntoView(sel, chromedp.ByQuery))
	return s.center(sel)
}
