package handlers

import "github.com/stitchd/stitchd/engine"

// Options configure the built-in handlers.
type Options struct {
	// MaxFanOutItems bounds a Splitter's array (0 = DefaultMaxItems).
	MaxFanOutItems int
}

// Registry returns the handlers of every built-in node type.
func Registry(o Options) map[engine.NodeType]engine.NodeHandler {
	return map[engine.NodeType]engine.NodeHandler{
		engine.NodeTypeWorker:    Worker{},
		engine.NodeTypeUX:        UX{},
		engine.NodeTypeSplitter:  Splitter{MaxItems: o.MaxFanOutItems},
		engine.NodeTypeCollector: Collector{},
		engine.NodeTypeCondition: Condition{},
		engine.NodeTypeTransform: Transform{},
		engine.NodeTypeWait:      Wait{},
		engine.NodeTypeEvent:     Event{},
		engine.NodeTypeHTTP:      HTTP{},
		engine.NodeTypeSubFlow:   SubFlow{},
	}
}
