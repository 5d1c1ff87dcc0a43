package store

import (
	"context"
	"fmt"
	"strconv"
)

// Event ids come from a sequence when a row is inserted, so they are not
// committed in order: a transaction holding a lower id may commit after one
// holding a higher id, or roll back and leave a hole for ever. A reader
// that keeps its place by id (the stream of every run's events) must not
// pass an id that may still appear. These two reads let it prove that ids
// are final without any cost on the writing side: every id at or below a
// bound read from the sequence was taken by a transaction that already had
// its transaction id (every statement that inserts events asks for it
// first: xidFirst), and that transaction id is below the xmax of any later
// snapshot; once a snapshot's xmin reaches that xmax, all those
// transactions have ended, and an id still missing is a hole.

// EventBound is a pending proof that event ids up to ID are final: they
// are, once SnapshotXmin reaches Xmax.
type EventBound struct {
	ID   int64
	Xmax uint64
}

// EventIDBound reads the highest event id taken so far, then — in a later
// statement, so its snapshot follows every such take — the snapshot's xmax.
func (s *Store) EventIDBound(ctx context.Context) (EventBound, error) {
	var b EventBound
	db := s.db.WithContext(ctx)
	if err := db.Raw(`SELECT CASE WHEN is_called THEN last_value ELSE 0 END FROM run_events_id_seq`).Row().Scan(&b.ID); err != nil {
		return b, fmt.Errorf("error reading the event id sequence: %w", interpretError(err))
	}
	var xmax string
	if err := db.Raw(`SELECT pg_snapshot_xmax(pg_current_snapshot())::text`).Row().Scan(&xmax); err != nil {
		return b, fmt.Errorf("error reading a snapshot's xmax: %w", interpretError(err))
	}
	x, err := strconv.ParseUint(xmax, 10, 64)
	if err != nil {
		return b, fmt.Errorf("error reading a snapshot's xmax %q: %w", xmax, err)
	}
	b.Xmax = x
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
