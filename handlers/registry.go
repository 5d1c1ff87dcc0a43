package handlers

import "github.com/stitchd/stitchd/engine"

// Options configure the built-in handlers.
type Options struct {
	// MaxFanOutItems bounds a Splitter's array (0 = DefaultMaxItems).
	MaxFanOutItems int
}

// Registry returns the handlers of types (Types, and any added).
func Registry(types []engine.NodeTypeSpec) map[engine.NodeType]engine.NodeHandler {
	m := make(map[engine.NodeType]engine.NodeHandler, len(types))
	for _, t := range types {
		m[t.Type] = t.Handler
	}
	return m
}
