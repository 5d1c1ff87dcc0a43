package web_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"

	"github.com/labstack/echo/v4"
	"github.com/stretchr/testify/require"

	"github.com/stitchd/stitchd/store/storetest"
	"github.com/stitchd/stitchd/web"
)

// TestAnswersAreNoStoreAndNosniff walks every registered route (with and
// without the token, and some that fail early: an unknown route, a body
// over the limit, a bad callback token, an unknown hook): each answer,
// whatever its status, carries Cache-Control: no-store and
// X-Content-Type-Options: nosniff. The UI's hashed assets stay cacheable
// and its index.html is revalidated; both are nosniff.
func TestAnswersAreNoStoreAndNosniff(t *testing.T) {
	t.Parallel()
	st, _ := storetest.IsolatedDB(t)
	srv := newServer(t, st, func(c *web.Config) { c.BodyLimit = 1 << 10 })
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(ts.Close)

	send := func(method, path, body, auth, accept string) *http.Response {
		ctx, cancel := context.WithCancel(context.Background())
		t.Cleanup(cancel) // streams answer with their headers; then abandoned
		var rd io.Reader
		if body != "" {
			rd = strings.NewReader(body)
		}
		hr, err := http.NewRequestWithContext(ctx, method, ts.URL+path, rd)
		require.NoError(t, err)
		if body != "" {
			hr.Header.Set("Content-Type", "application/json")
		}
		if auth != "" {
			hr.Header.Set("Authorization", "Bearer "+auth)
		}
		if accept != "" {
			hr.Header.Set("Accept", accept)
		}
		resp, err := ts.Client().Do(hr)
		require.NoError(t, err)
		t.Cleanup(func() { resp.Body.Close() })
		return resp
	}
	requireNoStore := func(resp *http.Response, what string) {
		t.Helper()
		require.Equal(t, "no-store", resp.Header.Get("Cache-Control"), "%s answered %d", what, resp.StatusCode)
		require.Equal(t, "nosniff", resp.Header.Get("X-Content-Type-Options"), "%s answered %d", what, resp.StatusCode)
	}

	for _, r := range srv.Routes() {
		if r.Path == "/*" { // the UI, below
			continue
		}
		m := r.Method
		if m == echo.RouteNotFound {
			m = http.MethodGet
		}
		body := ""
		if m == http.MethodPost || m == http.MethodPut {
			body = `{}`
		}
		path := concretePath(r.Path)
		for _, auth := range []string{token, ""} {
			requireNoStore(send(m, path, body, auth, ""), m+" "+r.Path+" (token "+auth+")") //nolint:bodyclose // send closes it in Cleanup
		}
	}
	early := []struct{ method, path, body string }{
		{"GET", "/api/v1/no/such/route", ""},
		{"DELETE", "/hooks/x", ""},
		{"POST", "/api/v1/flows", `{"name":"` + strings.Repeat("x", 2<<10) + `"}`},
		{"POST", "/api/v1/flows", `{"n":1e100000}`},
		{"POST", "/callbacks/v1.k1.bad.token", `{"status":"completed"}`},
		{"POST", "/hooks/nope", `{}`},
		{"GET", "/healthz", ""},
		{"GET", "/assets/no-such-file.js", ""},
	}
	for _, e := range early {
		requireNoStore(send(e.method, e.path, e.body, token, ""), e.method+" "+e.path) //nolint:bodyclose // send closes it in Cleanup
	}

	// The UI: index.html revalidated, hashed assets cached, both nosniff.
	index := send("GET", "/flows/x", "", "", "text/html") //nolint:bodyclose // send closes it in Cleanup
	require.Equal(t, 200, index.StatusCode)
	require.Equal(t, "no-cache", index.Header.Get("Cache-Control"))
	require.Equal(t, "nosniff", index.Header.Get("X-Content-Type-Options"))
	html, err := io.ReadAll(index.Body)
	require.NoError(t, err)
	asset := regexp.MustCompile(`/assets/[^"]+\.js`).FindString(string(html))
	require.NotEmpty(t, asset, "index.html names its script")
	js := send("GET", asset, "", "", "") //nolint:bodyclose // send closes it in Cleanup
	require.Equal(t, 200, js.StatusCode)
	require.Equal(t, "public, max-age=31536000, immutable", js.Header.Get("Cache-Control"))
	require.Equal(t, "nosniff", js.Header.Get("X-Content-Type-Options"))
}
