package httpstatus_test

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/stitchd/stitchd/internal/httpstatus"
)

func TestWriterRecordsTheFirstStatus(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		handler http.HandlerFunc
		want    int
	}{
		{"body only", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("x")) }, 200},
		{"explicit", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusConflict) }, 409},
		{"first wins", func(w http.ResponseWriter, _ *http.Request) {
			w.WriteHeader(http.StatusServiceUnavailable)
			w.WriteHeader(http.StatusOK)
		}, 503},
		{"header after body ignored", func(w http.ResponseWriter, _ *http.Request) {
			_, _ = w.Write(nil)
			w.WriteHeader(http.StatusInternalServerError)
		}, 200},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			rec := httptest.NewRecorder()
			sw := httpstatus.Wrap(rec)
			tc.handler(sw, httptest.NewRequestWithContext(t.Context(), http.MethodGet, "/", nil))
			require.Equal(t, tc.want, sw.Code)
			sw.Flush()
			require.True(t, rec.Flushed)
			require.Same(t, rec, sw.Unwrap())
		})
	}
}
