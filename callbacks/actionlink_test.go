package callbacks_test

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stitchd/stitchd/callbacks"
)

type fixedNow struct{ t time.Time }

func (c fixedNow) Now() time.Time { return c.t }

type members map[string][]string

func (m members) UserEmailsInGroups(_ context.Context, _ string, groups []string) ([]string, error) {
	var out []string
	for _, g := range groups {
		out = append(out, m[g]...)
	}
	return out, nil
}

// UserIDsByEmail gives every email but nobody@ an account, "id-" + email.
func (m members) UserIDsByEmail(_ context.Context, emails []string) (map[string]string, error) {
	out := map[string]string{}
	for _, e := range emails {
		if !strings.HasPrefix(e, "nobody@") {
			out[e] = "id-" + e
		}
	}
	return out, nil
}

func TestActionTokens(t *testing.T) {
	ring, err := callbacks.NewKeyring(callbacks.Key{ID: "k1", Secret: bytes.Repeat([]byte{1}, 32)})
	require.NoError(t, err)
	now := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	c := callbacks.ActionClaims{RunID: "r", Key: "ask", Attempt: 2, Email: "ann@example.com", Outcome: "approve", Nonce: "n1",
		Expiry: now.Add(time.Hour)}
	tok, err := ring.MintAction(c)
	require.NoError(t, err)
	got, err := ring.VerifyAction(tok, now)
	require.NoError(t, err)
	require.Equal(t, c, got)

	_, err = ring.VerifyAction(tok, now.Add(time.Hour))
	require.ErrorIs(t, err, callbacks.ErrTokenExpired)
	parts := strings.Split(tok, ".")
	// Another claim under the same MAC, another key id, a callback token.
	forged, _ := ring.MintAction(callbacks.ActionClaims{RunID: "r", Key: "ask", Attempt: 2, Email: "eve@example.com",
		Outcome: "approve", Nonce: "n1", Expiry: now.Add(time.Hour)})
	for _, bad := range []string{parts[0] + "." + parts[1] + "." + strings.Split(forged, ".")[2] + "." + parts[3],
		"a1.k2." + parts[2] + "." + parts[3], ring.Mint(callbacks.Claims{RunID: "r", Key: "ask", Attempt: 2, Expiry: now.Add(time.Hour)}),
		"", "a1.k1.e30." + parts[3]} {
		_, err := ring.VerifyAction(bad, now)
		require.ErrorIs(t, err, callbacks.ErrTokenInvalid, bad)
	}

	// Retiring the key voids the link.
	require.NoError(t, ring.Replace(callbacks.Key{ID: "k2", Secret: bytes.Repeat([]byte{2}, 32)}))
	_, err = ring.VerifyAction(tok, now)
	require.ErrorIs(t, err, callbacks.ErrTokenInvalid)
}

func TestAddLinks(t *testing.T) {
	ring, err := callbacks.NewKeyring(callbacks.Key{ID: "k1", Secret: bytes.Repeat([]byte{1}, 32)})
	require.NoError(t, err)
	now := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	l := &callbacks.ActionLinker{Keys: ring, BaseURL: "https://s.example/", Members: members{"fin": {"ann@example.com", "BOB@example.com"}},
		Clock: fixedNow{now}, TTL: 90 * 24 * time.Hour}
	in := json.RawMessage(`{"type": "approval.requested", "node_key": "ask", "attempt": 1, "outcomes": ["approve", "reject"],
		"assignees": {"users": ["bob@example.com", "nobody@example.com"], "groups": ["fin"]}, "prompt": "OK?"}`)
	out, err := l.AddLinks(context.Background(), "run-1", in)
	require.NoError(t, err)
	var p struct {
		Prompt string                 `json:"prompt"`
		Links  []callbacks.ActionLink `json:"links"`
	}
	require.NoError(t, json.Unmarshal(out, &p))
	require.Equal(t, "OK?", p.Prompt, "the rest of the notification is kept")
	require.Len(t, p.Links, 6, "bob once (named and a member), nobody, ann; two outcomes each")
	seen := map[string]bool{}
	for _, k := range p.Links {
		seen[k.Email+" "+k.Outcome] = true
		require.Equal(t, now.Add(30*24*time.Hour), k.ExpiresAt, "at most 30 days")
		tok := strings.TrimPrefix(k.URL, "https://s.example/approve/")
		c, err := ring.VerifyAction(tok, now)
		require.NoError(t, err)
		// Each link is bound to the account (none for an email without one).
		id := "id-" + k.Email
		if k.Email == "nobody@example.com" {
			id = ""
		}
		require.Equal(t, callbacks.ActionClaims{RunID: "run-1", Key: "ask", Attempt: 1, Email: k.Email, UserID: id,
			Outcome: k.Outcome, Nonce: c.Nonce, Expiry: k.ExpiresAt}, c)
	}
	require.Equal(t, map[string]bool{"bob@example.com approve": true, "bob@example.com reject": true,
		"nobody@example.com approve": true, "nobody@example.com reject": true,
		"ann@example.com approve": true, "ann@example.com reject": true}, seen)

	// Without assignees, or another type: as it was.
	for _, same := range []string{`{"type": "approval.requested", "node_key": "ask", "attempt": 1, "outcomes": ["approve"]}`,
		`{"type": "run.failed", "assignees": {"users": ["x@example.com"]}}`} {
		out, err := l.AddLinks(context.Background(), "run-1", json.RawMessage(same))
		require.NoError(t, err)
		require.JSONEq(t, same, string(out))
	}
}
