package handlers

import (
	"context"
	"fmt"

	"github.com/tidwall/gjson"

	"github.com/stitchd/stitchd/engine"
)

// DefaultMaxItems bounds a Splitter's array unless configured otherwise.
const DefaultMaxItems = 100_000

// Splitter fans an array out: arrayPath (gjson) into its input selects the
// items, and its parallel region is instantiated once per item.
type Splitter struct {
	// MaxItems bounds the array (0 = DefaultMaxItems).
	MaxItems int
}

// Fire extracts the items and fans out, or fails with a clear reason.
func (s Splitter) Fire(_ context.Context, fc engine.FireContext) error {
	path := gjson.GetBytes(fc.Node().Config, "arrayPath").String()
	items, err := engine.ExtractItems(fc.Input(), path)
	if err != nil {
		return fc.Fail(err.Error())
	}
	limit := s.MaxItems
	if limit <= 0 {
		limit = DefaultMaxItems
	}
	if len(items) > limit {
		return fc.Fail(fmt.Sprintf("arrayPath %s has %d items, more than the maximum of %d", path, len(items), limit))
	}
	return fc.FanOut(items)
}

// splitterType is the Splitter type's registration (handlers.Types).
func splitterType(o Options) engine.NodeTypeSpec {
	return engine.NodeTypeSpec{Type: engine.NodeTypeSplitter, IDPrefix: "split", Panel: true, Caps: engine.Capabilities{FansOut: true},
		Label: "Splitter", Color: "#0891b2", Icon: "⑃",
		Help:          "Fans an array out into parallel paths, one per item.",
		DefaultConfig: raw(`{"arrayPath":""}`), Handler: Splitter{MaxItems: o.MaxFanOutItems},
		ConfigSchema: object(`"required":["arrayPath"],"properties":{
			"arrayPath":{"type":"string","minLength":1,"title":"Array path (gjson)"},
			"maxConcurrency":{"type":"integer","minimum":1},
			"label":{"type":"string"},"description":{"type":"string"}}`),
		Statuses: statuses(engine.StatusCompleted, engine.StatusFailed)}
}
