package browser_test

import (
	"crypto/rand"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/stitchd/stitchd/internal/app"
	"github.com/stitchd/stitchd/internal/secretbox"
	"github.com/stitchd/stitchd/internal/testkit"
)

func withSecretKey(t *testing.T) func(*app.Config) {
	key := make([]byte, secretbox.KeySize)
	_, err := rand.Read(key)
	require.NoError(t, err)
	return func(c *app.Config) { c.SecretKey = key }
}

// TestUICredentials: an editor stores a credential on the Credentials
// page (its value typed once, never shown again), sees it listed with its
// hosts, replaces it, fixes what the server refuses, and deletes it.
func TestUICredentials(t *testing.T) {
	s := newStack(t, withSecretKey(t))
	const secret = "tok-ui-4411-secret"
	s.run("open credentials", chromedp.Navigate(s.url+"/credentials"), tokenSignIn(token))
	s.waitJS("the page", `document.querySelector("h1")?.innerText === "Credentials"`)
	s.waitJS("empty", `document.body.innerText.includes("No credentials yet")`)
	s.run("new", chromedp.Click(`//button[text()="New credential"]`, chromedp.BySearch),
		chromedp.WaitVisible(`form[aria-label="New credential"]`, chromedp.ByQuery),
		setValue("#cred-name", "CRM_API"), setValue(`[data-cred-field="token"]`, secret),
		setValue("#cred-hosts", "api.crm.example\ncrm.example:8443"),
		chromedp.Click(`//button[text()="Save credential"]`, chromedp.BySearch))
	s.waitJS("listed", `!!document.querySelector('[data-credential="CRM_API"]')`)
	require.Equal(t, "Bearer token", s.text(`[data-credential="CRM_API"] td:nth-child(2)`))
	require.Equal(t, "api.crm.example, crm.example:8443", s.text(`[data-credential="CRM_API"] td:nth-child(3)`))
	var html string
	s.run("page source", chromedp.OuterHTML("html", &html, chromedp.ByQuery))
	require.NotContains(t, html, secret, "the value is never shown")

	// A refused one says why, field by field, and stores nothing.
	s.run("new smtp", chromedp.Click(`//button[text()="New credential"]`, chromedp.BySearch),
		chromedp.WaitVisible(`form[aria-label="New credential"]`, chromedp.ByQuery),
		setValue("#cred-name", "MAIL"), setValue("#cred-type", "smtp"))
	s.waitJS("smtp fields", `!!document.querySelector('[data-cred-field="host"]')`)
	s.shot("credentials-smtp-form")
	s.run("fill", setValue(`[data-cred-field="host"]`, "smtp.example.com"), setValue(`[data-cred-field="from"]`, "orders@example.com"),
		chromedp.Click(`//button[text()="Save credential"]`, chromedp.BySearch))
	s.waitJS("refused", `(document.querySelector('.credential-form [role="alert"]')?.innerText || "").includes("allowed_hosts")`)
	s.run("fix", setValue("#cred-hosts", "smtp.example.com:587"), chromedp.Click(`//button[text()="Save credential"]`, chromedp.BySearch))
	s.waitJS("listed", `!!document.querySelector('[data-credential="MAIL"]')`)
	require.Equal(t, "SMTP (email)", s.text(`[data-credential="MAIL"] td:nth-child(2)`))
	s.shot("credentials-list")

	// Replaced: the type and hosts change, the data typed again.
	s.run("replace", chromedp.Click(`[data-credential="CRM_API"] button.btn.small:not(.danger)`, chromedp.ByQuery),
		chromedp.WaitVisible(`form[aria-label="Replace credential CRM_API"]`, chromedp.ByQuery),
		setValue("#cred-type", "basic"))
	s.waitJS("basic fields", `!!document.querySelector('[data-cred-field="username"]')`)
	s.run("fill", setValue(`[data-cred-field="username"]`, "svc"), setValue(`[data-cred-field="password"]`, "pw-77"),
		setValue("#cred-hosts", "api.crm.example"), chromedp.Click(`//button[text()="Replace"]`, chromedp.BySearch))
	s.waitJS("replaced", `document.body.innerText.includes("Credential “CRM_API” replaced.")`)
	s.waitJS("new type", `(document.querySelector('[data-credential="CRM_API"] td:nth-child(2)')?.innerText || "") === "Basic auth"`)
	var got struct {
		Type         string   `json:"type"`
		AllowedHosts []string `json:"allowed_hosts"`
	}
	s.api("GET", "/credentials/CRM_API", nil, &got)
	require.Equal(t, "basic", got.Type)
	require.Equal(t, []string{"api.crm.example"}, got.AllowedHosts)

	s.run("delete", chromedp.Click(`[data-credential="CRM_API"] button.danger`, chromedp.ByQuery))
	s.waitJS("gone", `!document.querySelector('[data-credential="CRM_API"]')`)
	var list struct {
		Credentials []struct {
			Name string `json:"name"`
		} `json:"credentials"`
	}
	s.api("GET", "/credentials", nil, &list)
	require.Len(t, list.Credentials, 1)
	require.Equal(t, "MAIL", list.Credentials[0].Name)
}

// TestUIEmailStep: an Email step added from the palette is set up in its
// panel (credential, recipient, templated subject and body), saved and
// run; the message arrives at a real SMTP server.
func TestUIEmailStep(t *testing.T) {
	s := newStack(t, withSecretKey(t))
	srv := testkit.NewSMTPServer(t, "", "")
	s.api("POST", "/credentials", map[string]any{"name": "relay", "type": "smtp", "allowed_hosts": []string{srv.Addr()},
		"data": map[string]any{"host": srv.Host, "port": srv.Port, "from": "orders@example.com", "tls": "none"}}, nil)
	s.run("new flow", chromedp.Navigate(s.url+"/flows/new"), tokenSignIn(token))
	s.waitJS("Email in the palette", `!!document.querySelector('[data-palette="Email"]')`)
	s.run("add Email", chromedp.Click(`[data-palette="Email"]`, chromedp.ByQuery),
		chromedp.WaitVisible(`form[aria-label="Email email1 settings"]`, chromedp.ByQuery))
	field := func(name string) string {
		return fmt.Sprintf(`[data-type-config="Email"] [id$="_%s"]`, name)
	}
	s.waitJS("its fields", fmt.Sprintf(`!!document.querySelector(%q)`, field("subject")))
	s.shot("email-step-panel")
	// Every field is named in words, its retry policy's too (they showed
	// "timeoutSeconds", and "retry" with no field under it).
	panel := s.text(`[data-type-config="Email"]`)
	for _, words := range []string{"Timeout (seconds)", "Retry", "Max attempts", "Backoff", "Errors not retried"} {
		require.Contains(t, panel, words)
	}
	require.NotContains(t, panel, "timeoutSeconds")
	s.run("set it up", setValue(field("credential"), "relay"), setValue(field("to"), "{{ input.email }}"),
		setValue(field("subject"), "Welcome, {{ input.name }}"), setValue(field("text"), "Hello {{ input.name }}!"),
		setValue(field("maxAttempts"), "5"),
		setValue("#flow-name", "Welcome mail"), chromedp.Click(`//button[text()="Save"]`, chromedp.BySearch))
	s.waitJS("saved", `document.body.innerText.includes("saved as version 1")`)
	var flows struct {
		Flows []struct {
			ID string `json:"id"`
		} `json:"flows"`
	}
	s.api("GET", "/flows", nil, &flows)
	require.Len(t, flows.Flows, 1)
	_, saved := s.savedGraph(flows.Flows[0].ID)
	require.Equal(t, map[string]any{"maxAttempts": 5.0}, saved["email1"]["retry"])
	s.run("start run", chromedp.Click(`//button[text()="Start run"]`, chromedp.BySearch), chromedp.WaitVisible("#run-input", chromedp.ByQuery),
		setValue("#run-input", `{"email": "ada@example.com", "name": "Ada"}`), chromedp.Click(`.modal button[type="submit"]`, chromedp.ByQuery))
	s.waitJS("run view", `location.pathname.startsWith("/runs/")`)
	s.waitJS("completed", `!!document.querySelector('.snode[data-node-id="email1"][data-status="completed"]')`)
	mails := srv.Mails()
	require.Len(t, mails, 1)
	require.Equal(t, []string{"ada@example.com"}, mails[0].To)
	require.Contains(t, mails[0].Data, "Subject: Welcome, Ada")
	require.Contains(t, mails[0].Data, "Hello Ada!")
}

// TestUIPullWorker: a Worker step switched to Pull in its panel names a
// queue; a run's task shows waiting on the Queues page; a worker polls it
// (the API, as a worker would), and the run view names that worker on the
// attempt once it calls back.
func TestUIPullWorker(t *testing.T) {
	s := newStack(t)
	s.run("new flow", chromedp.Navigate(s.url+"/flows/new"), tokenSignIn(token))
	s.waitJS("Worker in the palette", `!!document.querySelector('[data-palette="Worker"]')`)
	s.run("add Worker", chromedp.Click(`[data-palette="Worker"]`, chromedp.ByQuery),
		chromedp.WaitVisible(`form[aria-label="Worker worker1 settings"]`, chromedp.ByQuery))
	s.run("pull", chromedp.Click(`//label[contains(., "Pull: it waits in a queue")]/input`, chromedp.BySearch),
		chromedp.WaitVisible("#node-queue", chromedp.ByQuery), setValue("#node-queue", "billing"), setValue("#node-lease", "120"),
		setValue("#flow-name", "Billing"), chromedp.Click(`//button[text()="Save"]`, chromedp.BySearch))
	s.waitJS("saved", `document.body.innerText.includes("saved as version 1")`)
	s.run("start run", chromedp.Click(`//button[text()="Start run"]`, chromedp.BySearch), chromedp.WaitVisible("#run-input", chromedp.ByQuery),
		setValue("#run-input", `{"invoice": 7}`), chromedp.Click(`.modal button[type="submit"]`, chromedp.ByQuery))
	s.waitJS("run view", `location.pathname.startsWith("/runs/")`)
	var runURL string
	s.run("run url", chromedp.Location(&runURL))

	s.run("queues", chromedp.Click(`//nav//a[text()="Queues"]`, chromedp.BySearch))
	s.waitJS("billing waits", `document.querySelector('[data-queue="billing"] [data-pending]')?.innerText === "1"`)
	var polled struct {
		Tasks []struct {
			Config      map[string]any `json:"config"`
			CallbackURL string         `json:"callback_url"`
		} `json:"tasks"`
	}
	s.api("POST", "/tasks/poll", map[string]any{"queue": "billing", "worker": "host-7/v1"}, &polled)
	require.Len(t, polled.Tasks, 1)
	require.EqualValues(t, 120, polled.Tasks[0].Config["leaseSeconds"])
	s.waitJS("leased, by whom", `(document.querySelector('[data-queue="billing"] [data-worker="host-7/v1"]')?.innerText || "").includes("holds 1")`)
	s.shot("queues-page")
	resp, err := http.Post(polled.Tasks[0].CallbackURL, "application/json", strings.NewReader(`{"status":"completed","output":{"paid":true}}`)) //nolint:noctx // a test's one request
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, 200, resp.StatusCode)

	s.run("back to the run", chromedp.Navigate(runURL))
	s.waitJS("completed", `!!document.querySelector('.snode[data-node-id="worker1"][data-status="completed"]')`)
	s.settleInCanvas(canvasNode("worker1"))
	s.run("select it", chromedp.Click(canvasNode("worker1"), chromedp.ByQuery))
	s.waitJS("its detail", `(document.querySelector('.instance h3')?.textContent || "").includes("worker1")`)
	s.waitJS("the worker named", `(document.querySelector('[data-attempt-worker]')?.innerText || "").includes("host-7/v1")`)
}
