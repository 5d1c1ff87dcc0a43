package handlers

import (
	"context"
	"encoding/json"
	"fmt"
	"html"
	"net/mail"
	"strconv"
	"strings"

	"github.com/stitchd/stitchd/engine"
)

// Email sends a message over SMTP with a stored smtp credential: the
// recipients, subject and bodies are {{ }} templates rendered as the step
// fires, and the dispatcher sends the message outside the transaction, at
// most once an attempt, as it sends an HTTP step's request. Its output is
// {"message_id"}; a failure follows the step's retry policy (a permanent
// refusal, an SMTP 5xx, is not retried).
type Email struct{}

// Email bounds: how many recipients a message has, how long its subject
// and each body may be once rendered.
const (
	MaxEmailRecipients = 100
	MaxEmailSubject    = 998 // RFC 5322's line limit
	MaxEmailBody       = 1 << 20
	maxRecipientsField = 1000
	// DefaultEmailTimeoutSeconds bounds a message's delivery to the SMTP
	// server (connect, TLS, authenticate, send) unless data.timeoutSeconds
	// says otherwise.
	DefaultEmailTimeoutSeconds = 30
)

// EmailMessage is an Email step's outbox row: the rendered message the
// dispatcher sends.
type EmailMessage struct {
	To      []string `json:"to"`
	Cc      []string `json:"cc,omitempty"`
	Bcc     []string `json:"bcc,omitempty"`
	Subject string   `json:"subject"`
	Text    string   `json:"text,omitempty"`
	HTML    string   `json:"html,omitempty"`
}

type emailConfig struct {
	Credential     string  `json:"credential"`
	To             string  `json:"to"`
	Cc             string  `json:"cc"`
	Bcc            string  `json:"bcc"`
	Subject        string  `json:"subject"`
	Text           string  `json:"text"`
	HTML           string  `json:"html"`
	TimeoutSeconds float64 `json:"timeoutSeconds"`
}

// Fire renders the message and hands it to the dispatcher.
func (Email) Fire(_ context.Context, fc engine.FireContext) error {
	var cfg emailConfig
	if err := json.Unmarshal(fc.Node().Config, &cfg); err != nil {
		return fc.Fail(fmt.Sprintf("the node's data cannot be read: %v", err))
	}
	var msg EmailMessage
	var err error
	for _, f := range []struct {
		name string
		src  string
		into *[]string
	}{{"to", cfg.To, &msg.To}, {"cc", cfg.Cc, &msg.Cc}, {"bcc", cfg.Bcc, &msg.Bcc}} {
		if *f.into, err = recipients(f.src, fc.Eval); err != nil {
			return fc.Fail(f.name + ": " + err.Error())
		}
	}
	if len(msg.To) == 0 {
		return fc.Fail("to: the message has no recipient")
	}
	if n := len(msg.To) + len(msg.Cc) + len(msg.Bcc); n > MaxEmailRecipients {
		return fc.Fail(fmt.Sprintf("the message has %d recipients, more than %d", n, MaxEmailRecipients))
	}
	if msg.Subject, err = render(cfg.Subject, fc.Eval, nil); err != nil {
		return fc.Fail("subject: " + err.Error())
	}
	if msg.Subject = strings.TrimSpace(msg.Subject); len(msg.Subject) > MaxEmailSubject || strings.ContainsAny(msg.Subject, "\r\n\x00") {
		return fc.Fail(fmt.Sprintf("subject: longer than %d bytes or holds a line break or NUL once rendered", MaxEmailSubject))
	}
	if msg.Text, err = render(cfg.Text, fc.Eval, nil); err != nil {
		return fc.Fail("text: " + err.Error())
	}
	if msg.HTML, err = render(cfg.HTML, fc.Eval, escapeHTML); err != nil {
		return fc.Fail("html: " + err.Error())
	}
	if msg.Text == "" && msg.HTML == "" {
		return fc.Fail("the message has no body: text and html are both empty once rendered")
	}
	if len(msg.Text) > MaxEmailBody || len(msg.HTML) > MaxEmailBody {
		return fc.Fail(fmt.Sprintf("a body is longer than %d bytes once rendered", MaxEmailBody))
	}
	body, _ := json.Marshal(msg) // strings only: it always encodes
	timeout := cfg.TimeoutSeconds
	if timeout <= 0 {
		timeout = DefaultEmailTimeoutSeconds
	}
	return fc.Dispatch(engine.DispatchRequest{Kind: engine.DispatchEmail, URL: "email:" + fc.Node().ID, Body: body,
		Credential: cfg.Credential, RequestTimeoutMs: int64(timeout * 1000), MaxTries: 1})
}

// recipients renders a recipient field: a template of addresses separated
// by commas, or one {{ expr }} whose value is an address or a list of
// them. Each address is checked (a display name is allowed:
// "Fiona <f@x.io>", "\"Doe, John\" <j@x.io>"). A value from the run's
// data is one address at most: split at its commas, an input's
// "me@x.io, 99 others" sent the message to all of them.
func recipients(src string, eval func(string) (any, error)) ([]string, error) {
	if strings.TrimSpace(src) == "" {
		return nil, nil
	}
	t, err := engine.ParseTemplate(src)
	if err != nil {
		return nil, err
	}
	var parts []string
	if sole, ok := t.Sole(); ok {
		x, err := eval(sole)
		if err != nil {
			return nil, fmt.Errorf("{{%s}}: %w", sole, err)
		}
		vals, ok := x.([]any)
		if !ok {
			vals = []any{x}
		}
		for _, v := range vals {
			s, ok := v.(string)
			if !ok {
				return nil, fmt.Errorf("a recipient is %T, not an address", v)
			}
			parts = append(parts, s)
		}
	} else {
		// Where one address ends is the template's to say, never a value's:
		// the template is split with each value held by a marker, and the
		// values put back in their parts. A value that carries a comma, a
		// quote or a bracket (Bob" <victim@x.io>, "Eve) can then make its
		// part no address, never a part more.
		var vals []string
		marked, err := t.Render(eval, func(_, v string) string {
			vals = append(vals, v)
			return valueMark + strconv.Itoa(len(vals)-1) + valueMarkEnd
		})
		if err != nil {
			return nil, err
		}
		for _, part := range splitAddresses(marked) {
			part = putBack(part, vals)
			if len(splitAddresses(part)) > 1 {
				return nil, fmt.Errorf("%q is more than one address: a value is one address (a list in a single {{ expr }} is several)", part)
			}
			parts = append(parts, part)
		}
	}
	var out []string
	for _, part := range parts {
		if part = strings.TrimSpace(part); part == "" {
			continue
		}
		a, err := mail.ParseAddress(part)
		if err != nil {
			return nil, fmt.Errorf("%q is not an email address: %w", part, err)
		}
		out = append(out, a.String())
	}
	return out, nil
}

// valueMark and valueMarkEnd hold a value's place in a recipient template
// while it is split (private-use characters: no separator of addresses).
const (
	valueMark    = "\ue000"
	valueMarkEnd = "\ue001"
)

// putBack replaces the value marks in s with the values.
func putBack(s string, vals []string) string {
	var b strings.Builder
	for {
		i := strings.Index(s, valueMark)
		j := strings.Index(s, valueMarkEnd)
		if i < 0 || j < i {
			b.WriteString(s)
			return b.String()
		}
		n, err := strconv.Atoi(s[i+len(valueMark) : j])
		b.WriteString(s[:i])
		if err == nil && n >= 0 && n < len(vals) {
			b.WriteString(vals[n])
		} else {
			b.WriteString(s[i : j+len(valueMarkEnd)])
		}
		s = s[j+len(valueMarkEnd):]
	}
}

// splitAddresses splits s at the commas between addresses: not those in a
// quoted display name, a comment or angle brackets.
func splitAddresses(s string) []string {
	var out []string
	quoted, escaped, depth, angle, start := false, false, 0, false, 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case escaped:
			escaped = false
		case c == '\\' && (quoted || depth > 0):
			escaped = true
		case c == '"' && depth == 0:
			quoted = !quoted
		case quoted:
		case c == '(':
			depth++
		case c == ')' && depth > 0:
			depth--
		case depth > 0:
		case c == '<':
			angle = true
		case c == '>':
			angle = false
		case c == ',' && !angle:
			out = append(out, s[start:i])
			start = i + 1
		}
	}
	return append(out, s[start:])
}

// escapeHTML escapes a value rendered into an HTML body: data a run
// carries is text, not markup.
func escapeHTML(_, v string) string { return html.EscapeString(v) }

// RetryDelayMs implements engine.Retrier: the Worker's policy (retry.*).
func (Email) RetryDelayMs(r engine.RetryParams) (int64, bool) {
	return Worker{}.RetryDelayMs(r)
}

// Respond takes the message's id as the output, or why it was not sent
// (retried when the server's refusal was temporary, or it was not
// reached).
func (Email) Respond(_ *engine.Node, r engine.Response) (json.RawMessage, string, bool) {
	if r.Error != "" {
		return nil, r.Error, !r.NoRetry
	}
	return json.RawMessage(r.Body), "", false
}

// emailType is the Email type's registration (handlers.Types).
func emailType() engine.NodeTypeSpec {
	recipient := `{"type":"string","maxLength":` + strconv.Itoa(maxRecipientsField) + `,"description":"addresses separated by commas, or {{ expr }} whose value is an address or a list of them"`
	return engine.NodeTypeSpec{Type: "Email", IDPrefix: "email", Label: "Email", Color: "#0f766e", Icon: "✉",
		Help:          "Sends an email with a stored smtp credential; recipients, subject and bodies are {{ }} templates. Output: {message_id}.",
		DefaultConfig: raw(`{"credential":"","to":"","subject":"","text":""}`), Handler: Email{},
		ConfigSchema: object(`"required":["credential","to","subject"],"additionalProperties":false,"properties":{
			"credential":{"type":"string","minLength":1,"title":"Credential (a stored smtp credential's name)"},
			"to":` + recipient + `,"minLength":1,"title":"To"},
			"cc":` + recipient + `,"title":"Cc"},
			"bcc":` + recipient + `,"title":"Bcc"},
			"subject":{"type":"string","minLength":1,"maxLength":` + strconv.Itoa(MaxEmailSubject) + `,"title":"Subject (a template)"},
			"text":{"type":"string","maxLength":` + strconv.Itoa(MaxEmailBody) + `,"title":"Text body (a template)"},
			"html":{"type":"string","maxLength":` + strconv.Itoa(MaxEmailBody) + `,"title":"HTML body (a template; values are escaped)"},
			"timeoutSeconds":{"type":"number","exclusiveMinimum":0,"maximum":300,"title":"Timeout (seconds)","description":"For the whole exchange with the mail server. Default 30."},
			` + retryField + `,` + common + `}`),
		Statuses: statuses(engine.StatusRunning, engine.StatusCompleted, engine.StatusFailed),
		Check:    checkEmail,
	}
}

// checkEmail parses the templates at save (a bad {{ }} names its field)
// and asks for a body.
func checkEmail(data json.RawMessage) []string {
	var cfg emailConfig
	if err := json.Unmarshal(data, &cfg); err != nil {
		return nil // the schema says what is wrong
	}
	var problems []string
	for _, f := range []struct{ name, src string }{{"to", cfg.To}, {"cc", cfg.Cc}, {"bcc", cfg.Bcc},
		{"subject", cfg.Subject}, {"text", cfg.Text}, {"html", cfg.HTML}} {
		if _, err := engine.ParseTemplate(f.src); err != nil {
			problems = append(problems, f.name+": "+err.Error())
		}
	}
	if strings.TrimSpace(cfg.Text) == "" && strings.TrimSpace(cfg.HTML) == "" {
		problems = append(problems, "text or html: the message needs a body")
	}
	return problems
}
