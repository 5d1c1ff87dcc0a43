// Package handlers holds stitchd's built-in node types, one file per type:
// each file has the type's handler (an engine.NodeHandler: Worker
// dispatches to an external service and waits for its callback, UX waits
// for a person, Splitter fans an array out, Collector fans it back in, Log
// writes to the run's events, …) and beside it its registration, an
// engine.NodeTypeSpec — config schema, capabilities and look. Types lists
// the registrations, one line a type. A type that uses the existing
// actions of engine.FireContext is its file, its line in Types and its
// test; docs/node-types.md says how.
package handlers
