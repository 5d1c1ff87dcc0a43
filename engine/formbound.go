package engine

import (
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
