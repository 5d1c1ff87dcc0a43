package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/lib/pq"

	"github.com/stitchd/stitchd/engine"
	"github.com/stitchd/stitchd/internal/credential"
	"github.com/stitchd/stitchd/internal/secretbox"
)

// CredentialInfo is what the API shows of a credential: never its data.
type CredentialInfo struct {
	Name         string    `json:"name"`
	Type         string    `json:"type"`
	AllowedHosts []string  `json:"allowed_hosts"`
	CreatedBy    string    `json:"created_by"`
	UpdatedBy    string    `json:"updated_by"`
	CreatedAt    time.Time `json:"created_at"`
	UpdatedAt    time.Time `json:"updated_at"`
}

// credentialRow is what is read of a credentials row but its seal.
type credentialRow struct {
	Name, Type           string
	AllowedHosts         pq.StringArray `gorm:"type:text[]"`
	CreatedBy, UpdatedBy string
	CreatedAt, UpdatedAt time.Time
	Inserted             bool
}

func (r *credentialRow) info() CredentialInfo {
	return CredentialInfo{Name: r.Name, Type: r.Type, AllowedHosts: nonNil([]string(r.AllowedHosts)), CreatedBy: r.CreatedBy,
		UpdatedBy: r.UpdatedBy, CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt}
}

// PutCredentialParams stores a credential, creating or replacing it.
type PutCredentialParams struct {
	// Workspace owns the credential ("": DefaultWorkspace).
	Workspace  string
	Name, Type string
	// Data is the type's data (credential.Parse checked it).
	Data         credential.Data
	AllowedHosts []string
	// Box seals the data (nil: secretbox.ErrNoKey).
	Box *secretbox.Box
	// Replace: only an existing credential is replaced (PUT); else a new
	// one is made or one of the same name replaced (POST).
	Replace bool
	Actor   string
	Now     time.Time
}

// sealName is the additional data a credential's seal is bound to: not a
// secret's, so one cannot be opened as the other.
// Another workspace's (not the default one's) is bound to its slug too.
func sealName(ws, name string) string {
	if ws == DefaultWorkspace {
		return "credential:" + name
	}
	return "credential:" + ws + "/" + name
}

// PutCredential seals and stores a credential; created reports a new
// name. With Replace, a name that has none is engine.ErrNotFound.
func (s *Store) PutCredential(ctx context.Context, p PutCredentialParams) (info CredentialInfo, created bool, err error) {
	if p.Box == nil {
		return CredentialInfo{}, false, secretbox.ErrNoKey
	}
	raw, _ := json.Marshal(p.Data) //nolint:gosec // sealed before it is stored, never logged; strings and an int always marshal
	ws := workspaceOr(p.Workspace)
	sealed, err := p.Box.Seal(sealName(ws, p.Name), raw)
	if err != nil {
		return CredentialInfo{}, false, err
	}
	var row credentialRow
	q := `INSERT INTO credentials (workspace, name, type, ciphertext, nonce, key_id, allowed_hosts, created_by, updated_by, created_at, updated_at)
		VALUES (?, ?, ?, ?, ?, ?, ?::text[], ?, ?, ?, ?)
		ON CONFLICT (workspace, name) DO UPDATE SET type = excluded.type, ciphertext = excluded.ciphertext, nonce = excluded.nonce,
			key_id = excluded.key_id, allowed_hosts = excluded.allowed_hosts, updated_by = excluded.updated_by, updated_at = excluded.updated_at
		RETURNING name, type, allowed_hosts, created_by, updated_by, created_at, updated_at, (xmax = 0) AS inserted`
	args := []any{ws, p.Name, p.Type, sealed.Ciphertext, sealed.Nonce, sealed.KeyID, pq.StringArray(p.AllowedHosts), p.Actor, p.Actor, p.Now, p.Now}
	if p.Replace {
		q = `UPDATE credentials SET type = ?, ciphertext = ?, nonce = ?, key_id = ?, allowed_hosts = ?::text[], updated_by = ?, updated_at = ?
			WHERE workspace = ? AND name = ? RETURNING name, type, allowed_hosts, created_by, updated_by, created_at, updated_at, false AS inserted`
		args = []any{p.Type, sealed.Ciphertext, sealed.Nonce, sealed.KeyID, pq.StringArray(p.AllowedHosts), p.Actor, p.Now, ws, p.Name}
	}
	res := s.db.WithContext(ctx).Raw(q, args...).Scan(&row)
	if res.Error != nil {
		return CredentialInfo{}, false, fmt.Errorf("error storing credential %s: %w", p.Name, interpretError(res.Error))
	}
	if res.RowsAffected == 0 {
		return CredentialInfo{}, false, fmt.Errorf("credential %s: %w", p.Name, engine.ErrNotFound)
	}
	return row.info(), row.Inserted, nil
}

// Credentials lists every credential by name (byte order): names, types,
// hosts and times, never data.
func (s *Store) Credentials(ctx context.Context, ws string) ([]CredentialInfo, error) {
	var rows []credentialRow
	if err := s.db.WithContext(ctx).Raw(`SELECT name, type, allowed_hosts, created_by, updated_by, created_at, updated_at
		FROM credentials WHERE workspace = ? ORDER BY name COLLATE "C"`, workspaceOr(ws)).Scan(&rows).Error; err != nil {
		return nil, fmt.Errorf("error listing credentials: %w", interpretError(err))
	}
	out := make([]CredentialInfo, len(rows))
	for i := range rows {
		out[i] = rows[i].info()
	}
	return out, nil
}

// CredentialInfoOf is one credential as the API shows it.
func (s *Store) CredentialInfoOf(ctx context.Context, ws, name string) (CredentialInfo, error) {
	var row credentialRow
	res := s.db.WithContext(ctx).Raw(`SELECT name, type, allowed_hosts, created_by, updated_by, created_at, updated_at
		FROM credentials WHERE workspace = ? AND name = ?`, workspaceOr(ws), name).Scan(&row)
	if res.Error != nil {
		return CredentialInfo{}, fmt.Errorf("error loading credential %s: %w", name, interpretError(res.Error))
	}
	if res.RowsAffected == 0 {
		return CredentialInfo{}, fmt.Errorf("credential %s: %w", name, engine.ErrNotFound)
	}
	return row.info(), nil
}

// DeleteCredential deletes a credential (engine.ErrNotFound: none).
func (s *Store) DeleteCredential(ctx context.Context, ws, name string) error {
	res := s.db.WithContext(ctx).Exec(`DELETE FROM credentials WHERE workspace = ? AND name = ?`, workspaceOr(ws), name)
	if res.Error != nil {
		return fmt.Errorf("error deleting credential %s: %w", name, interpretError(res.Error))
	}
	if res.RowsAffected == 0 {
		return fmt.Errorf("credential %s: %w", name, engine.ErrNotFound)
	}
	return nil
}

// CredentialReader reveals credentials for the dispatcher
// (callbacks.CredentialSource).
type CredentialReader struct {
	Store *Store
	Box   *secretbox.Box
}

// Credential reveals credential name; a failure no later try mends (none
// of that name, no key, data that does not open) wraps engine.ErrSecret.
func (r *CredentialReader) Credential(ctx context.Context, ws, runID, name string) (*credential.Credential, error) {
	if r.Box == nil {
		return nil, fmt.Errorf("%w: this server reads no credentials (no %s)", engine.ErrSecret, secretbox.EnvKey)
	}
	var row struct {
		Workspace    string
		Type         string
		Ciphertext   []byte
		Nonce        []byte
		KeyID        string
		AllowedHosts pq.StringArray `gorm:"type:text[]"`
	}
	// The credential of the run's workspace (found in one statement), or
	// of workspace ws.
	q := r.Store.db.WithContext(ctx).Raw(`SELECT c.workspace, c.type, c.ciphertext, c.nonce, c.key_id, c.allowed_hosts
		FROM credentials c JOIN runs r ON r.workspace = c.workspace WHERE r.id = ? AND c.name = ?`, runID, name)
	if ws != "" {
		q = r.Store.db.WithContext(ctx).Raw(`SELECT workspace, type, ciphertext, nonce, key_id, allowed_hosts
			FROM credentials WHERE workspace = ? AND name = ?`, ws, name)
	}
	err := q.Row().Scan(&row.Workspace, &row.Type, &row.Ciphertext, &row.Nonce, &row.KeyID, &row.AllowedHosts)
	if isNotFound(interpretError(err)) {
		return nil, fmt.Errorf("%w: no credential is called %q", engine.ErrSecret, name)
	}
	if err != nil {
		return nil, fmt.Errorf("error loading credential %s: %w", name, interpretError(err))
	}
	plain, err := r.Box.Open(sealName(row.Workspace, name), secretbox.Sealed{Ciphertext: row.Ciphertext, Nonce: row.Nonce, KeyID: row.KeyID})
	if err != nil {
		return nil, fmt.Errorf("%w: credential %s cannot be opened: %w", engine.ErrSecret, name, err)
	}
	c := &credential.Credential{Name: name, Type: row.Type, AllowedHosts: row.AllowedHosts}
	if err := json.Unmarshal(plain, &c.Data); err != nil {
		return nil, errors.Join(engine.ErrSecret, fmt.Errorf("credential %s: %w", name, err))
	}
	return c, nil
}
