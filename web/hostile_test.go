package web_test

import (
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stitchd/stitchd/callbacks"
	"github.com/stitchd/stitchd/web"
)

// TestHostileCallbacksNeverReachTheDatabase sends 10,000 callbacks with
// forged, tampered, expired, wrong-key and malformed tokens to a server that
// has no store and no engine: every one must be refused with 401 before
// anything would touch them (a nil store or engine would panic into a 500).
func TestHostileCallbacksNeverReachTheDatabase(t *testing.T) {
	t.Parallel()
	ring, err := callbacks.NewKeyring(callbacks.Key{ID: "k1", Secret: []byte("0123456789abcdef0123456789abcdef")})
	require.NoError(t, err)
	other, err := callbacks.NewKeyring(callbacks.Key{ID: "k1", Secret: []byte("ffffffffffffffffffffffffffffffff")})
	require.NoError(t, err)
	srv := web.New(web.Config{Keys: ring, AuthToken: "x"})
	now := time.Now()
	good := ring.Mint(callbacks.Claims{RunID: "7d3c0f0e-0000-4000-8000-000000000001", Key: "a", Attempt: 1, Expiry: now.Add(time.Hour)})
	kinds := []func(i int) string{
		func(i int) string { // forged with another secret
			return other.Mint(callbacks.Claims{RunID: "7d3c0f0e-0000-4000-8000-000000000001", Key: fmt.Sprintf("n%d", i), Attempt: 1, Expiry: now.Add(time.Hour)})
		},
		func(i int) string { // one character of the signature changed
			b := []byte(good)
			p := len(b) - 1 - i%20
			b[p] = "ABCDEFGHIJ"[i%10]
			if string(b) == good {
				b[p] = 'z'
			}
			return string(b)
		},
		func(i int) string { // claims of another node under the good signature
			parts := strings.Split(good, ".")
			return parts[0] + "." + parts[1] + "." + other.Mint(callbacks.Claims{RunID: "r", Key: fmt.Sprintf("x%d", i), Attempt: 1, Expiry: now.Add(time.Hour)})[len("v1.k1."):]
		},
		func(i int) string { // expired
			return ring.Mint(callbacks.Claims{RunID: "r", Key: "a", Attempt: 1, Expiry: now.Add(-time.Duration(i+1) * time.Second)})
		},
		func(_ int) string { // garbage
			b := make([]byte, 1+rand.IntN(80))
			for j := range b {
				b[j] = "abcdefghijklmnopqrstuvwxyz0123456789._-"[rand.IntN(39)]
			}
			return string(b)
		},
	}
	for i := 0; i < 10_000; i++ {
		tok := kinds[i%len(kinds)](i)
		req := httptest.NewRequestWithContext(t.Context(), http.MethodPost, "/callbacks/"+tok, strings.NewReader(`{"status":"completed","output":{}}`))
		rec := httptest.NewRecorder()
		srv.Handler().ServeHTTP(rec, req)
		if rec.Code != http.StatusUnauthorized && rec.Code != http.StatusNotFound {
			t.Fatalf("callback %d (kind %d, token %q) answered %d: %s", i, i%len(kinds), tok, rec.Code, rec.Body.String())
		}
	}
}
