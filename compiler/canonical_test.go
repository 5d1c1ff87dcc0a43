package compiler_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/stitchd/stitchd/compiler"
)

func TestCanonical(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, in, want string
	}{
		{"scalar number kept as written", ` 1.50e+3 `, `1.50e+3`},
		{"negative zero", `-0`, `-0`},
		{"literals", `[true, false, null]`, `[true,false,null]`},
		{"empty containers", `{ "a" : [ ] , "b" : { } }`, `{"a":[],"b":{}}`},
		{"keys sorted recursively", `{"b":1,"a":{"z":[{"y":2,"x":1}],"m":null}}`, `{"a":{"m":null,"z":[{"x":1,"y":2}]},"b":1}`},
		{"array order kept", `[3,1,2]`, `[3,1,2]`},
		{"string escapes normalized", `"\u0041\/\t\u00e9\"\\\u001f"`, `"A/\té\"\\\u001f"`},
		{"non-ASCII kept literal", `{"é":"ü","e":"<&>"}`, `{"e":"<&>","é":"ü"}`},
		{"escaped keys sorted by value", `{"\u0062":1,"a":2}`, `{"a":2,"b":1}`},
		{"duplicate keys: last wins", `{"a":1,"b":2,"a":3}`, `{"a":3,"b":2}`},
		{"sorted duplicate keys: last wins", `{"a":1,"a":2}`, `{"a":2}`},
		{"unpaired surrogate", `"\ud800"`, "\"\ufffd\""},
		{"invalid UTF-8 replaced", "\"a\xffb\"", "\"a\ufffdb\""},
		{"control chars", `"\b\f\n\r\u0000"`, `"\b\f\n\r\u0000"`},
		{"deep nesting", `[[[[{"b":[{"d":1,"c":2}],"a":0}]]]]`, `[[[[{"a":0,"b":[{"c":2,"d":1}]}]]]]`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := compiler.Canonical([]byte(tt.in))
			require.NoError(t, err)
			require.Equal(t, tt.want, string(got))
			require.True(t, json.Valid(got))
			again, err := compiler.Canonical(got)
			require.NoError(t, err)
			require.Equal(t, string(got), string(again), "canonical form is a fixed point")
		})
	}
}

func TestCanonicalInvalid(t *testing.T) {
	t.Parallel()
	for _, in := range []string{``, `   `, `{`, `{"a":}`, `[1,]`, `{"a":1}{}`, `nul`, `'x'`, `{a:1}`} {
		_, err := compiler.Canonical([]byte(in))
		require.Error(t, err, "input %q", in)
	}
}

func TestCanonicalDetectsChanges(t *testing.T) {
	t.Parallel()
	canon := func(s string) string {
		b, err := compiler.Canonical([]byte(s))
		require.NoError(t, err)
		return string(b)
	}
	saved := canon(apiExample)

	// Reordered keys and different whitespace: no change.
	reordered := `{"edges":[{"target":"split","source":"fetch","id":"e1"},{"id":"e2","source":"split","target":"score"},
	  {"id":"e3","source":"score","target":"merge"},{"data":{"mapping":{"scores":"@this"}},"id":"e4","source":"merge","target":"approve"}],
	  "nodes":[{"type":"Worker","id":"fetch","position":{"y":0,"x":0},"data":{"webhookUrl":"http://worker.local/fetch","label":"Fetch leads",
	  "retry":{"maxDelayMs":60000,"maxAttempts":3,"backoff":"exponential","initialDelayMs":1000},"timeoutSeconds":300,
	  "entityMovement":{"onFailure":{"completeAs":"neutral","targetSectionId":"nurture"},"onSuccess":{"setEntityType":"customer","targetSectionId":"qualified","completeAs":"success"}}}},
	  {"data":{"arrayPath":"leads"},"type":"Splitter","id":"split"},{"id":"score","type":"Worker","data":{"webhookUrl":"http://worker.local/score"}},
	  {"id":"merge","type":"Collector","data":{}},{"id":"approve","type":"UX","data":{"prompt":"Send these leads to sales?","label":"Approve the batch"}}]}`
	require.Equal(t, saved, canon(reordered))

	// A moved node is a change.
	moved := []byte(apiExample)
	v, err := compiler.ParseVisual(moved)
	require.NoError(t, err)
	require.JSONEq(t, `{"x":0,"y":0}`, string(v.Nodes[0].Position))
	movedSrc := replaceOnce(t, apiExample, `"position": {"x": 0, "y": 0}`, `"position": {"x": 10, "y": 0}`)
	require.NotEqual(t, saved, canon(movedSrc))

	// So is a reordered node list (node order is part of the saved document).
	swapped := replaceOnce(t, apiExample, `{"id": "split", "type": "Splitter", "data": {"arrayPath": "leads"}},`, ``)
	swapped = replaceOnce(t, swapped, `{"id": "approve"`, `{"id": "split", "type": "Splitter", "data": {"arrayPath": "leads"}}, {"id": "approve"`)
	require.NotEqual(t, saved, canon(swapped))
}

func replaceOnce(t *testing.T, s, old, repl string) string {
	t.Helper()
	i := indexOf(s, old)
	require.GreaterOrEqual(t, i, 0, "%q not found", old)
	return s[:i] + repl + s[i+len(old):]
}

func indexOf(s, sub string) int {
	for i := 0; i+len(sub) <= len(s); i++ {
		if s[i:i+len(sub)] == sub {
			return i
		}
	}
	return -1
}

func TestParseVisual(t *testing.T) {
	t.Parallel()
	v, err := compiler.ParseVisual([]byte(apiExample))
	require.NoError(t, err)
	require.Len(t, v.Nodes, 5)
	require.Len(t, v.Edges, 4)
	require.Equal(t, "fetch", v.Nodes[0].ID)
	require.Equal(t, "Worker", v.Nodes[0].Type)
	require.JSONEq(t, `{"mapping":{"scores":"@this"}}`, string(v.Edges[3].Data))
	require.Empty(t, v.Edges[0].Data)

	v, err = compiler.ParseVisual([]byte(`{"nodes":[{"id":"a","type":"Worker","style":{"w":1},"selected":true}],"viewport":{}}`))
	require.NoError(t, err, "unknown fields are ignored")
	require.Equal(t, "a", v.Nodes[0].ID)

	v, err = compiler.ParseVisual([]byte(` {} `))
	require.NoError(t, err)
	require.Empty(t, v.Nodes)
	_, err = compiler.Compile(v, builtins)
	require.ErrorContains(t, err, "no nodes")
}

func TestParseVisualErrors(t *testing.T) {
	t.Parallel()
	for _, in := range []string{
		``,
		`null`,
		`[]`,
		`"graph"`,
		`{"nodes":`,
		`{"nodes":{}}`,
		`{"nodes":[1]}`,
		`{"nodes":[null]}`,
		`{"nodes":[{"id":5}]}`,
		`{"nodes":[{"id":"a","type":["Worker"]}]}`,
		`{"edges":[null]}`,
		`{"edges":[{"id":"e","source":1}]}`,
		`{"edges":"x"}`,
		`{"nodes":[]} trailing`,
	} {
		_, err := compiler.ParseVisual([]byte(in))
		require.Error(t, err, "input %q", in)
		var cerr *compiler.Error
		require.NotErrorAs(t, err, &cerr)
	}
}
