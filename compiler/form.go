package compiler

import (
	"errors"

	"github.com/stitchd/stitchd/engine"
	"github.com/tidwall/gjson"
)

// checkForm checks a UX node's data.form: absent, null, or a JSON object
// that compiles as a draft 2020-12 JSON Schema (engine.CompileForm: no
// schema loaded from a URL). Each issue is a problem at its place in the
// form.
func (c *compiler) checkForm(id string, path loc, r gjson.Result) {
	if !present(r) {
		return
	}
	if !r.IsObject() {
		c.errAt(CodeInvalidForm, id, "", path, "UX node %q: form must be a JSON Schema object ({\"type\": \"object\", \"properties\": …}), got %s", id, jsonKind(r))
		return
	}
	_, err := engine.CompileForm([]byte(r.Raw))
	var se *engine.FormSchemaError
	switch {
	case err == nil:
	case errors.As(err, &se):
		at := path.String()
		for _, is := range se.Issues {
			c.errorf(CodeInvalidForm, id, "", at+is.Path, "UX node %q: form: %s", id, is.Message)
		}
	default:
		c.errAt(CodeInvalidForm, id, "", path, "UX node %q: form: %v", id, err)
	}
}

// jsonKind names the kind of a JSON value ("an array").
func jsonKind(r gjson.Result) string {
	switch {
	case r.IsObject():
		return "an object"
	case r.IsArray():
		return "an array"
	case r.Type == gjson.String:
		return "a string"
	case r.Type == gjson.Number:
		return "a number"
	case r.Type == gjson.True || r.Type == gjson.False:
		return "a boolean"
	}
	return "null"
}
