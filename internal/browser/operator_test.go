package browser_test

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"
)

// TestUIOperatorTools covers the operator's tools of the Triggers page and
// the run view. A signed webhook's secret is rotated from the Triggers
// page with a one-hour grace: the new secret is shown once with the end of
// the grace, and requests signed with either secret are accepted. A run
// sleeping in a Wait step shows a live countdown to its wake time;
// re-running the step before it is refused while the Wait sleeps, with the
// server's message. A finished step of a completed run is re-run from the
// run view with an edited input: its attempt 2 completes with the new
// input, the step after it runs again, and the run completes. An approval
// with reminders says so in the inbox and in its panel.
func TestUIOperatorTools(t *testing.T) {
	s := newStack(t)
	type nodeState struct {
		Status  string
		Attempt int
		Input   map[string]any
		Output  map[string]any
	}
	type runJSON struct {
		Status string
		Nodes  map[string]nodeState
	}
	nodeIs := func(id, status string) string {
		return fmt.Sprintf(`!!document.querySelector('.snode[data-node-id="%s"][data-status="%s"]')`, id, status)
	}
	runStatus := func(status string) string {
		return fmt.Sprintf(`document.querySelector(".editor-bar .status")?.innerText === %q`, status)
	}

	// 1. Rotate a webhook's secret.
	var flow struct{ ID string }
	s.api("POST", "/flows", map[string]any{"name": "Operator", "graph": map[string]any{
		"nodes": []map[string]any{
			{"id": "prep", "type": "Transform", "position": map[string]any{"x": 0, "y": 0},
				"data": map[string]any{"label": "Shape the lead", "expression": `{"name": upper(input.first)}`}},
			{"id": "score", "type": "Worker", "position": map[string]any{"x": 320, "y": 0},
				"data": map[string]any{"label": "Score", "webhookUrl": s.worker.URL + "/score", "timeoutSeconds": 30}},
		},
		"edges": []map[string]any{{"id": "e1", "source": "prep", "target": "score"}},
	}}, &flow)
	const oldSecret = "old-secret-0123456789abcdef"
	var hook struct{ ID string }
	s.api("POST", "/flows/"+flow.ID+"/triggers", map[string]any{"slug": "ops-hook", "secret": oldSecret}, &hook)

	s.run("open triggers", chromedp.Navigate(s.url+"/flows/"+flow.ID+"/triggers"), tokenSignIn(token))
	card := fmt.Sprintf(`li[data-trigger="%s"]`, hook.ID)
	s.waitJS("webhook card", fmt.Sprintf(`!!document.querySelector(%q)`, card+` [data-action="rotate-secret"]`))
	require.False(t, s.exists(card+" [data-new-secret]"))
	s.run("rotate", chromedp.Click(card+` [data-action="rotate-secret"]`, chromedp.ByQuery),
		chromedp.WaitVisible(card+" form.rotate-form select", chromedp.ByQuery))
	require.Contains(t, s.text(card+" form.rotate-form"), "shows it once")
	s.run("grace 1h", setValue(card+" form.rotate-form select", "3600"))
	before := time.Now()
	s.run("confirm rotate", chromedp.Click(card+` [data-action="confirm-rotate"]`, chromedp.ByQuery))
	s.waitJS("new secret", fmt.Sprintf(`/^[0-9a-f]{64}$/.test(document.querySelector(%q)?.innerText ?? "")`, card+" [data-new-secret] [data-secret]"))
	newSecret := s.text(card + " [data-new-secret] [data-secret]")
	require.Contains(t, s.text(card+" [data-new-secret]"), "not shown again")
	graceEnd, err := time.Parse(time.RFC3339Nano, s.attr(card+" [data-grace-end]", "data-grace-end"))
	require.NoError(t, err, "the grace end is shown")
	require.WithinDuration(t, before.Add(time.Hour), graceEnd, time.Minute)
	require.Regexp(t, `^The old secret is accepted until .+ \(ends in (1h|59m( \d+s)?)\)\.$`, s.text(card+" [data-grace-end]"))
	require.False(t, s.exists(card+" form.rotate-form"), "the form closes once rotated")
	s.shot("o01-secret-rotated")
	// Both secrets sign requests the hook accepts (the old one for an hour);
	// another is refused.
	signed := func(secret string) int {
		body := []byte(`{"first":"eve"}`)
		m := hmac.New(sha256.New, []byte(secret))
		m.Write(body)
		req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, s.url+"/hooks/ops-hook", bytes.NewReader(body))
		require.NoError(t, err)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("X-Hub-Signature-256", "sha256="+hex.EncodeToString(m.Sum(nil)))
		req.Header.Set("X-GitHub-Delivery", fmt.Sprintf("d-%d", time.Now().UnixNano()))
		resp, err := s.client.Do(req)
		require.NoError(t, err)
		_ = resp.Body.Close()
		return resp.StatusCode
	}
	require.Equal(t, http.StatusAccepted, signed(newSecret))
	require.Equal(t, http.StatusAccepted, signed(oldSecret))
	require.Equal(t, http.StatusUnauthorized, signed("neither-secret-0123456789"))
	// Shown once: dismissed, it is gone, and the list never had it.
	s.run("dismiss", chromedp.Click(card+` [data-action="dismiss-secret"]`, chromedp.ByQuery))
	s.waitJS("dismissed", fmt.Sprintf(`!document.querySelector(%q)`, card+" [data-new-secret]"))
	require.NotContains(t, s.text(".triggers-page"), newSecret)

	// 2. A Wait step's countdown; re-running before it is refused.
	var napFlow struct{ ID string }
	s.api("POST", "/flows", map[string]any{"name": "Nap", "graph": map[string]any{
		"nodes": []map[string]any{
			{"id": "prep", "type": "Transform", "position": map[string]any{"x": 0, "y": 0},
				"data": map[string]any{"label": "Shape the lead", "expression": `{"name": upper(input.first)}`}},
			{"id": "nap", "type": "Wait", "position": map[string]any{"x": 320, "y": 0},
				"data": map[string]any{"label": "Wait ten minutes", "duration": "10m"}},
		},
		"edges": []map[string]any{{"id": "e1", "source": "prep", "target": "nap"}},
	}}, &napFlow)
	var napRun struct{ ID string }
	s.api("POST", "/flows/"+napFlow.ID+"/runs", map[string]any{"input": map[string]any{"first": "ada"}}, &napRun)
	s.run("nap run", chromedp.Navigate(s.url+"/runs/"+napRun.ID))
	s.waitJS("nap sleeping", nodeIs("nap", "sleeping"))
	s.settle(`.react-flow__node[data-id="nap"]`)
	s.run("open nap", chromedp.Click(`.react-flow__node[data-id="nap"]`, chromedp.ByQuery),
		chromedp.WaitVisible(".node-detail [data-wake] [data-countdown]", chromedp.ByQuery))
	countdown := regexp.MustCompile(`^wakes in (10m|9m( \d{1,2}s)?)$`)
	first := s.text(".node-detail [data-wake] [data-countdown]")
	require.Regexp(t, countdown, first)
	s.waitJS("countdown ticks", fmt.Sprintf(`(t => t !== %q && /^wakes in /.test(t))(document.querySelector(".node-detail [data-wake] [data-countdown]")?.innerText ?? "")`, first))
	require.Regexp(t, countdown, s.text(".node-detail [data-wake] [data-countdown]"))
	require.Regexp(t, `^wakes in `, s.text(`.snode[data-node-id="nap"]`+" [data-countdown]"), "the canvas node counts down too")
	require.False(t, s.exists(`.node-detail [data-action="rerun"]`), "a sleeping step is not finished")
	s.shot("o02-wait-countdown")

	s.settle(`.react-flow__node[data-id="prep"]`)
	s.run("open prep", chromedp.Click(`.react-flow__node[data-id="prep"]`, chromedp.ByQuery),
		chromedp.WaitVisible(`.node-detail [data-action="rerun"]`, chromedp.ByQuery),
		chromedp.Click(`.node-detail [data-action="rerun"]`, chromedp.ByQuery),
		chromedp.WaitVisible(`form[aria-label="Re-run prep"] [data-action="confirm-rerun"]`, chromedp.ByQuery),
		chromedp.Click(`form[aria-label="Re-run prep"] [data-action="confirm-rerun"]`, chromedp.ByQuery))
	s.waitJS("refused", `document.querySelector('form[aria-label="Re-run prep"] [data-server-error]')?.innerText.startsWith("Not re-run:")`)
	require.Contains(t, s.text(`form[aria-label="Re-run prep"] [data-server-error]`), "nap after prep is sleeping", "the server's message")
	var nap runJSON
	s.api("GET", "/runs/"+napRun.ID, nil, &nap)
	require.Equal(t, 1, nap.Nodes["prep"].Attempt, "nothing was re-run")
	require.Equal(t, "sleeping", nap.Nodes["nap"].Status)
	s.shot("o03-rerun-refused")

	// 3. Re-run a finished step with an edited input.
	var run struct{ ID string }
	s.api("POST", "/flows/"+flow.ID+"/runs", map[string]any{"input": map[string]any{"first": "ada"}}, &run)
	s.run("run", chromedp.Navigate(s.url+"/runs/"+run.ID))
	s.waitJS("run completed", runStatus("completed")+" && "+nodeIs("score", "completed"))
	var got runJSON
	s.api("GET", "/runs/"+run.ID, nil, &got)
	require.Equal(t, "ADA", got.Nodes["prep"].Output["name"])
	s.settle(`.react-flow__node[data-id="prep"]`)
	form := `form[aria-label="Re-run prep"]`
	s.run("open prep", chromedp.Click(`.react-flow__node[data-id="prep"]`, chromedp.ByQuery),
		chromedp.WaitVisible(`.node-detail [data-action="rerun"]`, chromedp.ByQuery),
		chromedp.Click(`.node-detail [data-action="rerun"]`, chromedp.ByQuery),
		chromedp.WaitVisible(form+" textarea", chromedp.ByQuery))
	require.Contains(t, s.text(form), "runs it again as attempt 2")
	var shown map[string]any
	var raw string
	s.run("input shown", chromedp.Value(form+" textarea", &raw, chromedp.ByQuery))
	require.NoError(t, json.Unmarshal([]byte(raw), &shown))
	require.Equal(t, map[string]any{"first": "ada"}, shown, "the input it had, to edit")
	s.run("typo", setValue(form+" textarea", `{first: "bob"}`))
	s.waitJS("json error", fmt.Sprintf(`document.querySelector(%q)?.innerText.startsWith("Not valid JSON") && document.querySelector(%q).disabled`,
		form+" [data-json-error]", form+` [data-action="confirm-rerun"]`))
	s.run("edit", setValue(form+" textarea", `{"first": "bob"}`))
	s.waitJS("json ok", fmt.Sprintf(`document.querySelector(%q)?.innerText.startsWith("Runs with this input")`, form+" [data-input-note]"))
	s.run("confirm rerun", chromedp.Click(form+` [data-action="confirm-rerun"]`, chromedp.ByQuery))
	s.waitJS("attempt 2", `(() => { const d = [...document.querySelectorAll(".node-detail .kv dt")].find(x => x.innerText === "Attempt");
		return d?.nextElementSibling?.innerText === "2"; })()`)
	s.waitJS("prep completed again", nodeIs("prep", "completed"))
	s.waitJS("score completed again", nodeIs("score", "completed")+" && "+runStatus("completed"))
	s.waitJS("rerun event", `document.querySelector('.node-detail li[data-event="node.rerun"]')?.innerText.includes("by admin · attempt 2")`)
	s.api("GET", "/runs/"+run.ID, nil, &got)
	require.Equal(t, "completed", got.Status)
	require.Equal(t, 2, got.Nodes["prep"].Attempt)
	require.Equal(t, "completed", got.Nodes["prep"].Status)
	require.Equal(t, map[string]any{"first": "bob"}, got.Nodes["prep"].Input)
	require.Equal(t, "BOB", got.Nodes["prep"].Output["name"])
	require.Equal(t, "completed", got.Nodes["score"].Status)
	require.Equal(t, "BOB", got.Nodes["score"].Input["name"], "the step after it ran again with the new output")
	require.GreaterOrEqual(t, got.Nodes["score"].Attempt, 2)
	s.shot("o04-rerun-attempt-2")

	// 4. An approval reminded about says so, in the inbox and its panel.
	var askFlow struct{ ID string }
	s.api("POST", "/flows", map[string]any{"name": "Remind", "graph": map[string]any{
		"nodes": []map[string]any{
			{"id": "ask", "type": "UX", "position": map[string]any{"x": 0, "y": 0},
				"data": map[string]any{"label": "Call the lead", "prompt": "Call them?", "timeoutSeconds": 7200, "remindAfterSeconds": 3600}},
		},
		"edges": []map[string]any{},
	}}, &askFlow)
	var askRun struct{ ID string }
	s.api("POST", "/flows/"+askFlow.ID+"/runs", map[string]any{"input": map[string]any{"first": "ada"}}, &askRun)
	s.run("approvals", chromedp.Navigate(s.url+"/approvals"))
	approval := fmt.Sprintf(`li.approval[data-approval="%s/ask"]`, askRun.ID)
	s.waitJS("reminder shown", fmt.Sprintf(`document.querySelector(%q)?.innerText === "🔔 reminded every 1h"`, approval+" .approval-head [data-remind]"))
	require.Regexp(t, `^times out in (2h|1h 59m)$`, s.text(approval+" .approval-head .deadline"))
	s.shot("o05-approval-reminded")
	s.run("ask run", chromedp.Navigate(s.url+"/runs/"+askRun.ID))
	s.waitJS("ask waiting", nodeIs("ask", "waiting_for_user"))
	s.settle(`.react-flow__node[data-id="ask"]`)
	s.run("open ask", chromedp.Click(`.react-flow__node[data-id="ask"]`, chromedp.ByQuery),
		chromedp.WaitVisible(".node-detail [data-remind]", chromedp.ByQuery))
	require.Equal(t, "every 1h while it waits · none sent yet", s.text(".node-detail [data-remind]"))
}
