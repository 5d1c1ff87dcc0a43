package app_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/stitchd/stitchd/internal/testkit"
)

// TestEmail: an Email step sends its message, subject and bodies rendered
// from the run's data, to a real SMTP server on loopback, logged in with
// the smtp credential, whose password shows nowhere; the server's
// refusals follow the retry policy (a 451 is tried again, a 554 is not);
// a credential whose allowed_hosts do not name the server, or of another
// type, is refused with nothing sent.
func TestEmail(t *testing.T) {
	t.Parallel()
	h := newHarness(t, withSecretKey(t))
	const password = "smtp-pa55-9c1e"
	srv := testkit.NewSMTPServer(t, "stitchd@example.com", password)
	smtpCred := func(name string, allowed ...string) map[string]any {
		return map[string]any{"name": name, "type": "smtp", "allowed_hosts": allowed, "data": map[string]any{
			"host": srv.Host, "port": srv.Port, "username": "stitchd@example.com", "password": password,
			"from": "Orders <orders@example.com>", "tls": "none"}}
	}
	require.Equal(t, 201, h.do("POST", "/api/v1/credentials", smtpCred("mail", srv.Addr()), nil))

	flow := h.createFlow([]map[string]any{node("notify", "Email", map[string]any{"credential": "mail",
		"to": "{{ input.email }}", "cc": "Audit <audit@example.com>", "bcc": "{{ input.watchers }}",
		"subject": "Order {{ input.order }} for {{ input.name }}",
		"text":    "Hello {{ input.name }}, your order of {{ input.amount }} EUR is confirmed.",
		"html":    "<p>Hello {{ input.name }}</p>"})}, nil)
	run := h.waitRun(h.startRun(flow, map[string]any{"email": "fiona@example.com", "name": "Fiona <script>", "order": "A-17",
		"amount": 1250, "watchers": []string{"ops@example.com", "boss@example.com"}}).ID, "completed")
	var out struct {
		MessageID string `json:"message_id"`
	}
	require.NoError(t, json.Unmarshal(run.Nodes["notify"].Output, &out))
	require.NotEmpty(t, out.MessageID)

	mails := srv.Mails()
	require.Len(t, mails, 1)
	m := mails[0]
	require.Equal(t, "orders@example.com", m.From)
	require.Equal(t, "stitchd@example.com", m.User, "logged in with the credential")
	require.ElementsMatch(t, []string{"fiona@example.com", "audit@example.com", "ops@example.com", "boss@example.com"}, m.To)
	require.Contains(t, m.Data, "Subject: Order A-17 for Fiona <script>")
	require.Contains(t, m.Data, "Hello Fiona <script>, your order of 1250 EUR is confirmed.")
	require.Contains(t, m.Data, "<p>Hello Fiona &lt;script&gt;</p>", "values in the html body are escaped")
	require.Contains(t, m.Data, "Message-ID: "+out.MessageID)
	require.NotContains(t, m.Data, "ops@example.com", "bcc is not in the headers")
	_, body := h.raw("GET", "/api/v1/runs/"+run.ID)
	require.NotContains(t, body, password)
	evs, err := h.app.Store.RunEvents(t.Context(), run.ID, 0, 1000)
	require.NoError(t, err)
	events, err := json.Marshal(evs)
	require.NoError(t, err)
	require.NotContains(t, string(events), password)

	// A temporary refusal is tried again as a new attempt; a permanent
	// one fails the step at once.
	srv.RefuseWith(451)
	retried := h.createFlow([]map[string]any{node("notify", "Email", map[string]any{"credential": "mail", "to": "a@example.com",
		"subject": "again", "text": "x", "retry": map[string]any{"maxAttempts": 2, "initialDelayMs": 10}})}, nil)
	failed := h.waitRun(h.startRun(retried, map[string]any{}).ID, "failed")
	require.Contains(t, *failed.Nodes["notify"].Error, "451")
	require.Equal(t, 2, failed.Nodes["notify"].Attempt, "a 451 is tried again")
	srv.RefuseWith(554)
	failed = h.waitRun(h.startRun(retried, map[string]any{}).ID, "failed")
	require.Contains(t, *failed.Nodes["notify"].Error, "554")
	require.Equal(t, 1, failed.Nodes["notify"].Attempt, "a 554 is not tried again")
	srv.RefuseWith(0)
	require.Len(t, srv.Mails(), 1)

	// Refused before anything is sent: the server is not in allowed_hosts,
	// the credential is not an smtp one, the password is wrong (535, not
	// retried), an address is not one.
	require.Equal(t, 201, h.do("POST", "/api/v1/credentials", smtpCred("elsewhere", "smtp.example.com"), nil))
	require.Equal(t, 201, h.do("POST", "/api/v1/credentials", map[string]any{"name": "token", "type": "bearer",
		"data": map[string]any{"token": "t-1"}, "allowed_hosts": []string{srv.Addr()}}, nil))
	wrong := smtpCred("wrong", srv.Addr())
	wrongData, ok := wrong["data"].(map[string]any)
	require.True(t, ok)
	wrongData["password"] = "not-it"
	require.Equal(t, 201, h.do("POST", "/api/v1/credentials", wrong, nil))
	for cred, want := range map[string]string{"elsewhere": "credential_host_refused", "token": "not an smtp one", "wrong": "535"} {
		f := h.createFlow([]map[string]any{node("notify", "Email", map[string]any{"credential": cred, "to": "a@example.com",
			"subject": "s", "text": "x", "retry": map[string]any{"maxAttempts": 3, "initialDelayMs": 10}})}, nil)
		r := h.waitRun(h.startRun(f, map[string]any{}).ID, "failed")
		require.Contains(t, *r.Nodes["notify"].Error, want, cred)
		require.Equal(t, 1, r.Nodes["notify"].Attempt, "%s: not tried again", cred)
		require.NotContains(t, *r.Nodes["notify"].Error, "not-it")
	}
	f := h.createFlow([]map[string]any{node("notify", "Email", map[string]any{"credential": "mail", "to": "{{ input.to }}",
		"subject": "s", "text": "x"})}, nil)
	r := h.waitRun(h.startRun(f, map[string]any{"to": "not an address"}).ID, "failed")
	require.Contains(t, *r.Nodes["notify"].Error, "is not an email address")
	require.Len(t, srv.Mails(), 1, "nothing more was sent")

	// Checked at save: a bad template, no body.
	var problem struct {
		Error struct {
			Details []struct {
				Message string `json:"message"`
			} `json:"details"`
		} `json:"error"`
	}
	require.Equal(t, 422, h.do("POST", "/api/v1/flows", map[string]any{"name": "bad email", "graph": map[string]any{"nodes": []map[string]any{
		node("notify", "Email", map[string]any{"credential": "mail", "to": "a@example.com", "subject": "{{ input.", "text": ""})},
		"edges": []any{}}}, &problem))
	var msgs []string
	for _, d := range problem.Error.Details {
		msgs = append(msgs, d.Message)
	}
	joined := strings.Join(msgs, "\n")
	require.Contains(t, joined, "subject:")
	require.Contains(t, joined, "needs a body")
}

// TestEmailTriedAlone: the editor's Test tab sends the step's message as a
// run would (the same credential and host rule), writing nothing.
func TestEmailTriedAlone(t *testing.T) {
	t.Parallel()
	h := newHarness(t, withSecretKey(t))
	srv := testkit.NewSMTPServer(t, "", "")
	require.Equal(t, 201, h.do("POST", "/api/v1/credentials", map[string]any{"name": "relay", "type": "smtp",
		"allowed_hosts": []string{srv.Addr()}, "data": map[string]any{"host": srv.Host, "port": srv.Port,
			"from": "noreply@example.com", "tls": "none"}}, nil))
	flow := h.createFlow([]map[string]any{node("notify", "Email", map[string]any{"credential": "relay",
		"to": "{{ input.to }}", "subject": "Trying {{ input.what }}", "text": "tried"})}, nil)
	var tried struct {
		Output json.RawMessage `json:"output"`
		Error  string          `json:"error"`
	}
	require.Equal(t, 200, h.do("POST", "/api/v1/flows/"+flow+"/nodes/notify/test", map[string]any{
		"input": map[string]any{"to": "me@example.com", "what": "the step"}}, &tried))
	require.Empty(t, tried.Error)
	require.Contains(t, string(tried.Output), "message_id")
	mails := srv.Mails()
	require.Len(t, mails, 1)
	require.Equal(t, []string{"me@example.com"}, mails[0].To)
	require.Contains(t, mails[0].Data, "Subject: Trying the step")
	var runs struct {
		Runs []any `json:"runs"`
	}
	require.Equal(t, 200, h.do("GET", "/api/v1/runs?flow_id="+flow, nil, &runs))
	require.Empty(t, runs.Runs, "no run was written")
}

// TestEmailRecipientFromDataIsOne: a value from the run's data is one
// recipient — an input of "me@example.com, 99 others" fails the step with
// nothing sent (it was split at its commas and mailed to every one, a
// public hook's input making stitchd a relay) — while a list is several,
// and a comma in a quoted display name does not split an address.
func TestEmailRecipientFromDataIsOne(t *testing.T) {
	t.Parallel()
	h := newHarness(t, withSecretKey(t))
	srv := testkit.NewSMTPServer(t, "", "")
	require.Equal(t, 201, h.do("POST", "/api/v1/credentials", map[string]any{"name": "relay", "type": "smtp",
		"allowed_hosts": []string{srv.Addr()}, "data": map[string]any{"host": srv.Host, "port": srv.Port,
			"from": "noreply@example.com", "tls": "none"}}, nil))
	email := func(to string) string {
		return h.createFlow([]map[string]any{node("notify", "Email", map[string]any{"credential": "relay", "to": to,
			"subject": "s", "text": "x", "retry": map[string]any{"maxAttempts": 1}})}, nil)
	}
	injected := map[string]any{"email": "me@example.com, other@example.net", "list": []string{`"Doe, Jane" <jane@example.com>`, "ops@example.com"}}
	for _, to := range []string{"{{ input.email }}", "Audit <audit@example.com>, {{ input.email }}"} {
		r := h.waitRun(h.startRun(email(to), injected).ID, "failed")
		require.Contains(t, *r.Nodes["notify"].Error, "other@example.net", to)
		require.Empty(t, srv.Mails(), "%s: nothing sent", to)
	}
	// A value inside a quoted display name cannot close the quote and add
	// an address: where addresses end is the template's to say.
	named := email(`"{{ input.name }}" <{{ input.email }}>`)
	r := h.waitRun(h.startRun(named, map[string]any{"name": `Bob" <victim@example.org>, "Eve`, "email": "me@example.com"}).ID, "failed")
	require.Contains(t, *r.Nodes["notify"].Error, "more than one address")
	require.Empty(t, srv.Mails(), "nothing sent")

	h.waitRun(h.startRun(email("{{ input.list }}"), injected).ID, "completed")
	h.waitRun(h.startRun(email(`"Doe, John" <john@example.com>, {{ input.list[1] }}`), injected).ID, "completed")
	h.waitRun(h.startRun(named, map[string]any{"name": "Doe, Jane", "email": "jane@example.com"}).ID, "completed")
	mails := srv.Mails()
	require.Len(t, mails, 3)
	require.ElementsMatch(t, []string{"jane@example.com", "ops@example.com"}, mails[0].To)
	require.ElementsMatch(t, []string{"john@example.com", "ops@example.com"}, mails[1].To)
	require.Equal(t, []string{"jane@example.com"}, mails[2].To, "a comma in a quoted name is the name's")
}
