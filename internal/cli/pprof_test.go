package cli

import (
	"io"
	"log/slog"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestServePprof(t *testing.T) {
	t.Parallel()
	addr, stop, err := servePprof(t.Context(), "127.0.0.1:0", slog.New(slog.DiscardHandler))
	require.NoError(t, err)
	defer stop()
	for _, path := range []string{"/debug/pprof/", "/debug/pprof/allocs?debug=1", "/debug/pprof/goroutine?debug=1"} {
		req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, "http://"+addr+path, nil)
		require.NoError(t, err)
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		b, _ := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		require.Equal(t, http.StatusOK, resp.StatusCode, path)
		require.NotEmpty(t, b, path)
	}
	// Only the profiles are served there, not the API.
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, "http://"+addr+"/api/v1/flows", nil)
	require.NoError(t, err)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	_ = resp.Body.Close()
	require.Equal(t, http.StatusNotFound, resp.StatusCode)

	_, _, err = servePprof(t.Context(), addr, slog.New(slog.DiscardHandler))
	require.ErrorContains(t, err, "--pprof-addr", "a taken address is a clear start-up error")
}
