package store

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"gorm.io/gorm"
)

// Event ids come from a sequence when a row is inserted, so they are not
// committed in order: a transaction holding a lower id may commit after one
// holding a higher id, or roll back and leave a hole for ever. A reader
// that keeps its place by id (the stream of every run's events) must not
// pass an id that may still appear. These reads let it prove that ids are
// final at no cost to the writing side: every id at or below the
// sequence's last value was taken by a transaction that already had its
// transaction id (every statement that inserts events asks for it first:
// xidFirst), so below a transaction id assigned afterwards; once a
// snapshot's xmin passes that one, all those transactions have ended, and
// an id still missing is a hole. (A snapshot's xmax is no such bound: it is
// one past the newest transaction to end, and transactions begun since run
// above it unseen.)

// EventBound is a pending proof that event ids up to ID are final: they
// are, once SnapshotXmin passes Xid.
type EventBound struct {
	ID  int64
	Xid uint64
}

// errBound ends the transaction that took a transaction id for a bound: it
// rolls back (nothing to write, no commit to wait for).
var errBound = errors.New("bound taken")

// EventIDBound reads the highest event id taken so far, then — in a later
// transaction, so after every such take — a fresh transaction id.
func (s *Store) EventIDBound(ctx context.Context) (EventBound, error) {
	var b EventBound
	db := s.db.WithContext(ctx)
	if err := db.Raw(`SELECT CASE WHEN is_called THEN last_value ELSE 0 END FROM run_events_id_seq`).Row().Scan(&b.ID); err != nil {
		return b, fmt.Errorf("error reading the event id sequence: %w", interpretError(err))
	}
	var xid string
	err := db.Transaction(func(tx *gorm.DB) error {
		if err := tx.Raw(`SELECT pg_current_xact_id()::text`).Row().Scan(&xid); err != nil {
			return err
		}
		return errBound
	})
	if !errors.Is(err, errBound) {
		return b, fmt.Errorf("error taking a transaction id: %w", interpretError(err))
	}
	x, err := strconv.ParseUint(xid, 10, 64)
	if err != nil {
		return b, fmt.Errorf("error reading transaction id %q: %w", xid, err)
	}
	b.Xid = x
	return b, nil
}

// SnapshotXmin is the oldest transaction id still running (64-bit, no
// wraparound): every transaction below it has ended.
func (s *Store) SnapshotXmin(ctx context.Context) (uint64, error) {
	var xmin string
	if err := s.db.WithContext(ctx).Raw(`SELECT pg_snapshot_xmin(pg_current_snapshot())::text`).Row().Scan(&xmin); err != nil {
		return 0, fmt.Errorf("error reading a snapshot's xmin: %w", interpretError(err))
	}
	x, err := strconv.ParseUint(xmin, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("error reading a snapshot's xmin %q: %w", xmin, err)
	}
	return x, nil
}
