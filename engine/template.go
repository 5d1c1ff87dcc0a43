package engine

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Template is a string with {{ expr }} parts (an HTTP node's url, headers
// and body): expr-lang value expressions over input, run and entity,
// compiled when the flow is saved and evaluated when the node fires.
type Template struct {
	parts []templatePart
}

type templatePart struct {
	lit  string
	expr string // set for an expression part
	// secret is the name of a {{ secret "NAME" }} part (expr holds its
	// source).
	secret string
}

// ErrTemplate wraps the errors of ParseTemplate.
var ErrTemplate = errors.New("invalid template")

// ParseTemplate splits s into its literal text and its {{ expr }} parts
// and compiles each expression. An expression may itself hold "}}" (a
// map literal): the shortest source ending at a "}}" that compiles is
// taken. The error is meant for the person who wrote the template.
func ParseTemplate(s string) (*Template, error) {
	t := &Template{}
	rest := s
	for {
		i := strings.Index(rest, "{{")
		if i < 0 {
			if rest != "" {
				t.parts = append(t.parts, templatePart{lit: rest})
			}
			return t, nil
		}
		if i > 0 {
			t.parts = append(t.parts, templatePart{lit: rest[:i]})
		}
		body := rest[i+2:]
		var firstErr error
		found := false
		for off := 0; ; {
			j := strings.Index(body[off:], "}}")
			if j < 0 {
				break
			}
			src := body[:off+j]
			off += j + 2
			if strings.TrimSpace(src) == "" {
				firstErr = fmt.Errorf("%w: an empty {{ }}", ErrTemplate)
				break
			}
			if name, isSecret, err := SecretCall(src); isSecret {
				if err != nil {
					if firstErr == nil {
						firstErr = fmt.Errorf("%w: {{%s}}: %s", ErrTemplate, src, err.Error())
					}
					continue
				}
				t.parts = append(t.parts, templatePart{expr: src, secret: name})
				rest, found = body[off:], true
				break
			}
			if _, err := CompileValue(src); err != nil {
				if firstErr == nil {
					msg := ExprMessage(err)
					if mentionsSecret(src) {
						msg = errSecretUse.Error()
					}
					firstErr = fmt.Errorf("%w: {{%s}}: %s", ErrTemplate, src, msg)
				}
				continue
			}
			t.parts = append(t.parts, templatePart{expr: src})
			rest, found = body[off:], true
			break
		}
		if !found {
			if firstErr == nil {
				firstErr = fmt.Errorf("%w: a {{ is not closed by }}", ErrTemplate)
			}
			return nil, firstErr
		}
	}
}

// Static reports whether the template has no expression.
func (t *Template) Static() bool {
	for _, p := range t.parts {
		if p.expr != "" {
			return false
		}
	}
	return true
}

// HostTemplated reports whether a URL template takes any of its scheme,
// user, host or port from an expression: whoever supplies the value then
// chooses where the request goes.
func (t *Template) HostTemplated() bool {
	var before strings.Builder
	for _, p := range t.parts {
		if p.expr != "" {
			return !InURLPath(before.String())
		}
		before.WriteString(p.lit)
	}
	return false
}

// Secrets lists the names of the secrets the template uses, in order,
// each once.
func (t *Template) Secrets() []string {
	var out []string
	for _, p := range t.parts {
		if p.secret != "" && !slices.Contains(out, p.secret) {
			out = append(out, p.secret)
		}
	}
	return out
}

// Sole returns the expression of a template that is one {{ expr }} and
// nothing else (spaces around it aside).
func (t *Template) Sole() (string, bool) {
	var src string
	for _, p := range t.parts {
		switch {
		case p.expr != "" && src == "":
			src = p.expr
		case p.expr != "":
			return "", false
		case strings.TrimSpace(p.lit) != "":
			return "", false
		}
	}
	return src, src != ""
}

// Render evaluates the expressions with eval and joins the parts. Each
// value is written with TemplateText and, when escape is set, passed
// through it with the text rendered so far (a URL's values are escaped by
// where they fall).
func (t *Template) Render(eval func(src string) (any, error), escape func(before, value string) string) (string, error) {
	var b strings.Builder
	for _, p := range t.parts {
		if p.expr == "" {
			b.WriteString(p.lit)
			continue
		}
		v, err := eval(p.expr)
		if err != nil {
			return "", fmt.Errorf("{{%s}}: %w", p.expr, err)
		}
		s := TemplateText(v)
		if escape != nil {
			s = escape(b.String(), s)
		}
		b.WriteString(s)
	}
	return b.String(), nil
}

// TemplateText is how a value is written into a template's text: a string
// as it is, nothing for null, a whole number without a decimal point, any
// other value as JSON.
func TemplateText(v any) string {
	switch x := v.(type) {
	case nil:
		return ""
	case string:
		return x
	case int:
		return strconv.Itoa(x)
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64)
	case bool:
		return strconv.FormatBool(x)
	case time.Time:
		return x.Format(time.RFC3339Nano)
	case time.Duration:
		return x.String()
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

// Exprs are the sources of its expression parts ({{ secret }} parts
// aside), in order.
func (t *Template) Exprs() []string {
	var out []string
	for _, p := range t.parts {
		if p.expr != "" && p.secret == "" {
			out = append(out, p.expr)
		}
	}
	return out
}
