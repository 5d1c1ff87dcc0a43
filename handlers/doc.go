// Package handlers gives each node type its behaviour, one file per type,
// by implementing engine.NodeHandler: Worker dispatches to an external
// service and waits for its callback, UX waits for a person, Splitter fans
// an array out, Collector fans it back in. Adding a node type touches this
// package and the compiler's type table only.
package handlers
