package browser_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"
)

// TestUIPeople signs people in to the web UI and has them decide: an
// approver sees only the tasks assigned to her or her groups, fills a
// form wrongly (the form's own checks and the server's are shown next to
// their fields) and then rightly; two of three people approve a step; an
// admin who started a run is refused its step (separation of duties); and
// the admin reads the run's audit trail. Sign-in's bad cases too: a wrong
// password, and sign-out ending the session.
func TestUIPeople(t *testing.T) {
	s := newStack(t)
	const pw = "correct horse battery"
	mk := func(email, name, role string, groups ...string) {
		s.api("POST", "/users", map[string]any{"email": email, "name": name, "role": role, "groups": append([]string{}, groups...), "password": pw}, nil)
	}
	mk("ann@example.com", "Ann", "approver", "finance")
	mk("bob@example.com", "Bob", "approver")
	mk("cat@example.com", "Cat", "approver")
	mk("dan@example.com", "Dan", "approver", "legal")
	mk("olga@example.com", "Olga", "operator")
	mk("ada@example.com", "Ada", "admin")

	// Flow A: a refund form for finance, a 2-of-3 sign-off, and a step for
	// legal that Ann must not see. All three wait at once.
	refundForm := map[string]any{
		"type": "object", "required": []string{"amount", "reason"},
		"properties": map[string]any{
			"amount": map[string]any{"type": "number", "minimum": 1, "title": "Amount"},
			"reason": map[string]any{"type": "string", "minLength": 1, "title": "Reason"},
			// semver is a format the server asserts and the browser's
			// checker does not know: its mistake is found by the server.
			"policy": map[string]any{"type": "string", "format": "semver", "title": "Policy version"},
		},
	}
	var flowA struct{ ID string }
	s.api("POST", "/flows", map[string]any{"name": "Refunds", "graph": map[string]any{
		"nodes": []map[string]any{
			{"id": "refund", "type": "UX", "data": map[string]any{"label": "Refund", "prompt": "How much do we refund?",
				"assignees": map[string]any{"groups": []string{"finance"}}, "form": refundForm}},
			{"id": "signoff", "type": "UX", "data": map[string]any{"label": "Sign-off", "prompt": "Two of you sign off",
				"assignees": map[string]any{"users": []string{"ann@example.com", "bob@example.com", "cat@example.com"}}, "requiredApprovals": 2}},
			{"id": "legal", "type": "UX", "data": map[string]any{"label": "Legal review", "prompt": "Legal only",
				"assignees": map[string]any{"groups": []string{"legal"}}}},
		},
		"edges": []map[string]any{},
	}}, &flowA)
	// Flow B: one step its starter may not decide.
	var flowB struct{ ID string }
	s.api("POST", "/flows", map[string]any{"name": "Payouts", "graph": map[string]any{
		"nodes": []map[string]any{{"id": "payout", "type": "UX", "data": map[string]any{"label": "Payout", "prompt": "Pay it out?", "separationOfDuties": true}}},
		"edges": []map[string]any{},
	}}, &flowB)

	olga := s.login("olga@example.com", pw)
	var runA struct {
		ID        string
		StartedBy string `json:"started_by"`
	}
	code, body := olga.call("POST", "/flows/"+flowA.ID+"/runs", map[string]any{"input": map[string]any{"order": "A-1001", "total": 80}}, &runA)
	require.Equal(t, http.StatusCreated, code, body)
	nodeStatus := func(runID, key string) string {
		var r struct {
			Nodes map[string]struct{ Status string }
		}
		s.api("GET", "/runs/"+runID, nil, &r)
		return r.Nodes[key].Status
	}
	card := func(runID, key string) string { return fmt.Sprintf(`li.approval[data-approval="%s/%s"]`, runID, key) }
	step := func(name string, f func(t *testing.T)) {
		if !t.Run(name, f) {
			t.FailNow()
		}
	}

	step("sign-in refusals", func(t *testing.T) {
		s.t = t
		s.run("open", chromedp.Navigate(s.url+"/approvals"), passwordSignIn("ann@example.com", "not her password"),
			chromedp.WaitVisible("#signin-error", chromedp.ByQuery))
		require.Equal(t, "Wrong email or password.", s.text("#signin-error"))
		s.shot("p01-wrong-password")
	})

	step("approver sees only her tasks", func(t *testing.T) {
		s.t = t
		s.run("sign in", passwordSignIn("ann@example.com", pw))
		s.waitJS("inbox", `location.pathname === "/approvals" && !!document.querySelector('[data-tab="groups"] .count[data-count]')`)
		// The header says who is signed in; an approver has the inbox only.
		require.Contains(t, s.text(".whoami"), "ann@example.com")
		require.Contains(t, s.text(".whoami .role-chip"), "approver")
		var nav []string
		s.run("nav", chromedp.Evaluate(`[...document.querySelectorAll("nav a")].map(a => a.firstChild.textContent)`, &nav))
		require.Equal(t, []string{"Approvals", "My tokens"}, nav)
		// The nav counts what waits in her inbox.
		s.waitJS("nav badge", `document.querySelector('nav a[href="/approvals"] .nav-badge')?.dataset.count === "2"`)
		var tabs []string
		s.run("tabs", chromedp.Evaluate(`[...document.querySelectorAll("[data-tab]")].map(b => b.dataset.tab + "=" + b.querySelector(".count").dataset.count)`, &tabs))
		require.Equal(t, []string{"me=1", "groups=1"}, tabs, "sign-off is assigned to Ann, the refund to finance; no All tab for an approver")
		// The session outlives a reload (the cookie; the CSRF token comes back from /me).
		s.run("reload", chromedp.Reload())
		s.waitJS("still signed in", `!!document.querySelector('[data-tab="groups"] .count[data-count]')`)
		for _, tab := range []string{"me", "groups"} {
			s.run("tab "+tab, chromedp.Click(fmt.Sprintf(`[data-tab=%q]`, tab), chromedp.ByQuery))
			s.waitJS("tab "+tab+" shown", fmt.Sprintf(`document.querySelector('[data-tab=%q]').getAttribute("aria-selected") === "true" && document.querySelectorAll("li.approval").length === 1`, tab))
			var n int
			s.run("legal absent", chromedp.Evaluate(fmt.Sprintf(`document.querySelectorAll(%q).length`, card(runA.ID, "legal")), &n))
			require.Zero(t, n, "the legal step is not Ann's")
		}
		s.waitJS("refund card", fmt.Sprintf(`!!document.querySelector(%q)`, card(runA.ID, "refund")))
		require.Contains(t, s.text(card(runA.ID, "refund")+" [data-assignees]"), "group finance")
		// Without a summary, the run's input is shown as labelled values.
		require.Equal(t, "A-1001", s.text(card(runA.ID, "refund")+` [data-summary="run-input"] [data-summary-item="Order"] dd`))
		s.shot("p02-ann-inbox")
	})

	step("form: wrong, then right", func(t *testing.T) {
		s.t = t
		c := card(runA.ID, "refund")
		s.waitJS("form rendered", fmt.Sprintf(`!!document.querySelector(%q)`, c+` input[id$="_amount"]`))
		// Amount below its minimum, no reason: the browser's checks.
		s.run("fill wrongly", setValue(c+` input[id$="_amount"]`, "0"),
			chromedp.Click(c+` button[data-outcome="approve"]`, chromedp.ByQuery))
		// The browser's words (the server would say "minimum: got 0, want 1"): nothing was sent.
		s.waitJS("field errors", fieldError(c, "amount")+` === "must be at least 1" && `+fieldError(c, "reason")+` === "is required"`)
		require.Equal(t, "form_invalid", attr(s, c+" .decide-error", "data-code"))
		s.shot("p03-form-client-errors")
		require.Equal(t, "waiting_for_user", nodeStatus(runA.ID, "refund"))

		// Fits the browser's checks, not the server's: a policy that is not semver.
		s.run("fill policy wrongly", setValue(c+` input[id$="_amount"]`, "50"), setValue(c+` input[id$="_reason"]`, "damaged in transit"),
			setValue(c+` input[id$="_policy"]`, "version two"),
			chromedp.Click(c+` button[data-outcome="approve"]`, chromedp.ByQuery))
		s.waitJS("server's field error", fieldError(c, "policy")+`.includes("is not valid semver")`)
		require.Contains(t, s.text(c+" .decide-error"), "does not fit node refund's form: 1 problem")
		s.shot("p04-form-server-error")
		require.Equal(t, "waiting_for_user", nodeStatus(runA.ID, "refund"))

		s.run("fix", setValue(c+` input[id$="_policy"]`, "2.1.0"), chromedp.Click(c+` button[data-outcome="approve"]`, chromedp.ByQuery))
		s.waitJS("card gone", fmt.Sprintf(`!document.querySelector(%q)`, c))
		var r struct {
			Nodes map[string]struct {
				Status string
				Output struct {
					Decision struct {
						Outcome, By string
						Answer      map[string]any
					}
				}
			}
		}
		s.api("GET", "/runs/"+runA.ID, nil, &r)
		require.Equal(t, "completed", r.Nodes["refund"].Status)
		require.Equal(t, "ann@example.com", r.Nodes["refund"].Output.Decision.By)
		require.Equal(t, map[string]any{"amount": 50.0, "reason": "damaged in transit", "policy": "2.1.0"}, r.Nodes["refund"].Output.Decision.Answer)
	})

	step("two of three", func(t *testing.T) {
		s.t = t
		c := card(runA.ID, "signoff")
		s.run("my tab", chromedp.Click(`[data-tab="me"]`, chromedp.ByQuery))
		s.waitJS("sign-off card", fmt.Sprintf(`!!document.querySelector(%q)`, c))
		s.run("ann approves", chromedp.Click(c+` button[data-outcome="approve"]`, chromedp.ByQuery))
		s.waitJS("1 of 2", fmt.Sprintf(`(document.querySelector(%q)?.innerText ?? "") === "1 of 2 approvals" && !!document.querySelector(%q)`,
			c+" .tally", c+` [data-voted="approve"]`))
		s.shot("p05-one-of-two")
		require.Equal(t, "waiting_for_user", nodeStatus(runA.ID, "signoff"))

		// Ann may read the run she is part of, though not its flow.
		// The card's run link opens the task's page, whose canvas draws the
		// flow with labels (issue 45); the run link there, the run.
		s.run("task page", chromedp.Click(c+` a[data-task-link]`, chromedp.ByQuery), chromedp.WaitVisible("[data-task-canvas]", chromedp.ByQuery))
		s.waitJS("task canvas", `[...document.querySelectorAll("[data-task-canvas] .react-flow__node")].some(n => n.innerText.includes("Sign-off"))`)
		s.run("run view", chromedp.Click(`.task-page a[href^="/runs/`+runA.ID+`"]`, chromedp.ByQuery), chromedp.WaitVisible("[data-flow-hidden]", chromedp.ByQuery))
		s.waitJS("steps drawn", `!!document.querySelector('.snode[data-node-id="signoff"][data-status="waiting_for_user"]')`)
		var ops int
		s.run("no operator buttons", chromedp.Evaluate(`document.querySelectorAll('[data-action="pause"], [data-action="cancel"], [data-link="audit"]').length`, &ops))
		require.Zero(t, ops)
		s.run("back", chromedp.NavigateBack(), chromedp.NavigateBack(), chromedp.WaitVisible(c, chromedp.ByQuery))

		// Sign out: back to sign-in, and the session is over on the server.
		s.run("sign out", chromedp.Click(`//button[text()="Sign out"]`, chromedp.BySearch), chromedp.WaitVisible("#email", chromedp.ByQuery))
		var status int
		s.run("session ended", chromedp.Evaluate(`fetch("/api/v1/me").then(r => r.status)`, &status, awaitPromise))
		require.Equal(t, http.StatusUnauthorized, status)

		s.run("bob signs in", passwordSignIn("bob@example.com", pw))
		s.waitJS("bob's card", fmt.Sprintf(`!!document.querySelector(%q)`, c))
		require.Contains(t, s.text(c+" .votes"), "ann@example.com")
		s.run("bob approves", chromedp.Click(c+` button[data-outcome="approve"]`, chromedp.ByQuery))
		s.waitJS("decided", fmt.Sprintf(`!document.querySelector(%q)`, c))
		require.Equal(t, "completed", nodeStatus(runA.ID, "signoff"))
		s.run("sign out", chromedp.Click(`//button[text()="Sign out"]`, chromedp.BySearch), chromedp.WaitVisible("#email", chromedp.ByQuery))
	})

	var runB struct{ ID string }
	step("separation of duties", func(t *testing.T) {
		s.t = t
		ada := s.login("ada@example.com", pw)
		code, body := ada.call("POST", "/flows/"+flowB.ID+"/runs", map[string]any{"input": map[string]any{"payee": "ACME"}}, &runB)
		require.Equal(t, http.StatusCreated, code, body)
		s.run("ada signs in", passwordSignIn("ada@example.com", pw))
		c := card(runB.ID, "payout")
		// Not under "assigned to me" (she could not decide it); an admin
		// finds it under "all", and deciding it is refused.
		s.run("inbox", chromedp.Click(`nav a[href="/approvals"]`, chromedp.ByQuery),
			chromedp.WaitVisible(`button[data-tab="all"]`, chromedp.ByQuery), chromedp.Click(`button[data-tab="all"]`, chromedp.ByQuery))
		s.waitJS("payout card", fmt.Sprintf(`!!document.querySelector(%q)`, c))
		s.run("approve", chromedp.Click(c+` button[data-outcome="approve"]`, chromedp.ByQuery))
		s.waitJS("refused", fmt.Sprintf(`document.querySelector(%q)?.dataset.code === "forbidden"`, c+" .decide-error"))
		require.Contains(t, s.text(c+" .decide-error"), "separation of duties")
		s.shot("p06-separation-of-duties")
		require.Equal(t, "waiting_for_user", nodeStatus(runB.ID, "payout"))
	})

	step("audit trail of the run", func(t *testing.T) {
		s.t = t
		s.run("run page", chromedp.Navigate(s.url+"/runs/"+runA.ID), chromedp.WaitVisible(`[data-link="audit"]`, chromedp.ByQuery),
			chromedp.Click(`[data-link="audit"]`, chromedp.ByQuery))
		s.waitJS("entries", `location.pathname === "/audit" && document.querySelectorAll("tr[data-audit-action]").length > 0`)
		require.Equal(t, "run:"+runA.ID, attr(s, "#audit-target", "value"))
		var rows []string
		s.run("rows", chromedp.Evaluate(`[...document.querySelectorAll("tr[data-audit-action]")].map(r => r.dataset.actor + " " + r.dataset.auditAction)`, &rows))
		s.shot("p07-audit")
		// Newest first: Bob's vote, Ann's vote, Ann's refund, Olga's start.
		complete := "POST /api/v1/runs/:id/nodes/:key/complete"
		require.Equal(t, []string{"bob@example.com " + complete, "ann@example.com " + complete, "ann@example.com " + complete,
			"olga@example.com POST /api/v1/flows/:id/runs"}, rows, "the refused answers and the refused payout are not entries")
		require.True(t, strings.Contains(s.text("table.audit"), "signoff") && strings.Contains(s.text("table.audit"), "refund"), "the decisions' node keys are in their details")
	})

	step("users page", func(t *testing.T) {
		s.t = t
		s.run("open", chromedp.Click(`nav a[href="/users"]`, chromedp.ByQuery), chromedp.WaitVisible(`tr[data-user="ann@example.com"]`, chromedp.ByQuery),
			chromedp.Click(`//button[text()="New user"]`, chromedp.BySearch), chromedp.WaitVisible("#user-new-email", chromedp.ByQuery))
		// Every problem at once, each under its field.
		s.run("bad user", setValue("#user-new-email", "not an email"), setValue("#user-new-password", "short"),
			chromedp.Click(`//button[text()="Create user"]`, chromedp.BySearch))
		s.waitJS("problems", `["email", "name", "password"].every(f => document.querySelector('.user-form [data-problem="' + f + '"]'))`)
		s.shot("p08-user-problems")
		s.run("good user", setValue("#user-new-email", "eve@example.com"), setValue("#user-new-name", "Eve"), setValue("#user-new-role", "viewer"),
			setValue("#user-new-groups", "finance, ops"), setValue("#user-new-password", pw),
			chromedp.Click(`//button[text()="Create user"]`, chromedp.BySearch))
		s.waitJS("eve listed", `document.querySelector('tr[data-user="eve@example.com"]')?.innerText.includes("finance, ops")`)
		s.run("disable eve", chromedp.Click(`//tr[@data-user="eve@example.com"]//button[text()="Edit"]`, chromedp.BySearch),
			chromedp.WaitVisible(`tr[data-user="eve@example.com"] input[type="checkbox"]`, chromedp.ByQuery),
			chromedp.Click(`tr[data-user="eve@example.com"] input[type="checkbox"]`, chromedp.ByQuery),
			chromedp.Click(`//tr[@data-user="eve@example.com"]//button[text()="Save"]`, chromedp.BySearch))
		s.waitJS("eve disabled", `document.querySelector('tr[data-user="eve@example.com"] .chip-warn')?.innerText === "disabled"`)
		var users struct {
			Users []struct {
				Email, Role string
				Groups      []string
				Disabled    bool
			}
		}
		s.api("GET", "/users", nil, &users)
		found := false
		for _, u := range users.Users {
			if u.Email == "eve@example.com" {
				found = true
				require.Equal(t, "viewer", u.Role)
				require.Equal(t, []string{"finance", "ops"}, u.Groups)
				require.True(t, u.Disabled)
			}
		}
		require.True(t, found)
	})

	step("my tokens", func(t *testing.T) {
		s.t = t
		s.run("open", chromedp.Click(`nav a[href="/tokens"]`, chromedp.ByQuery), chromedp.WaitVisible("#token-name", chromedp.ByQuery),
			setValue("#token-name", "ci"), chromedp.Click(`//button[text()="Create token"]`, chromedp.BySearch))
		s.waitJS("shown once", `(document.querySelector("[data-new-token]")?.value ?? "").startsWith("stp_")`)
		tok := attr(s, "[data-new-token]", "value")
		s.waitJS("listed", `!!document.querySelector('tr[data-token="ci"]')`)
		s.shot("p09-token-created")
		me := func() int {
			req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, s.url+"/api/v1/me", nil)
			require.NoError(t, err)
			req.Header.Set("Authorization", "Bearer "+tok)
			resp, err := s.client.Do(req)
			require.NoError(t, err)
			resp.Body.Close()
			return resp.StatusCode
		}
		require.Equal(t, http.StatusOK, me(), "the token acts as Ada")
		s.run("revoke", chromedp.Click(`//tr[@data-token="ci"]//button[text()="Revoke"]`, chromedp.BySearch))
		s.waitJS("gone", `!document.querySelector('tr[data-token="ci"]') && !document.querySelector("[data-new-token]")`)
		require.Equal(t, http.StatusUnauthorized, me(), "a revoked token is refused")
	})

	step("editor: who decides", func(t *testing.T) {
		s.t = t
		s.run("open", chromedp.Navigate(s.url+"/flows/"+flowA.ID), chromedp.WaitVisible(`.react-flow__node[data-id="signoff"]`, chromedp.ByQuery))
		s.settle(`.react-flow__node[data-id="signoff"]`)
		s.run("signoff", chromedp.Click(`.react-flow__node[data-id="signoff"]`, chromedp.ByQuery), chromedp.WaitVisible("#node-required", chromedp.ByQuery))
		require.Equal(t, "2", attr(s, "#node-required", "value"))
		require.Equal(t, "ann@example.com, bob@example.com, cat@example.com", attr(s, "#node-assign-users", "value"))
		// Four approvals of three people: said at once, and by the server on save.
		s.run("four of three", setValue("#node-required", "4"), chromedp.Click(`//button[text()="Save"]`, chromedp.BySearch))
		s.waitJS("server problem", `document.querySelector('#node-required')?.closest(".field")?.querySelector('[data-check="server"]')?.innerText.includes("never complete")`)
		s.shot("p10-editor-required")
		s.run("three of three, separation of duties", setValue("#node-required", "3"), chromedp.Click("#node-sod", chromedp.ByQuery),
			chromedp.Click(`//button[text()="Save"]`, chromedp.BySearch))
		s.waitJS("saved", `/saved as version 2/i.test(document.body.innerText)`)
		var f struct {
			Graph struct {
				Nodes []struct {
					ID   string
					Data map[string]any
				}
			}
		}
		s.api("GET", "/flows/"+flowA.ID, nil, &f)
		for _, n := range f.Graph.Nodes {
			if n.ID == "signoff" {
				require.EqualValues(t, 3, n.Data["requiredApprovals"])
				require.Equal(t, true, n.Data["separationOfDuties"])
			}
		}
		// The refund's form is JSON in a textarea, checked as you type.
		s.settle(`.react-flow__node[data-id="refund"]`)
		s.run("refund", chromedp.Click(`.react-flow__node[data-id="refund"]`, chromedp.ByQuery), chromedp.WaitVisible("#node-form", chromedp.ByQuery))
		require.Contains(t, attr(s, "#node-form", "value"), `"semver"`)
		s.run("break the form", setValue("#node-form", `{"type": "object",`))
		s.waitJS("not JSON", `document.querySelector('#node-form')?.closest(".field")?.querySelector('[data-check="local"]')?.innerText.startsWith("Not JSON")`)
	})
}

// attr reads an attribute (or a property such as value) of the first
// element matching sel.
func attr(s *stack, sel, name string) string {
	s.t.Helper()
	var v string
	s.run("read "+sel+" "+name, chromedp.Evaluate(fmt.Sprintf(`(() => { const el = document.querySelector(%q); if (!el) return "";
		return %q in el && typeof el[%[2]q] === "string" ? el[%[2]q] : (el.getAttribute(%[2]q) ?? ""); })()`, sel, name), &v))
	return v
}

// fieldError is a JavaScript expression: the error text shown under the
// form field name of the approval card c ("" when none).
func fieldError(c, name string) string {
	return fmt.Sprintf(`(document.querySelector(%q)?.closest(".form-group")?.querySelector(".error-detail")?.innerText ?? "")`,
		c+` [id$="_`+name+`"]`)
}
