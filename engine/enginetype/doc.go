// Package enginetype holds the values at the engine's seams: the rows it
// reads and writes (Run, NodeState, Dispatch, …), the node and run status
// state machines, the transaction interfaces the store implements (Tx,
// TxReads, TxWrites) with their params, and the errors they answer with.
//
// It is a leaf: it imports only the standard library, so that the engine,
// its writer (engine/internal/writer) and the store can share these types
// without importing one another. Package engine re-exports each under its
// own name (engine/aliases.go); programs keep using engine.Run and friends.
package enginetype
