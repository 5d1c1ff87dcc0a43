package compiler_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/stitchd/stitchd/compiler"
)

// TestStepRefsChecked: an expression may read steps.<id> of a step that
// runs before it (not inside a fan-out it is outside of) and item only
// inside a fan-out; every other reference is refused at save, naming the
// id, at the expression's path.
func TestStepRefsChecked(t *testing.T) {
	t.Parallel()
	tf := func(id, expr string) compiler.VisualNode {
		return node(id, "Transform", `{"expression": `+quoteJSON(expr)+`}`)
	}
	ok := graph(nodes(worker("a"), tf("b", `steps.a.output.x`), tf("c", `steps.a.input.y + steps.b.output`),
		node("s", "Splitter", `{"arrayPath": "xs"}`), tf("in", `{"i": item.index, "k": item.key, "a": steps.a.output}`),
		tf("in2", `steps["in"].output.i`), node("m", "Collector", `{}`), tf("after", `steps.m.output`)),
		edges(edge("e1", "a", "b"), edge("e2", "b", "c"), edge("e3", "c", "s"), edge("e4", "s", "in"), edge("e5", "in", "in2"),
			edge("e6", "in2", "m"), edgeData("e7", "m", "after", `{"condition": "len(steps.m.output) > 0 && steps.a.output.ok"}`)))
	compileOK(t, ok, compiler.Options{})

	for name, tc := range map[string]struct {
		g       compiler.VisualGraph
		path    string
		message string
	}{
		"an unknown id": {graph(nodes(worker("a"), tf("b", `steps.nope.output`)), chain("e", "a", "b")),
			"nodes[1].data.expression", `steps.nope: no step has the id "nope"`},
		"a step that runs after": {graph(nodes(tf("a", `steps.b.output`), worker("b")), chain("e", "a", "b")),
			"nodes[0].data.expression", `steps.b does not run before a`},
		"a parallel branch": {graph(nodes(worker("r"), worker("x"), tf("y", `steps.x.output`)), edges(edge("e1", "r", "x"), edge("e2", "r", "y"))),
			"nodes[2].data.expression", `steps.x does not run before y`},
		"itself": {graph(nodes(tf("a", `steps.a.output`))), "nodes[0].data.expression", `steps.a is the step itself`},
		"inside a fan-out, from after it": {graph(nodes(node("s", "Splitter", `{"arrayPath": "xs"}`), worker("w"), node("m", "Collector", `{}`), tf("t", `steps.w.output`)),
			chain("e", "s", "w", "m", "t")), "nodes[3].data.expression", `steps.w runs once per item of splitter "s"`},
		"item outside a fan-out":     {graph(nodes(tf("a", `item.index`))), "nodes[0].data.expression", `item is known only inside a fan-out region`},
		"a step named by a variable": {graph(nodes(tf("a", `steps[input.which].output`))), "nodes[0].data.expression", `steps must be followed by a step's id`},
		"in a condition": {graph(nodes(worker("a"), worker("b")), edges(edgeData("e1", "a", "b", `{"condition": "steps.zz.output > 1"}`))),
			"edges[0].data.condition", `steps.zz: no step has the id "zz"`},
		"in a template": {graph(nodes(worker("a"), node("h", "HTTP", `{"url": "https://api.example.com/{{ steps.ghost.output.id }}"}`)), chain("e", "a", "h")),
			"nodes[1].data.url", `steps.ghost: no step has the id "ghost"`},
	} {
		t.Run(name, func(t *testing.T) {
			ps := compileErr(t, tc.g, compiler.Options{})
			require.Len(t, ps, 1, "%+v", ps)
			require.Equal(t, compiler.CodeInvalidExpression, ps[0].Code, "%+v", ps[0])
			require.Equal(t, tc.path, ps[0].Path)
			require.Contains(t, ps[0].Message, tc.message)
		})
	}
}

func quoteJSON(s string) string {
	b, _ := json.Marshal(s) // a string always marshals
	return string(b)
}

// TestVariablesChecked: a node may set run variables (data.setVariables)
// outside fan-outs, one writer at a time, and an expression may read one
// that some node sets; everything else is refused at save.
func TestVariablesChecked(t *testing.T) {
	t.Parallel()
	sets := func(id, typ, data, vars string) compiler.VisualNode {
		if data == "" {
			data = "{}"
		}
		d := data[:len(data)-1]
		if len(d) > 1 {
			d += ","
		}
		return node(id, typ, d+`"setVariables": `+vars+`}`)
	}
	tf := func(id, expr string) compiler.VisualNode {
		return node(id, "Transform", `{"expression": `+quoteJSON(expr)+`}`)
	}
	eg := compileOK(t, graph(nodes(sets("a", "Worker", `{"webhookUrl": "http://w.example/a"}`, `{"total": "output.n * 2", "first": "steps.a.output.n"}`),
		sets("b", "Transform", `{"expression": "vars.total"}`, `{"total": "vars.total + output"}`), tf("c", `vars.total + len(vars.first)`)),
		chain("e", "a", "b", "c")), compiler.Options{})
	require.Equal(t, map[string]map[string]string{"a": {"total": "output.n * 2", "first": "steps.a.output.n"}, "b": {"total": "vars.total + output"}}, eg.SetVariables)

	for name, tc := range map[string]struct {
		g       compiler.VisualGraph
		code    string
		path    string
		message string
	}{
		"read, never set": {graph(nodes(tf("a", `vars.nope`))), compiler.CodeInvalidExpression, "nodes[0].data.expression", `vars.nope: no step sets variable "nope"`},
		"set in a fan-out": {graph(nodes(node("s", "Splitter", `{"arrayPath": "xs"}`), sets("w", "Transform", `{"expression": "1"}`, `{"x": "output"}`), node("m", "Collector", `{}`)),
			chain("e", "s", "w", "m")), compiler.CodeInvalidConfig, "nodes[1].data.setVariables.x", `inside the fan-out of splitter "s"`},
		"two at once": {graph(nodes(worker("r"), sets("x", "Transform", `{"expression": "1"}`, `{"v": "1"}`), sets("y", "Transform", `{"expression": "2"}`, `{"v": "2"}`)),
			edges(edge("e1", "r", "x"), edge("e2", "r", "y"))), compiler.CodeInvalidConfig, "nodes[2].data.setVariables.v", `may run at once, and both set variable v`},
		"a bad name":               {graph(nodes(sets("a", "Transform", `{"expression": "1"}`, `{"1st": "output"}`))), compiler.CodeInvalidConfig, `nodes[0].data.setVariables["1st"]`, `"1st" is not a variable name`},
		"a bad expression":         {graph(nodes(sets("a", "Transform", `{"expression": "1"}`, `{"v": "output +"}`))), compiler.CodeInvalidExpression, "nodes[0].data.setVariables.v", `variable v:`},
		"not an object":            {graph(nodes(sets("a", "Transform", `{"expression": "1"}`, `["v"]`))), compiler.CodeInvalidConfig, "nodes[0].data.setVariables", `must be an object`},
		"a variable by a variable": {graph(nodes(tf("a", `vars[input.k]`))), compiler.CodeInvalidExpression, "nodes[0].data.expression", `vars must be followed by a variable's name`},
	} {
		t.Run(name, func(t *testing.T) {
			ps := compileErr(t, tc.g, compiler.Options{})
			require.Len(t, ps, 1, "%+v", ps)
			require.Equal(t, tc.code, ps[0].Code, "%+v", ps[0])
			require.Equal(t, tc.path, ps[0].Path)
			require.Contains(t, ps[0].Message, tc.message)
		})
	}
}

// TestShapeWarnings: reading a field a step cannot have made saves, with
// a warning saying where the field is: after an HTTP step (its response),
// a Collector (its items), or an edge that maps other fields.
func TestShapeWarnings(t *testing.T) {
	t.Parallel()
	tf := func(id, expr string) compiler.VisualNode {
		return node(id, "Transform", `{"expression": `+quoteJSON(expr)+`}`)
	}
	http := node("budget", "HTTP", `{"url": "https://api.example.com/budget"}`)
	eg := compileOK(t, graph(nodes(worker("req"), http, tf("calc", `input.amount > 10 && input.body.ok && input.status == 200`),
		node("s", "Splitter", `{"arrayPath": "xs"}`), worker("w"), node("m", "Collector", `{}`), tf("after", `len(input.items) + len(input.m)`),
		tf("mapped", `input.total + input.other`)),
		edges(edge("e1", "req", "budget"), edgeData("e2", "budget", "calc", `{"condition": "output.amount > 1 && output.status == 200"}`),
			edge("e3", "calc", "s"), edge("e4", "s", "w"), edge("e5", "w", "m"), edge("e6", "m", "after"),
			edgeData("e7", "after", "mapped", `{"mapping": {"total": "@this"}}`))), compiler.Options{})
	var got []string
	for _, w := range eg.Warnings {
		if w.Code == compiler.CodeUnknownPath {
			got = append(got, w.Path+" "+w.Message)
		}
	}
	require.Len(t, got, 4, "%v", got)
	require.Contains(t, got[0]+got[1]+got[2]+got[3], `nodes[2].data.expression node "calc": input.amount: the input here is the response of HTTP step "budget"`)
	require.Contains(t, got[0]+got[1]+got[2]+got[3], `edges[1].data.condition edge "e2": output.amount: the output of HTTP step "budget" is its response {status, headers, body}; did you mean output.body.amount?`)
	require.Contains(t, got[0]+got[1]+got[2]+got[3], `node "after": input.items: the input here is {"m": [the items' outputs]} from Collector "m"`)
	require.Contains(t, got[0]+got[1]+got[2]+got[3], `node "mapped": input.other: the edge from "after" maps only total into the input`)
}
