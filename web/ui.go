package web

import (
	"embed"
	"io/fs"
	"mime"
	"net/http"
	"path"
	"strings"

	"github.com/labstack/echo/v4"
)

// dist is the built web UI (web/ui, built by `make ui`). It is committed, so
// `go build` needs no Node; web/ui_test.go fails when it is stale.
//
//go:embed all:dist
var dist embed.FS

// uiCSP allows the UI's own scripts and styles only (React Flow sets inline
// style attributes, hence 'unsafe-inline' for styles).
const uiCSP = "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; " +
	"connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'"

// ui serves the single-page app: a file of the build when one matches,
// else index.html for a GET that accepts HTML (deep links), else 404 in
// the contract's error shape. API, callback and hook paths never fall back.
func (s *Server) ui(c echo.Context) error {
	p := c.Request().URL.Path
	for _, prefix := range []string{"/api/", "/callbacks/", "/hooks/"} {
		if strings.HasPrefix(p, prefix) {
			return errorf(http.StatusNotFound, "not_found", "no route for "+c.Request().Method+" "+p)
		}
	}
	root, err := fs.Sub(dist, "dist")
	if err != nil {
		return err
	}
	name := strings.TrimPrefix(path.Clean("/"+p), "/")
	h := c.Response().Header() // nosniff and no-store already (noStore)
	if name != "" && name != "index.html" && name != "source-hash.txt" {
		if b, err := fs.ReadFile(root, name); err == nil {
			ct := mime.TypeByExtension(path.Ext(name))
			if ct == "" {
				ct = http.DetectContentType(b)
			}
			if strings.HasPrefix(name, "assets/") {
				// Vite puts a content hash in every asset name.
				h.Set("Cache-Control", "public, max-age=31536000, immutable")
			}
			return c.Blob(http.StatusOK, ct, b)
		}
	}
	if !strings.Contains(c.Request().Header.Get("Accept"), "text/html") && name != "" {
		return errorf(http.StatusNotFound, "not_found", "no route for "+c.Request().Method+" "+p)
	}
	b, err := fs.ReadFile(root, "index.html")
	if err != nil {
		return errorf(http.StatusNotFound, "not_found", "the web UI is not built (run `make ui`)")
	}
	h.Set("Cache-Control", "no-cache")
	h.Set("Content-Security-Policy", uiCSP)
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("X-Frame-Options", "DENY")
	return c.HTMLBlob(http.StatusOK, b)
}
