package engine

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"

	"github.com/tidwall/gjson"
)

// Upstream is one upstream node's contribution to a node's input.
type Upstream struct {
	NodeID string
	Output json.RawMessage
	// Mapping, when non-empty, replaces the merge for this edge:
	// target input key → gjson path into Output.
	Mapping map[string]string
}

// MergeInputs computes a node's input from its upstream outputs, in edge
// order: an object output is merged key by key (later edges win), any other
// non-null output is stored under the upstream node id, and an edge mapping
// replaces the merge for that edge with {targetKey: gjson(output, path)}
// (paths that resolve to nothing are left out). The result is always a JSON
// object.
func MergeInputs(ups []Upstream) (json.RawMessage, error) {
	merged := make(map[string]json.RawMessage)
	for _, u := range ups {
		out := bytes.TrimSpace(u.Output)
		if len(u.Mapping) > 0 {
			keys := make([]string, 0, len(u.Mapping))
			for k := range u.Mapping {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			for _, k := range keys {
				if v, ok := ResolvePath(out, u.Mapping[k]); ok {
					merged[k] = v
				}
			}
			continue
		}
		if len(out) == 0 || bytes.Equal(out, []byte("null")) {
			continue
		}
		if out[0] == '{' {
			var obj map[string]json.RawMessage
			if err := json.Unmarshal(out, &obj); err != nil {
				return nil, fmt.Errorf("error decoding output of %s: %w", u.NodeID, err)
			}
			for k, v := range obj {
				merged[k] = v
			}
			continue
		}
		merged[u.NodeID] = out
	}
	b, err := json.Marshal(merged)
	if err != nil {
		return nil, fmt.Errorf("error encoding merged input: %w", err)
	}
	return b, nil
}

// ResolvePath evaluates a gjson path against doc; "@this" (or "") is the
// whole document. It reports false when the path matches nothing.
func ResolvePath(doc json.RawMessage, path string) (json.RawMessage, bool) {
	if path == "" || path == "@this" {
		if len(doc) == 0 {
			return nil, false
		}
		return doc, true
	}
	r := gjson.GetBytes(doc, path)
	if !r.Exists() {
		return nil, false
	}
	return json.RawMessage(r.Raw), true
}

// ExtractItems evaluates a Splitter's arrayPath against its input and
// returns the array's items. They share the input's memory where gjson
// says where they are in it (a big fan-out's items are most of its input),
// so neither may be modified.
func ExtractItems(input json.RawMessage, arrayPath string) ([]json.RawMessage, error) {
	r := gjson.GetBytes(input, arrayPath)
	if !r.Exists() {
		return nil, fmt.Errorf("arrayPath %q matches nothing in the input", arrayPath)
	}
	if !r.IsArray() {
		return nil, fmt.Errorf("arrayPath %q is a %s, not an array", arrayPath, kindOf(r))
	}
	var items []json.RawMessage
	r.ForEach(func(_, v gjson.Result) bool {
		items = append(items, rawIn(input, v))
		return true
	})
	return items, nil
}

// rawIn returns v's text as the slice of input that holds it, without a
// copy, or a copy when input does not hold it at v.Index (a path with a
// modifier makes new text, whose positions are not the input's).
func rawIn(input []byte, v gjson.Result) json.RawMessage {
	if end := v.Index + len(v.Raw); v.Index > 0 && end <= len(input) && string(input[v.Index:end]) == v.Raw {
		return input[v.Index:end:end]
	}
	return json.RawMessage(v.Raw)
}

func kindOf(r gjson.Result) string {
	switch r.Type {
	case gjson.String:
		return "string"
	case gjson.Number:
		return "number"
	case gjson.True, gjson.False:
		return "boolean"
	case gjson.Null:
		return "null"
	default:
		return "object"
	}
}
