package handlers

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/stitchd/stitchd/engine"
)

// SubFlow runs another flow as one step: data.flow (an id or a name) at
// data.version (a number, or "latest" — pinned when this flow's version
// was saved: the node's SubFlow target), with the node's input as the
// child run's input; data.passEntity (default true) attaches the run's
// entity to the child. The child's output is the node's output; a failed
// or cancelled child fails the node.
type SubFlow struct{}

// Fire starts the child run.
func (SubFlow) Fire(_ context.Context, fc engine.FireContext) error {
	n := fc.Node()
	if n.SubFlow == nil {
		return fc.Fail("the sub-flow was not resolved when this flow version was saved; save the flow again")
	}
	var cfg struct {
		PassEntity *bool `json:"passEntity"`
	}
	if err := json.Unmarshal(n.Config, &cfg); err != nil {
		return fc.Fail(fmt.Sprintf("the node's data cannot be read: %v", err))
	}
	return fc.StartChild(engine.ChildRun{Target: *n.SubFlow, Input: fc.Input(), PassEntity: cfg.PassEntity == nil || *cfg.PassEntity})
}

// subFlowType is the SubFlow type's registration (handlers.Types).
func subFlowType() engine.NodeTypeSpec {
	return engine.NodeTypeSpec{Type: engine.NodeTypeSubFlow, IDPrefix: "sub", Panel: true,
		Caps:  engine.Capabilities{StartsRuns: true},
		Label: "SubFlow", Color: "#4338ca", Icon: "↳",
		Help:          "Runs another flow as one step: its input starts a child run, whose output is this step's output.",
		DefaultConfig: raw(`{"flow":""}`), Handler: SubFlow{},
		ConfigSchema: object(`"required":["flow"],"properties":{
			"flow":{"type":"string","title":"Flow (id or name)"},
			"version":{"anyOf":[{"type":"integer","minimum":1},{"const":"latest"}]},
			"passEntity":{"type":"boolean"},` + common + `}`),
		Statuses: statuses(engine.StatusRunning, engine.StatusCompleted, engine.StatusFailed)}
}
