package web_test

import (
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"slices"
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
	// GET|HEAD /metrics is served beside the router (internal/app), not by it.
	extra = slices.DeleteFunc(extra, func(k string) bool { return k == "GET /metrics" || k == "HEAD /metrics" })
	sort.Strings(missing)
	sort.Strings(extra)
	require.Empty(t, missing, "routes missing from openapi.yaml")
	require.Empty(t, extra, "openapi.yaml documents routes that do not exist")
}

// TestOpenAPIServedWithoutCredential: the contract is served at
// /openapi.yaml and /api/v1/openapi.yaml to anyone, byte for byte
// openapi.yaml but for servers, which names the server's base URL.
func TestOpenAPIServedWithoutCredential(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile("../openapi.yaml")
	require.NoError(t, err)
	const local = "servers:\n  - url: http://127.0.0.1:8080\n"
	require.Contains(t, string(raw), local, "openapi.yaml's servers, which the server replaces, changed")
	for _, base := range []string{"", "https://flows.example.com/stitchd/"} {
		srv := web.New(web.Config{AuthToken: "tok", BaseURL: base})
		for _, path := range []string{"/openapi.yaml", "/api/v1/openapi.yaml"} {
			rec := httptest.NewRecorder()
			srv.Handler().ServeHTTP(rec, httptest.NewRequestWithContext(t.Context(), http.MethodGet, path, nil))
			require.Equal(t, http.StatusOK, rec.Code, "%s: %s", path, rec.Body)
			require.Equal(t, "application/yaml", rec.Header().Get("Content-Type"))
			var doc struct {
				Servers []struct{ URL string } `yaml:"servers"`
			}
			require.NoError(t, yaml.Unmarshal(rec.Body.Bytes(), &doc))
			want := "http://127.0.0.1:8080"
			if base != "" {
				want = "https://flows.example.com/stitchd"
			}
			require.Equal(t, []struct{ URL string }{{URL: want}}, doc.Servers, path)
			// Nothing else differs (compared whole; the spec is too long for a diff).
			wantBody := string(raw)
			if base != "" {
				wantBody = strings.Replace(wantBody, local, "servers:\n  - url: \""+want+"\"\n", 1)
			}
			if wantBody != rec.Body.String() { // not require.Equal: a diff of the whole spec is unreadable
				t.Fatalf("%s: the served spec differs from openapi.yaml beyond servers", path)
			}
		}
	}
}

// specOperation is what TestOpenAPIOperations reads of an operation.
type specOperation struct {
	OperationID string                    `yaml:"operationId"`
	Security    *[]map[string][]string    `yaml:"security"`
	Responses   map[string]map[string]any `yaml:"responses"`
}

// TestOpenAPIOperations: every operation has an operationId (camelCase,
// unique: generated clients name their functions by it); every secured
// one — the document's bearer-or-session security, not overridden —
// lists 401 and 403, and one with a path parameter 404, each as the
// shared component response.
func TestOpenAPIOperations(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile("../openapi.yaml")
	require.NoError(t, err)
	var doc struct {
		Paths      map[string]map[string]yaml.Node `yaml:"paths"`
		Components struct {
			Responses map[string]any `yaml:"responses"`
		} `yaml:"components"`
	}
	require.NoError(t, yaml.Unmarshal(raw, &doc))
	for _, name := range []string{"Unauthorized", "Forbidden", "NotFound"} {
		require.Contains(t, doc.Components.Responses, name)
	}
	camel := regexp.MustCompile(`^[a-z][a-zA-Z0-9]*$`)
	ids := map[string]string{}
	secured := 0
	for path, ops := range doc.Paths {
		for method, node := range ops {
			if method == "parameters" {
				continue
			}
			name := strings.ToUpper(method) + " " + path
			var op specOperation
			require.NoError(t, node.Decode(&op), name)
			require.Regexp(t, camel, op.OperationID, "%s: operationId", name)
			if other, dup := ids[op.OperationID]; dup {
				t.Errorf("operationId %s is both %s and %s", op.OperationID, other, name)
			}
			ids[op.OperationID] = name
			if op.Security != nil {
				continue // public (security: []) or its own scheme (/metrics)
			}
			secured++
			want := map[string]string{"401": "Unauthorized", "403": "Forbidden"}
			if strings.Contains(path, "{") {
				want["404"] = "NotFound"
			}
			for status, component := range want {
				r, ok := op.Responses[status]
				require.True(t, ok, "%s does not list %s", name, status)
				ref, _ := r["$ref"].(string)
				if ref == "#/components/responses/"+component || ref == "#/components/responses/Error" {
					continue
				}
				// A response of its own (a 403 with more to say) counts as
				// long as it is the Error shape.
				schema := dig(r, "content", "application/json", "schema")
				require.Equal(t, "#/components/schemas/Error", schema["$ref"], "%s %s: %v", name, status, r)
			}
		}
	}
	require.Greater(t, secured, 60, "secured operations were not found")
}

// dig follows keys down nested maps (nil where one is missing).
func dig(m map[string]any, keys ...string) map[string]any {
	for _, k := range keys {
		next, ok := m[k].(map[string]any)
		if !ok {
			return nil
		}
		m = next
	}
	return m
}
