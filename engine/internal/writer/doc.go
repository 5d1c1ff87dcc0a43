// Package writer is the one way a transaction's rules write (Writer): the
// engine reads through TxReads and writes through a Writer, which owns the
// transaction's TxWrites and its context and counts every write that
// succeeded, so that group commit (engine/internal/commit) knows whether
// an operation it rejected left anything behind. It also owns what makes
// the writes fewer: count-downs queued with a completion and joins
// assumed ready (countdown.go), claimed outbox rows (claims.go), first
// fires collected in bulk (bulk.go) and a speculated step's save relative
// to its run's row (Speculate).
//
// It imports engine/enginetype and the standard library only; the rules
// that decide what to write stay in package engine.
package writer
