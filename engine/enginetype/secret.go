package enginetype

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"
)

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
		escape = func(_, value string) string { return JSONInner(value, true) }
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

// ErrSecret marks a failure to use a secret that another try would not
// mend (no such secret, secrets off, a value that cannot go where it is
// used): the node fails at once.
var ErrSecret = errors.New("secret unusable")

const placeholderPrefix = "~secret~"

// JSONInner is s as it appears inside a JSON string (without the quotes).
func JSONInner(s string, htmlEscape bool) string {
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

// NewSecretUse returns a SecretUse with a fresh marker.
func NewSecretUse() (*SecretUse, error) {
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		return nil, fmt.Errorf("error making a secret marker: %w", err)
	}
	return &SecretUse{Marker: hex.EncodeToString(b)}, nil
}
