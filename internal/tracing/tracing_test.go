package tracing_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/stitchd/stitchd/internal/tracing"
)

func TestNoEndpointStartsNothing(t *testing.T) {
	t.Parallel()
	tr, err := tracing.Setup(context.Background(), tracing.Options{})
	require.NoError(t, err)
	require.Nil(t, tr)
	h := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusTeapot) })
	rec := httptest.NewRecorder()
	tr.Middleware(h).ServeHTTP(rec, httptest.NewRequestWithContext(t.Context(), http.MethodGet, "/healthz", nil))
	require.Equal(t, http.StatusTeapot, rec.Code)
	require.Equal(t, http.DefaultTransport, tr.Transport(http.DefaultTransport), "the transport is left alone")
	require.NoError(t, tr.Shutdown(context.Background()))
}

func TestRoute(t *testing.T) {
	t.Parallel()
	id := "0b7c4a4e-1c5f-4a54-9a52-0e1b2a3c4d5e"
	cases := map[string]string{
		"/healthz":                                    "/healthz",
		"/metrics":                                    "/metrics",
		"/callbacks/v1.cb-1.secret-claims.mac":        "/callbacks/{token}",
		"/hooks/lead":                                 "/hooks/{slug}",
		"/api/v1/flows":                               "/api/v1/flows",
		"/api/v1/flows/" + id + "/runs":               "/api/v1/flows/{id}/runs",
		"/api/v1/flows/" + id + "/versions/3":         "/api/v1/flows/{id}/versions/{number}",
		"/api/v1/runs/" + id + "/nodes/score_2/retry": "/api/v1/runs/{id}/nodes/{key}/retry",
		"/api/v1/runs/not-a-uuid":                     "/api/v1/runs/not-a-uuid",
		"/flows/" + id + "/edit":                      "/*",
		"/assets/index.js":                            "/*",
	}
	for in, want := range cases {
		require.Equal(t, want, tracing.Route(in), in)
	}
}
