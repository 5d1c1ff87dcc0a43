package engine

import (
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/stitchd/stitchd/engine/enginetype"
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
		for _, f := range []string{v, enginetype.JSONInner(v, true), enginetype.JSONInner(v, false), url.QueryEscape(v), url.PathEscape(v)} {
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
