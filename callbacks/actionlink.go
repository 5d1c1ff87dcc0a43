package callbacks

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/stitchd/stitchd/engine"
)

// ActionClaims are what a one-click approval link asserts: this person may
// choose this outcome at this UX node's attempt, once, until Expiry.
type ActionClaims struct {
	RunID   string `json:"r"`
	Key     string `json:"k"`
	Attempt int    `json:"a"`
	Email   string `json:"e"`
	// UserID is the account Email named when the link was made ("" for
	// none): the link decides only as that account, not as a later one
	// made with the same email.
	UserID  string    `json:"u,omitempty"`
	Outcome string    `json:"o"`
	Nonce   string    `json:"n"`
	Expiry  time.Time `json:"x"`
}

// MintAction returns a link token for c: "a1.<kid>.<claims>.<mac>",
// URL-safe, signed with the current callback key (so `stitchd keys
// retire` voids links too).
func (k *Keyring) MintAction(c ActionClaims) (string, error) {
	k.mu.RLock()
	cur := k.current
	k.mu.RUnlock()
	raw, err := json.Marshal(c)
	if err != nil {
		return "", fmt.Errorf("error encoding an action link: %w", err)
	}
	head := "a1." + cur.ID + "." + b64.EncodeToString(raw)
	return head + "." + b64.EncodeToString(mac(cur.Secret, head)), nil
}

// VerifyAction checks a link token's MAC and expiry against now.
func (k *Keyring) VerifyAction(token string, now time.Time) (ActionClaims, error) {
	parts := strings.Split(token, ".")
	if len(parts) != 4 || parts[0] != "a1" {
		return ActionClaims{}, ErrTokenInvalid
	}
	k.mu.RLock()
	secret, ok := k.byID[parts[1]]
	k.mu.RUnlock()
	if !ok {
		return ActionClaims{}, ErrTokenInvalid
	}
	sig, err := b64.DecodeString(parts[3])
	if err != nil || !hmac.Equal(sig, mac(secret, parts[0]+"."+parts[1]+"."+parts[2])) {
		return ActionClaims{}, ErrTokenInvalid
	}
	raw, err := b64.DecodeString(parts[2])
	if err != nil {
		return ActionClaims{}, ErrTokenInvalid
	}
	var c ActionClaims
	if err := json.Unmarshal(raw, &c); err != nil || c.RunID == "" || c.Key == "" || c.Attempt < 1 || c.Email == "" ||
		c.Outcome == "" || c.Nonce == "" {
		return ActionClaims{}, ErrTokenInvalid
	}
	if !now.Before(c.Expiry) {
		return c, ErrTokenExpired
	}
	return c, nil
}

// People is what links are made from (store.Store): the emails of the
// enabled users who may decide approvals (approvers and admins) in run
// runID's workspace in any of groups, and the ids of the accounts emails
// name (those without one left out).
type People interface {
	UserEmailsInGroups(ctx context.Context, runID string, groups []string) ([]string, error)
	UserIDsByEmail(ctx context.Context, emails []string) (map[string]string, error)
}

// ActionLinker adds signed one-click approval links to approval.requested
// notifications: for each assignee (the users named, and the members of
// the groups named) one link per outcome, to BaseURL/approve/<token>,
// which opens a confirmation page (a mail scanner fetching the link
// decides nothing).
type ActionLinker struct {
	Keys    *Keyring
	BaseURL string
	// TTL is how long a link works (default 7 days, at most 30).
	TTL     time.Duration
	Members People
	Clock   engine.Clock
}

// ActionLink is one link in a notification.
type ActionLink struct {
	Email   string `json:"email"`
	Outcome string `json:"outcome"`
	URL     string `json:"url"`
	// ExpiresAt: the link stops working then.
	ExpiresAt time.Time `json:"expires_at"`
}

// AddLinks returns payload with "links" added when it is an approval
// request with assignees; any other payload as it is.
func (l *ActionLinker) AddLinks(ctx context.Context, runID string, payload json.RawMessage) (json.RawMessage, error) {
	var p struct {
		Type      string   `json:"type"`
		Key       string   `json:"node_key"`
		Attempt   int      `json:"attempt"`
		Outcomes  []string `json:"outcomes"`
		Assignees *struct {
			Users  []string `json:"users"`
			Groups []string `json:"groups"`
		} `json:"assignees"`
	}
	if err := json.Unmarshal(payload, &p); err != nil {
		return nil, fmt.Errorf("error reading a notification: %w", err)
	}
	if p.Type != engine.NotifyApprovalRequested || p.Assignees == nil || p.Key == "" || p.Attempt < 1 {
		return payload, nil
	}
	emails := map[string]bool{}
	var order []string
	add := func(e string) {
		e = strings.ToLower(strings.TrimSpace(e))
		if e != "" && !emails[e] {
			emails[e] = true
			order = append(order, e)
		}
	}
	for _, u := range p.Assignees.Users {
		add(u)
	}
	if len(p.Assignees.Groups) > 0 && l.Members != nil {
		ms, err := l.Members.UserEmailsInGroups(ctx, runID, p.Assignees.Groups)
		if err != nil {
			return nil, err
		}
		for _, m := range ms {
			add(m)
		}
	}
	// Each link is bound to the account its email names now.
	ids := map[string]string{}
	if l.Members != nil {
		var err error
		if ids, err = l.Members.UserIDsByEmail(ctx, order); err != nil {
			return nil, err
		}
	}
	ttl := l.TTL
	if ttl <= 0 {
		ttl = 7 * 24 * time.Hour
	}
	// Used links are remembered for 31 days (store.UseActionLink).
	ttl = min(ttl, 30*24*time.Hour)
	exp := l.Clock.Now().Add(ttl).UTC().Truncate(time.Second)
	links := []ActionLink{}
	for _, e := range order {
		for _, o := range p.Outcomes {
			nonce := make([]byte, 12)
			if _, err := rand.Read(nonce); err != nil {
				return nil, err
			}
			tok, err := l.Keys.MintAction(ActionClaims{RunID: runID, Key: p.Key, Attempt: p.Attempt, Email: e, UserID: ids[e], Outcome: o,
				Nonce: b64.EncodeToString(nonce), Expiry: exp})
			if err != nil {
				return nil, err
			}
			links = append(links, ActionLink{Email: e, Outcome: o, URL: strings.TrimRight(l.BaseURL, "/") + "/approve/" + tok, ExpiresAt: exp})
		}
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(payload, &obj); err != nil {
		return nil, fmt.Errorf("error reading a notification: %w", err)
	}
	lj, err := json.Marshal(links)
	if err != nil {
		return nil, err
	}
	obj["links"] = lj
	return json.Marshal(obj)
}
