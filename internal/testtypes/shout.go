package testtypes

import (
	"context"
	"encoding/json"
	"strings"

	"github.com/tidwall/gjson"

	"github.com/stitchd/stitchd/engine"
)

// Shout is the "Shout" node type: it completes at once with the input's
// field in capitals followed by the suffix ({"shout": "ADA!"}).
func Shout() engine.NodeTypeSpec {
	return engine.NodeTypeSpec{
		Type: "Shout", Label: "Shout", Icon: "!", Color: "#b91c1c",
		Help:          "Says a field of its input in capitals (a test-only type).",
		DefaultConfig: json.RawMessage(`{"field":"name","suffix":"!"}`),
		ConfigSchema: json.RawMessage(`{"type":"object","required":["field"],"additionalProperties":false,"properties":{
			"field":{"type":"string","minLength":1,"title":"Field"},
			"suffix":{"type":"string","maxLength":3,"title":"Suffix"},
			"label":{"type":"string"},"description":{"type":"string"}}}`),
		Statuses: []engine.Status{engine.StatusPending, engine.StatusCompleted, engine.StatusFailed, engine.StatusSkipped, engine.StatusCancelled},
		Handler:  shout{},
		Check: func(data json.RawMessage) []string {
			if strings.Contains(gjson.GetBytes(data, "field").Str, ".") {
				return []string{"field names one key of the input, not a path"}
			}
			return nil
		},
	}
}

type shout struct{}

func (shout) Fire(_ context.Context, fc engine.FireContext) error {
	cfg := gjson.ParseBytes(fc.Node().Config)
	v := gjson.GetBytes(fc.Input(), gjson.Escape(cfg.Get("field").Str))
	if v.Type != gjson.String {
		return fc.Fail("the input's " + cfg.Get("field").Str + " is not a string")
	}
	out, _ := json.Marshal(map[string]string{"shout": strings.ToUpper(v.Str) + cfg.Get("suffix").Str})
	return fc.Complete(out)
}
