package callbacks

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/stitchd/stitchd/engine"
)

// Token errors.
var (
	ErrTokenInvalid = errors.New("invalid callback token")
	ErrTokenExpired = errors.New("expired callback token")
)

// Key is one HMAC key of the keyring.
type Key struct {
	ID     string
	Secret []byte
}

// Keyring signs with its current key and verifies with any of its keys, so
// keys can be rotated without invalidating callbacks in flight. It is safe
// for concurrent use; Replace swaps the keys (after a rotation).
type Keyring struct {
	mu      sync.RWMutex
	current Key
	byID    map[string][]byte
}

// NewKeyring returns a keyring signing with current and also accepting old.
func NewKeyring(current Key, old ...Key) (*Keyring, error) {
	k := &Keyring{}
	if err := k.Replace(current, old...); err != nil {
		return nil, err
	}
	return k, nil
}

// Replace makes current the signing key and current+old the verifying keys.
func (k *Keyring) Replace(current Key, old ...Key) error {
	if current.ID == "" || len(current.Secret) < 16 {
		return errors.New("callback key needs an id and a secret of at least 16 bytes")
	}
	byID := map[string][]byte{current.ID: current.Secret}
	for _, o := range old {
		byID[o.ID] = o.Secret
	}
	k.mu.Lock()
	k.current, k.byID = current, byID
	k.mu.Unlock()
	return nil
}

// CurrentID is the id of the signing key.
func (k *Keyring) CurrentID() string {
	k.mu.RLock()
	defer k.mu.RUnlock()
	return k.current.ID
}

// Claims are what a callback token asserts.
type Claims struct {
	RunID   string
	Key     string
	Attempt int
	Expiry  time.Time
}

var b64 = base64.RawURLEncoding

// Mint returns a token for c: "v1.<kid>.<claims>.<mac>", URL-safe.
func (k *Keyring) Mint(c Claims) string {
	k.mu.RLock()
	cur := k.current
	k.mu.RUnlock()
	claims := b64.EncodeToString([]byte(c.RunID + "\n" + c.Key + "\n" + strconv.Itoa(c.Attempt) + "\n" + strconv.FormatInt(c.Expiry.Unix(), 10)))
	head := "v1." + cur.ID + "." + claims
	return head + "." + b64.EncodeToString(mac(cur.Secret, head))
}

// Verify checks a token's MAC and expiry against now. It touches no
// database.
func (k *Keyring) Verify(token string, now time.Time) (Claims, error) {
	parts := strings.Split(token, ".")
	if len(parts) != 4 || parts[0] != "v1" {
		return Claims{}, ErrTokenInvalid
	}
	k.mu.RLock()
	secret, ok := k.byID[parts[1]]
	k.mu.RUnlock()
	if !ok {
		return Claims{}, ErrTokenInvalid
	}
	sig, err := b64.DecodeString(parts[3])
	if err != nil || !hmac.Equal(sig, mac(secret, parts[0]+"."+parts[1]+"."+parts[2])) {
		return Claims{}, ErrTokenInvalid
	}
	raw, err := b64.DecodeString(parts[2])
	if err != nil {
		return Claims{}, ErrTokenInvalid
	}
	f := strings.Split(string(raw), "\n")
	if len(f) != 4 {
		return Claims{}, ErrTokenInvalid
	}
	attempt, err1 := strconv.Atoi(f[2])
	exp, err2 := strconv.ParseInt(f[3], 10, 64)
	// Attempts are int4 in the database: no genuine token carries a larger
	// one, and a query with it would fail (a 500).
	if err1 != nil || err2 != nil || attempt < 1 || attempt > math.MaxInt32 || f[0] == "" || f[1] == "" {
		return Claims{}, ErrTokenInvalid
	}
	c := Claims{RunID: f[0], Key: f[1], Attempt: attempt, Expiry: time.Unix(exp, 0).UTC()}
	if !now.Before(c.Expiry) {
		return c, ErrTokenExpired
	}
	return c, nil
}

func mac(secret []byte, msg string) []byte {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte(msg))
	return m.Sum(nil)
}

// Minter implements engine.CallbackMinter.
type Minter struct {
	Keys    *Keyring
	BaseURL string
	TTL     time.Duration
	Clock   engine.Clock
}

// CallbackURL returns BaseURL/callbacks/<token>.
func (m *Minter) CallbackURL(runID, key string, attempt int) (string, error) {
	if m.Keys == nil {
		return "", errors.New("no callback keyring")
	}
	ttl := m.TTL
	if ttl <= 0 {
		ttl = 30 * 24 * time.Hour
	}
	tok := m.Keys.Mint(Claims{RunID: runID, Key: key, Attempt: attempt, Expiry: m.Clock.Now().Add(ttl)})
	return fmt.Sprintf("%s/callbacks/%s", strings.TrimRight(m.BaseURL, "/"), tok), nil
}

// SignWebhook returns the Standard Webhooks signature header value for a
// message: "v1,<base64 HMAC-SHA256 of id.timestamp.body>".
func SignWebhook(secret []byte, id string, timestamp int64, body []byte) string {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte(id + "." + strconv.FormatInt(timestamp, 10) + "."))
	m.Write(body)
	return "v1," + base64.StdEncoding.EncodeToString(m.Sum(nil))
}

// VerifyWebhook checks a Standard Webhooks signature header (which may hold
// several space-separated signatures) and that timestamp is within
// tolerance of now.
func VerifyWebhook(secret []byte, id, timestamp, header string, body []byte, now time.Time, tolerance time.Duration) error {
	ts, err := strconv.ParseInt(timestamp, 10, 64)
	if err != nil {
		return errors.New("invalid webhook-timestamp")
	}
	if d := now.Sub(time.Unix(ts, 0)); d > tolerance || d < -tolerance {
		return errors.New("webhook-timestamp outside the tolerance window")
	}
	want := SignWebhook(secret, id, ts, body)
	for _, s := range strings.Fields(header) {
		if hmac.Equal([]byte(s), []byte(want)) {
			return nil
		}
	}
	return errors.New("signature mismatch")
}
