package worker

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// DefaultTolerance is how far a dispatch's webhook-timestamp may be from
// the worker's clock (replayed requests are refused).
const DefaultTolerance = 5 * time.Minute

// ErrSignature is returned by VerifySignature for a request that is not
// signed with the secret (answer it 401).
var ErrSignature = errors.New("worker: invalid webhook signature")

// SecretKey decodes a webhook secret ("whsec_" and base64, as `stitchd
// webhook-secret` prints it) into its HMAC key.
func SecretKey(secret string) ([]byte, error) {
	b64, ok := strings.CutPrefix(secret, "whsec_")
	if !ok {
		return nil, errors.New(`worker: a webhook secret starts with "whsec_" (stitchd webhook-secret prints it)`)
	}
	key, err := base64.StdEncoding.DecodeString(b64)
	if err != nil || len(key) == 0 {
		return nil, errors.New("worker: the webhook secret's part after whsec_ is not base64")
	}
	return key, nil
}

// VerifySignature checks a dispatch's Standard Webhooks signature
// (docs/workers.md, "Verifying the signature"): webhook-signature holds
// one or more space-separated "v1,<base64 HMAC-SHA256 of
// id.timestamp.body>", one of which must match in constant time, and
// webhook-timestamp must be within tolerance of now. body is the raw
// request body, as received.
func VerifySignature(key []byte, h http.Header, body []byte, now time.Time, tolerance time.Duration) error {
	id, ts, sigs := h.Get("webhook-id"), h.Get("webhook-timestamp"), h.Get("webhook-signature")
	if id == "" || ts == "" || sigs == "" {
		return fmt.Errorf("%w: missing webhook-id, webhook-timestamp or webhook-signature", ErrSignature)
	}
	sec, err := strconv.ParseInt(ts, 10, 64)
	if err != nil {
		return fmt.Errorf("%w: webhook-timestamp is not a number", ErrSignature)
	}
	if d := now.Sub(time.Unix(sec, 0)); d > tolerance || d < -tolerance {
		return fmt.Errorf("%w: webhook-timestamp is more than %v away", ErrSignature, tolerance)
	}
	m := hmac.New(sha256.New, key)
	m.Write([]byte(id + "." + ts + "."))
	m.Write(body)
	want := []byte("v1," + base64.StdEncoding.EncodeToString(m.Sum(nil)))
	for _, s := range strings.Fields(sigs) {
		if hmac.Equal([]byte(s), want) {
			return nil
		}
	}
	return fmt.Errorf("%w: no signature matches", ErrSignature)
}
