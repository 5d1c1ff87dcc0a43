package web

import (
	"net/http"
	"slices"
	"strings"

	"github.com/labstack/echo/v4"
)

// methodTable knows, for each registered path pattern, the methods routed
// on it: a request for a known path with another method is answered 405
// with Allow (RFC 9110 §15.5.6) instead of falling to a not-found handler
// (the /api/v1 group's, or the UI's GET /*).
type methodTable struct {
	patterns []routePattern
}

type routePattern struct {
	segments []string // ":x" matches any one non-empty segment
	methods  []string
}

// newMethodTable reads the routes registered so far; the UI's catch-all
// and echo's not-found routes match every path, so they say nothing.
func newMethodTable(routes []*echo.Route) *methodTable {
	byPath := map[string][]string{}
	var order []string
	for _, r := range routes {
		if strings.Contains(r.Path, "*") || r.Method == echo.RouteNotFound {
			continue
		}
		if _, ok := byPath[r.Path]; !ok {
			order = append(order, r.Path)
		}
		if !slices.Contains(byPath[r.Path], r.Method) {
			byPath[r.Path] = append(byPath[r.Path], r.Method)
		}
	}
	t := &methodTable{}
	for _, p := range order {
		t.patterns = append(t.patterns, routePattern{segments: strings.Split(p, "/"), methods: byPath[p]})
	}
	return t
}

// allowed lists the methods some route serves on path (sorted, OPTIONS
// included as echo's own 405 does); nil when no route matches it.
func (t *methodTable) allowed(path string) []string {
	segs := strings.Split(path, "/")
	var out []string
	for _, p := range t.patterns {
		if !p.match(segs) {
			continue
		}
		for _, m := range p.methods {
			if !slices.Contains(out, m) {
				out = append(out, m)
			}
		}
	}
	if out == nil {
		return nil
	}
	out = append(out, http.MethodOptions)
	slices.Sort(out)
	return slices.Compact(out)
}

func (p routePattern) match(segs []string) bool {
	if len(segs) != len(p.segments) {
		return false
	}
	for i, s := range p.segments {
		if strings.HasPrefix(s, ":") {
			if segs[i] == "" {
				return false
			}
		} else if s != segs[i] {
			return false
		}
	}
	return true
}

// methodNotAllowed runs before routing: a path some route serves, asked
// with a method none of them has, is 405 with Allow (OPTIONS: 204 with
// Allow), whatever catch-all would otherwise take it.
func (s *Server) methodNotAllowed(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		r := c.Request()
		p := r.URL.RawPath
		if p == "" {
			p = r.URL.Path
		}
		allow := s.methods.allowed(p)
		if allow == nil || slices.Contains(allow, r.Method) && r.Method != http.MethodOptions {
			return next(c)
		}
		h := c.Response().Header()
		h.Set("Allow", strings.Join(allow, ", "))
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Cache-Control", "no-store")
		if r.Method == http.MethodOptions {
			return c.NoContent(http.StatusNoContent)
		}
		return errorf(http.StatusMethodNotAllowed, "method_not_allowed",
			r.Method+" is not allowed on "+r.URL.Path+"; allowed: "+strings.Join(allow, ", "))
	}
}
