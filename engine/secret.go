package engine

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"
)

// Secrets in templates: {{ secret "NAME" }} in an HTTP node's url, headers
// and body. The value never enters anything stored: when the node fires,
// each reference renders as a placeholder unique to that request
// (SecretUse.Placeholder), and only the dispatcher, about to send the
// request, fills the placeholders in with the values in memory
// (SecretUse.Fill); what came back is redacted before it is stored or
// logged (Redactor).

// MaxSecretNameLen bounds a secret's name.
const MaxSecretNameLen = 100

// SecretNameRule says which names a secret may have.
const SecretNameRule = "a secret name is 1 to 100 letters, digits, _ and -, starting with a letter"

// ErrSecret marks a failure to use a secret that another try would not
// mend (no such secret, secrets off, a value that cannot go where it is
// used): the node fails at once.
var ErrSecret = errors.New("secret unusable")

// errSecretUse is the message for a {{ }} that uses secret any other way
// than alone with its name in quotes.
var errSecretUse = errors.New(`secret must stand alone in its {{ }}, with its name in quotes: {{ secret "NAME" }} ` +
	`(the names a flow uses are known when it is saved)`)

// ValidSecretName reports whether name is a secret's name (SecretNameRule):
// a name is safe in a URL path and in the placeholders it renders as.
func ValidSecretName(name string) bool {
	if name == "" || len(name) > MaxSecretNameLen || !isLetter(name[0]) {
		return false
	}
	for i := 1; i < len(name); i++ {
		if b := name[i]; !isLetter(b) && (b < '0' || b > '9') && b != '_' && b != '-' {
			return false
		}
	}
	return true
}

func isLetter(b byte) bool { return b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z' }

func isIdentByte(b byte) bool { return isLetter(b) || b >= '0' && b <= '9' || b == '_' }

// SecretCall reads a {{ }}'s source as a secret reference: secret "NAME"
// or secret("NAME") (any of expr's quotes). isSecret is false for any
// other expression; true with an error for a reference whose argument is
// not a name in quotes.
func SecretCall(src string) (name string, isSecret bool, err error) {
	rest, ok := strings.CutPrefix(strings.TrimSpace(src), "secret")
	if !ok || rest != "" && isIdentByte(rest[0]) {
		return "", false, nil // secretary, or no secret at all
	}
	rest = strings.TrimSpace(rest)
	if rest == "" || rest[0] != '(' && !isQuote(rest[0]) {
		return "", false, nil // not a call: CompileValue refuses it
	}
	if rest[0] == '(' {
		if !strings.HasSuffix(rest, ")") {
			return "", true, errSecretUse
		}
		rest = strings.TrimSpace(rest[1 : len(rest)-1])
	}
	name, ok = unquoteName(rest)
	if !ok {
		return "", true, errSecretUse
	}
	if !ValidSecretName(name) {
		return "", true, fmt.Errorf("%q is not a secret name: %s", name, SecretNameRule)
	}
	return name, true, nil
}

func isQuote(b byte) bool { return b == '"' || b == '\'' || b == '`' }

// unquoteName reads a string literal without escapes (a name has none).
func unquoteName(s string) (string, bool) {
	if len(s) < 2 || !isQuote(s[0]) || s[len(s)-1] != s[0] {
		return "", false
	}
	in := s[1 : len(s)-1]
	if strings.ContainsAny(in, "\\\"'`") {
		return "", false
	}
	return in, true
}

// mentionsSecret reports whether an expression that does not compile
// names secret (a call the template form does not allow): its error then
// says how secret is used.
func mentionsSecret(src string) bool {
	for i := 0; ; {
		j := strings.Index(src[i:], "secret")
		if j < 0 {
			return false
		}
		at, end := i+j, i+j+len("secret")
		if (at == 0 || !isIdentByte(src[at-1]) && src[at-1] != '.') && (end == len(src) || !isIdentByte(src[end])) {
			return true
		}
		i = end
	}
}

// SecretUse is what a request/response outbox row records of the secrets
// its request uses: their names, and the marker of its placeholders. It
// holds no value.
type SecretUse struct {
	// Marker makes the request's placeholders its own: random, made when
	// the node fired, after its input was fixed — so no input, however
	// crafted, can hold a placeholder that would be filled in.
	Marker string   `json:"marker"`
	Names  []string `json:"names"`
	// BodyJSON: the body is JSON (its values are filled in JSON-escaped),
	// not text.
	BodyJSON bool `json:"bodyJson,omitempty"`
	// HostTemplated: the url's scheme, host or port came from a template,
	// not from the flow: only a secret with allowed hosts may be sent.
	HostTemplated bool `json:"hostTemplated,omitempty"`
}

const placeholderPrefix = "~secret~"

// NewSecretUse returns a SecretUse with a fresh marker.
func NewSecretUse() (*SecretUse, error) {
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		return nil, fmt.Errorf("error making a secret marker: %w", err)
	}
	return &SecretUse{Marker: hex.EncodeToString(b)}, nil
}

// Placeholder is what a reference to name renders as, and notes the name.
// Its characters pass unchanged through URL escaping and JSON, so it is
// found again wherever it fell.
func (u *SecretUse) Placeholder(name string) string {
	if !slices.Contains(u.Names, name) {
		u.Names = append(u.Names, name)
	}
	return placeholderPrefix + u.Marker + "~" + name + "~"
}

// HasPlaceholder reports whether s holds one of u's placeholders.
func (u *SecretUse) HasPlaceholder(s string) bool {
	return strings.Contains(s, placeholderPrefix+u.Marker+"~")
}

// Fill replaces u's placeholders with the secrets' values: in the URL
// escaped by where they fall (EscapeURLValue), in headers as they are (a
// value with a line break or a NUL is refused), in the body JSON-escaped
// when it is JSON, else as they are.
func (u *SecretUse) Fill(rawURL string, headers map[string]string, body []byte, values map[string]string) (string, map[string]string, []byte, error) {
	outURL, err := u.fill(rawURL, values, EscapeURLValue)
	if err != nil {
		return "", nil, nil, fmt.Errorf("url: %w", err)
	}
	outHeaders := make(map[string]string, len(headers))
	for k, v := range headers {
		hv, err := u.fill(v, values, func(_, value string) string { return value })
		if err != nil {
			return "", nil, nil, fmt.Errorf("header %s: %w", k, err)
		}
		if hv != v && strings.ContainsAny(hv, "\r\n\x00") {
			return "", nil, nil, fmt.Errorf("header %s: %w: a secret it uses holds a line break or a NUL", k, ErrSecret)
		}
		outHeaders[k] = hv
	}
	escape := func(_, value string) string { return value }
	if u.BodyJSON {
		escape = func(_, value string) string { return jsonInner(value, true) }
	}
	outBody, err := u.fill(string(body), values, escape)
	if err != nil {
		return "", nil, nil, fmt.Errorf("body: %w", err)
	}
	return outURL, outHeaders, []byte(outBody), nil
}

// fill replaces the placeholders of s; escape is given the text of s
// before each (placeholders hold no ? or /, so the text around them says
// where a value falls).
func (u *SecretUse) fill(s string, values map[string]string, escape func(before, value string) string) (string, error) {
	prefix := placeholderPrefix + u.Marker + "~"
	if !strings.Contains(s, prefix) {
		return s, nil
	}
	var b strings.Builder
	rest := s
	for {
		i := strings.Index(rest, prefix)
		if i < 0 {
			b.WriteString(rest)
			return b.String(), nil
		}
		b.WriteString(rest[:i])
		after := rest[i+len(prefix):]
		j := strings.IndexByte(after, '~')
		if j < 0 {
			return "", fmt.Errorf("%w: a cut placeholder", ErrSecret)
		}
		name := after[:j]
		v, ok := values[name]
		if !ok {
			return "", fmt.Errorf("%w: secret %q is not set", ErrSecret, name)
		}
		before := s[:len(s)-len(rest)+i]
		b.WriteString(escape(before, v))
		rest = after[j+1:]
	}
}

// jsonInner is s as it appears inside a JSON string (without the quotes).
func jsonInner(s string, htmlEscape bool) string {
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(htmlEscape)
	_ = enc.Encode(s) //nolint:errchkjson // a string into a strings.Builder: cannot fail
	out := strings.TrimSuffix(b.String(), "\n")
	return out[1 : len(out)-1]
}

// EscapeURLValue escapes a value written into a URL by where it falls: in
// the query (after a ?) as a query value, in the path (after the host) as
// a path segment, untouched before that (a template giving the whole URL,
// or its scheme and host). A path value of dots only has each dot
// escaped (%2E): PathEscape keeps dots, and "." or ".." as a segment (or
// two values making one) would move the request up the path.
func EscapeURLValue(before, value string) string {
	if strings.ContainsAny(before, "?") {
		return url.QueryEscape(value)
	}
	if InURLPath(before) {
		if value != "" && strings.Trim(value, ".") == "" {
			return strings.Repeat("%2E", len(value))
		}
		return url.PathEscape(value)
	}
	return value
}

// InURLPath reports whether a value written after before falls in a URL's
// path or query, not in its scheme, user, host or port.
func InURLPath(before string) bool {
	if strings.Contains(before, "?") {
		return true
	}
	i := strings.Index(before, "://")
	return i >= 0 && strings.Contains(before[i+3:], "/")
}

// Redacted replaces a secret's value in what is stored of a response.
const Redacted = "[redacted]"

// Redactor replaces, in text that came back from a request (its response,
// an error quoting its URL), every form a secret's value was sent in —
// as it is, JSON-escaped, query- and path-escaped — with Redacted.
type Redactor struct {
	r *strings.Replacer
}

// NewRedactor returns a Redactor of values (nil when there are none).
func NewRedactor(values []string) *Redactor {
	var forms []string
	for _, v := range values {
		if v == "" {
			continue
		}
		for _, f := range []string{v, jsonInner(v, true), jsonInner(v, false), url.QueryEscape(v), url.PathEscape(v)} {
			if !slices.Contains(forms, f) {
				forms = append(forms, f)
			}
		}
	}
	if len(forms) == 0 {
		return nil
	}
	// The longest first: at one place, Replacer takes the first that
	// matches in argument order.
	slices.SortStableFunc(forms, func(a, b string) int { return len(b) - len(a) })
	pairs := make([]string, 0, 2*len(forms))
	for _, f := range forms {
		pairs = append(pairs, f, Redacted)
	}
	return &Redactor{r: strings.NewReplacer(pairs...)}
}

// String redacts s.
func (r *Redactor) String(s string) string {
	if r == nil {
		return s
	}
	return r.r.Replace(s)
}

// Bytes redacts b (b itself when nothing is to be redacted).
func (r *Redactor) Bytes(b []byte) []byte {
	if r == nil || len(b) == 0 {
		return b
	}
	s := r.r.Replace(string(b))
	if len(s) == len(b) && s == string(b) {
		return b
	}
	return []byte(s)
}

// MaxAllowedHosts bounds a secret's allowed_hosts.
const MaxAllowedHosts = 50

// NormalizeAllowedHost checks one of a secret's allowed_hosts — a host
// name or IP address, with an optional :port ("api.acme.example",
// "api.acme.example:8443", "[2001:db8::1]:443") — and returns it lower
// case, without a trailing dot.
func NormalizeAllowedHost(s string) (string, error) {
	u, err := url.Parse("//" + s)
	if err != nil || s == "" || u.Host != s || u.User != nil || u.Path != "" || u.RawQuery != "" || u.Fragment != "" ||
		u.Hostname() == "" || strings.ContainsAny(u.Hostname(), "*%") {
		return "", fmt.Errorf("%q is not a host or host:port (e.g. api.example.com or api.example.com:8443)", s)
	}
	if p := u.Port(); p != "" {
		if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 {
			return "", fmt.Errorf("%q: the port must be from 1 to 65535", s)
		}
	} else if strings.HasSuffix(s, ":") {
		return "", fmt.Errorf("%q: a port must follow the colon", s)
	}
	return strings.TrimSuffix(strings.ToLower(s), "."), nil
}

// HostAllowed reports whether a request to u may carry a secret whose
// allowed hosts are hosts: an entry without a port allows every port of
// its host, one with a port only that port (the scheme's default when u
// names none).
func HostAllowed(hosts []string, u *url.URL) bool {
	host := strings.TrimSuffix(strings.ToLower(u.Hostname()), ".")
	port := u.Port()
	if port == "" {
		port = "80"
		if strings.EqualFold(u.Scheme, "https") {
			port = "443"
		}
	}
	for _, h := range hosts {
		e, err := url.Parse("//" + h)
		if err != nil {
			continue
		}
		if strings.TrimSuffix(strings.ToLower(e.Hostname()), ".") == host && (e.Port() == "" || e.Port() == port) {
			return true
		}
	}
	return false
}
