package store

import (
	"context"
	"crypto/rand"
	"fmt"
	"github.com/stitchd/stitchd/engine"
	"time"
)

// SigningKey is a stored HMAC key.
type SigningKey struct {
	ID        string
	Secret    []byte
	CreatedAt time.Time
}

const webhookKeyID = "whsec"

// CallbackKeys returns the callback keys, newest (current) first, creating
// the first one when there is none. Every instance sharing the database
// uses the same keys.
func (s *Store) CallbackKeys(ctx context.Context) ([]SigningKey, error) {
	keys, err := s.callbackKeys(ctx)
	if err != nil {
		return nil, err
	}
	if len(keys) > 0 {
		return keys, nil
	}
	if _, err := s.RotateCallbackKey(ctx, "cb-1"); err != nil {
		return nil, err
	}
	return s.callbackKeys(ctx)
}

func (s *Store) callbackKeys(ctx context.Context) ([]SigningKey, error) {
	rows, err := s.db.WithContext(ctx).Raw(`SELECT id, secret, created_at FROM signing_keys
		WHERE id <> ? AND retired_at IS NULL ORDER BY created_at DESC, id DESC`, webhookKeyID).Rows()
	if err != nil {
		return nil, fmt.Errorf("error loading callback keys: %w", interpretError(err))
	}
	defer rows.Close()
	var out []SigningKey
	for rows.Next() {
		var k SigningKey
		if err := rows.Scan(&k.ID, &k.Secret, &k.CreatedAt); err != nil {
			return nil, interpretError(err)
		}
		out = append(out, k)
	}
	return out, interpretError(rows.Err())
}

// RotateCallbackKey adds a new current callback key (older keys still
// verify until retired). An id already taken is ErrConflict: the key it
// names is left as it is and nothing rotates.
func (s *Store) RotateCallbackKey(ctx context.Context, id string) (*SigningKey, error) {
	secret := make([]byte, 32)
	if _, err := rand.Read(secret); err != nil {
		return nil, err
	}
	res := s.db.WithContext(ctx).Exec(`INSERT INTO signing_keys (id, secret) VALUES (?, ?) ON CONFLICT (id) DO NOTHING`,
		id, secret)
	if err := interpretError(res.Error); err != nil {
		return nil, fmt.Errorf("error creating callback key: %w", err)
	}
	if res.RowsAffected == 0 {
		return nil, fmt.Errorf("callback key %s: %w: the id is taken", id, engine.ErrConflict)
	}
	return &SigningKey{ID: id, Secret: secret}, nil
}

// NewCallbackKeyID returns an id for a new callback key:
// cb-<UTC time to the microsecond>-<4 random hex digits> (no dot: the id
// is a part of the callback token), unique however close two rotations
// are.
func NewCallbackKeyID(now time.Time) string {
	var b [2]byte
	_, _ = rand.Read(b[:])
	now = now.UTC()
	return fmt.Sprintf("cb-%s%06d-%x", now.Format("20060102T150405"), now.Nanosecond()/1000, b)
}

// RetireCallbackKey stops a callback key from verifying (callbacks signed
// with it get 401). The current key cannot be retired; rotate first.
func (s *Store) RetireCallbackKey(ctx context.Context, id string) error {
	keys, err := s.callbackKeys(ctx)
	if err != nil {
		return err
	}
	if len(keys) > 0 && keys[0].ID == id {
		return fmt.Errorf("%w: %s is the current key; rotate first", engine.ErrConflict, id)
	}
	res := s.db.WithContext(ctx).Exec(`UPDATE signing_keys SET retired_at = now() WHERE id = ? AND id <> ? AND retired_at IS NULL`, id, webhookKeyID)
	if err := interpretError(res.Error); err != nil {
		return err
	}
	if res.RowsAffected == 0 {
		return fmt.Errorf("callback key %s: %w", id, engine.ErrNotFound)
	}
	return nil
}
