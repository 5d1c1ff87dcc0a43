package store

import (
	"context"
	"fmt"

	"gorm.io/gorm"
)

// WithLock runs fn in one transaction holding a transaction-level advisory
// lock named name, so that processes sharing the database do it one at a
// time (loading the demo at start-up, for example). fn gets a Store bound
// to the transaction.
func (s *Store) WithLock(ctx context.Context, name string, fn func(ctx context.Context, st *Store) error) error {
	err := s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		if err := tx.Exec(`SELECT pg_advisory_xact_lock(hashtext(?))`, name).Error; err != nil {
			return fmt.Errorf("error taking lock %q: %w", name, err)
		}
		return fn(ctx, &Store{db: tx, url: s.url, binds: s.binds})
	})
	return interpretError(err)
}
