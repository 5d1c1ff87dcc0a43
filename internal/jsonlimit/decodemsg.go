package jsonlimit

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"time"
)

// DecodeMessage is err, from decoding JSON into a Go value, in JSON's
// words: a value of the wrong kind reads "graph.nodes must be an array,
// not an object", not "json: cannot unmarshal object into Go struct field
// .nodes of type []json.RawMessage".
func DecodeMessage(err error) string {
	var pe *time.ParseError
	if errors.As(err, &pe) {
		// A time field's own decoding: Go's layout string says nothing to a
		// person.
		return fmt.Sprintf("%s is not a time: give one in RFC 3339, as 2026-11-28T09:00:00Z", strings.Trim(pe.Value, `"`))
	}
	var te *json.UnmarshalTypeError
	if !errors.As(err, &te) {
		return err.Error()
	}
	what := te.Field
	if what == "" {
		what = "the value"
	}
	return what + " must be " + jsonKind(te.Type) + ", not " + aJSON(te.Value)
}

// jsonKind names the JSON a Go type decodes from.
func jsonKind(t reflect.Type) string {
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == nil {
		return "another kind of value"
	}
	switch t.Kind() {
	case reflect.Slice, reflect.Array:
		return "an array"
	case reflect.Map, reflect.Struct:
		return "an object"
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return "a whole number"
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "a whole number, 0 or more"
	case reflect.Float32, reflect.Float64:
		return "a number"
	default:
		return "another kind of value"
	}
}

// aJSON names what encoding/json's UnmarshalTypeError.Value says it found
// ("object", "number", "number 1.5" for a fraction where a whole number
// goes, …).
func aJSON(v string) string {
	switch v {
	case "object", "array":
		return "an " + v
	case "bool":
		return "a boolean"
	case "string", "number":
		return "a " + v
	}
	if n, ok := strings.CutPrefix(v, "number "); ok {
		return "the number " + n
	}
	return v
}
