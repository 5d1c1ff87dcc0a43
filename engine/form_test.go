package engine

import (
	"encoding/json"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// refundForm is the form of the tests: an amount (0 to 500), a reason
// (one of three) and an optional note; nothing else.
const refundForm = `{
  "type": "object",
  "required": ["amount", "reason"],
  "additionalProperties": false,
  "properties": {
    "amount": {"type": "number", "minimum": 0, "maximum": 500},
    "reason": {"enum": ["damaged", "late", "other"]},
    "note": {"type": "string", "maxLength": 20},
    "email": {"type": "string", "format": "email"},
    "tags": {"type": "array", "items": {"$ref": "#/$defs/tag"}}
  },
  "$defs": {"tag": {"type": "string", "pattern": "^[a-z]+$"}}
}`

func TestCompileForm(t *testing.T) {
	t.Parallel()
	_, err := CompileForm(json.RawMessage(refundForm))
	require.NoError(t, err)
	_, err = CompileForm(json.RawMessage(`{"$schema": "https://json-schema.org/draft/2020-12/schema", "type": "string"}`))
	require.NoError(t, err, "the 2020-12 $schema may be named")

	for _, tc := range []struct {
		name, form string
		want       []FormIssue // paths; messages are matched by substring
	}{
		{"not an object", `["type", "object"]`, []FormIssue{{"", "must be a JSON Schema object"}}},
		{"true", `true`, []FormIssue{{"", "must be a JSON Schema object"}}},
		{"another draft", `{"$schema": "http://json-schema.org/draft-07/schema#"}`, []FormIssue{{".$schema", "draft 2020-12"}}},
		{"bad keyword values", `{"type": "objekt", "properties": {"n": {"minimum": "zero"}}, "required": "n"}`, []FormIssue{
			{".properties.n.minimum", "want number"},
			{".required", "want array"},
			{".type", "fits none of the alternatives"},
		}},
		{"array index", `{"allOf": [{"type": "string"}, {"maxLength": -1}]}`, []FormIssue{{".allOf[1].maxLength", "minimum"}}},
		{"remote $ref", `{"$ref": "https://example.com/schema.json"}`, []FormIssue{{"", "does not load schemas from URLs (https://example.com/schema.json)"}}},
		{"relative $ref", `{"properties": {"a": {"$ref": "other.json"}}}`, []FormIssue{{"", "does not load schemas from URLs (other.json)"}}},
		{"file $ref", `{"$ref": "file:///etc/passwd"}`, []FormIssue{{"", "does not load schemas from URLs (file:///etc/passwd)"}}},
		{"remote $id then $ref", `{"$id": "http://127.0.0.1:9/s.json", "$ref": "t.json"}`, []FormIssue{{"", "does not load schemas from URLs (http://127.0.0.1:9/t.json)"}}},
		{"bad pattern", `{"pattern": "(?<=a)b"}`, []FormIssue{{".pattern", "is not valid regex"}}},
	} {
		_, err := CompileForm(json.RawMessage(tc.form))
		var se *FormSchemaError
		require.ErrorAs(t, err, &se, "%s: %v", tc.name, err)
		require.Len(t, se.Issues, len(tc.want), "%s: %+v", tc.name, se.Issues)
		for i, w := range tc.want {
			require.Equal(t, w.Path, se.Issues[i].Path, "%s: %+v", tc.name, se.Issues)
			require.Contains(t, se.Issues[i].Message, w.Message, tc.name)
		}
	}
}

func TestFormCheck(t *testing.T) {
	t.Parallel()
	f, err := CompileForm(json.RawMessage(refundForm))
	require.NoError(t, err)
	require.Empty(t, f.Check(json.RawMessage(`{"amount": 20, "reason": "late"}`)))
	require.Empty(t, f.Check(json.RawMessage(`{"amount": 500, "reason": "other", "note": "ok", "email": "a@example.com", "tags": ["x", "yz"]}`)))

	for _, tc := range []struct {
		answer string
		want   []FormIssue
	}{
		{``, []FormIssue{{"", "got null, want object"}}},
		{`null`, []FormIssue{{"", "got null, want object"}}},
		{`{"amount": -1, "reason": "bored", "extra": 1}`, []FormIssue{
			{"", "additional properties 'extra' not allowed"},
			{".amount", "minimum: got -1, want 0"},
			{".reason", "value must be one of"},
		}},
		{`{"reason": "late", "note": "far too long a note, really", "email": "nope", "tags": ["ok", "Bad"]}`, []FormIssue{
			{"", "missing property 'amount'"},
			{".email", "is not valid email"},
			{".note", "maxLength"},
			{".tags[1]", "does not match pattern"},
		}},
	} {
		got := f.Check(json.RawMessage(tc.answer))
		require.Len(t, got, len(tc.want), "%s: %+v", tc.answer, got)
		for i, w := range tc.want {
			require.Equal(t, w.Path, got[i].Path, "%s: %+v", tc.answer, got)
			require.Contains(t, got[i].Message, w.Message, tc.answer)
		}
	}

	// anyOf: one issue naming what each alternative missed.
	f, err = CompileForm(json.RawMessage(`{"properties": {"contact": {"anyOf": [{"required": ["email"]}, {"required": ["phone"]}]}}}`))
	require.NoError(t, err)
	got := f.Check(json.RawMessage(`{"contact": {"name": "ada"}}`))
	require.Len(t, got, 1, "%+v", got)
	require.Equal(t, ".contact", got[0].Path)
	require.Contains(t, got[0].Message, "(1) missing property 'email'")
	require.Contains(t, got[0].Message, "(2) missing property 'phone'")
}

func TestCheckForm(t *testing.T) {
	t.Parallel()
	n := &Node{ID: "refund", Type: NodeTypeUX, Config: json.RawMessage(`{"prompt": "Refund?", "form": ` + refundForm + `}`)}
	err := checkForm(&FormCache{}, n, "refund_2", "approve", CompleteUXParams{Outcome: "approve", Output: json.RawMessage(`{"amount": 900, "reason": "x"}`)})
	var fe *FormError
	require.ErrorAs(t, err, &fe, "%v", err)
	require.ErrorIs(t, err, ErrInvalidRequest, "a refused answer is a bad request")
	require.Equal(t, "refund_2", fe.Key)
	require.Equal(t, []Problem{
		{Code: CodeFormInvalid, NodeID: "refund", Path: "$.output.amount", Message: "maximum: got 900, want 500"},
		{Code: CodeFormInvalid, NodeID: "refund", Path: "$.output.reason", Message: `value must be one of 'damaged', 'late', 'other'`},
	}, fe.Problems)
	require.Contains(t, err.Error(), "refund_2")

	require.NoError(t, checkForm(&FormCache{}, n, "refund", "approve", CompleteUXParams{Output: json.RawMessage(`{"amount": 1, "reason": "late"}`)}))
	require.Error(t, checkForm(&FormCache{}, n, "refund", "approve", CompleteUXParams{}), "no answer is null, which the form refuses")
	require.NoError(t, checkForm(&FormCache{}, n, "refund", "approve", CompleteUXParams{timedOut: true}), "a deadline's answer is not checked")
	require.NoError(t, checkForm(&FormCache{}, n, "refund", "reject", CompleteUXParams{}), "reject needs no form (default formOutcomes)")
	esc := &Node{ID: "esc", Type: NodeTypeUX, Config: json.RawMessage(`{"outcomes": ["approve", "reject", "escalate"], "formOutcomes": ["approve", "reject"], "form": ` + refundForm + `}`)}
	require.Error(t, checkForm(&FormCache{}, esc, "esc", "reject", CompleteUXParams{}), "formOutcomes names reject")
	require.NoError(t, checkForm(&FormCache{}, esc, "esc", "escalate", CompleteUXParams{}), "formOutcomes leaves escalate out")
	require.Equal(t, []string{"approve", "escalate"}, FormOutcomes(&Node{Config: json.RawMessage(`{"outcomes": ["approve", "reject", "escalate"]}`)}))
	require.NoError(t, checkForm(&FormCache{}, &Node{ID: "plain", Config: json.RawMessage(`{"prompt": "ok?"}`)}, "plain", "approve", CompleteUXParams{}))
	require.NoError(t, checkForm(&FormCache{}, &Node{ID: "null", Config: json.RawMessage(`{"form": null}`)}, "null", "approve", CompleteUXParams{}))
	// A form that does not compile (saved before forms were checked) is
	// not enforced.
	require.NoError(t, checkForm(&FormCache{}, &Node{ID: "old", Config: json.RawMessage(`{"form": {"type": 5}}`)}, "old", "approve", CompleteUXParams{}))
}

// nestedAnyOf is the red team's schema: n levels of
// anyOf:[{$ref next},{$ref next}] over a string, 3·2^n subschemas written
// out.
func nestedAnyOf(n int) json.RawMessage {
	defs := map[string]any{}
	for k := 0; k < n; k++ {
		next := map[string]any{"$ref": fmt.Sprintf("#/$defs/s%d", k+1)}
		defs[fmt.Sprintf("s%d", k)] = map[string]any{"anyOf": []any{next, next}}
	}
	defs[fmt.Sprintf("s%d", n)] = map[string]any{"type": "string"}
	b, err := json.Marshal(map[string]any{"$defs": defs, "$ref": "#/$defs/s0"})
	if err != nil {
		panic(err) // maps of strings and slices always marshal
	}
	return b
}

// TestFormExpansionBounded: a form whose $refs multiply past
// MaxFormExpansion subschemas is refused when it is compiled (22 levels
// took 74 s and 8.6 GB to check the answer 1); one just within answers
// at once with a bounded message; a recursive form (a tree) is not
// counted past its recursion.
func TestFormExpansionBounded(t *testing.T) {
	t.Parallel()
	start := time.Now()
	for _, n := range []int{12, 22, 40} {
		_, err := CompileForm(nestedAnyOf(n))
		var se *FormSchemaError
		require.ErrorAs(t, err, &se, "n=%d", n)
		require.Contains(t, se.Error(), "more than 10000 subschemas", "n=%d", n)
	}
	require.Less(t, time.Since(start), 10*time.Second) // unbounded: minutes

	f, err := CompileForm(nestedAnyOf(11))
	require.NoError(t, err)
	start = time.Now()
	issues := f.Check(json.RawMessage(`1`))
	require.Less(t, time.Since(start), 10*time.Second) // unbounded: minutes
	require.NotEmpty(t, issues)
	size := 0
	for _, is := range issues {
		size += len(is.Path) + len(is.Message)
	}
	require.Less(t, size, maxFormIssues*(maxIssueMessage+100))

	tree := `{"$defs": {"node": {"type": "object", "properties": {"name": {"type": "string"},
		"and": {"type": "array", "items": {"$ref": "#/$defs/node"}}, "or": {"type": "array", "items": {"$ref": "#/$defs/node"}}}}},
		"$ref": "#/$defs/node"}`
	f, err = CompileForm(json.RawMessage(tree))
	require.NoError(t, err)
	require.Empty(t, f.Check(json.RawMessage(`{"and": [{"name": "a"}, {"or": [{"name": "b"}]}]}`)))
}

// TestFormRecursionThatBranchesRefused: a schema that refers back to
// itself through two alternatives at the same level of the answer checks
// an answer n levels deep in 2^n steps (30 levels of [[[…"x"]]]: minutes)
// and is refused when compiled; recursion taken once a level — a tree, a
// linked list — compiles and checks deep answers at once.
func TestFormRecursionThatBranchesRefused(t *testing.T) {
	t.Parallel()
	for _, src := range []string{
		`{"$defs": {"n": {"anyOf": [{"type": "array", "items": {"$ref": "#/$defs/n"}},
			{"type": "array", "prefixItems": [{"$ref": "#/$defs/n"}]}]}}, "$ref": "#/$defs/n"}`,
		`{"$defs": {"n": {"type": "object", "properties": {"next": {"oneOf": [{"$ref": "#/$defs/n"}, {"$ref": "#/$defs/n"}]}}}}, "$ref": "#/$defs/n"}`,
	} {
		_, err := CompileForm(json.RawMessage(src))
		var se *FormSchemaError
		require.ErrorAs(t, err, &se, src)
		require.Contains(t, se.Error(), "refers back to itself through more than one alternative", src)
	}
	list := `{"$defs": {"n": {"type": "object", "properties": {"v": {"type": "integer"},
		"next": {"anyOf": [{"type": "null"}, {"$ref": "#/$defs/n"}]}}}}, "$ref": "#/$defs/n"}`
	f, err := CompileForm(json.RawMessage(list))
	require.NoError(t, err)
	deep := strings.Repeat(`{"v": 1, "next": `, 60) + `"x"` + strings.Repeat("}", 60)
	start := time.Now()
	require.NotEmpty(t, f.Check(json.RawMessage(deep)))
	require.Less(t, time.Since(start), 10*time.Second) // unbounded: minutes
}

// TestFormCheckWorkBounded: a schema within MaxFormExpansion (4,095
// subschemas of nested anyOf) checked against an array of 1,000 numbers
// took 9 s and 3 s for 100 items, and a 1 MiB array would take hours;
// the check ends at MaxFormWork evaluations, or at MaxFormTime on the
// cache's clock, with one issue saying so. Ordinary checks are not
// touched.
func TestFormCheckWorkBounded(t *testing.T) {
	t.Parallel()
	var doc map[string]any
	require.NoError(t, json.Unmarshal(nestedAnyOf(11), &doc))
	doc["type"], doc["items"] = "array", map[string]any{"$ref": doc["$ref"]}
	delete(doc, "$ref")
	raw, err := json.Marshal(doc)
	require.NoError(t, err)
	f, err := CompileForm(raw)
	require.NoError(t, err)
	body := json.RawMessage("[" + strings.TrimSuffix(strings.Repeat("1,", 5000), ",") + "]")
	issues := f.Check(body)
	require.Len(t, issues, 1)
	require.Contains(t, issues[0].Message, "more work to check than a check may do (1000000 schema evaluations")

	// On a clock that moves a millisecond a reading, the time ends it
	// first.
	var ms atomic.Int64
	cache := &FormCache{Now: func() time.Time { return time.Unix(0, ms.Add(1)*int64(time.Millisecond)) }}
	f, err = cache.Get(raw)
	require.NoError(t, err)
	issues = f.Check(body)
	require.Len(t, issues, 1)
	require.Contains(t, issues[0].Message, "more work to check")
	require.Less(t, ms.Load(), int64(MaxFormWork/256)+10, "stopped by time, before the count")

	// The same form checks a good answer, and again (the count starts
	// over each check).
	for range 3 {
		require.Empty(t, f.Check(json.RawMessage(`["a", "b"]`)))
	}
}

// TestFormIssuesBounded: what a refused answer reports is bounded however
// many ways it fails: at most maxFormIssues issues, the first
// maxFormAlternatives alternatives of an anyOf, messages cut.
func TestFormIssuesBounded(t *testing.T) {
	t.Parallel()
	f, err := CompileForm(json.RawMessage(`{"type": "array", "items": {"type": "string"}}`))
	require.NoError(t, err)
	issues := f.Check(json.RawMessage("[" + strings.TrimSuffix(strings.Repeat("1,", 1000), ",") + "]"))
	require.Len(t, issues, maxFormIssues+1)
	require.Equal(t, "and more problems not listed", issues[maxFormIssues].Message)

	alts := make([]any, 50)
	for i := range alts {
		alts[i] = map[string]any{"required": []string{fmt.Sprintf("field_%d_%s", i, strings.Repeat("x", 100))}}
	}
	wide, err := json.Marshal(map[string]any{"anyOf": alts})
	require.NoError(t, err)
	f, err = CompileForm(wide)
	require.NoError(t, err)
	issues = f.Check(json.RawMessage(`{}`))
	require.Len(t, issues, 1)
	require.Contains(t, issues[0].Message, "(5) ")
	require.NotContains(t, issues[0].Message, "(6) ")
	require.Contains(t, issues[0].Message, "and 45 more")
	require.LessOrEqual(t, len(issues[0].Message), maxIssueMessage+len("…"))
}

func TestFormOrder(t *testing.T) {
	t.Parallel()
	form := json.RawMessage(`{"type": "object", "required": ["zeta"], "properties": {"zeta": {"type": "string"},
		"alpha": {"type": "object", "properties": {"b": {"type": "number"}, "a": {"type": "string"}}},
		"mid": {"type": "array", "items": {"type": "object", "properties": {"y": {}, "x": {}}}}}}`)
	rec, err := RecordFormOrder(form)
	require.NoError(t, err)
	// What the stored graph does: keys sorted.
	var v any
	require.NoError(t, json.Unmarshal(rec, &v))
	sorted, err := json.Marshal(v)
	require.NoError(t, err)
	require.Contains(t, string(sorted), `"x-order":["zeta","alpha","mid"]`)
	require.Contains(t, string(sorted), `"x-order":["b","a"]`)
	require.Contains(t, string(sorted), `"x-order":["y","x"]`)
	got := string(OrderedForm(sorted))
	require.Regexp(t, `"properties":\{"zeta":.*"alpha":\{.*"properties":\{"b":.*"a":.*"mid":`, got)
	require.Contains(t, got, `"properties":{"y":{},"x":{}}`)
	f, err := CompileForm(rec)
	require.NoError(t, err, "x-order is no keyword the schema minds")
	require.Empty(t, f.Check(json.RawMessage(`{"zeta": "z"}`)))
	require.JSONEq(t, `[1]`, string(OrderedForm(json.RawMessage(`[1]`))))
	require.Nil(t, OrderedForm(nil))
}

// TestGraphForms: a graph's forms are found however the key is spelled
// (plainly, or escaped as \u0066orm), and a graph without one is handed
// back as it came, unread.
func TestGraphForms(t *testing.T) {
	t.Parallel()
	form := `{"type":"object","properties":{"b":{},"a":{}}}`
	for _, key := range []string{`"form"`, `"\u0066orm"`} {
		graph := json.RawMessage(`{"nodes":[{"id":"x","type":"UX","data":{` + key + `:` + form + `}}],"edges":[]}`)
		got, err := RecordFormOrders(graph)
		require.NoError(t, err)
		require.Contains(t, string(got), `"x-order":["b","a"]`, "key %s", key)
	}
	plain := json.RawMessage(`{"nodes":[{"id":"x","type":"UX","data":{"notes":"` + strings.Repeat("x", 1<<10) + `"}}],"edges":[]}`)
	got, err := RecordFormOrders(plain)
	require.NoError(t, err)
	require.Same(t, &plain[0], &got[0], "no form: the graph itself")
	require.Same(t, &plain[0], &OrderGraphForms(plain)[0])
}
