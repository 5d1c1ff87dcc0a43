package web_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/labstack/echo/v4"
	"github.com/stretchr/testify/require"

	"github.com/stitchd/stitchd/web"
)

// TestWrongMethodIs405 walks every registered route and asks its path
// with each method the path does not have: the answer is 405 in the
// Error shape with Allow naming exactly the path's methods (and OPTIONS),
// before any credential is looked at; OPTIONS is 204 with the same Allow.
func TestWrongMethodIs405(t *testing.T) {
	t.Parallel()
	srv := web.New(web.Config{})
	byPath := map[string][]string{}
	for _, r := range srv.Routes() {
		if r.Method == echo.RouteNotFound || strings.Contains(r.Path, "*") {
			continue
		}
		byPath[r.Path] = append(byPath[r.Path], r.Method)
	}
	require.Greater(t, len(byPath), 50, "the routes were not listed")
	// A uuid for every parameter: it collides with no static segment
	// (GET /runs/bulk would be GET /runs/:id).
	param := regexp.MustCompile(`:[a-zA-Z]+`)
	matchers := map[string]*regexp.Regexp{}
	for path := range byPath {
		matchers[path] = regexp.MustCompile("^" + param.ReplaceAllString(path, "[^/]+") + "$")
	}
	checked := 0
	for path := range byPath {
		// A static path may also be a parameter's value (GET /runs/bulk
		// is GET /runs/:id): every route matching the URL counts.
		url := param.ReplaceAllString(path, "0b6e2f43-2f1c-4c55-9d0b-6f0e8b0a8c11")
		methods := []string{}
		for other, re := range matchers {
			if re.MatchString(url) {
				methods = append(methods, byPath[other]...)
			}
		}
		want := append(slices.Clone(methods), http.MethodOptions)
		slices.Sort(want)
		want = slices.Compact(want)
		for _, m := range []string{http.MethodGet, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete, http.MethodHead} {
			if slices.Contains(methods, m) {
				continue
			}
			rec := httptest.NewRecorder()
			srv.Handler().ServeHTTP(rec, httptest.NewRequestWithContext(t.Context(), m, url, nil))
			require.Equal(t, http.StatusMethodNotAllowed, rec.Code, "%s %s: %s", m, url, rec.Body)
			require.Equal(t, strings.Join(want, ", "), rec.Header().Get("Allow"), "%s %s", m, url)
			require.Equal(t, "no-store", rec.Header().Get("Cache-Control"))
			if m == http.MethodHead {
				continue
			}
			var body errorBody
			require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &body), "%s %s: %s", m, url, rec.Body)
			require.Equal(t, "method_not_allowed", body.Error.Code)
			require.Contains(t, body.Error.Message, m+" is not allowed")
			checked++
		}
		rec := httptest.NewRecorder()
		srv.Handler().ServeHTTP(rec, httptest.NewRequestWithContext(t.Context(), http.MethodOptions, url, nil))
		require.Equal(t, http.StatusNoContent, rec.Code, "OPTIONS %s", url)
		require.Equal(t, strings.Join(want, ", "), rec.Header().Get("Allow"), "OPTIONS %s", url)
	}
	require.Greater(t, checked, 200)
}

// TestUnknownPathStays404: only a known path gets 405; another is still
// not found (after the credential check under /api/v1), and the web UI
// still takes GETs of its own pages.
func TestUnknownPathStays404(t *testing.T) {
	t.Parallel()
	srv := web.New(web.Config{AuthToken: "tok"})
	for _, c := range []struct{ method, path string }{
		{http.MethodDelete, "/api/v1/no-such"},
		{http.MethodGet, "/api/v1/runs/x/y/z"},
		{http.MethodPost, "/api/v1/runs/"},
	} {
		rq := httptest.NewRequestWithContext(t.Context(), c.method, c.path, nil)
		rq.Header.Set("Authorization", "Bearer tok")
		rec := httptest.NewRecorder()
		srv.Handler().ServeHTTP(rec, rq)
		require.Equal(t, http.StatusNotFound, rec.Code, "%s %s: %s", c.method, c.path, rec.Body)
		require.Empty(t, rec.Header().Get("Allow"))
	}
	// GET on a POST-only path the UI's catch-all used to answer 404.
	rec := httptest.NewRecorder()
	srv.Handler().ServeHTTP(rec, httptest.NewRequestWithContext(t.Context(), http.MethodGet, "/hooks/some-slug", nil))
	require.Equal(t, http.StatusMethodNotAllowed, rec.Code)
	require.Equal(t, "OPTIONS, POST", rec.Header().Get("Allow"))
}
