package handlers

import (
	"context"

	"github.com/stitchd/stitchd/engine"
)

// Condition does no work: it completes with its input at once, a readable
// place to branch with conditional, default and failure edges.
type Condition struct{}

// Fire completes the node with its input.
func (Condition) Fire(_ context.Context, fc engine.FireContext) error { return fc.Complete(fc.Input()) }

// conditionType is the Condition type's registration (handlers.Types).
func conditionType() engine.NodeTypeSpec {
	return engine.NodeTypeSpec{Type: engine.NodeTypeCondition, IDPrefix: "branch", Panel: true,
		Label: "Condition", Color: "#db2777", Icon: "◆",
		Help:          "Does no work and passes its input on: a readable place to branch with conditions on its edges.",
		DefaultConfig: raw(`{}`), Handler: Condition{},
		ConfigSchema: object(`"properties":{` + common + `}`),
		Statuses:     statuses(engine.StatusCompleted)}
}
