package browser_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/stitchd/stitchd/internal/app"
	"github.com/stitchd/stitchd/internal/testkit"
	"github.com/stitchd/stitchd/store/storetest"
)

// TestUIPurchaseRequest is the trial of issue #44 drawn as a person would,
// from an empty canvas, typing nothing but expressions and field values:
// request (the webhook's body) → budget (an HTTP check, sent for real) →
// a Condition whose edge reads steps.request.output.amount → an approval
// with a form → a sub-flow → done; the else edge to auto; the approval's
// timeout (a failure edge) → escalate → a Wait → the sub-flow; the budget
// check's failure edge → fallback. The condition is tried with Test step,
// the flow saved, its webhook made on the Triggers page and given an
// input_schema on the canvas, fired: the approval answered in the run
// view completes one run; one left unanswered times out and is escalated,
// waits and completes; one the budget service refuses ends in fallback.
func TestUIPurchaseRequest(t *testing.T) {
	// The process's clock is the test's: the unanswered approval's hour
	// runs out when the test moves the clock, not in real time.
	clock := &testkit.Clock{}
	s := newStack(t, func(c *app.Config) { c.Clock = clock })
	var budgetHits atomic.Int32
	budget := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		budgetHits.Add(1)
		w.Header().Set("Content-Type", "application/json")
		if r.URL.Query().Get("amount") == "7" { // a cost center with no budget: refused, not retried
			w.WriteHeader(http.StatusForbidden)
			_, _ = fmt.Fprint(w, `{"ok": false}`)
			return
		}
		_, _ = fmt.Fprintf(w, `{"ok": true, "asked": %q}`, r.URL.Query().Get("amount"))
	}))
	t.Cleanup(budget.Close)
	// The sub-flow, an existing flow picked from the list.
	var child struct{ ID string }
	s.api("POST", "/flows", map[string]any{"name": "Notify finance", "graph": map[string]any{
		"nodes": []map[string]any{{"id": "notify", "type": "Transform", "position": map[string]int{"x": 0, "y": 0},
			"data": map[string]any{"expression": `{"notified": true}`}}},
		"edges": []map[string]any{}}}, &child)

	node := func(id string) string { return fmt.Sprintf(`.react-flow__node[data-id="%s"]`, id) }
	settings := func(typ, id string) string { return fmt.Sprintf(`form[aria-label="%s %s settings"]`, typ, id) }
	add := func(typ, id string) {
		s.run("add "+typ, chromedp.Click(fmt.Sprintf(`[data-palette=%q]`, typ), chromedp.ByQuery),
			chromedp.WaitVisible(settings(typ, id), chromedp.ByQuery))
	}
	rename := func(typ, to string) {
		s.run("rename to "+to, chromedp.Focus("#node-id", chromedp.ByQuery), setValue("#node-id", to), chromedp.KeyEvent("\r"),
			chromedp.WaitVisible(settings(typ, to), chromedp.ByQuery))
	}
	edges := 0
	connect := func(to string) {
		edges++
		// The panel lists the target once it has re-rendered after the
		// last change (a rename, a new step).
		s.waitJS("target listed "+to, fmt.Sprintf(`[...document.querySelectorAll("#node-connect option")].some(o => o.value === %q)`, to))
		s.run("connect to "+to, setValue("#node-connect", to))
		s.waitJS("target chosen "+to, fmt.Sprintf(`document.querySelector("#node-connect")?.value === %q`, to))
		// The button is enabled once the choice is the panel's state, and
		// clicked once the panel above it has stopped moving: a click whose
		// press and release land on different places is no click (the
		// panel settles a moment after typing, as its preview comes).
		s.waitJS("add edge enabled", `document.querySelector("#node-connect + button")?.disabled === false`)
		s.run("scroll to add edge", chromedp.ScrollIntoView("#node-connect + button", chromedp.ByQuery))
		s.settle("#node-connect + button")
		s.run("add edge", chromedp.Click("#node-connect + button", chromedp.ByQuery))
		s.waitJS("edge added", fmt.Sprintf(`document.querySelectorAll(".react-flow__edge").length === %d`, edges))
	}
	selectNode := func(typ, id string) {
		s.settle(node(id))
		s.run("select "+id, chromedp.Click(node(id), chromedp.ByQuery), chromedp.WaitVisible(settings(typ, id), chromedp.ByQuery))
	}

	s.run("new flow", chromedp.Navigate(s.url+"/flows/new"), tokenSignIn(token))
	s.waitJS("palette", `!!document.querySelector('[data-palette="Transform"]')`)
	require.False(t, s.exists(".react-flow__node"), "an empty canvas")

	// From the end back: each new node is selected, wired to the one after.
	add("Transform", "transform1")
	rename("Transform", "done")
	s.run("done's expression", typeInEditor("node-expression", `{"amount": steps.request.output.amount, "budget": steps.budget.output.body.ok, "cost_center": steps.approval1?.output?.decision?.answer?.costCenter ?? "escalated"}`))

	add("SubFlow", "sub1")
	s.waitJS("flows listed", fmt.Sprintf(`!!document.querySelector('#node-subflow option[value="%s"]')`, child.ID))
	s.run("pick the sub-flow", setValue("#node-subflow", child.ID))
	s.run("no entity", chromedp.Click("#node-pass-entity", chromedp.ByQuery))
	connect("done")

	// An approval nobody answers in time is escalated, then waits a moment.
	add("Wait", "wait1")
	s.run("wait a second", setValue("#node-duration", "1s"))
	connect("sub1")
	add("Transform", "transform1")
	rename("Transform", "escalate")
	s.run("escalate's expression", typeInEditor("node-expression", `{"escalated_to": "finance-lead", "amount": steps.request.output.amount}`))
	connect("wait1")

	add("UX", "approval1")
	s.run("ask", setValue("#node-prompt", "Approve this purchase?"),
		setValue("#node-form", `{"type": "object", "required": ["costCenter"], "properties": {"costCenter": {"type": "string", "title": "Cost center"}}}`))
	// Long enough for the person answering the first run; the unanswered
	// one's wait is spent while they do.
	s.run("timeout", setValue("#node-timeout", fmt.Sprint(approvalTimeout)))
	s.waitJS("fails on timeout", `document.querySelector("#node-ontimeout")?.value === "fail"`)
	connect("sub1")
	connect("escalate")

	add("Transform", "transform1")
	rename("Transform", "auto")
	s.run("auto's expression", typeInEditor("node-expression", `"approved without asking"`))

	add("Transform", "transform1")
	rename("Transform", "fallback")
	s.run("fallback's expression", typeInEditor("node-expression", `{"fallback": "no budget answer", "amount": steps.request.output.amount}`))

	add("Condition", "branch1")
	connect("approval1")
	connect("auto")

	add("HTTP", "http1")
	rename("HTTP", "budget")
	s.run("budget url", setValue("#node-http-url", budget.URL+"/budget?amount={{ steps.request.output.amount }}"))
	connect("branch1")
	connect("fallback")

	add("Transform", "transform1")
	rename("Transform", "request")
	s.run("request's expression", typeInEditor("node-expression", `{"amount": input.amount, "item": input.item}`))
	connect("budget")

	// An edge is opened from its source's panel (the button naming its
	// target) and given its kind.
	edgeKind := func(to, kind string) {
		s.run("edge to "+to, chromedp.Click(fmt.Sprintf(`button[aria-label^="Edit edge "][aria-label$=" to %s"]`, to), chromedp.ByQuery),
			chromedp.WaitVisible(`form.edge-settings`, chromedp.ByQuery),
			chromedp.Click(fmt.Sprintf(`input[name="edge-kind"][value=%q]`, kind), chromedp.ByQuery))
		s.waitJS(to+" is "+kind, fmt.Sprintf(`document.querySelector('input[name="edge-kind"][value=%q]')?.checked === true`, kind))
	}
	// The Condition's edges: over 1000 to the approval, else auto.
	selectNode("Condition", "branch1")
	edgeKind("approval1", "condition")
	s.run("condition", chromedp.WaitVisible("#edge-condition", chromedp.ByQuery), typeInEditor("edge-condition", "steps.request.output.amount > 1000"))
	s.waitJS("typed", `document.querySelector("#edge-condition").value === "steps.request.output.amount > 1000"`)
	selectNode("Condition", "branch1")
	edgeKind("auto", "default")
	// The failures: the approval's timeout to escalate, the budget check's to fallback.
	selectNode("UX", "approval1")
	edgeKind("escalate", "failure")
	selectNode("HTTP", "budget")
	edgeKind("fallback", "failure")

	s.run("name and save", setValue("#flow-name", "Purchase request"), chromedp.Click(`//button[text()="Save"]`, chromedp.BySearch))
	s.waitJS("saved", `document.body.innerText.includes("saved as version 1")`)
	var loc string
	s.run("flow url", chromedp.Location(&loc))
	flowID := loc[len(s.url+"/flows/"):]
	s.shot("pr01-purchase-request")

	// Test the condition alone: 1500 goes to the approval, 200 does not.
	selectNode("Condition", "branch1")
	s.run("test tab", chromedp.Click(`[data-tab="test"]`, chromedp.ByQuery), chromedp.WaitVisible(`#node-test-branch1`, chromedp.ByQuery),
		setValue(`#node-test-branch1`, `{"input": {"status": 200, "body": {"ok": true}}, "steps": {"request": {"output": {"amount": 1500, "item": "laptop"}}}}`),
		chromedp.Click(`[data-test-step]`, chromedp.ByQuery))
	s.waitJS("tested", `!!document.querySelector('[data-test-result="completed"]')`)
	require.Equal(t, "true", s.attr(`[data-edge-target="approval1"]`, "data-taken"))
	require.Equal(t, "false", s.attr(`[data-edge-target="auto"]`, "data-taken"))
	s.run("a small one", setValue(`#node-test-branch1`, `{"input": {}, "steps": {"request": {"output": {"amount": 200}}}}`),
		chromedp.Click(`[data-test-step]`, chromedp.ByQuery))
	s.waitJS("else", `document.querySelector('[data-edge-target="auto"]')?.dataset.taken === "true"`)
	require.Equal(t, "false", s.attr(`[data-edge-target="approval1"]`, "data-taken"))
	require.Zero(t, budgetHits.Load(), "testing the condition calls no budget service")

	// The webhook, on the flow's Triggers page.
	s.run("triggers", chromedp.Click(`[data-link="triggers"]`, chromedp.ByQuery),
		chromedp.WaitVisible(`[data-action="new-webhook"]`, chromedp.ByQuery), chromedp.Click(`[data-action="new-webhook"]`, chromedp.ByQuery),
		chromedp.WaitVisible("#hook-slug", chromedp.ByQuery), setValue("#hook-slug", "purchase"),
		// A secret under 16 characters is refused, and the person is told
		// why (the field says so too: it is tooShort).
		// (Focus and key events: SendKeys reads the node's attributes as the
		// page changes them, a race in chromedp.)
		chromedp.Focus("#hook-secret", chromedp.ByQuery), chromedp.KeyEvent("short"),
		chromedp.Click(`//button[text()="Create webhook"]`, chromedp.BySearch))
	s.waitJS("the refusal", `!!document.querySelector(".webhook-form [data-form-error]")`)
	require.Contains(t, s.text(".webhook-form [data-form-error]"), "secret must be 16 to 256 characters")
	var tooShort bool
	s.run("the field", chromedp.Evaluate(`document.querySelector("#hook-secret").validity.tooShort && !document.querySelector("li.trigger.webhook")`, &tooShort))
	require.True(t, tooShort, "the field is marked too short and no webhook was made")
	s.run("no secret", setValue("#hook-secret", ""), chromedp.Click(`//button[text()="Create webhook"]`, chromedp.BySearch))
	s.waitJS("webhook made", `!!document.querySelector("li.trigger.webhook")`)

	// Back on the canvas, the webhook is its start: opened there, it is
	// given an input schema requiring amount (a slip of JSON first, shown
	// at once and not saved).
	var hooks struct {
		Triggers []struct {
			ID string `json:"id"`
		} `json:"triggers"`
	}
	s.api("GET", "/flows/"+flowID+"/triggers", nil, &hooks)
	require.Len(t, hooks.Triggers, 1)
	hookID := hooks.Triggers[0].ID
	start := fmt.Sprintf(`.react-flow__node[data-id="trigger:%s"]`, hookID)
	schemaField := fmt.Sprintf("#hook-%s-schema", hookID[:8])
	s.run("editor", chromedp.Click(`//a[text()="Editor"]`, chromedp.BySearch))
	s.waitJS("start node", fmt.Sprintf(`!!document.querySelector(%q)`, start))
	s.settleInCanvas(start)
	s.run("open the webhook", chromedp.Click(start, chromedp.ByQuery),
		chromedp.WaitVisible(fmt.Sprintf(`[data-trigger-settings=%q] li.trigger.webhook`, hookID), chromedp.ByQuery),
		chromedp.Click(`[data-trigger-settings] [data-action="edit"]`, chromedp.ByQuery), chromedp.WaitVisible(schemaField, chromedp.ByQuery),
		setValue(schemaField, `{"type": "object", "required": ["amount"]`))
	s.waitJS("a slip shown", `!!document.querySelector("[data-trigger-settings] [data-schema-error]")`)
	require.Contains(t, s.text("[data-trigger-settings] [data-schema-error]"), "Not valid JSON")
	require.True(t, s.exists(`[data-trigger-settings] [data-action="save-webhook"]:disabled`), "invalid JSON is not saved")
	s.run("the schema", setValue(schemaField, `{"type": "object", "required": ["amount"], "properties": {"amount": {"type": "number", "title": "Amount"}}}`))
	s.waitJS("no slip", `!document.querySelector("[data-trigger-settings] [data-schema-error]")`)
	s.shot("pr01a-webhook-edit-on-canvas")
	s.run("save the webhook", chromedp.Click(`[data-trigger-settings] [data-action="save-webhook"]`, chromedp.ByQuery))
	s.waitJS("webhook saved", `document.querySelector("[data-trigger-settings] [data-input-schema]")?.innerText.includes("requires amount")`)
	require.Contains(t, s.text(start), "POST /hooks/purchase", "the slug stays")
	require.NotContains(t, s.text("body"), "Unsaved changes.", "a trigger's edit is no change to the graph")
	s.shot("pr01b-webhook-schema-on-canvas")

	hook := func(body string) (int, []byte) {
		req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, s.url+"/hooks/purchase", strings.NewReader(body))
		require.NoError(t, err)
		req.Header.Set("Content-Type", "application/json")
		resp, err := s.client.Do(req)
		require.NoError(t, err)
		raw, _ := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		return resp.StatusCode, raw
	}
	code, raw := hook(`{"item": "laptop"}`)
	require.Equal(t, http.StatusBadRequest, code, "%s", raw)
	require.Contains(t, string(raw), "input_schema")
	require.Contains(t, string(raw), "amount")
	var runs struct {
		Runs []struct{ ID string } `json:"runs"`
	}
	s.api("GET", "/runs?flow_id="+flowID, nil, &runs)
	require.Empty(t, runs.Runs, "a body without amount starts no run")

	fire := func(body string) string {
		t.Helper()
		code, raw := hook(body)
		require.Equal(t, http.StatusAccepted, code, "%s", raw)
		var fired struct {
			RunID string `json:"run_id"`
		}
		require.NoError(t, json.Unmarshal(raw, &fired))
		return fired.RunID
	}
	// One nobody will answer, the one answered, one the budget service refuses.
	unanswered := fire(`{"amount": 2000, "item": "server"}`)
	answered := fire(`{"amount": 1500, "item": "laptop"}`)
	refused := fire(`{"amount": 7, "item": "pen"}`)

	// The approval, answered with its form in the run view.
	status := func(id, st string) string {
		return fmt.Sprintf(`!!document.querySelector('.snode[data-node-id="%s"][data-status="%s"]')`, id, st)
	}
	// Opened as the inbox's link opens it: the run with the step in focus
	// (a live run's canvas may still move under a click).
	s.run("run view", chromedp.Navigate(s.url+"/runs/"+answered+"?key=approval1"))
	s.waitJS("approval waiting", status("approval1", "waiting_for_user"))
	s.run("open approval", chromedp.WaitVisible(`.node-detail input[id$="_costCenter"]`, chromedp.ByQuery),
		setValue(`.node-detail input[id$="_costCenter"]`, "CC-42"),
		chromedp.Click(`.node-detail button[data-outcome="approve"]`, chromedp.ByQuery))
	s.waitJS("done", status("done", "completed"))
	s.waitJS("auto skipped", status("auto", "skipped"))
	s.waitJS("no escalation", status("escalate", "skipped"))
	s.shot("pr02-purchase-run")

	type runJSON struct {
		Status string         `json:"status"`
		FlowID string         `json:"flow_id"`
		Output map[string]any `json:"output"`
		Nodes  map[string]struct {
			Status string `json:"status"`
			Error  string `json:"error"`
		} `json:"nodes"`
	}
	// ended waits for a run to end (the sweeper times the approval out).
	ended := func(id string, within time.Duration) runJSON {
		t.Helper()
		var run runJSON
		for deadline := time.Now().Add(within); ; {
			s.api("GET", "/runs/"+id, nil, &run)
			if run.Status == "completed" || run.Status == "failed" || run.Status == "cancelled" || time.Now().After(deadline) {
				return run
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	nodes := func(r runJSON) map[string]string {
		m := map[string]string{}
		for k, n := range r.Nodes {
			m[k] = n.Status
		}
		return m
	}
	run := ended(answered, 10*time.Second)
	require.Equal(t, "completed", run.Status)
	require.Equal(t, flowID, run.FlowID)
	// Three ends (done, auto, fallback): the output is keyed by the end that ran.
	require.Equal(t, map[string]any{"done": map[string]any{"amount": 1500.0, "budget": true, "cost_center": "CC-42"}}, run.Output)

	// The budget service refused: the failure edge to fallback, nothing after the check.
	run = ended(refused, 10*time.Second)
	require.Equal(t, "completed", run.Status, "%+v", run.Nodes)
	require.Equal(t, map[string]any{"fallback": map[string]any{"fallback": "no budget answer", "amount": 7.0}}, run.Output)
	require.Equal(t, map[string]string{"request": "completed", "budget": "failed", "fallback": "completed", "branch1": "skipped",
		"auto": "skipped", "approval1": "skipped", "escalate": "skipped", "wait1": "skipped", "sub1": "skipped", "done": "skipped"}, nodes(run))
	require.Contains(t, run.Nodes["budget"].Error, "403")

	// Nobody answered the other within the hour: the clock moves past it.
	require.Equal(t, "waiting_for_user", nodes(ended(unanswered, 0))["approval1"])
	clock.Advance(approvalTimeout * time.Second)
	storetest.AdvanceDueTimes(t, s.app.Store, approvalTimeout*time.Second)
	// The unanswered approval timed out: escalated, a second's wait, the sub-flow, done.
	run = ended(unanswered, 30*time.Second)
	require.Equal(t, "completed", run.Status, "%+v", run.Nodes)
	require.Equal(t, map[string]any{"done": map[string]any{"amount": 2000.0, "budget": true, "cost_center": "escalated"}}, run.Output)
	require.Equal(t, map[string]string{"request": "completed", "budget": "completed", "branch1": "completed", "auto": "skipped",
		"approval1": "failed", "escalate": "completed", "wait1": "completed", "sub1": "completed", "done": "completed", "fallback": "skipped"}, nodes(run))
	require.Contains(t, run.Nodes["approval1"].Error, "no answer within")
	s.run("escalated run", chromedp.Navigate(s.url+"/runs/"+unanswered))
	s.waitJS("escalated", status("escalate", "completed"))
	s.waitJS("waited", status("wait1", "completed"))
	s.shot("pr03-purchase-escalated")

	require.EqualValues(t, 3, budgetHits.Load(), "the budget check ran once a run, for real (a 403 is not retried)")
}

// approvalTimeout is the purchase approval's timeout, in seconds.
const approvalTimeout = 3600
