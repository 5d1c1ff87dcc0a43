// Package handlers gives each node type its behaviour, one file per type,
// by implementing engine.NodeHandler: Worker dispatches to an external
// service and waits for its callback, UX waits for a person, Splitter fans
// an array out, Collector fans it back in. Adding a node type touches this
// package and the compiler's type table only.
package handlers

import "github.com/stitchd/stitchd/engine"

// Registry returns the handlers of every built-in node type.
func Registry() map[engine.NodeType]engine.NodeHandler {
	return map[engine.NodeType]engine.NodeHandler{
		engine.NodeTypeWorker:    Worker{},
		engine.NodeTypeUX:        UX{},
		engine.NodeTypeSplitter:  Splitter{},
		engine.NodeTypeCollector: Collector{},
	}
}
