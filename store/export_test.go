package store

import (
	"context"
	"fmt"

	"github.com/stitchd/stitchd/engine"
)

// Querier exposes an engine transaction's querier to the package's
// external tests.
type Querier struct{ q querier }

// Row runs q and returns its one row.
func (q Querier) Row(ctx context.Context, sql string, args ...any) interface{ Scan(...any) error } {
	return q.q.row(ctx, sql, args)
}

// Exec runs q.
func (q Querier) Exec(ctx context.Context, sql string, args ...any) error {
	_, err := q.q.exec(ctx, sql, args)
	return err
}

// Later queues q; scan reads its one row when it has been sent.
func (q Querier) Later(sql string, scan func(row interface{ Scan(...any) error }) error, args ...any) {
	q.q.later(sql, args, func(s scanner) error { return scan(s) })
}

// CustomPlan returns args as planFor does for a statement of many rows.
func CustomPlan(args ...any) []any { return planFor(customPlanAbove+1, args...) }

// InTxQuerier runs fn in an engine transaction of s (InTx), with its
// querier.
func InTxQuerier(ctx context.Context, s *Store, fn func(ctx context.Context, q Querier) error) error {
	return s.InTx(ctx, func(ctx context.Context, tx engine.Tx) error {
		ptx, ok := tx.(*pgTx)
		if !ok {
			return fmt.Errorf("InTx gave a %T, not a *pgTx", tx)
		}
		return fn(ctx, Querier{q: ptx.q})
	})
}

// InterpretError is interpretError, for tests of the classification.
func InterpretError(err error) error { return interpretError(err) }

// DeleteExpiredRunsSQL is the statement DeleteExpiredRuns runs (arguments:
// the server's retention in seconds or nil, the limit, the limit).
const DeleteExpiredRunsSQL = deleteExpiredRuns

// ArchiveExpiredRunsSQL and DeleteArchivedRunsSQL are the statements
// ArchiveExpiredRuns runs: the read (as DeleteExpiredRunsSQL's arguments)
// and the delete (ids, ids, xmins, the server's retention).
const (
	ArchiveExpiredRunsSQL = archiveExpiredRuns
	DeleteArchivedRunsSQL = deleteArchivedRuns
)

// Queued reports how many statements engine transaction tx has queued and
// not sent yet (BEGIN not counted); -1 for a transaction of another kind.
func Queued(tx engine.Tx) int {
	ptx, ok := tx.(*pgTx)
	if !ok {
		return -1
	}
	return ptx.q.queued()
}

// ListenAllWithin is ListenAll waiting at most within for its connection.
var ListenAllWithin = listenAll
