package engine

import (
	"encoding/json"
	"strings"

	"github.com/tidwall/gjson"
)

// SummaryValue is one labelled value of a UX node's summary, read from the
// input the node waits with.
type SummaryValue struct {
	Label string `json:"label"`
	Path  string `json:"path"`
	// Value is the value at Path (null when the input has none).
	Value json.RawMessage `json:"value"`
}

// SummaryOf reads a UX node's data.summary — gjson paths into its input,
// each a string or {"label", "path"} — against input: what the person
// deciding sees first. A path without a label is its own label. Nil when
// the node has no summary.
func SummaryOf(config, input json.RawMessage) []SummaryValue {
	items := gjson.GetBytes(config, "summary")
	if !items.IsArray() {
		return nil
	}
	var out []SummaryValue
	for _, it := range items.Array() {
		var sv SummaryValue
		switch {
		case it.Type == gjson.String:
			sv.Path = it.Str
		case it.IsObject():
			sv.Path, sv.Label = it.Get("path").String(), it.Get("label").String()
		}
		if sv.Path == "" {
			continue
		}
		if sv.Label == "" {
			sv.Label = sv.Path
		}
		sv.Value = json.RawMessage("null")
		if r := gjson.GetBytes(input, sv.Path); r.Exists() {
			sv.Value = json.RawMessage(r.Raw)
		}
		out = append(out, sv)
	}
	return out
}

// SummaryScope is what a summary's paths read besides the node's input:
// paths beginning "input." read the input, "run.input." the run's input,
// "vars." the run's variables and "steps.<id>.output." that step's output
// (Steps: by node id); any other path reads the input, as it always did.
type SummaryScope struct {
	Input, RunInput, Vars json.RawMessage
	Steps                 map[string]json.RawMessage
}

// SummaryStepIDs lists the steps a UX node's summary reads
// (steps.<id>.output…).
func SummaryStepIDs(config json.RawMessage) []string {
	var out []string
	for _, it := range gjson.GetBytes(config, "summary").Array() {
		p := it.Str
		if it.IsObject() {
			p = it.Get("path").String()
		}
		if rest, ok := strings.CutPrefix(p, "steps."); ok {
			if id, _, ok := strings.Cut(rest, "."); ok && id != "" {
				out = append(out, id)
			}
		}
	}
	return out
}

// lookup reads path in the scope.
func (s SummaryScope) lookup(path string) gjson.Result {
	from := func(doc json.RawMessage, p string) gjson.Result {
		if p == "" {
			return gjson.ParseBytes(orNullRaw(doc))
		}
		return gjson.GetBytes(doc, p)
	}
	if rest, ok := strings.CutPrefix(path, "run.input"); ok && (rest == "" || rest[0] == '.') {
		if r := from(s.RunInput, strings.TrimPrefix(rest, ".")); r.Exists() {
			return r
		}
	}
	if rest, ok := strings.CutPrefix(path, "vars."); ok {
		if r := from(s.Vars, rest); r.Exists() {
			return r
		}
	}
	if rest, ok := strings.CutPrefix(path, "steps."); ok {
		if id, p, ok := strings.Cut(rest, "."); ok {
			if p, ok := strings.CutPrefix(p, "output"); ok && (p == "" || p[0] == '.') {
				if r := from(s.Steps[id], strings.TrimPrefix(p, ".")); r.Exists() {
					return r
				}
			}
		}
	}
	if rest, ok := strings.CutPrefix(path, "input"); ok && (rest == "" || rest[0] == '.') {
		if r := from(s.Input, strings.TrimPrefix(rest, ".")); r.Exists() {
			return r
		}
	}
	return gjson.GetBytes(s.Input, path)
}

func orNullRaw(b json.RawMessage) json.RawMessage {
	if len(b) == 0 {
		return json.RawMessage("null")
	}
	return b
}

// SummaryIn is SummaryOf reading its paths in scope (SummaryScope).
func SummaryIn(config json.RawMessage, scope SummaryScope) []SummaryValue {
	out := SummaryOf(config, nil)
	for i := range out {
		if r := scope.lookup(out[i].Path); r.Exists() {
			out[i].Value = json.RawMessage(r.Raw)
		}
	}
	return out
}
