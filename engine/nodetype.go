package engine

import "encoding/json"

// NodeTypeSpec is one node type, registered once: what runs it (Handler),
// what the compiler checks of a node's data at save (ConfigSchema, Check)
// and what the editor shows (GET /api/v1/node-types: label, colour, help,
// the data a new node starts with, the statuses its nodes can take). A type
// that only uses the existing actions of FireContext is one file in
// handlers/ and its entry in handlers.Types (or app.Config.NodeTypes for a
// type of an embedding program or a test).
type NodeTypeSpec struct {
	Type  NodeType `json:"type"`
	Label string   `json:"label"`
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

	Handler NodeHandler `json:"-"`
	// Check reports what is wrong with a node's data (a canonical JSON
	// object) beyond its schema: one message each, saved as the flow's
	// problems. Nil: nothing.
	Check func(data json.RawMessage) []string `json:"-"`
}
