package engine

import (
	"fmt"
	"sync"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// MaxFormExpansion bounds the subschemas a form (or a trigger's
// input_schema) holds once every $ref is written out in place. Validation
// evaluates each of them, and reports each that fails, so shared
// definitions referred to from nested anyOf/oneOf/allOf multiply: 22
// levels of anyOf:[{$ref next},{$ref next}] are 4 million subschemas, a
// 74-second validation and gigabytes of error. A hand-written form has
// tens to hundreds.
const MaxFormExpansion = 10_000

// expansion counts the subschemas of s with every $ref written out, up to
// more than limit (it stops counting there). A $ref back to a schema being
// counted (recursion, which follows the instance's own nesting) counts
// once.
func expansion(s *jsonschema.Schema, limit int) int {
	memo := map[*jsonschema.Schema]int{}
	onStack := map[*jsonschema.Schema]bool{}
	var count func(s *jsonschema.Schema) int
	count = func(s *jsonschema.Schema) int {
		if s == nil {
			return 0
		}
		if n, ok := memo[s]; ok {
			return n
		}
		if onStack[s] {
			return 1
		}
		onStack[s] = true
		n := 1
		for _, sub := range subschemas(s) {
			if n += count(sub); n > limit {
				break
			}
		}
		onStack[s] = false
		memo[s] = n
		return n
	}
	return count(s)
}

// Bounds on one check of an answer against a form, whatever the form and
// the answer: the schema evaluations it makes (each may add an error to
// the library's tree) and its time. A schema within MaxFormExpansion
// checked against a 1 MiB array can still make billions of evaluations,
// and the library cannot be told to stop: the check counts them through a
// vocabulary of its own applied to every subschema, and is ended there.
const (
	MaxFormWork = 1_000_000
	MaxFormTime = time.Second
)

// errFormWork is a check ended at its bounds.
var errFormWork = fmt.Errorf("the answer is more work to check than a check may do (%d schema evaluations, %s): "+
	"send a smaller answer, or simplify the schema", MaxFormWork, MaxFormTime)

// formWork counts one check's evaluations. A form's checks take turns:
// the count is the form's (the library gives its vocabularies no state of
// a check's own).
type formWork struct {
	mu       sync.Mutex
	n        int
	now      func() time.Time
	deadline time.Time
}

// stop is the panic that ends a check at its bounds.
type stop struct{}

func (w *formWork) vocabulary() *jsonschema.Vocabulary {
	return &jsonschema.Vocabulary{URL: "stitchd:///vocab/work",
		Compile: func(*jsonschema.CompilerContext, map[string]any) (jsonschema.SchemaExt, error) {
			return workExt{w}, nil
		}}
}

// workExt is applied with every subschema: one evaluation.
type workExt struct{ w *formWork }

func (e workExt) Validate(*jsonschema.ValidatorContext, any) {
	w := e.w
	w.n++
	if w.n > MaxFormWork || (w.now != nil && w.n%256 == 0 && w.now().After(w.deadline)) {
		panic(stop{})
	}
}

// validate checks v against the form within its bounds.
func (f *Form) validate(v any) (err error) {
	w := f.work
	w.mu.Lock()
	defer w.mu.Unlock()
	w.n = 0
	if w.now != nil {
		w.deadline = w.now().Add(MaxFormTime)
	}
	defer func() {
		if r := recover(); r != nil {
			if _, ok := r.(stop); !ok {
				panic(r)
			}
			err = errFormWork
		}
	}()
	return f.schema.Validate(v)
}

// maxSchemaDepth is the deepest answer a schema is checked against: a
// body nests at most jsonlimit.MaxDepth levels.
const maxSchemaDepth = 64

// recursionBranches reports whether checking an answer against s could
// take time exponential in the answer's nesting. The work of checking one
// value is 1, plus the work of every schema applied to the same value
// (allOf, anyOf, $ref, …), plus the most any one part of it (an array
// element, a property) takes at the next level: a tree's recursion grows
// that work by its own size a level, but one that reaches the same part
// through two alternatives doubles it — past MaxFormExpansion a level over
// maxSchemaDepth levels, the schema is refused.
func recursionBranches(s *jsonschema.Schema) bool {
	type key struct {
		s *jsonschema.Schema
		d int
	}
	limit := MaxFormExpansion * maxSchemaDepth
	memo := map[key]int{}
	onStack := map[key]bool{}
	var cost func(s *jsonschema.Schema, d int) int
	cost = func(s *jsonschema.Schema, d int) int {
		if s == nil {
			return 0
		}
		k := key{s, d}
		if n, ok := memo[k]; ok {
			return n
		}
		if onStack[k] {
			return 1 // a cycle in place: the validator refuses it at once
		}
		onStack[k] = true
		n := 1
		for _, sub := range inPlace(s) {
			if n += cost(sub, d); n > limit {
				break
			}
		}
		if d > 0 && n <= limit {
			most := 0
			for _, slot := range parts(s) {
				w := 0
				for _, sub := range slot {
					if w += cost(sub, d-1); w > limit {
						break
					}
				}
				most = max(most, w)
			}
			n += most
		}
		onStack[k] = false
		memo[k] = min(n, limit+1)
		return memo[k]
	}
	return cost(s, maxSchemaDepth) > limit
}

// parts groups the schemas s applies to parts of a value by the part they
// may meet at: every array element, each named property (with the
// pattern and additional schemas that may apply to it too), property
// names.
func parts(s *jsonschema.Schema) [][]*jsonschema.Schema {
	elem := []*jsonschema.Schema{s.Contains, s.Items2020, s.UnevaluatedItems}
	elem = append(elem, s.PrefixItems...)
	others := []*jsonschema.Schema{s.UnevaluatedProperties}
	for _, p := range s.PatternProperties {
		others = append(others, p)
	}
	for _, a := range []any{s.AdditionalProperties, s.Items, s.AdditionalItems} {
		switch a := a.(type) {
		case *jsonschema.Schema:
			if a == s.AdditionalProperties {
				others = append(others, a)
			} else {
				elem = append(elem, a)
			}
		case []*jsonschema.Schema:
			elem = append(elem, a...)
		}
	}
	out := [][]*jsonschema.Schema{elem, others, {s.PropertyNames}}
	for _, p := range s.Properties {
		out = append(out, append([]*jsonschema.Schema{p}, others...))
	}
	return out
}

// inPlace lists the schemas s applies to the same value (not to a part
// of it).
func inPlace(s *jsonschema.Schema) []*jsonschema.Schema {
	out := []*jsonschema.Schema{s.Ref, s.RecursiveRef, s.Not, s.If, s.Then, s.Else}
	if s.DynamicRef != nil {
		out = append(out, s.DynamicRef.Ref)
	}
	out = append(out, s.AllOf...)
	out = append(out, s.AnyOf...)
	out = append(out, s.OneOf...)
	for _, p := range s.DependentSchemas {
		out = append(out, p)
	}
	return out
}

// subschemas lists every schema s applies, in place or to a part of the
// instance, its references included.
func subschemas(s *jsonschema.Schema) []*jsonschema.Schema {
	out := []*jsonschema.Schema{s.Ref, s.RecursiveRef, s.Not, s.If, s.Then, s.Else, s.PropertyNames,
		s.UnevaluatedProperties, s.Contains, s.Items2020, s.UnevaluatedItems, s.ContentSchema}
	if s.DynamicRef != nil {
		out = append(out, s.DynamicRef.Ref)
	}
	out = append(out, s.AllOf...)
	out = append(out, s.AnyOf...)
	out = append(out, s.OneOf...)
	out = append(out, s.PrefixItems...)
	for _, p := range s.Properties {
		out = append(out, p)
	}
	for _, p := range s.PatternProperties {
		out = append(out, p)
	}
	for _, p := range s.DependentSchemas {
		out = append(out, p)
	}
	for _, d := range s.Dependencies {
		if p, ok := d.(*jsonschema.Schema); ok {
			out = append(out, p)
		}
	}
	for _, a := range []any{s.AdditionalProperties, s.Items, s.AdditionalItems} {
		switch a := a.(type) {
		case *jsonschema.Schema:
			out = append(out, a)
		case []*jsonschema.Schema:
			out = append(out, a...)
		}
	}
	return out
}
