// Package commit is the engine's commit service: it decides which
// transaction each operation on a run runs in, and answers the operation
// once that transaction committed or the operation was rejected.
//
// It owns the scheduling and the failure policy, not what a transaction
// does: per-run batching (a busy run's operations in one transaction),
// cross-run group commit (the batches of up to 32 runs, or 512 completions
// across runs, in one transaction, at most Params.Groups at a time), and
// what happens when a shared transaction fails (the batch whose own
// compare-and-set failed applied on its own without assuming, the others
// again together; on any other failure each on its own). The engine
// supplies the transactions through an Applier: one operation alone, a
// batch as one operation, a group of batches in one transaction.
//
// Operations are opaque here (the type parameter F: the engine's
// func(*txn) error), so nothing of the engine's rules leaks in, and the
// engine calls nothing in this package from inside a transaction.
package commit
