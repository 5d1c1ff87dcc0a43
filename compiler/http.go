package compiler

import (
	"net/url"
	"strconv"
	"strings"

	"github.com/tidwall/gjson"

	"github.com/stitchd/stitchd/engine"
)

// maxTemplateLen bounds one templated string of an HTTP node (a url, a
// header, a string in its body).
const maxTemplateLen = 64 << 10

// checkHTTP checks an HTTP node's data: url (required), method, headers
// and body, whose strings may hold {{ expr }} templates (compiled here:
// invalid_expression at the string's path), timeoutSeconds, retry and
// successCodes.
func (c *compiler) checkHTTP(id string, base loc, root gjson.Result) {
	u := root.Get("url")
	upath := base.field("url")
	hostTemplated := false
	switch {
	case !present(u) || u.Type != gjson.String || strings.TrimSpace(u.Str) == "":
		c.errAt(CodeInvalidConfig, id, "", upath, "HTTP node %q needs a url (a string, which may hold {{ expr }} templates)", id)
	default:
		t, ok := c.template(id, upath.String(), u.Str)
		hostTemplated = ok && t.HostTemplated()
		if ok && t.Static() {
			pu, err := url.Parse(u.Str)
			if err != nil || (pu.Scheme != "http" && pu.Scheme != "https") || pu.Hostname() == "" {
				c.errAt(CodeInvalidConfig, id, "", upath, "HTTP node %q: url %q is not an absolute http or https URL with a host", id, u.Str)
			}
		}
	}
	if cr := root.Get("credential"); present(cr) && (cr.Type != gjson.String || !engine.ValidSecretName(cr.Str)) {
		c.errAt(CodeInvalidConfig, id, "", base.field("credential"), "HTTP node %q: credential must be a credential's name (letters, digits, _ and -, starting with a letter), got %s", id, cr.Raw)
	}
	if m := root.Get("method"); present(m) {
		mpath := base.field("method")
		if m.Type != gjson.String {
			c.errAt(CodeInvalidConfig, id, "", mpath, "HTTP node %q: method must be a string (%s)", id, strings.Join(engine.HTTPMethods, ", "))
		} else if t, ok := c.template(id, mpath.String(), m.Str); ok && len(t.Secrets()) > 0 {
			c.errAt(CodeInvalidExpression, id, "", mpath, "HTTP node %q: a secret cannot give the method (only the url, headers and body)", id)
		} else if ok && t.Static() && !contains(engine.HTTPMethods, strings.ToUpper(strings.TrimSpace(m.Str))) {
			c.errAt(CodeInvalidConfig, id, "", mpath, "HTTP node %q: method %q is not one of %s", id, m.Str, strings.Join(engine.HTTPMethods, ", "))
		}
	}
	if h := root.Get("headers"); present(h) {
		hpath := base.field("headers")
		if !h.IsObject() {
			c.errAt(CodeInvalidConfig, id, "", hpath, "HTTP node %q: headers must be an object of header name → string", id)
		} else {
			h.ForEach(func(k, v gjson.Result) bool {
				p := hpath.field(k.Str)
				switch {
				case !headerName(k.Str):
					c.errAt(CodeInvalidConfig, id, "", p, "HTTP node %q: %q is not a header name", id, k.Str)
				case v.Type != gjson.String:
					c.errAt(CodeInvalidConfig, id, "", p, "HTTP node %q: header %s must be a string", id, k.Str)
				case strings.ContainsAny(v.Str, "\r\n\x00"):
					c.errAt(CodeInvalidConfig, id, "", p, "HTTP node %q: header %s holds a line break or a NUL", id, k.Str)
				default:
					c.template(id, p.String(), v.Str)
				}
				return true
			})
		}
	}
	if b := root.Get("body"); present(b) {
		c.checkBodyTemplates(id, base.field("body").String(), b)
	}
	c.checkTimeout(id, base, root.Get("timeoutSeconds"))
	c.checkRetry(id, base.field("retry"), root.Get("retry"))
	if sc := root.Get("successCodes"); present(sc) {
		spath := base.field("successCodes")
		if !sc.IsArray() {
			c.errAt(CodeInvalidConfig, id, "", spath, "HTTP node %q: successCodes must be a list of status codes (200) or classes (\"2xx\")", id)
		} else {
			for i, v := range sc.Array() {
				n, isInt := integer(v)
				okCode := isInt && n >= 100 && n <= 599
				okClass := v.Type == gjson.String && len(v.Str) == 3 && v.Str[0] >= '1' && v.Str[0] <= '5' &&
					strings.EqualFold(v.Str[1:], "xx")
				if !okCode && !okClass {
					c.errorf(CodeInvalidConfig, id, "", spath.String()+"["+strconv.Itoa(i)+"]",
						"HTTP node %q: successCodes[%d] is %s, not a status code (100-599) or a class (\"2xx\")", id, i, v.Raw)
				}
			}
		}
	}
	c.checkEntityMovement(id, base.field("entityMovement"), root.Get("entityMovement"))
	if hostTemplated {
		// Wherever in the request its secrets are, the url's template
		// chooses where they go: the server allows that only for secrets
		// with allowed hosts (checked as each request is sent).
		for i := range c.secrets {
			if c.secrets[i].NodeID == id {
				c.secrets[i].HostTemplated = true
			}
		}
	}
}

// template compiles a templated string, reporting invalid_expression at
// path, and notes the secrets it uses; ok is false when it does not
// compile.
func (c *compiler) template(id, path, s string) (*engine.Template, bool) {
	if len(s) > maxTemplateLen {
		c.errorf(CodeInvalidExpression, id, "", path, "node %q: the text is longer than %d characters", id, maxTemplateLen)
		return nil, false
	}
	t, err := engine.ParseTemplate(s)
	if err != nil {
		c.errorf(CodeInvalidExpression, id, "", path, "node %q: %s", id, engine.ExprMessage(err))
		return nil, false
	}
	for _, name := range t.Secrets() {
		c.secrets = append(c.secrets, engine.SecretRef{NodeID: id, Path: path, Name: name})
	}
	for _, src := range t.Exprs() {
		c.noteRefs(id, "", path, src, false)
	}
	return t, true
}

// checkBodyTemplates compiles the templates of every string in a body.
func (c *compiler) checkBodyTemplates(id, path string, v gjson.Result) {
	switch {
	case v.IsObject():
		v.ForEach(func(k, e gjson.Result) bool {
			c.checkBodyTemplates(id, fieldPath(path, k.Str), e)
			return true
		})
	case v.IsArray():
		for i, e := range v.Array() {
			c.checkBodyTemplates(id, path+"["+strconv.Itoa(i)+"]", e)
		}
	case v.Type == gjson.String:
		c.template(id, path, v.Str)
	}
}

// headerName reports whether s is an HTTP header name (an RFC 9110 token).
func headerName(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		b := s[i]
		if b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z' || b >= '0' && b <= '9' || strings.IndexByte("!#$%&'*+-.^_`|~", b) >= 0 {
			continue
		}
		return false
	}
	return true
}
