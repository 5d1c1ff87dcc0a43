package web_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/stitchd/stitchd/store/storetest"
)

// TestEmptyEnumQueryIs400: every query parameter with a fixed set of
// values (openapi.yaml: an enum or a boolean) refuses an empty value as it
// refuses one outside the set — 400 invalid_request naming the parameter
// — instead of taking it for absent. Each is refused before the handler
// reads anything (the flow and board here do not exist: only the
// workspace check of their ids reads the store).
func TestEmptyEnumQueryIs400(t *testing.T) {
	t.Parallel()
	srv := newServer(t, storetest.TestTx(t))
	const id = "0b6e2f43-2f1c-4c55-9d0b-6f0e8b0a8c11"
	cases := []struct{ method, path, param string }{
		{http.MethodGet, "/api/v1/runs", "status"},
		{http.MethodGet, "/api/v1/approvals", "assigned"},
		{http.MethodGet, "/api/v1/approvals/stream", "assigned"},
		{http.MethodGet, "/api/v1/flows/" + id + "/analytics", "format"},
		{http.MethodGet, "/api/v1/boards/" + id + "/analytics", "format"},
		{http.MethodGet, "/api/v1/flows", "counts"},
		{http.MethodDelete, "/api/v1/flows/" + id, "cancel_runs"},
	}
	for _, c := range cases {
		for _, v := range []string{"", "bogus"} {
			rq := httptest.NewRequestWithContext(t.Context(), c.method, c.path+"?"+c.param+"="+v, nil)
			rq.Header.Set("Authorization", "Bearer "+token)
			rec := httptest.NewRecorder()
			srv.Handler().ServeHTTP(rec, rq)
			require.Equal(t, http.StatusBadRequest, rec.Code, "%s %s?%s=%s: %s", c.method, c.path, c.param, v, rec.Body)
			var body errorBody
			require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &body))
			require.Equal(t, "invalid_request", body.Error.Code)
			require.Contains(t, body.Error.Message, c.param+" must be")
		}
	}
}
