package store

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/lib/pq"

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
	// AllowedHosts are the only hosts (host or host:port) a request
	// carrying the secret may go to; empty: any host fixed in a flow.
	AllowedHosts pq.StringArray `gorm:"type:text[]"`
	CreatedBy    string
	UpdatedBy    string
	CreatedAt    time.Time
	UpdatedAt    time.Time
}

// TableName is the secrets table.
func (Secret) TableName() string { return "secrets" }

// SecretInfo is what the API shows of a secret: never its value.
type SecretInfo struct {
	Name         string    `json:"name"`
	AllowedHosts []string  `json:"allowed_hosts"`
	CreatedBy    string    `json:"created_by"`
	UpdatedBy    string    `json:"updated_by"`
	CreatedAt    time.Time `json:"created_at"`
	UpdatedAt    time.Time `json:"updated_at"`
}

func (s *Secret) info() SecretInfo {
	return SecretInfo{Name: s.Name, AllowedHosts: nonNil([]string(s.AllowedHosts)), CreatedBy: s.CreatedBy, UpdatedBy: s.UpdatedBy, CreatedAt: s.CreatedAt, UpdatedAt: s.UpdatedAt}
}

// PutSecretParams stores a secret's value, creating or replacing it.
type PutSecretParams struct {
	// Workspace owns the secret ("": DefaultWorkspace).
	Workspace string
	Name      string
	Value     []byte
	// Box seals the value (nil: secretbox.ErrNoKey).
	Box *secretbox.Box
	// AllowedHosts replaces the secret's allowed hosts; nil keeps them
	// (none for a new secret).
	AllowedHosts *[]string
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
	ws := workspaceOr(p.Workspace)
	sealed, err := p.Box.Seal(secretSealName(ws, p.Name), p.Value)
	if err != nil {
		return SecretInfo{}, false, err
	}
	var row struct {
		Secret
		Inserted bool
	}
	var hosts any // NULL: keep the row's
	if p.AllowedHosts != nil {
		hosts = pq.StringArray(nonNil(*p.AllowedHosts))
	}
	// xmax is 0 on a row this statement inserted, set on one it updated.
	err = s.db.WithContext(ctx).Raw(`INSERT INTO secrets (workspace, name, ciphertext, nonce, key_id, allowed_hosts, created_by, updated_by, created_at, updated_at)
		VALUES (?, ?, ?, ?, ?, coalesce(?::text[], '{}'), ?, ?, ?, ?)
		ON CONFLICT (workspace, name) DO UPDATE SET ciphertext = excluded.ciphertext, nonce = excluded.nonce, key_id = excluded.key_id,
			allowed_hosts = coalesce(?::text[], secrets.allowed_hosts),
			updated_by = excluded.updated_by, updated_at = excluded.updated_at
		RETURNING name, allowed_hosts, created_by, updated_by, created_at, updated_at, (xmax = 0) AS inserted`,
		ws, p.Name, sealed.Ciphertext, sealed.Nonce, sealed.KeyID, hosts, p.Actor, p.Actor, p.Now, p.Now, hosts).Scan(&row).Error
	if err != nil {
		return SecretInfo{}, false, fmt.Errorf("error storing secret %s: %w", p.Name, interpretError(err))
	}
	return row.info(), row.Inserted, nil
}

// SecretsPage lists secrets by name (byte order, whatever the database's
// collation), one page at a time; next is "" on
// the last page.
func (s *Store) SecretsPage(ctx context.Context, p PageParams) ([]SecretInfo, string, error) {
	q := s.db.WithContext(ctx).Select("name", "allowed_hosts", "created_by", "updated_by", "created_at", "updated_at").
		Where("workspace = ?", workspaceOr(p.Workspace))
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

// DeleteSecret deletes a secret of workspace ws (engine.ErrNotFound when
// there is none).
func (s *Store) DeleteSecret(ctx context.Context, ws, name string) error {
	res := s.db.WithContext(ctx).Where("workspace = ? AND name = ?", workspaceOr(ws), name).Delete(&Secret{})
	if res.Error != nil {
		return fmt.Errorf("error deleting secret %s: %w", name, interpretError(res.Error))
	}
	if res.RowsAffected == 0 {
		return fmt.Errorf("%w: secret %s not found", engine.ErrNotFound, name)
	}
	return nil
}

// MissingSecrets returns the names, of those given, that no secret of
// workspace ws has.
func (s *Store) MissingSecrets(ctx context.Context, ws string, names []string) ([]string, error) {
	if len(names) == 0 {
		return nil, nil
	}
	var have []string
	if err := s.db.WithContext(ctx).Model(&Secret{}).Where("workspace = ? AND name IN ?", workspaceOr(ws), names).Pluck("name", &have).Error; err != nil {
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
func (s *Store) RevealSecrets(ctx context.Context, box *secretbox.Box, ws string, names []string) (map[string]string, error) {
	values, _, err := s.RevealSecretsAndHosts(ctx, box, ws, names)
	return values, err
}

// RevealSecretsAndHosts is RevealSecrets with each secret's allowed hosts
// (read in the same statement: the hosts are those of the values).
func (s *Store) RevealSecretsAndHosts(ctx context.Context, box *secretbox.Box, ws string, names []string) (map[string]string, map[string][]string, error) {
	if box == nil {
		return nil, nil, fmt.Errorf("%w: %w", engine.ErrSecret, secretbox.ErrNoKey)
	}
	ws = workspaceOr(ws)
	var rows []Secret
	if err := s.db.WithContext(ctx).Where("workspace = ? AND name IN ?", ws, names).Find(&rows).Error; err != nil {
		return nil, nil, fmt.Errorf("error loading secrets: %w", interpretError(err))
	}
	out := make(map[string]string, len(rows))
	hosts := make(map[string][]string, len(rows))
	for i := range rows {
		r := &rows[i]
		v, err := box.Open(secretSealName(ws, r.Name), secretbox.Sealed{Ciphertext: r.Ciphertext, Nonce: r.Nonce, KeyID: r.KeyID})
		if err != nil {
			return nil, nil, fmt.Errorf("%w: %w", engine.ErrSecret, err)
		}
		out[r.Name] = string(v)
		if len(r.AllowedHosts) > 0 {
			hosts[r.Name] = r.AllowedHosts
		}
	}
	for _, n := range names {
		if _, ok := out[n]; !ok {
			return nil, nil, fmt.Errorf("%w: secret %q is not set (POST /api/v1/secrets)", engine.ErrSecret, n)
		}
	}
	return out, hosts, nil
}

// SecretAllowedHosts returns the allowed hosts of the named secrets that
// exist and have some.
func (s *Store) SecretAllowedHosts(ctx context.Context, ws string, names []string) (map[string][]string, error) {
	var rows []Secret
	if err := s.db.WithContext(ctx).Select("name", "allowed_hosts").Where("workspace = ? AND name IN ?", workspaceOr(ws), names).Find(&rows).Error; err != nil {
		return nil, fmt.Errorf("error looking up secrets: %w", interpretError(err))
	}
	out := make(map[string][]string, len(rows))
	for _, r := range rows {
		if len(r.AllowedHosts) > 0 {
			out[r.Name] = r.AllowedHosts
		}
	}
	return out, nil
}

// SetSecretHosts replaces an existing secret's allowed hosts, keeping its
// value (engine.ErrNotFound when there is none).
func (s *Store) SetSecretHosts(ctx context.Context, ws, name string, hosts []string, actor string, now time.Time) (SecretInfo, error) {
	var row Secret
	res := s.db.WithContext(ctx).Raw(`UPDATE secrets SET allowed_hosts = ?::text[], updated_by = ?, updated_at = ? WHERE workspace = ? AND name = ?
		RETURNING name, allowed_hosts, created_by, updated_by, created_at, updated_at`,
		pq.StringArray(nonNil(hosts)), actor, now, workspaceOr(ws), name).Scan(&row)
	if res.Error != nil {
		return SecretInfo{}, fmt.Errorf("error updating secret %s: %w", name, interpretError(res.Error))
	}
	if res.RowsAffected == 0 {
		return SecretInfo{}, fmt.Errorf("%w: secret %s not found", engine.ErrNotFound, name)
	}
	return row.info(), nil
}

// SecretReader reveals secrets for the dispatcher
// (callbacks.SecretSource).
type SecretReader struct {
	Store *Store
	// Box opens the values (nil: secrets are off; every reveal fails).
	Box *secretbox.Box
}

// Reveal implements callbacks.SecretSource: the secrets of run runID's
// workspace.
func (r *SecretReader) Reveal(ctx context.Context, ws, runID string, names []string) (map[string]string, map[string][]string, error) {
	if ws == "" {
		var err error
		if ws, err = r.Store.WorkspaceOf(ctx, OwnerRun, runID); err != nil {
			return nil, nil, err
		}
	}
	return r.Store.RevealSecretsAndHosts(ctx, r.Box, ws, names)
}

// secretSealName is the additional data a secret's seal is bound to: its
// name, and its workspace's slug but for the default workspace's (sealed
// before workspaces, by name alone), so a value cannot be opened as
// another workspace's.
func secretSealName(ws, name string) string {
	if ws == DefaultWorkspace {
		return name
	}
	return ws + "/" + name
}

// IsSecretsOff reports whether err is the refusal of a server with no
// secret key.
func IsSecretsOff(err error) bool { return errors.Is(err, secretbox.ErrNoKey) }
