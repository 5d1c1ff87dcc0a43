// Package engine is stitchd's execution core: the domain types (runs, node
// states, statuses), the node and run status state machines, edge walking,
// dependency counting, input merging and the fan-out/fan-in rules.
//
// The engine is pure with respect to infrastructure: it declares the
// interfaces it needs (Store, Tx, CallbackMinter, Clock) and never
// imports echo, gorm, lib/pq or net/http. Every state change happens inside
// one Store transaction: the compare-and-set transition, its run events,
// successor rows, entity movement and outbox (dispatch) rows commit
// together, and readiness is decided from counters that transaction updated
// with UPDATE … RETURNING, never from a later read. What must follow the
// commit (the outbox rows it claimed for the dispatcher) is collected as
// values and handed on after it (Claims).
//
// Node behaviour is supplied by NodeHandler implementations (package
// handlers), registered per NodeType.
package engine
