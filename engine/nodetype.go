package engine

import "encoding/json"

// NodeTypeSpec is one node type, registered once: what runs it (Handler),
// what the compiler checks of a node's data at save (ConfigSchema, Check),
// what the engine and the compiler treat its nodes as (Caps) and what the
// editor shows (GET /api/v1/node-types: label, colour, icon, help, the id
// prefix and data a new node starts with, the statuses its nodes can
// take). Built-in types are registered exactly as added ones are: a type
// that uses the existing actions of FireContext is one file in handlers/
// and one line in handlers.Types (or, for a program embedding stitchd, one
// entry of stitchd.Config.NodeTypes).
type NodeTypeSpec struct {
	Type  NodeType `json:"type"`
	Label string   `json:"label"`
	// IDPrefix starts the id of a node added from the palette
	// ("worker" → worker_3).
	IDPrefix string `json:"idPrefix"`
	// Help is one sentence on what the step does.
	Help string `json:"help"`
	// Color is the CSS colour of its nodes; Icon a glyph shown beside the
	// label.
	Color string `json:"color"`
	Icon  string `json:"icon"`
	// DefaultConfig is the data of a node just added from the palette.
	DefaultConfig json.RawMessage `json:"defaultConfig"`
	// ConfigSchema is the JSON Schema of its data. The editor renders it as
	// the node's settings form when the type has no panel of its own; for
	// a type outside the built-in ones it is also checked at save.
	ConfigSchema json.RawMessage `json:"configSchema"`
	// Statuses are the node statuses its nodes can take.
	Statuses []Status `json:"statuses"`
	// Panel reports that the editor has a settings panel made for it.
	Panel bool `json:"panel"`
	// Builtin reports a type of stitchd itself.
	Builtin bool `json:"builtin"`
	// Caps are what the engine and the compiler treat its nodes as.
	Caps Capabilities `json:"capabilities"`

	Handler NodeHandler `json:"-"`
	// Check reports what is wrong with a node's data (a canonical JSON
	// object) beyond its schema: one message each, saved as the flow's
	// problems. Nil: nothing.
	Check func(data json.RawMessage) []string `json:"-"`
}

// Capabilities are what the engine and the compiler treat a type's nodes
// as: rules branch on these, never on a type's name, so a type added with
// a capability is treated as the built-in one having it is.
type Capabilities struct {
	// FansOut: the node opens a parallel region, instantiated once per item
	// of the array its handler passes to FanOut; the region closes at a
	// node that Collects.
	FansOut bool `json:"fansOut,omitempty"`
	// Collects: the node closes the innermost parallel region; it is fired
	// once every item has arrived (or failed within its tolerance), with
	// the items' outputs in order as its input.
	Collects bool `json:"collects,omitempty"`
	// WaitsForPerson: a person decides the node (WaitForUser): its
	// outcomes may label its out-edges, it appears among approvals, and
	// its entity movement may name outcomes.
	WaitsForPerson bool `json:"waitsForPerson,omitempty"`
	// CallsBack: a worker calls the node back — it fires by Dispatch
	// alone and completes by its worker's callback — so a chain of such
	// steps may be speculated (one round trip a step, fastpath.go), and
	// a worker.cancel notice goes to its data.cancelUrl when its work is
	// cancelled.
	CallsBack bool `json:"callsBack,omitempty"`
	// StartsRuns: the node starts a child run (a sub-flow), which may hold
	// a fan-out of its own, so its first fire may wait for a later
	// transaction even while a fan-out starts it with its siblings.
	StartsRuns bool `json:"startsRuns,omitempty"`
}

// CapsOf maps each type of specs to its capabilities.
func CapsOf(specs []NodeTypeSpec) map[NodeType]Capabilities {
	m := make(map[NodeType]Capabilities, len(specs))
	for _, s := range specs {
		m[s.Type] = s.Caps
	}
	return m
}
