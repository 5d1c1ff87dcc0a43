package handlers

import (
	"context"

	"github.com/stitchd/stitchd/engine"
)

// Collector fans a Splitter's items back in: the engine fires it once every
// item has arrived, with the items' outputs ordered by index as its input,
// and that array is its output.
type Collector struct{}

// Fire completes the node with its items.
func (Collector) Fire(_ context.Context, fc engine.FireContext) error { return fc.Complete(fc.Input()) }

// collectorType is the Collector type's registration (handlers.Types).
func collectorType() engine.NodeTypeSpec {
	return engine.NodeTypeSpec{Type: engine.NodeTypeCollector, IDPrefix: "collect", Panel: true, Caps: engine.Capabilities{Collects: true},
		Label: "Collector", Color: "#7c3aed", Icon: "⑂",
		Help:          "Waits for every parallel path and gathers results in order.",
		DefaultConfig: raw(`{}`), Handler: Collector{},
		ConfigSchema: object(`"properties":{
			"toleratedFailures":{"anyOf":[{"type":"integer","minimum":0},{"type":"string"}]},
			"label":{"type":"string"},"description":{"type":"string"}}`),
		Statuses: statuses(engine.StatusRunning, engine.StatusCompleted, engine.StatusFailed)}
}
