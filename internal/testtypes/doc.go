// Package testtypes holds a node type that exists for tests only (Shout):
// it shows that a type using the existing actions is one file and its
// registration (app.Config.NodeTypes), nothing else — no compiler, engine,
// API or editor change.
package testtypes
