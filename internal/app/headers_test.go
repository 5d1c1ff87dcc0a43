package app_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/stitchd/stitchd/internal/app"
)

// TestServedAnswersAreNoStore: on a real stitchd, /metrics (served beside
// the API, with and without its token) and an API answer carry
// Cache-Control: no-store and X-Content-Type-Options: nosniff
// (web/headers_test.go walks every route).
func TestServedAnswersAreNoStore(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(c *app.Config) { c.MetricsToken = "scrape" })
	for _, r := range []struct{ path, auth string }{
		{"/metrics", "Bearer scrape"}, {"/metrics", ""}, {"/api/v1/flows", "Bearer " + token}, {"/readyz", ""},
	} {
		req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, h.app.URL+r.path, nil)
		require.NoError(t, err)
		if r.auth != "" {
			req.Header.Set("Authorization", r.auth)
		}
		resp, err := h.client.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		require.Equal(t, "no-store", resp.Header.Get("Cache-Control"), "%s (%d)", r.path, resp.StatusCode)
		require.Equal(t, "nosniff", resp.Header.Get("X-Content-Type-Options"), "%s (%d)", r.path, resp.StatusCode)
	}
}
