package enginetype

// NodeType is the canonical name of a node type. Visual graphs match types
// case-insensitively; the compiler stores the canonical spelling.
type NodeType string

// The names of the ten first built-in types, for the compiler's own rules
// of their data and the handlers that read their config. A type is added
// by its registration (handlers.Types), not here; rules read a node's
// capabilities (Node.Caps), never these names.
const (
	NodeTypeWorker    NodeType = "Worker"
	NodeTypeUX        NodeType = "UX"
	NodeTypeSplitter  NodeType = "Splitter"
	NodeTypeCollector NodeType = "Collector"
	// NodeTypeCondition does no work: it completes with its input, a
	// readable place to branch with conditional edges.
	NodeTypeCondition NodeType = "Condition"
	// NodeTypeTransform completes at once with the value of its
	// expression over its input, the run and its entity.
	NodeTypeTransform NodeType = "Transform"
	// NodeTypeWait sleeps for a duration or until a time, then completes
	// with its input.
	NodeTypeWait NodeType = "Wait"
	// NodeTypeEvent waits for an event with its name and key (POST
	// /api/v1/events) and completes with its payload.
	NodeTypeEvent NodeType = "Event"
	// NodeTypeSubFlow starts a run of another flow (its child) and
	// completes with the child's output.
	NodeTypeSubFlow NodeType = "SubFlow"
	// NodeTypeHTTP sends a request from the outbox; its response completes
	// it (no callback).
	NodeTypeHTTP NodeType = "HTTP"
)
