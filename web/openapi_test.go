package web_test

import (
	"os"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"

	"github.com/stitchd/stitchd/web"
)

// TestOpenAPIMatchesRoutes keeps openapi.yaml in step with the router: every
// route is documented and every documented operation exists.
func TestOpenAPIMatchesRoutes(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile("../openapi.yaml")
	require.NoError(t, err)
	var doc struct {
		Paths map[string]map[string]any `yaml:"paths"`
	}
	require.NoError(t, yaml.Unmarshal(raw, &doc))
	documented := map[string]bool{}
	for p, ops := range doc.Paths {
		for m := range ops {
			if m == "parameters" {
				continue
			}
			documented[strings.ToUpper(m)+" "+p] = true
		}
	}
	param := regexp.MustCompile(`:([a-zA-Z]+)`)
	srv := web.New(web.Config{})
	routed := map[string]bool{}
	for _, r := range srv.Routes() {
		if r.Method == "echo_route_not_found" || strings.HasPrefix(r.Path, "/ui") || r.Path == "/*" {
			continue
		}
		routed[r.Method+" "+param.ReplaceAllString(r.Path, "{$1}")] = true
	}
	var missing, extra []string
	for k := range routed {
		if !documented[k] {
			missing = append(missing, k)
		}
	}
	for k := range documented {
		if !routed[k] {
			extra = append(extra, k)
		}
	}
	sort.Strings(missing)
	sort.Strings(extra)
	require.Empty(t, missing, "routes missing from openapi.yaml")
	require.Empty(t, extra, "openapi.yaml documents routes that do not exist")
}
