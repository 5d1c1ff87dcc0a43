package compiler_test

import (
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/stitchd/stitchd/compiler"
)

// uxForm is a UX node asking the data given, a form.
func uxForm(id, form string) compiler.VisualNode {
	return node(id, "UX", `{"prompt": "Refund?", "form": `+form+`}`)
}

func TestCompileFormGood(t *testing.T) {
	t.Parallel()
	const form = `{"$schema": "https://json-schema.org/draft/2020-12/schema", "type": "object", "required": ["amount"],
		"properties": {"amount": {"type": "number", "minimum": 0}, "reason": {"$ref": "#/$defs/reason"},
		"email": {"type": "string", "format": "email"}}, "$defs": {"reason": {"enum": ["late", "damaged"]}}}`
	eg := compileOK(t, graph(nodes(worker("a"), uxForm("ask", form), uxForm("plain", `null`)), chain("e", "a", "ask", "plain")), compiler.Options{})
	require.Contains(t, string(eg.Nodes["ask"].Config), `"form":{"$defs":{"reason":{"enum":["late","damaged"]}}`, "the form is kept in the node's config")
	compileOK(t, graph(nodes(uxForm("any", `{}`))), compiler.Options{})
}

func TestCompileFormProblems(t *testing.T) {
	t.Parallel()
	// A server the forms point at: it must never be asked.
	var asked atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		asked.Add(1)
		_, _ = w.Write([]byte(`{"type": "string"}`))
	}))
	t.Cleanup(srv.Close)

	for _, tc := range []struct {
		name, form string
		want       []prob
		msg        string // substring of the first problem's message
	}{
		{"not an object", `"object"`, []prob{{compiler.CodeInvalidForm, "ask", "", "nodes[1].data.form"}}, "got a string"},
		{"an array", `[{"type": "object"}]`, []prob{{compiler.CodeInvalidForm, "ask", "", "nodes[1].data.form"}}, "got an array"},
		{"a boolean schema", `true`, []prob{{compiler.CodeInvalidForm, "ask", "", "nodes[1].data.form"}}, "must be a JSON Schema object"},
		{"another draft", `{"$schema": "http://json-schema.org/draft-07/schema#", "type": "object"}`,
			[]prob{{compiler.CodeInvalidForm, "ask", "", "nodes[1].data.form.$schema"}}, "draft 2020-12"},
		{"invalid keyword values", `{"type": "object", "required": "amount", "properties": {"amount": {"type": "number", "minimum": "0"},
			"tags": {"type": "array", "items": [{"type": "string"}], "maxItems": -1}}}`, []prob{
			{compiler.CodeInvalidForm, "ask", "", "nodes[1].data.form.properties.amount.minimum"},
			{compiler.CodeInvalidForm, "ask", "", "nodes[1].data.form.properties.tags.items"},
			{compiler.CodeInvalidForm, "ask", "", "nodes[1].data.form.properties.tags.maxItems"},
			{compiler.CodeInvalidForm, "ask", "", "nodes[1].data.form.required"},
		}, "want number"},
		{"an unknown type", `{"anyOf": [{"type": "text"}]}`, []prob{{compiler.CodeInvalidForm, "ask", "", "nodes[1].data.form.anyOf[0].type"}}, "fits none"},
		{"a bad pattern", `{"properties": {"code": {"pattern": "(?=x)"}}}`,
			[]prob{{compiler.CodeInvalidForm, "ask", "", "nodes[1].data.form.properties.code.pattern"}}, "not valid regex"},
		{"a missing $defs entry", `{"$ref": "#/$defs/nope"}`, []prob{{compiler.CodeInvalidForm, "ask", "", "nodes[1].data.form"}}, "not found"},
		{"a remote $ref", `{"properties": {"x": {"$ref": "` + srv.URL + `/schema.json"}}}`,
			[]prob{{compiler.CodeInvalidForm, "ask", "", "nodes[1].data.form"}}, "does not load schemas from URLs (" + srv.URL + "/schema.json)"},
		{"a remote $id", `{"$id": "` + srv.URL + `/", "$ref": "schema.json"}`,
			[]prob{{compiler.CodeInvalidForm, "ask", "", "nodes[1].data.form"}}, "does not load schemas from URLs"},
		{"a remote $schema", `{"$schema": "` + srv.URL + `/meta.json"}`,
			[]prob{{compiler.CodeInvalidForm, "ask", "", "nodes[1].data.form.$schema"}}, "draft 2020-12"},
		{"a file $ref", `{"$ref": "file:///etc/hostname"}`, []prob{{compiler.CodeInvalidForm, "ask", "", "nodes[1].data.form"}}, "does not load schemas from URLs"},
	} {
		ps := compileErr(t, graph(nodes(worker("a"), uxForm("ask", tc.form)), chain("e", "a", "ask")), compiler.Options{})
		require.Equal(t, tc.want, strip(ps), tc.name)
		require.Contains(t, ps[0].Message, tc.msg, tc.name)
		require.Contains(t, ps[0].Message, `UX node "ask"`, tc.name)
	}
	require.Zero(t, asked.Load(), "a form made the compiler fetch a URL")

	// A form's problems are listed with the graph's others, in node order.
	ps := compileErr(t, graph(nodes(uxForm("one", `{"type": 1}`), uxForm("two", `{"minLength": "1"}`), worker("")),
		edges(edge("e1", "one", "two"))), compiler.Options{})
	require.Equal(t, []prob{
		{compiler.CodeInvalidForm, "one", "", "nodes[0].data.form.type"},
		{compiler.CodeInvalidForm, "two", "", "nodes[1].data.form.minLength"},
		{compiler.CodeMissingID, "", "", "nodes[2].id"},
	}, strip(ps))
}
