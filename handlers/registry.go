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
