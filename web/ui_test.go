package web_test

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// uiSourceHash mirrors web/ui/scripts/source-hash.mjs: every file under
// web/ui but node_modules, in byte order of its slash path, hashed as
// "path\0sha256(content)\n".
func uiSourceHash(t *testing.T) string {
	t.Helper()
	var files []string
	err := filepath.WalkDir("ui", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && d.Name() == "node_modules" {
			return filepath.SkipDir
		}
		if d.Type().IsRegular() {
			rel, err := filepath.Rel("ui", p)
			if err != nil {
				return err
			}
			files = append(files, filepath.ToSlash(rel))
		}
		return nil
	})
	require.NoError(t, err)
	sort.Strings(files)
	h := sha256.New()
	for _, f := range files {
		b, err := os.ReadFile(filepath.Join("ui", filepath.FromSlash(f)))
		require.NoError(t, err)
		sum := sha256.Sum256(b)
		fmt.Fprintf(h, "%s\x00%s\n", f, hex.EncodeToString(sum[:]))
	}
	return hex.EncodeToString(h.Sum(nil))
}

// TestUIBuildIsFresh fails when web/dist was not rebuilt after a change to
// the UI sources: run `make ui` and commit web/dist.
func TestUIBuildIsFresh(t *testing.T) {
	t.Parallel()
	have, err := os.ReadFile(filepath.Join("dist", "source-hash.txt"))
	require.NoError(t, err, "web/dist has no source-hash.txt: run `make ui`")
	require.Equal(t, uiSourceHash(t), strings.TrimSpace(string(have)),
		"web/dist is stale: the UI sources changed since it was built; run `make ui` and commit web/dist")
}

func TestUIServing(t *testing.T) {
	t.Parallel()
	srv := newServer(t, nil)
	index, err := os.ReadFile(filepath.Join("dist", "index.html"))
	require.NoError(t, err)
	asset := regexp.MustCompile(`/assets/[^"]+\.js`).FindString(string(index))
	require.NotEmpty(t, asset, "index.html names no script")

	do := func(method, path, accept string) *httptest.ResponseRecorder {
		r := httptest.NewRequestWithContext(t.Context(), method, path, nil)
		if accept != "" {
			r.Header.Set("Accept", accept)
		}
		w := httptest.NewRecorder()
		srv.Handler().ServeHTTP(w, r)
		return w
	}
	html := "text/html,application/xhtml+xml,*/*;q=0.8"

	tests := []struct {
		name, path, accept string
		status             int
		want               string // substring of the body
		header             map[string]string
	}{
		{"root", "/", html, 200, `<div id="root">`, map[string]string{"Content-Security-Policy": "default-src 'self'"}},
		{"deep link", "/runs/8a1f0c2e-0000-4000-8000-000000000000", html, 200, `<div id="root">`, nil},
		{"asset", asset, "*/*", 200, "", map[string]string{"Cache-Control": "immutable", "Content-Type": "javascript"}},
		{"missing asset", "/assets/nope.js", "*/*", 404, `"not_found"`, nil},
		{"api path never falls back", "/api/v1/nope", html, 401, `"unauthorized"`, nil},
		{"callbacks never fall back", "/callbacks/x/y", html, 404, `"not_found"`, nil},
		{"a callback GET is a wrong method", "/callbacks/x", html, 405, `"method_not_allowed"`, map[string]string{"Allow": "OPTIONS, POST"}},
		{"json client gets json 404", "/flows", "application/json", 404, `"not_found"`, nil},
		{"build record is not served", "/source-hash.txt", "*/*", 404, `"not_found"`, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			w := do(http.MethodGet, tc.path, tc.accept)
			require.Equal(t, tc.status, w.Code, w.Body.String())
			body, _ := io.ReadAll(w.Body)
			require.Contains(t, string(body), tc.want)
			for k, v := range tc.header {
				require.Contains(t, w.Header().Get(k), v, k)
			}
		})
	}
	// Only GET falls back: a POST to a UI path is not the UI.
	require.Equal(t, http.StatusMethodNotAllowed, do(http.MethodPost, "/flows", html).Code)
}
