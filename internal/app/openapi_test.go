package app_test

import (
	"io"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"

	"github.com/stitchd/stitchd/internal/app"
)

// TestServedSpecNamesBaseURL: the contract served by a running stitchd,
// without a credential, names the server as clients reach it — the
// --base-url when set, else the address it listens on.
func TestServedSpecNamesBaseURL(t *testing.T) {
	t.Parallel()
	servers := func(h *harness, path string) []string {
		rq, err := http.NewRequestWithContext(t.Context(), http.MethodGet, h.app.URL+path, nil)
		require.NoError(t, err)
		resp, err := h.client.Do(rq)
		require.NoError(t, err)
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, resp.StatusCode, "%s: %s", path, b)
		var doc struct {
			Servers []struct {
				URL string `yaml:"url"`
			} `yaml:"servers"`
		}
		require.NoError(t, yaml.Unmarshal(b, &doc))
		var out []string
		for _, s := range doc.Servers {
			out = append(out, s.URL)
		}
		return out
	}
	h := newHarness(t)
	require.Equal(t, []string{h.app.URL}, servers(h, "/openapi.yaml"))
	h = newHarness(t, func(c *app.Config) { c.BaseURL = "https://flows.example.com/" })
	require.Equal(t, []string{"https://flows.example.com"}, servers(h, "/api/v1/openapi.yaml"))
}
