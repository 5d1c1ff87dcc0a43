package store

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/stitchd/stitchd/engine"
	"github.com/stitchd/stitchd/internal/secretbox"
)

// Secret is a row of the secrets table: a named value sealed with the
// server's key (internal/secretbox). It holds no plaintext.
type Secret struct {
	Name       string `gorm:"primaryKey"`
	Ciphertext []byte
	Nonce      []byte
	KeyID      string
	CreatedBy  string
	UpdatedBy  string
	CreatedAt  time.Time
	UpdatedAt  time.Time
}

// TableName is the secrets table.
func (Secret) TableName() string { return "secrets" }

// SecretInfo is what the API shows of a secret: never its value.
type SecretInfo struct {
	Name      string    `json:"name"`
	CreatedBy string    `json:"created_by"`
	UpdatedBy string    `json:"updated_by"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
}

func (s *Secret) info() SecretInfo {
	return SecretInfo{Name: s.Name, CreatedBy: s.CreatedBy, UpdatedBy: s.UpdatedBy, CreatedAt: s.CreatedAt, UpdatedAt: s.UpdatedAt}
}

// PutSecretParams stores a secret's value, creating or replacing it.
type PutSecretParams struct {
	Name  string
	Value []byte
	// Box seals the value (nil: secretbox.ErrNoKey).
	Box *secretbox.Box
	// Actor is who stores it (the audit's actor).
	Actor string
	Now   time.Time
}

// PutSecret seals and stores a secret, replacing the value of one of the
// same name; created reports a new name.
func (s *Store) PutSecret(ctx context.Context, p PutSecretParams) (info SecretInfo, created bool, err error) {
	if p.Box == nil {
		return SecretInfo{}, false, secretbox.ErrNoKey
	}
	if !engine.ValidSecretName(p.Name) {
		return SecretInfo{}, false, fmt.Errorf("%w: %s", engine.ErrInvalidRequest, engine.SecretNameRule)
	}
	sealed, err := p.Box.Seal(p.Name, p.Value)
	if err != nil {
		return SecretInfo{}, false, err
	}
	var row struct {
		Secret
		Inserted bool
	}
	// xmax is 0 on a row this statement inserted, set on one it updated.
	err = s.db.WithContext(ctx).Raw(`INSERT INTO secrets (name, ciphertext, nonce, key_id, created_by, updated_by, created_at, updated_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (name) DO UPDATE SET ciphertext = excluded.ciphertext, nonce = excluded.nonce, key_id = excluded.key_id,
			updated_by = excluded.updated_by, updated_at = excluded.updated_at
		RETURNING name, created_by, updated_by, created_at, updated_at, (xmax = 0) AS inserted`,
		p.Name, sealed.Ciphertext, sealed.Nonce, sealed.KeyID, p.Actor, p.Actor, p.Now, p.Now).Scan(&row).Error
	if err != nil {
		return SecretInfo{}, false, fmt.Errorf("error storing secret %s: %w", p.Name, interpretError(err))
	}
	return row.info(), row.Inserted, nil
}

// SecretsPage lists secrets by name (byte order, whatever the database's
// collation), one page at a time; next is "" on
// the last page.
func (s *Store) SecretsPage(ctx context.Context, p PageParams) ([]SecretInfo, string, error) {
	q := s.db.WithContext(ctx).Select("name", "created_by", "updated_by", "created_at", "updated_at")
	if p.Cursor != "" {
		_, keys, err := decodePageCursor(p.Cursor, 1)
		if err != nil {
			return nil, "", err
		}
		q = q.Where(`name COLLATE "C" > ?`, keys[0])
	}
	limit := pageLimit(p.Limit)
	var rows []Secret
	if err := q.Order(`name COLLATE "C"`).Limit(limit + 1).Find(&rows).Error; err != nil {
		return nil, "", fmt.Errorf("error listing secrets: %w", interpretError(err))
	}
	out := make([]SecretInfo, 0, len(rows))
	for i := range rows {
		out = append(out, rows[i].info())
	}
	next := ""
	if len(out) > limit {
		out = out[:limit]
		next = encodePageCursor(time.Time{}, out[limit-1].Name)
	}
	return out, next, nil
}

// DeleteSecret deletes a secret (engine.ErrNotFound when there is none).
func (s *Store) DeleteSecret(ctx context.Context, name string) error {
	res := s.db.WithContext(ctx).Where("name = ?", name).Delete(&Secret{})
	if res.Error != nil {
		return fmt.Errorf("error deleting secret %s: %w", name, interpretError(res.Error))
	}
	if res.RowsAffected == 0 {
		return fmt.Errorf("%w: secret %s not found", engine.ErrNotFound, name)
	}
	return nil
}

// MissingSecrets returns the names, of those given, that no secret has.
func (s *Store) MissingSecrets(ctx context.Context, names []string) ([]string, error) {
	if len(names) == 0 {
		return nil, nil
	}
	var have []string
	if err := s.db.WithContext(ctx).Model(&Secret{}).Where("name IN ?", names).Pluck("name", &have).Error; err != nil {
		return nil, fmt.Errorf("error looking up secrets: %w", interpretError(err))
	}
	var missing []string
	for _, n := range names {
		if !slices.Contains(have, n) && !slices.Contains(missing, n) {
			missing = append(missing, n)
		}
	}
	return missing, nil
}

// RevealSecrets decrypts the named secrets with box. A name with no
// secret, no box, or a value that does not open wraps engine.ErrSecret;
// a database failure does not (another try may succeed).
func (s *Store) RevealSecrets(ctx context.Context, box *secretbox.Box, names []string) (map[string]string, error) {
	if box == nil {
		return nil, fmt.Errorf("%w: %w", engine.ErrSecret, secretbox.ErrNoKey)
	}
	var rows []Secret
	if err := s.db.WithContext(ctx).Where("name IN ?", names).Find(&rows).Error; err != nil {
		return nil, fmt.Errorf("error loading secrets: %w", interpretError(err))
	}
	out := make(map[string]string, len(rows))
	for i := range rows {
		r := &rows[i]
		v, err := box.Open(r.Name, secretbox.Sealed{Ciphertext: r.Ciphertext, Nonce: r.Nonce, KeyID: r.KeyID})
		if err != nil {
			return nil, fmt.Errorf("%w: %w", engine.ErrSecret, err)
		}
		out[r.Name] = string(v)
	}
	for _, n := range names {
		if _, ok := out[n]; !ok {
			return nil, fmt.Errorf("%w: secret %q is not set (POST /api/v1/secrets)", engine.ErrSecret, n)
		}
	}
	return out, nil
}

// SecretReader reveals secrets for the dispatcher
// (callbacks.SecretSource).
type SecretReader struct {
	Store *Store
	// Box opens the values (nil: secrets are off; every reveal fails).
	Box *secretbox.Box
}

// Reveal implements callbacks.SecretSource.
func (r *SecretReader) Reveal(ctx context.Context, names []string) (map[string]string, error) {
	return r.Store.RevealSecrets(ctx, r.Box, names)
}

// IsSecretsOff reports whether err is the refusal of a server with no
// secret key.
func IsSecretsOff(err error) bool { return errors.Is(err, secretbox.ErrNoKey) }
