package store

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/lib/pq"
	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/stitchd/stitchd/engine"
)

// Roles a user can hold (README, People and access).
const (
	RoleAdmin    = "admin"
	RoleEditor   = "editor"
	RoleOperator = "operator"
	RoleApprover = "approver"
	RoleViewer   = "viewer"
	// RoleWorker is a token's, never a person's: it polls task queues
	// (POST /api/v1/tasks/poll) and nothing else. A worker's callbacks
	// need no token (their URLs are signed).
	RoleWorker = "worker"
)

// Roles lists every role, most powerful first.
var Roles = []string{RoleAdmin, RoleEditor, RoleOperator, RoleApprover, RoleViewer}

// User is a person (or a service account) who signs in or holds tokens.
type User struct {
	ID       string         `json:"id"`
	Email    string         `json:"email"`
	Name     string         `json:"name"`
	Role     string         `json:"role"`
	Groups   pq.StringArray `json:"groups" gorm:"type:text[]"`
	Disabled bool           `json:"disabled"`
	// PasswordHash is argon2id in PHC form (nil: no password sign-in).
	PasswordHash *string   `json:"-"`
	CreatedAt    time.Time `json:"created_at"`
	UpdatedAt    time.Time `json:"updated_at"`
}

// TableName is the users table.
func (User) TableName() string { return "users" }

// CreateUserParams creates a user.
type CreateUserParams struct {
	ID, Email, Name, Role string
	// Workspace is where the user gets Role ("": DefaultWorkspace).
	Workspace    string
	Groups       []string
	PasswordHash *string
	Now          time.Time
}

// CreateUser adds a user; an email already taken (in any case) is
// engine.ErrConflict.
func (s *Store) CreateUser(ctx context.Context, p CreateUserParams) (*User, error) {
	groups := pq.StringArray(p.Groups)
	if groups == nil {
		groups = pq.StringArray{}
	}
	u := User{ID: p.ID, Email: p.Email, Name: p.Name, Role: p.Role, Groups: groups, PasswordHash: p.PasswordHash,
		CreatedAt: p.Now, UpdatedAt: p.Now}
	// In a transaction of its own: a taken email then spoils nothing
	// around it (a savepoint when the Store is bound to a transaction).
	// RETURNING reads the row back as stored (times to the microsecond).
	ws := p.Workspace
	if ws == "" {
		ws = DefaultWorkspace
	}
	err := s.inGormTx(ctx, func(tx *Store) error {
		if err := tx.db.WithContext(ctx).Clauses(clause.Returning{}).Create(&u).Error; err != nil {
			return err
		}
		return tx.db.WithContext(ctx).Exec(`INSERT INTO workspace_members (workspace, user_id, role, created_at, updated_at)
			VALUES (?, ?, ?, ?, ?)`, ws, u.ID, p.Role, p.Now, p.Now).Error
	})
	if err != nil {
		err = interpretError(err)
		if errors.Is(err, engine.ErrConflict) {
			return nil, fmt.Errorf("%w: a user with email %s exists", engine.ErrConflict, p.Email)
		}
		return nil, fmt.Errorf("error creating user %s: %w", p.Email, err)
	}
	return &u, nil
}

// GetUser loads a user by id.
func (s *Store) GetUser(ctx context.Context, id string) (*User, error) {
	return s.oneUser(ctx, `id = ?`, id, "user "+id)
}

// UserByEmail loads a user by email, in any case.
func (s *Store) UserByEmail(ctx context.Context, email string) (*User, error) {
	return s.oneUser(ctx, `lower(email) = lower(?)`, email, "user "+email)
}

func (s *Store) oneUser(ctx context.Context, cond string, arg any, what string) (*User, error) {
	if !strings.HasPrefix(cond, "lower") && !isUUID(fmt.Sprint(arg)) {
		return nil, fmt.Errorf("%w: %s not found", engine.ErrNotFound, what)
	}
	var u User
	err := s.db.WithContext(ctx).Where(cond, arg).Take(&u).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return nil, fmt.Errorf("%w: %s not found", engine.ErrNotFound, what)
	}
	if err != nil {
		return nil, fmt.Errorf("error loading %s: %w", what, interpretError(err))
	}
	return &u, nil
}

// ListUsers lists every user by email.
func (s *Store) ListUsers(ctx context.Context) ([]User, error) {
	var all []User
	p := PageParams{Limit: MaxPageSize}
	for {
		page, next, err := s.ListUsersPage(ctx, p)
		if err != nil {
			return nil, err
		}
		all = append(all, page...)
		if next == "" {
			return all, nil
		}
		p.Cursor = next
	}
}

// ListUsersPage lists users by email (lower case), one page at a time;
// next is "" on the last page.
func (s *Store) ListUsersPage(ctx context.Context, p PageParams) ([]User, string, error) {
	q := s.db.WithContext(ctx)
	if p.Cursor != "" {
		_, keys, err := decodePageCursor(p.Cursor, 1)
		if err != nil {
			return nil, "", err
		}
		q = q.Where("lower(email) > ?", keys[0])
	}
	limit := pageLimit(p.Limit)
	out := []User{}
	if err := q.Order("lower(email)").Limit(limit + 1).Find(&out).Error; err != nil {
		return nil, "", fmt.Errorf("error listing users: %w", interpretError(err))
	}
	next := ""
	if len(out) > limit {
		out = out[:limit]
		next = encodePageCursor(time.Time{}, strings.ToLower(out[limit-1].Email))
	}
	return out, next, nil
}

// CountUsers counts users (an empty server has none).
func (s *Store) CountUsers(ctx context.Context) (int, error) {
	var n int64
	if err := s.db.WithContext(ctx).Model(&User{}).Count(&n).Error; err != nil {
		return 0, fmt.Errorf("error counting users: %w", interpretError(err))
	}
	return int(n), nil
}

// UpdateUserParams changes the fields that are set.
type UpdateUserParams struct {
	Name, Role *string
	// Workspace is where a changed Role applies too ("": DefaultWorkspace).
	Workspace    string
	Groups       *[]string
	Disabled     *bool
	PasswordHash *string
	Now          time.Time
}

// UpdateUser changes a user. Disabling a user or changing their password
// ends their sessions.
func (s *Store) UpdateUser(ctx context.Context, id string, p UpdateUserParams) (*User, error) {
	if !isUUID(id) {
		return nil, fmt.Errorf("%w: user %s not found", engine.ErrNotFound, id)
	}
	set := map[string]any{"updated_at": p.Now}
	if p.Name != nil {
		set["name"] = *p.Name
	}
	if p.Role != nil {
		set["role"] = *p.Role
	}
	if p.Groups != nil {
		set["groups"] = pq.StringArray(*p.Groups)
	}
	if p.Disabled != nil {
		set["disabled"] = *p.Disabled
	}
	if p.PasswordHash != nil {
		set["password_hash"] = *p.PasswordHash
	}
	var u User
	err := s.inGormTx(ctx, func(tx *Store) error {
		res := tx.db.WithContext(ctx).Model(&u).Clauses(clause.Returning{}).Where("id = ?", id).Updates(set)
		if res.Error != nil {
			return fmt.Errorf("error updating user %s: %w", id, interpretError(res.Error))
		}
		if res.RowsAffected == 0 {
			return fmt.Errorf("%w: user %s not found", engine.ErrNotFound, id)
		}
		if p.Role != nil {
			ws := p.Workspace
			if ws == "" {
				ws = DefaultWorkspace
			}
			if err := tx.db.WithContext(ctx).Exec(`INSERT INTO workspace_members (workspace, user_id, role, created_at, updated_at)
				VALUES (?, ?, ?, ?, ?) ON CONFLICT (workspace, user_id) DO UPDATE SET role = excluded.role, updated_at = excluded.updated_at`,
				ws, id, *p.Role, p.Now, p.Now).Error; err != nil {
				return fmt.Errorf("error setting the role of user %s in workspace %s: %w", id, ws, interpretError(err))
			}
		}
		if (p.Disabled != nil && *p.Disabled) || p.PasswordHash != nil {
			if err := tx.db.WithContext(ctx).Exec(`DELETE FROM sessions WHERE user_id = ?`, id).Error; err != nil {
				return fmt.Errorf("error ending the sessions of user %s: %w", id, interpretError(err))
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return &u, nil
}

// DeleteUser deletes a user with their sessions and tokens.
func (s *Store) DeleteUser(ctx context.Context, id string) error {
	if !isUUID(id) {
		return fmt.Errorf("%w: user %s not found", engine.ErrNotFound, id)
	}
	res := s.db.WithContext(ctx).Delete(&User{}, "id = ?", id)
	if res.Error != nil {
		return fmt.Errorf("error deleting user %s: %w", id, interpretError(res.Error))
	}
	if res.RowsAffected == 0 {
		return fmt.Errorf("%w: user %s not found", engine.ErrNotFound, id)
	}
	return nil
}

// CreateSession records a sign-in: hash is the SHA-256 of the cookie's
// value. Expired sessions of the same user are dropped on the way.
func (s *Store) CreateSession(ctx context.Context, hash []byte, userID, csrf string, now, expires time.Time) error {
	return s.inGormTx(ctx, func(tx *Store) error {
		db := tx.db.WithContext(ctx)
		if err := db.Exec(`DELETE FROM sessions WHERE user_id = ? AND expires_at <= ?`, userID, now).Error; err != nil {
			return fmt.Errorf("error dropping expired sessions: %w", interpretError(err))
		}
		if err := db.Exec(`INSERT INTO sessions (id_hash, user_id, csrf_token, created_at, expires_at) VALUES (?, ?, ?, ?, ?)`,
			bytea(hash), userID, csrf, now, expires).Error; err != nil {
			return fmt.Errorf("error creating a session: %w", interpretError(err))
		}
		return nil
	})
}

// SessionUser returns the user of an unexpired session and its CSRF token;
// engine.ErrNotFound when there is none.
func (s *Store) SessionUser(ctx context.Context, hash []byte, now time.Time) (*User, string, error) {
	var u User
	var csrf string
	err := s.db.WithContext(ctx).Raw(`SELECT u.id, u.email, u.name, u.role, u.groups, u.disabled, u.password_hash, u.created_at,
		u.updated_at, s.csrf_token FROM sessions s JOIN users u ON u.id = s.user_id WHERE s.id_hash = ? AND s.expires_at > ?`,
		bytea(hash), now).Row().Scan(&u.ID, &u.Email, &u.Name, &u.Role, &u.Groups, &u.Disabled, &u.PasswordHash, &u.CreatedAt, &u.UpdatedAt, &csrf)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, "", fmt.Errorf("%w: no such session", engine.ErrNotFound)
	}
	if err != nil {
		return nil, "", fmt.Errorf("error loading a session: %w", interpretError(err))
	}
	return &u, csrf, nil
}

// DeleteSession ends a session.
func (s *Store) DeleteSession(ctx context.Context, hash []byte) error {
	if err := s.db.WithContext(ctx).Exec(`DELETE FROM sessions WHERE id_hash = ?`, bytea(hash)).Error; err != nil {
		return fmt.Errorf("error ending a session: %w", interpretError(err))
	}
	return nil
}

// DeleteExpiredSessions drops sessions expired before now (the sweeper).
func (s *Store) DeleteExpiredSessions(ctx context.Context, now time.Time) (int64, error) {
	res := s.db.WithContext(ctx).Exec(`DELETE FROM sessions WHERE expires_at <= ?`, now)
	if res.Error != nil {
		return 0, fmt.Errorf("error dropping expired sessions: %w", interpretError(res.Error))
	}
	return res.RowsAffected, nil
}

// APIToken is a personal API token (its secret is never kept).
type APIToken struct {
	ID         string     `json:"id"`
	UserID     string     `json:"user_id"`
	Name       string     `json:"name"`
	CreatedAt  time.Time  `json:"created_at"`
	LastUsedAt *time.Time `json:"last_used_at"`
	// Role, when set, is the narrower role the token acts with
	// (RoleWorker); nil: its person's.
	Role *string `json:"role,omitempty"`
	// Workspace, when set, is the only workspace the token acts in.
	Workspace *string `json:"workspace"`
}

// TableName is the api_tokens table.
func (APIToken) TableName() string { return "api_tokens" }

// apiToken is an api_tokens row: a token with what is never shown.
type apiToken struct {
	APIToken
	TokenHash []byte
	RevokedAt *time.Time
}

// CreateToken records a token: hash is the SHA-256 of its secret.
func (s *Store) CreateToken(ctx context.Context, t APIToken, hash []byte) error {
	if err := s.db.WithContext(ctx).Create(&apiToken{APIToken: t, TokenHash: hash}).Error; err != nil {
		return fmt.Errorf("error creating token %s: %w", t.Name, interpretError(err))
	}
	return nil
}

// TokenUser returns the user a live token acts for, and the token (its
// id, narrower role and workspace); engine.ErrNotFound for a token unknown
// or revoked. last_used_at moves at most once a minute, so a busy token
// does not write on every call.
func (s *Store) TokenUser(ctx context.Context, hash []byte, now time.Time) (*User, *APIToken, error) {
	var u User
	var t APIToken
	err := s.db.WithContext(ctx).Raw(`SELECT u.id, u.email, u.name, u.role, u.groups, u.disabled, u.password_hash, u.created_at,
		u.updated_at, t.id, t.last_used_at, t.role, t.workspace FROM api_tokens t JOIN users u ON u.id = t.user_id
		WHERE t.token_hash = ? AND t.revoked_at IS NULL`,
		bytea(hash)).Row().Scan(&u.ID, &u.Email, &u.Name, &u.Role, &u.Groups, &u.Disabled, &u.PasswordHash, &u.CreatedAt, &u.UpdatedAt,
		&t.ID, &t.LastUsedAt, &t.Role, &t.Workspace)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil, fmt.Errorf("%w: no such token", engine.ErrNotFound)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("error loading a token: %w", interpretError(err))
	}
	if t.LastUsedAt == nil || now.Sub(*t.LastUsedAt) >= time.Minute {
		if err := s.db.WithContext(ctx).Model(&APIToken{ID: t.ID}).Update("last_used_at", now).Error; err != nil {
			return nil, nil, fmt.Errorf("error noting the use of token %s: %w", t.ID, interpretError(err))
		}
	}
	t.UserID = u.ID
	return &u, &t, nil
}

// ListTokens lists a user's live tokens, newest first.
func (s *Store) ListTokens(ctx context.Context, userID string) ([]APIToken, error) {
	out := []APIToken{}
	err := s.db.WithContext(ctx).Where("user_id = ? AND revoked_at IS NULL", userID).Order("created_at DESC, id").Find(&out).Error
	if err != nil {
		return nil, fmt.Errorf("error listing tokens: %w", interpretError(err))
	}
	return out, nil
}

// RevokeToken revokes a live token of userID ("" = of anyone: an admin).
func (s *Store) RevokeToken(ctx context.Context, id, userID string, now time.Time) error {
	if !isUUID(id) {
		return fmt.Errorf("%w: token %s not found", engine.ErrNotFound, id)
	}
	q := s.db.WithContext(ctx).Model(&apiToken{}).Where("id = ? AND revoked_at IS NULL", id)
	if userID != "" {
		q = q.Where("user_id = ?", userID)
	}
	res := q.Update("revoked_at", now)
	if res.Error != nil {
		return fmt.Errorf("error revoking token %s: %w", id, interpretError(res.Error))
	}
	if res.RowsAffected == 0 {
		return fmt.Errorf("%w: token %s not found", engine.ErrNotFound, id)
	}
	return nil
}

// bytea passes a []byte as one value (gorm would spread a bare []byte
// over several placeholders in some statements).
type bytea []byte

func (b bytea) Value() (driver.Value, error) { return []byte(b), nil }

// inGormTx runs fn with a Store bound to one gorm transaction.
func (s *Store) inGormTx(ctx context.Context, fn func(tx *Store) error) error {
	err := s.db.WithContext(ctx).Transaction(func(gtx *gorm.DB) error { return fn(&Store{db: gtx, url: s.url, binds: s.binds}) })
	// BEGIN's and COMMIT's errors (the database away) come back as they
	// are: give them their meaning (fn's own errors are already wrapped).
	return interpretError(err)
}

// LoginFailures counts the failed sign-ins since since: of the account
// (email, in any case) and from the address.
func (s *Store) LoginFailures(ctx context.Context, email, address string, since time.Time) (byAccount, byAddress int, err error) {
	err = s.db.WithContext(ctx).Raw(`SELECT
		(SELECT count(*) FROM login_failures WHERE lower(email) = lower(?) AND at > ?),
		(SELECT count(*) FROM login_failures WHERE address = ? AND at > ?)`, email, since, address, since).Row().Scan(&byAccount, &byAddress)
	if err != nil {
		return 0, 0, fmt.Errorf("error counting failed sign-ins: %w", interpretError(err))
	}
	return byAccount, byAddress, nil
}

// RecordLoginFailure notes a failed sign-in, dropping the account's and
// the address's notes older than before.
func (s *Store) RecordLoginFailure(ctx context.Context, email, address string, at, before time.Time) error {
	return s.inGormTx(ctx, func(tx *Store) error {
		db := tx.db.WithContext(ctx)
		if err := db.Exec(`DELETE FROM login_failures WHERE (lower(email) = lower(?) OR address = ?) AND at <= ?`,
			email, address, before).Error; err != nil {
			return fmt.Errorf("error dropping old failed sign-ins: %w", interpretError(err))
		}
		if err := db.Exec(`INSERT INTO login_failures (email, address, at) VALUES (?, ?, ?)`, email, address, at).Error; err != nil {
			return fmt.Errorf("error noting a failed sign-in: %w", interpretError(err))
		}
		return nil
	})
}

// DeleteOldLoginFailures drops failed sign-ins noted before before (the
// sweeper: accounts and addresses never tried again would keep theirs).
func (s *Store) DeleteOldLoginFailures(ctx context.Context, before time.Time) (int64, error) {
	res := s.db.WithContext(ctx).Exec(`DELETE FROM login_failures WHERE at < ?`, before)
	if res.Error != nil {
		return 0, fmt.Errorf("error dropping old failed sign-ins: %w", interpretError(res.Error))
	}
	return res.RowsAffected, nil
}

// ClearLoginFailures forgets an account's failed sign-ins (it signed in).
func (s *Store) ClearLoginFailures(ctx context.Context, email string) error {
	if err := s.db.WithContext(ctx).Exec(`DELETE FROM login_failures WHERE lower(email) = lower(?)`, email).Error; err != nil {
		return fmt.Errorf("error clearing failed sign-ins: %w", interpretError(err))
	}
	return nil
}

// AuditEntry is one change a person or token made through the API.
type AuditEntry struct {
	ID int64     `json:"id,string"`
	At time.Time `json:"at"`
	// Time is At again, under the name the contract uses.
	Time      time.Time      `json:"time"`
	Actor     string         `json:"actor"`
	Action    string         `json:"action"`
	Target    string         `json:"target"`
	RequestID string         `json:"request_id"`
	Status    int            `json:"status"`
	Details   map[string]any `json:"details,omitempty"`
	// Summary is the change in business language ("fiona@example.com
	// approved Finance approval — run 01a2…f9"; "" for entries written
	// before it was kept, or routes that have none).
	Summary string `json:"summary,omitempty"`
	// Workspace is the workspace the change was made in; nil for a change
	// to the server (its users, workspaces, webhook secret).
	Workspace *string `json:"workspace"`
}

// InsertAudit writes an audit entry.
func (s *Store) InsertAudit(ctx context.Context, e AuditEntry) error {
	var details any
	if len(e.Details) > 0 {
		b, err := json.Marshal(e.Details)
		if err != nil {
			return fmt.Errorf("error encoding an audit entry's details: %w", err)
		}
		details = string(b)
	}
	if err := s.db.WithContext(ctx).Exec(`INSERT INTO audit_log (at, actor, action, target, request_id, status, details, summary, workspace)
		VALUES (?, ?, ?, ?, ?, ?, ?, nullif(?, ''), ?)`, e.At, e.Actor, e.Action, e.Target, e.RequestID, e.Status, details, e.Summary,
		e.Workspace).Error; err != nil {
		return fmt.Errorf("error writing an audit entry: %w", interpretError(err))
	}
	return nil
}

// AuditFilter selects audit entries: each field set narrows the list.
type AuditFilter struct {
	Actor, Target string
	Since         *time.Time
	// PageParams.Workspace is the workspace whose entries are listed;
	// WithServer adds the changes to the server (a server admin's view).
	PageParams
	WithServer bool
}

// AuditPage lists audit entries, newest first, and the next page's cursor
// ("" on the last page).
func (s *Store) AuditPage(ctx context.Context, f AuditFilter) ([]AuditEntry, string, error) {
	q, args := `SELECT id, at, actor, action, target, request_id, status, coalesce(details, 'null'), coalesce(summary, ''), workspace
		FROM audit_log WHERE (workspace = ? OR ? AND workspace IS NULL)`, []any{workspaceOr(f.Workspace), f.WithServer}
	if f.Actor != "" {
		q, args = q+` AND actor = ?`, append(args, f.Actor)
	}
	if f.Target != "" {
		if strings.Contains(f.Target, ":") {
			q, args = q+` AND target = ?`, append(args, f.Target)
		} else {
			// A bare id: whatever kind it is (run:<id>, flow:<id>, …).
			q, args = q+` AND (target = ? OR split_part(target, ':', 2) = ?)`, append(args, f.Target, f.Target)
		}
	}
	if f.Since != nil {
		q, args = q+` AND at >= ?`, append(args, *f.Since)
	}
	if f.Cursor != "" {
		id, err := strconv.ParseInt(f.Cursor, 10, 64)
		if err != nil || id < 1 {
			return nil, "", fmt.Errorf("%w: invalid cursor (send back a next_cursor as it was given)", engine.ErrInvalidRequest)
		}
		q, args = q+` AND id < ?`, append(args, id)
	}
	limit := pageLimit(f.Limit)
	rows, err := s.db.WithContext(ctx).Raw(q+` ORDER BY id DESC LIMIT ?`, append(args, limit+1)...).Rows()
	if err != nil {
		return nil, "", fmt.Errorf("error listing the audit log: %w", interpretError(err))
	}
	defer rows.Close()
	out := []AuditEntry{}
	for rows.Next() {
		var e AuditEntry
		var details []byte
		if err := rows.Scan(&e.ID, &e.At, &e.Actor, &e.Action, &e.Target, &e.RequestID, &e.Status, &details, &e.Summary, &e.Workspace); err != nil {
			return nil, "", fmt.Errorf("error reading the audit log: %w", err)
		}
		if err := json.Unmarshal(details, &e.Details); err != nil {
			return nil, "", fmt.Errorf("error reading audit entry %d: %w", e.ID, err)
		}
		e.At = e.At.UTC()
		e.Time = e.At
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
		return nil, "", fmt.Errorf("error reading the audit log: %w", err)
	}
	next := ""
	if len(out) > limit {
		out = out[:limit]
		next = strconv.FormatInt(out[limit-1].ID, 10)
	}
	return out, next, nil
}

// IsParticipant reports whether a person (email, groups) is part of a
// run: one of its UX nodes is assigned to them or their groups, or was
// reached assigned to no one (anyone may decide it, and after it is
// decided a late decider is told so, 409, not that the run is not there),
// or they claimed one or were delegated one, or they decided one.
func (s *Store) IsParticipant(ctx context.Context, runID, email string, groups []string) (bool, error) {
	var ok bool
	err := s.db.WithContext(ctx).Raw(`SELECT EXISTS (SELECT 1 FROM node_states n WHERE n.run_id = ? AND n.type = 'UX' AND (
			EXISTS (SELECT 1 FROM unnest(n.assign_users) u WHERE lower(u) = lower(?))
			OR n.assign_groups && ?::text[]
			OR (n.attempt > 0 AND n.assign_users IS NULL AND n.assign_groups IS NULL)
			OR lower(n.claimed_by) = lower(?) OR lower(n.claim_delegate) = lower(?)))
		OR EXISTS (SELECT 1 FROM ux_decisions d WHERE d.run_id = ? AND lower(d.by_email) = lower(?))`,
		runID, email, pq.StringArray(groups), email, email, runID, email).Row().Scan(&ok)
	if err != nil {
		return false, fmt.Errorf("error checking whether %s is part of run %s: %w", email, runID, interpretError(err))
	}
	return ok, nil
}

// UserEmailsInGroups lists the emails of enabled users in any of groups
// who may decide approvals in run runID's workspace: its approvers and
// admins, and server admins.
func (s *Store) UserEmailsInGroups(ctx context.Context, runID string, groups []string) ([]string, error) {
	var out []string
	err := s.db.WithContext(ctx).Raw(`SELECT u.email FROM users u WHERE NOT u.disabled AND u.groups && ?::text[]
		AND (u.role = 'admin' OR EXISTS (SELECT 1 FROM workspace_members m JOIN runs r ON r.workspace = m.workspace
			WHERE r.id = ? AND m.user_id = u.id AND m.role IN ('approver', 'admin')))
		ORDER BY u.email`,
		pq.StringArray(groups), runID).Scan(&out).Error
	if err != nil {
		return nil, fmt.Errorf("error listing the members of groups %v: %w", groups, interpretError(err))
	}
	return out, nil
}

// UserIDsByEmail maps each of emails (in lower case) that names an
// account, in any case, to the account's id.
func (s *Store) UserIDsByEmail(ctx context.Context, emails []string) (map[string]string, error) {
	var rows []struct{ ID, Email string }
	err := s.db.WithContext(ctx).Raw(`SELECT id, lower(email) AS email FROM users WHERE lower(email) = ANY(?::text[])`,
		pq.StringArray(emails)).Scan(&rows).Error
	if err != nil {
		return nil, fmt.Errorf("error looking up the accounts of %d emails: %w", len(emails), interpretError(err))
	}
	out := make(map[string]string, len(rows))
	for _, r := range rows {
		out[r.Email] = r.ID
	}
	return out, nil
}

// UseActionLink marks a one-click link's nonce used; false when it was
// already. Links used more than a month ago are forgotten on the way (no
// link lives that long).
func (s *Store) UseActionLink(ctx context.Context, nonce string, at time.Time) (bool, error) {
	var fresh bool
	err := s.inGormTx(ctx, func(tx *Store) error {
		db := tx.db.WithContext(ctx)
		if err := db.Exec(`DELETE FROM used_action_links WHERE used_at < ?`, at.Add(-31*24*time.Hour)).Error; err != nil {
			return err
		}
		res := db.Exec(`INSERT INTO used_action_links (nonce, used_at) VALUES (?, ?) ON CONFLICT DO NOTHING`, nonce, at)
		fresh = res.RowsAffected == 1
		return res.Error
	})
	if err != nil {
		return false, fmt.Errorf("error using an approval link: %w", interpretError(err))
	}
	return fresh, nil
}

// ReleaseActionLink forgets a link's use (its decision failed for a
// reason the person may retry, such as the database being away).
func (s *Store) ReleaseActionLink(ctx context.Context, nonce string) error {
	if err := s.db.WithContext(ctx).Exec(`DELETE FROM used_action_links WHERE nonce = ?`, nonce).Error; err != nil {
		return fmt.Errorf("error releasing an approval link: %w", interpretError(err))
	}
	return nil
}

// ApprovalNode is a UX node as an approval link's page shows it.
type ApprovalNode struct {
	Status  engine.Status
	Attempt int
	// Config is the node's configuration in the run's flow version.
	Config json.RawMessage
}

// ApprovalNode loads the node at key of run (engine.ErrNotFound when
// there is none).
func (s *Store) ApprovalNode(ctx context.Context, runID, key string) (*ApprovalNode, error) {
	if !isUUID(runID) {
		return nil, fmt.Errorf("%w: run %s not found", engine.ErrNotFound, runID)
	}
	var n ApprovalNode
	var cfg []byte
	err := s.db.WithContext(ctx).Raw(`SELECT ns.status, ns.attempt, coalesce(v.execution_graph->'nodes'->ns.node_id->'config', '{}')
		FROM node_states ns JOIN runs r ON r.id = ns.run_id JOIN flow_versions v ON v.id = r.flow_version_id
		WHERE ns.run_id = ? AND ns.key = ?`, runID, key).Row().Scan(&n.Status, &n.Attempt, &cfg)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("%w: step %s of run %s not found", engine.ErrNotFound, key, runID)
	}
	if err != nil {
		return nil, fmt.Errorf("error loading step %s of run %s: %w", key, runID, interpretError(err))
	}
	n.Config = cfg
	return &n, nil
}

// ApprovalsMark sums up the approvals f selects: their count, and a mark
// that changes when one is added, decided, voted on, claimed, unclaimed,
// delegated or reassigned (the newest of the selected nodes' times and
// their votes', and a digest of their claims and assignees: nothing
// about other nodes). A live inbox re-reads its list when the mark moves.
func (s *Store) ApprovalsMark(ctx context.Context, f ApprovalFilter) (count int, mark string, err error) {
	where, args, err := f.where()
	if err != nil {
		return 0, "", err
	}
	err = s.db.WithContext(ctx).Raw(`SELECT count(*), coalesce(max(greatest(ns.updated_at,
		(SELECT max(d.at) FROM ux_decisions d WHERE d.run_id = ns.run_id AND d.key = ns.key AND d.attempt = ns.attempt)))::text, '')
		|| '|' || count(*) || '|' || md5(coalesce(string_agg(ns.run_id::text || ns.key || '|' || ns.attempt || '|'
			|| coalesce(CASE WHEN ns.claim_attempt = ns.attempt THEN ns.claimed_by || '>' || coalesce(ns.claim_delegate, '') END, '')
			|| '|' || coalesce(array_to_string(ns.assign_users, ','), '-') || '|' || coalesce(array_to_string(ns.assign_groups, ','), '-'),
			',' ORDER BY ns.run_id, ns.key), ''))
		FROM node_states ns WHERE ns.status = 'waiting_for_user'`+where, args...).Row().Scan(&count, &mark)
	if err != nil {
		return 0, "", fmt.Errorf("error summing up approvals: %w", interpretError(err))
	}
	return count, mark, nil
}
