package handlers

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/tidwall/gjson"

	"github.com/stitchd/stitchd/engine"
	"github.com/stitchd/stitchd/internal/jsonlimit"
)

// HTTP defaults and bounds.
const (
	// DefaultHTTPTimeoutSeconds bounds one request of an HTTP node.
	DefaultHTTPTimeoutSeconds = 30
	// BodyExcerpt is how much of a failed response's body its failure
	// reason quotes.
	BodyExcerpt = 300
)

// HTTP sends a request — method, url, headers and body, each of which may
// hold {{ expr }} templates over input, run and entity — from the outbox,
// and completes with the response: {"status", "headers", "body"}. A
// status outside successCodes (default 2xx) fails it with the status and
// an excerpt of the body; 408, 425, 429, 5xx, a timeout or a refused
// connection is retried per retry (the Worker's policy: maxAttempts
// requests in all, with its backoff, and no sooner than a Retry-After),
// any other failure is final.
type HTTP struct{}

// HTTPConfig is an HTTP node's data.
type HTTPConfig struct {
	Method         string            `json:"method"`
	URL            string            `json:"url"`
	Headers        map[string]string `json:"headers"`
	Body           json.RawMessage   `json:"body"`
	TimeoutSeconds float64           `json:"timeoutSeconds"`
	SuccessCodes   []json.RawMessage `json:"successCodes"`
	// Credential names a stored credential the request carries.
	Credential string `json:"credential"`
}

// Fire renders the request and writes it to the outbox.
func (HTTP) Fire(_ context.Context, fc engine.FireContext) error {
	var cfg HTTPConfig
	if err := json.Unmarshal(fc.Node().Config, &cfg); err != nil {
		return fc.Fail(fmt.Sprintf("the node's data cannot be read: %v", err))
	}
	// A {{ secret "NAME" }} renders as a placeholder of this request
	// (engine.SecretUse): the value is filled in only by the dispatcher,
	// in memory, as it sends the request.
	var use *engine.SecretUse // made at the first secret: most requests use none
	eval := func(src string) (any, error) {
		if name, ok, err := engine.SecretCall(src); ok {
			if err != nil {
				return nil, err
			}
			if use == nil {
				if use, err = engine.NewSecretUse(); err != nil {
					return nil, err
				}
			}
			return use.Placeholder(name), nil
		}
		return fc.Eval(src)
	}
	method := "GET"
	if cfg.Method != "" {
		m, err := render(cfg.Method, fc.Eval, nil)
		if err != nil {
			return fc.Fail("method: " + err.Error())
		}
		method = strings.ToUpper(strings.TrimSpace(m))
		if !contains(engine.HTTPMethods, method) {
			return fc.Fail(fmt.Sprintf("method %q is not one of %s", method, strings.Join(engine.HTTPMethods, ", ")))
		}
	}
	u, err := render(cfg.URL, eval, engine.EscapeURLValue)
	if err != nil {
		return fc.Fail("url: " + err.Error())
	}
	pu, err := url.Parse(u)
	if err != nil || (pu.Scheme != "http" && pu.Scheme != "https") || pu.Hostname() == "" {
		return fc.Fail(fmt.Sprintf("url %q is not an absolute http or https URL with a host", u))
	}
	if use != nil && use.HasPlaceholder(pu.Scheme+"://"+pu.User.String()+"@"+pu.Host) {
		return fc.Fail("url: a secret may be used in the url's path or query, not in its scheme, user or host")
	}
	headers := make(map[string]string, len(cfg.Headers)+1)
	for k, v := range cfg.Headers {
		hv, err := render(v, eval, nil)
		if err != nil {
			return fc.Fail(fmt.Sprintf("header %s: %v", k, err))
		}
		if strings.ContainsAny(hv, "\r\n\x00") {
			return fc.Fail(fmt.Sprintf("header %s: the value holds a line break or a NUL", k))
		}
		headers[k] = hv
	}
	body, ctype, err := renderBody(cfg.Body, eval)
	if err != nil {
		return fc.Fail("body: " + err.Error())
	}
	if ctype != "" && !hasHeader(headers, "Content-Type") {
		headers["Content-Type"] = ctype
	}
	req := engine.DispatchRequest{Kind: engine.DispatchHTTP, URL: u, Method: method, Headers: headers,
		Body: body, RequestTimeoutMs: int64(httpTimeoutSeconds(cfg) * 1000), MaxTries: 1, Credential: cfg.Credential}
	if use != nil {
		use.BodyJSON = ctype == "application/json"
		if t, err := engine.ParseTemplate(cfg.URL); err == nil && t.HostTemplated() {
			use.HostTemplated = true
		}
		req.Secrets = use
	}
	return fc.Dispatch(req)
}

func httpTimeoutSeconds(cfg HTTPConfig) float64 {
	if cfg.TimeoutSeconds > 0 {
		return cfg.TimeoutSeconds
	}
	return DefaultHTTPTimeoutSeconds
}

// RetryDelayMs implements engine.Retrier: the Worker's policy (retry.*).
func (HTTP) RetryDelayMs(r engine.RetryParams) (int64, bool) {
	return Worker{}.RetryDelayMs(r)
}

// Respond implements engine.Responder.
func (HTTP) Respond(n *engine.Node, r engine.Response) (json.RawMessage, string, bool) {
	if r.Status == 0 {
		return nil, r.Error, !r.NoRetry
	}
	if !successCode(n, r.Status) {
		msg := fmt.Sprintf("HTTP %d", r.Status)
		if r.Status >= 300 && r.Status < 400 {
			msg += " (redirects are not followed)"
		}
		if ex := excerpt(r.Body); ex != "" {
			msg += ": " + ex
		}
		return nil, msg, r.Status == 408 || r.Status == 425 || r.Status == 429 || r.Status >= 500
	}
	if r.BodyTruncated {
		return nil, fmt.Sprintf("HTTP %d, and the response body is larger than %d bytes (1 MiB), the most a node's output takes", r.Status, len(r.Body)), false
	}
	if isJSONResponse(r) && json.Valid(r.Body) {
		// Valid JSON the database cannot store (a lone surrogate, \u0000
		// in a string): failing once, saying where, beats storing it
		// changed — and a response that cannot be stored must not be
		// asked for again.
		if err := jsonlimit.CheckLimits(r.Body, jsonlimit.ResponseLimits()); err != nil {
			return nil, fmt.Sprintf("HTTP %d, and the response body cannot be stored: %v", r.Status, err), false
		}
	}
	out, err := json.Marshal(struct {
		Status  int               `json:"status"`
		Headers map[string]string `json:"headers"`
		Body    json.RawMessage   `json:"body"`
	}{r.Status, r.Headers, responseBody(r)})
	if err != nil {
		return nil, fmt.Sprintf("the response cannot be stored: %v", err), false
	}
	return out, "", false
}

// responseBody is the body as the output holds it: its JSON when the
// response says it is JSON and it is, else its text; null when empty.
func responseBody(r engine.Response) json.RawMessage {
	if len(r.Body) == 0 {
		return json.RawMessage("null")
	}
	if isJSONResponse(r) && json.Valid(r.Body) {
		return r.Body // Respond checked that it can be stored
	}
	s := strings.ReplaceAll(strings.ToValidUTF8(string(r.Body), "\uFFFD"), "\x00", "\uFFFD")
	b, _ := json.Marshal(s)
	return b
}

// isJSONResponse reports whether the response says its body is JSON.
func isJSONResponse(r engine.Response) bool {
	ct := strings.ToLower(r.Headers["content-type"])
	if i := strings.IndexByte(ct, ';'); i >= 0 {
		ct = ct[:i]
	}
	ct = strings.TrimSpace(ct)
	return ct == "application/json" || strings.HasSuffix(ct, "+json")
}

// successCode reports whether status is one of the node's successCodes
// (numbers, or "2xx"-style classes; default 2xx).
func successCode(n *engine.Node, status int) bool {
	codes := gjson.GetBytes(n.Config, "successCodes")
	if !codes.IsArray() || len(codes.Array()) == 0 {
		return status >= 200 && status < 300
	}
	for _, c := range codes.Array() {
		if c.Type == gjson.Number && int(c.Int()) == status {
			return true
		}
		if c.Type == gjson.String && len(c.Str) == 3 && strings.EqualFold(c.Str[1:], "xx") &&
			int(c.Str[0]-'0') == status/100 {
			return true
		}
	}
	return false
}

// excerpt is the start of a body for a failure reason: valid UTF-8,
// spaces collapsed, at most BodyExcerpt bytes.
func excerpt(b []byte) string {
	if len(b) > 4*BodyExcerpt {
		b = b[:4*BodyExcerpt]
	}
	s := strings.Join(strings.Fields(strings.ToValidUTF8(string(b), "")), " ")
	s = strings.ReplaceAll(s, "\x00", "")
	if len(s) <= BodyExcerpt {
		return s
	}
	cut := BodyExcerpt
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

func hasHeader(h map[string]string, name string) bool {
	for k := range h {
		if strings.EqualFold(k, name) {
			return true
		}
	}
	return false
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// render evaluates a template.
func render(src string, eval func(string) (any, error), escape func(before, value string) string) (string, error) {
	t, err := engine.ParseTemplate(src)
	if err != nil {
		return "", err
	}
	return t.Render(eval, escape)
}

// renderBody renders an HTTP node's body: a string is a template sent as
// text (text/plain), unless it is a single {{ expr }} whose value is not a
// string (sent as JSON); any other JSON value is sent as JSON
// (application/json) with each string in it rendered — a string that is a
// single {{ expr }} takes the expression's value, of any type.
func renderBody(raw json.RawMessage, eval func(string) (any, error)) ([]byte, string, error) {
	v := gjson.ParseBytes(raw)
	if len(bytes.TrimSpace(raw)) == 0 || v.Type == gjson.Null {
		return nil, "", nil
	}
	if v.Type == gjson.String {
		t, err := engine.ParseTemplate(v.Str)
		if err != nil {
			return nil, "", err
		}
		if src, ok := t.Sole(); ok {
			x, err := eval(src)
			if err != nil {
				return nil, "", fmt.Errorf("{{%s}}: %w", src, err)
			}
			if s, ok := x.(string); ok {
				return []byte(s), "text/plain; charset=utf-8", nil
			}
			b, err := json.Marshal(x)
			if err != nil {
				return nil, "", fmt.Errorf("{{%s}} is not JSON: %w", src, err)
			}
			return b, "application/json", nil
		}
		s, err := t.Render(eval, nil)
		return []byte(s), "text/plain; charset=utf-8", err
	}
	var b bytes.Buffer
	if err := renderJSON(&b, v, "", eval); err != nil {
		return nil, "", err
	}
	return b.Bytes(), "application/json", nil
}

// renderJSON writes v with its strings rendered, keys in their order.
func renderJSON(b *bytes.Buffer, v gjson.Result, path string, eval func(string) (any, error)) error {
	switch {
	case v.IsObject():
		b.WriteByte('{')
		first := true
		var err error
		v.ForEach(func(k, e gjson.Result) bool {
			if !first {
				b.WriteByte(',')
			}
			first = false
			kb, _ := json.Marshal(k.String())
			b.Write(kb)
			b.WriteByte(':')
			err = renderJSON(b, e, path+"."+k.String(), eval)
			return err == nil
		})
		if err != nil {
			return err
		}
		b.WriteByte('}')
	case v.IsArray():
		b.WriteByte('[')
		for i, e := range v.Array() {
			if i > 0 {
				b.WriteByte(',')
			}
			if err := renderJSON(b, e, path+"["+strconv.Itoa(i)+"]", eval); err != nil {
				return err
			}
		}
		b.WriteByte(']')
	case v.Type == gjson.String:
		t, err := engine.ParseTemplate(v.Str)
		if err != nil {
			return fmt.Errorf("%s: %w", strings.TrimPrefix(path, "."), err)
		}
		var x any
		if src, ok := t.Sole(); ok {
			if x, err = eval(src); err != nil {
				return fmt.Errorf("%s: {{%s}}: %w", strings.TrimPrefix(path, "."), src, err)
			}
		} else if x, err = t.Render(eval, nil); err != nil {
			return fmt.Errorf("%s: %w", strings.TrimPrefix(path, "."), err)
		}
		xb, err := json.Marshal(x)
		if err != nil {
			return fmt.Errorf("%s: the value is not JSON: %w", strings.TrimPrefix(path, "."), err)
		}
		b.Write(xb)
	default:
		b.WriteString(v.Raw)
	}
	return nil
}

// httpType is the HTTP type's registration (handlers.Types).
func httpType() engine.NodeTypeSpec {
	return engine.NodeTypeSpec{Type: engine.NodeTypeHTTP, IDPrefix: "http", Panel: true,
		Label: "HTTP", Color: "#c2410c", Icon: "⇄",
		Help:          "Calls an existing REST API and completes with its response (status, headers, body). No callback.",
		DefaultConfig: raw(`{"method":"GET","url":""}`), Handler: HTTP{},
		ConfigSchema: object(`"required":["url"],"properties":{
			"method":{"type":"string","enum":["GET","POST","PUT","PATCH","DELETE","HEAD"]},
			"url":{"type":"string","title":"URL"},
			"headers":{"type":"object","additionalProperties":{"type":"string"}},
			"body":{"title":"Body (JSON or a template)"},
			"successCodes":{"type":"array","items":{"type":"integer"}},
			"credential":{"type":"string","title":"Credential (a stored credential's name)"},
			"timeoutSeconds":{"type":"number","exclusiveMinimum":0,"title":"Timeout (seconds)"},
			` + retryField + `,` + common + `}`),
		Statuses: statuses(engine.StatusRunning, engine.StatusCompleted, engine.StatusFailed)}
}
