package handlers

import (
	"context"

	"github.com/stitchd/stitchd/engine"
)

// UX waits for a person: the node stays waiting_for_user until someone
// completes it through the API or the web UI.
type UX struct{}

// Fire parks the node.
func (UX) Fire(_ context.Context, fc engine.FireContext) error { return fc.WaitForUser() }

// uxType is the UX type's registration (handlers.Types).
func uxType() engine.NodeTypeSpec {
	return engine.NodeTypeSpec{Type: engine.NodeTypeUX, IDPrefix: "approval", Panel: true, Caps: engine.Capabilities{WaitsForPerson: true},
		Label: "UX", Color: "#d97706", Icon: "☺",
		Help:          "Waits for a person to choose an outcome (approve, reject, …).",
		DefaultConfig: raw(`{"prompt":""}`), Handler: UX{},
		ConfigSchema: object(`"properties":{
			"prompt":{"type":"string"},
			"outcomes":{"type":"array","items":{"type":"string"},"minItems":1},
			"form":{"type":"object","title":"Form (JSON Schema)"},
			"summary":{"type":"string"},
			"assignees":{"type":"object"},
			"requiredApprovals":{"type":"integer","minimum":1},
			"rejectPolicy":{"type":"string"},
			"separationOfDuties":{"type":"boolean"},
			"timeoutSeconds":{"type":"number","exclusiveMinimum":0},
			"onTimeout":{"type":"string"},
			"remindAfterSeconds":{"type":"number","minimum":1},` + common + `}`),
		Statuses: statuses(engine.StatusRunning, engine.StatusWaitingForUser, engine.StatusCompleted, engine.StatusFailed)}
}
