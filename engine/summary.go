package engine

import (
	"encoding/json"

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
