// Package compiler turns the visual graph drawn on the canvas (React Flow
// JSON: nodes with positions, styles and free-form data, plus edges) into the
// validated, lean engine.ExecutionGraph that the engine walks.
//
// The package owns:
//
//   - parsing the visual graph (ParseVisual) and the canonical JSON form used
//     to decide whether a saved graph changed (Canonical);
//   - the node type table (Worker, UX, Splitter, Collector, matched
//     case-insensitively) and the validation of each type's configuration;
//   - the structure of the execution graph: adjacency and upstream maps in
//     edge order, edge mappings, entry and terminal nodes, and the parallel
//     regions between each Splitter and its Collector (members, nesting depth,
//     parent region);
//   - every structural rule a runnable graph must obey: unique ids, edges
//     between existing nodes, no cycles, well-formed regions, and instance
//     keys (<id>_<i>, <id>_<i>_<j>, …) that cannot collide with another
//     node's id.
//
// The package is pure: no I/O, no clock, no globals, and the same input
// always yields byte-identical JSON output. It imports only the standard
// library, the engine package and gjson.
//
// Validation never stops at the first finding. A rejected graph yields an
// *Error whose Problems list every problem found, in a deterministic order,
// each with a stable code (the Code* constants), the node and/or edge id
// concerned and a JSON-path-like location in the visual graph
// ("nodes[3].data.webhookUrl", "edges[2].target", "nodes" for whole-graph
// problems) so that a UI can paint it on the canvas. Findings that do not
// stop a graph from running (an isolated node, for example) are returned as
// ExecutionGraph.Warnings instead.
//
// Everything is linear or O(n log n) in the size of the graph, except the
// Members lists of nested regions, whose total size is bounded by
// MaxNestingDepth times the number of nodes.
package compiler
