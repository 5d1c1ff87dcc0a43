package credential

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestTokensForgetExpired: a rotated client secret is another cache key;
// the old key's token goes once it has expired, as the next token comes,
// so rotations do not grow the cache for ever. A token is kept at most a
// day, whatever expires_in says.
func TestTokensForgetExpired(t *testing.T) {
	var issued atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := issued.Add(1)
		expires := 3600
		if r.FormValue("scope") == "long" {
			expires = 10 * 365 * 24 * 3600
		}
		fmt.Fprintf(w, `{"access_token": "tok-%d", "expires_in": %d}`, n, expires)
	}))
	defer srv.Close()
	now := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	tokens := &Tokens{Client: srv.Client(), Now: func() time.Time { return now }}
	cred := func(secret, scope string) *Credential {
		return &Credential{Name: "api", Type: TypeOAuth2, Data: Data{TokenURL: srv.URL, ClientID: "id", ClientSecret: secret, Scope: scope}}
	}
	ctx := context.Background()

	for i := range 5 {
		_, err := tokens.Token(ctx, cred(fmt.Sprintf("secret-%d", i), ""), false)
		require.NoError(t, err)
		now = now.Add(2 * time.Hour) // past the last one's hour
	}
	require.Len(t, tokens.tokens, 1, "the rotated-away secrets' tokens are gone")

	tok, err := tokens.Token(ctx, cred("secret-9", "long"), false)
	require.NoError(t, err)
	now = now.Add(25 * time.Hour)
	again, err := tokens.Token(ctx, cred("secret-9", "long"), false)
	require.NoError(t, err)
	require.NotEqual(t, tok, again, "a ten-year token is fetched again after a day")
	require.Len(t, tokens.tokens, 1)
}
