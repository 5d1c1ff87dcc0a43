package store

import (
	"context"
	"crypto/rand"
	"database/sql"
	"errors"
	"fmt"
	"sync"
	"time"

	"gorm.io/gorm"

	"github.com/stitchd/stitchd/engine"
)

// MaxSigningSecrets bounds the secrets a dispatch is signed with (one
// signature each in webhook-signature): the current one and the newest
// ones still in their grace period. A rotation past it ends the oldest
// overlap at once.
const MaxSigningSecrets = 4

// RotateWebhookSecretParams rotates the secret that signs dispatches.
type RotateWebhookSecretParams struct {
	// FlowID is the flow whose own secret rotates; "" = the server's.
	FlowID string
	// Secret is the new secret (nil: 32 random bytes).
	Secret []byte
	// Grace is how long the secret replaced keeps signing beside the new
	// one (0: it stops at once); no older secret of the scope signs longer.
	// A flow's first secret overlaps the server's for as long.
	Grace time.Duration
}

// RotatedSecret is a rotation's outcome.
type RotatedSecret struct {
	Secret []byte
	// PreviousExpiresAt is when the secret replaced stops signing (nil:
	// none does).
	PreviousExpiresAt *time.Time
}

// scopeCond selects a scope's rows ($1: the flow id, or NULL).
const scopeCond = `flow_id IS NOT DISTINCT FROM ?::uuid`

func flowArg(flowID string) any {
	if flowID == "" {
		return nil
	}
	return flowID
}

// WebhookSecret returns the server's current dispatch-signing secret,
// creating it on first use.
func (s *Store) WebhookSecret(ctx context.Context) ([]byte, error) {
	secret := make([]byte, 32)
	if _, err := rand.Read(secret); err != nil {
		return nil, err
	}
	var out []byte
	err := s.db.WithContext(ctx).Raw(`WITH ins AS (INSERT INTO webhook_secrets (flow_id, secret) VALUES (NULL, ?)
		ON CONFLICT (coalesce(flow_id, '00000000-0000-0000-0000-000000000000')) WHERE expires_at IS NULL DO NOTHING
		RETURNING secret)
		SELECT secret FROM ins UNION ALL
		(SELECT secret FROM webhook_secrets WHERE flow_id IS NULL AND expires_at IS NULL) LIMIT 1`, secret).Row().Scan(&out)
	if err != nil {
		return nil, fmt.Errorf("error loading the webhook secret: %w", interpretError(err))
	}
	return out, nil
}

// FlowWebhookSecret returns flow's own current secret (nil when it has
// none: its dispatches are signed with the server's).
func (s *Store) FlowWebhookSecret(ctx context.Context, flowID string) ([]byte, error) {
	var out []byte
	err := s.db.WithContext(ctx).Raw(`SELECT secret FROM webhook_secrets WHERE flow_id = ? AND expires_at IS NULL`,
		flowID).Row().Scan(&out)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("error loading the webhook secret of flow %s: %w", flowID, interpretError(err))
	}
	return out, nil
}

// RotateWebhookSecret makes a new current secret for the server or a flow;
// the one it replaces keeps signing (a second signature on every dispatch)
// for p.Grace, database time.
func (s *Store) RotateWebhookSecret(ctx context.Context, p RotateWebhookSecretParams) (*RotatedSecret, error) {
	out := &RotatedSecret{Secret: p.Secret}
	if out.Secret == nil {
		out.Secret = make([]byte, 32)
		if _, err := rand.Read(out.Secret); err != nil {
			return nil, err
		}
	}
	if _, err := s.WebhookSecret(ctx); err != nil { // the server's, which a flow's first overlaps
		return nil, err
	}
	ms := p.Grace.Milliseconds()
	err := s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		if err := tx.Exec(`SELECT pg_advisory_xact_lock(hashtextextended('webhook_secrets:' || coalesce(?::text, ''), 0))`,
			flowArg(p.FlowID)).Error; err != nil {
			return err
		}
		if p.FlowID != "" {
			var n int64
			if err := tx.Raw(`SELECT count(*) FROM flows WHERE id = ? AND deleted_at IS NULL`, p.FlowID).Row().Scan(&n); err != nil {
				return err
			}
			if n == 0 {
				return fmt.Errorf("flow %s: %w", p.FlowID, engine.ErrNotFound)
			}
			// A flow's first secret: the server's current one goes on
			// signing its dispatches for the overlap.
			if ms > 0 {
				if err := tx.Exec(`INSERT INTO webhook_secrets (flow_id, secret, expires_at)
					SELECT ?, secret, now() + make_interval(secs => ? / 1000.0) FROM webhook_secrets
					WHERE flow_id IS NULL AND expires_at IS NULL
					AND NOT EXISTS (SELECT 1 FROM webhook_secrets WHERE flow_id = ? AND expires_at IS NULL)`,
					p.FlowID, ms, p.FlowID).Error; err != nil {
					return err
				}
			}
		}
		// No older secret signs past the new grace: the current one's
		// ends then, any still overlapping ends then at the latest.
		if err := tx.Exec(`UPDATE webhook_secrets SET expires_at = least(expires_at, now() + make_interval(secs => ? / 1000.0))
			WHERE `+scopeCond+` AND expires_at > now()`, ms, flowArg(p.FlowID)).Error; err != nil {
			return err
		}
		var until sql.NullTime
		if err := tx.Raw(`UPDATE webhook_secrets SET expires_at = now() + make_interval(secs => ? / 1000.0)
			WHERE `+scopeCond+` AND expires_at IS NULL RETURNING expires_at`, ms, flowArg(p.FlowID)).Row().Scan(&until); err != nil &&
			!errors.Is(err, sql.ErrNoRows) {
			return err
		}
		if until.Valid && ms > 0 {
			u := until.Time.UTC()
			out.PreviousExpiresAt = &u
		}
		if err := tx.Exec(`INSERT INTO webhook_secrets (flow_id, secret) VALUES (?, ?)`, flowArg(p.FlowID), out.Secret).Error; err != nil {
			return err
		}
		// Bounded: only the newest overlaps go on.
		return tx.Exec(`UPDATE webhook_secrets SET expires_at = now() WHERE `+scopeCond+` AND expires_at > now()
			AND id NOT IN (SELECT id FROM webhook_secrets WHERE `+scopeCond+` AND (expires_at IS NULL OR expires_at > now())
				ORDER BY id DESC LIMIT ?)`, flowArg(p.FlowID), flowArg(p.FlowID), MaxSigningSecrets).Error
	})
	if err != nil {
		return nil, fmt.Errorf("error rotating the webhook secret: %w", interpretError(err))
	}
	return out, nil
}

// DropFlowWebhookSecret returns a flow's dispatches to the server's
// secret; the flow's own keeps signing beside it for grace. A flow
// without a secret of its own is ErrNotFound.
func (s *Store) DropFlowWebhookSecret(ctx context.Context, flowID string, grace time.Duration) error {
	res := s.db.WithContext(ctx).Exec(`UPDATE webhook_secrets SET expires_at = now() + make_interval(secs => ? / 1000.0)
		WHERE flow_id = ? AND expires_at IS NULL`, grace.Milliseconds(), flowID)
	if err := interpretError(res.Error); err != nil {
		return fmt.Errorf("error dropping the webhook secret of flow %s: %w", flowID, err)
	}
	if res.RowsAffected == 0 {
		return fmt.Errorf("flow %s has no webhook secret of its own: %w", flowID, engine.ErrNotFound)
	}
	return nil
}

// SigningSet is every secret that signs dispatches at one moment.
type SigningSet struct {
	server [][]byte
	// flows holds each flow's secrets, current first; current tells
	// whether the flow has one of its own now.
	flows   map[string][][]byte
	current map[string]bool
}

// For returns the secrets a dispatch of flowID is signed with, the
// current first: the flow's own when it has one (and those in their
// overlap), else the server's and any of the flow's still overlapping.
func (set *SigningSet) For(flowID string) [][]byte {
	own := set.flows[flowID]
	if set.current[flowID] {
		return own
	}
	out := append(append([][]byte(nil), set.server...), own...)
	return out[:min(len(out), MaxSigningSecrets)]
}

// HasFlowSecrets reports whether any flow has secrets of its own.
func (set *SigningSet) HasFlowSecrets() bool { return len(set.flows) > 0 }

// SigningSecrets reads the secrets that sign dispatches now.
func (s *Store) SigningSecrets(ctx context.Context) (*SigningSet, error) {
	if _, err := s.WebhookSecret(ctx); err != nil {
		return nil, err
	}
	rows, err := s.db.WithContext(ctx).Raw(`SELECT coalesce(flow_id::text, ''), secret, expires_at IS NULL
		FROM webhook_secrets WHERE expires_at IS NULL OR expires_at > now()
		ORDER BY flow_id NULLS FIRST, expires_at IS NULL DESC, id DESC`).Rows()
	if err != nil {
		return nil, fmt.Errorf("error loading webhook secrets: %w", interpretError(err))
	}
	defer rows.Close()
	set := &SigningSet{flows: map[string][][]byte{}, current: map[string]bool{}}
	for rows.Next() {
		var flowID string
		var secret []byte
		var current bool
		if err := rows.Scan(&flowID, &secret, &current); err != nil {
			return nil, interpretError(err)
		}
		if flowID == "" {
			if len(set.server) < MaxSigningSecrets {
				set.server = append(set.server, secret)
			}
			continue
		}
		if len(set.flows[flowID]) < MaxSigningSecrets {
			set.flows[flowID] = append(set.flows[flowID], secret)
		}
		set.current[flowID] = set.current[flowID] || current
	}
	return set, interpretError(rows.Err())
}

// DispatchSigner gives the secrets each dispatch is signed with
// (callbacks.Signer), from SigningSecrets read at most every MaxAge (a
// rotation reaches every process within it) and, only while some flow has
// secrets of its own, each run's flow (remembered, a bounded number).
type DispatchSigner struct {
	Store  *Store
	MaxAge time.Duration
	// Clock times MaxAge (default engine.SystemClock).
	Clock engine.Clock

	mu     sync.Mutex
	set    *SigningSet
	readAt time.Time
	flowOf map[string]string
}

// maxRunFlows bounds the runs whose flow a DispatchSigner remembers.
const maxRunFlows = 10000

// Secrets returns the secrets for a dispatch of runID, the current first.
func (d *DispatchSigner) Secrets(ctx context.Context, runID string) ([][]byte, error) {
	set, err := d.current(ctx)
	if err != nil {
		return nil, err
	}
	if !set.HasFlowSecrets() || runID == "" { // "": a notification of no run (an entity's SLA)
		return set.server, nil
	}
	d.mu.Lock()
	flowID, ok := d.flowOf[runID]
	d.mu.Unlock()
	if !ok {
		if err := d.Store.db.WithContext(ctx).Raw(`SELECT flow_id::text FROM runs WHERE id = ?`, runID).Row().Scan(&flowID); err != nil {
			return nil, fmt.Errorf("error loading the flow of run %s: %w", runID, interpretError(err))
		}
		d.mu.Lock()
		if d.flowOf == nil || len(d.flowOf) >= maxRunFlows {
			d.flowOf = map[string]string{}
		}
		d.flowOf[runID] = flowID
		d.mu.Unlock()
	}
	return set.For(flowID), nil
}

// current returns the signing set, read again once MaxAge has passed.
func (d *DispatchSigner) current(ctx context.Context) (*SigningSet, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	maxAge := d.MaxAge
	if maxAge <= 0 {
		maxAge = 2 * time.Second
	}
	clock := d.Clock
	if clock == nil {
		clock = engine.SystemClock{}
	}
	if now := clock.Now(); d.set == nil || now.Sub(d.readAt) > maxAge {
		set, err := d.Store.SigningSecrets(ctx)
		if err != nil {
			return nil, err
		}
		d.set, d.readAt = set, now
	}
	return d.set, nil
}
