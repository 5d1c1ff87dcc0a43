package archtest

import (
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

const mod = "github.com/stitchd/stitchd"

// observability is imported only by internal/metrics (Prometheus) and
// internal/tracing (OpenTelemetry); the engine core never sees it.
var observability = []string{"github.com/prometheus", "go.opentelemetry.io"}

// rules: package (relative to the module) → import prefixes it must not use.
var rules = map[string][]string{
	"engine":    {"github.com/labstack/echo", "gorm.io", "github.com/lib/pq", "net/http", "github.com/jackc", mod + "/store", mod + "/web", mod + "/callbacks", mod + "/handlers", mod + "/compiler"},
	"compiler":  {"github.com/labstack/echo", "gorm.io", "github.com/lib/pq", "net/http", mod + "/store", mod + "/web", mod + "/callbacks", mod + "/handlers"},
	"handlers":  {"github.com/labstack/echo", "gorm.io", "github.com/lib/pq", "net/http", mod + "/store", mod + "/web", mod + "/callbacks"},
	"callbacks": {"github.com/labstack/echo", "gorm.io", "github.com/lib/pq", mod + "/store", mod + "/web"},
	"store":     {"github.com/labstack/echo", mod + "/web", mod + "/callbacks", mod + "/handlers"},
	// The background services sit between the wiring and the engine and
	// store: internal/app constructs them, never the other way round, and
	// they reach the engine through its API, not the HTTP edge's.
	"internal/maintenance":   {"github.com/labstack/echo", "gorm.io", "github.com/lib/pq", mod + "/web", mod + "/internal/app", mod + "/handlers", mod + "/compiler"},
	"internal/scheduler":     {"github.com/labstack/echo", "gorm.io", "github.com/lib/pq", mod + "/web", mod + "/internal/app", mod + "/handlers", mod + "/compiler", "net/http"},
	"internal/brokerconsume": {"github.com/labstack/echo", "gorm.io", "github.com/lib/pq", mod + "/web", mod + "/internal/app", mod + "/handlers", mod + "/compiler", "net/http"},
}

// allowed: the core packages' allow lists — beyond the standard library
// (less what stdlibDenied names), only these module paths (an import
// equal to one or under it). A new dependency of the core is a decision
// made here, not an accident.
var allowed = map[string][]string{
	"engine": {
		"github.com/tidwall/gjson",
		"github.com/expr-lang/expr",
		"github.com/santhosh-tekuri/jsonschema/v6", // UX forms: JSON Schema 2020-12
		"github.com/sosodev/duration",              // Wait nodes: ISO 8601 durations
		"golang.org/x/text",                        // form errors' messages
		mod + "/internal/jsonlimit",                // what Postgres can store of a value a step made
		// Its own leaves: the values at its seams, its writer and its
		// commit service.
		mod + "/engine/enginetype",
		mod + "/engine/internal/writer",
		mod + "/engine/internal/commit",
	},
	// The engine's leaves: the types shared with the store, the standard
	// library only; the writer and the commit service, those types only.
	"engine/enginetype":      {},
	"engine/internal/writer": {mod + "/engine/enginetype"},
	"engine/internal/commit": {mod + "/engine/enginetype"},
	"compiler":               {mod + "/engine", "github.com/tidwall/gjson", "github.com/expr-lang/expr", mod + "/internal/jsonlimit"},
	"handlers": {mod + "/engine", "github.com/tidwall/gjson", "github.com/expr-lang/expr",
		mod + "/internal/jsonlimit", // what Postgres can store of a response
		// A node's retry of failed attempts: its backoff lives with the
		// dispatcher's, the notifier's and the brokers' in one package.
		mod + "/internal/retrypolicy",
		mod + "/internal/jsbox"}, // a Code step's syntax, checked at save (its script runs in the dispatcher)
	// What handlers import is held to the core's rules: the standard
	// library (less its I/O), nothing else.
	"internal/retrypolicy": {},
}

// stdlibOnly: public packages a program of its own imports to talk to
// stitchd (the worker library): the standard library only, so importing
// one brings in nothing else. Their own I/O (net/http) is their job.
var stdlibOnly = []string{"worker"}

// stdlibDenied: standard packages the core must not use (it declares
// interfaces for I/O; the shell does the I/O).
var stdlibDenied = []string{"net/http", "database/sql", "os/exec"}

// disallowed says why pkg may not import imp ("" when it may), by the
// allow lists; packages without one are checked by rules alone.
func disallowed(pkg, imp string) string {
	allow, ok := allowed[pkg]
	if !ok {
		return ""
	}
	first, _, _ := strings.Cut(imp, "/")
	if !strings.Contains(first, ".") { // the standard library
		for _, d := range stdlibDenied {
			if imp == d || strings.HasPrefix(imp, d+"/") {
				return pkg + " must not import " + imp + " (the standard library's I/O stays outside the core)"
			}
		}
		return ""
	}
	for _, a := range allow {
		if imp == a || strings.HasPrefix(imp, a+"/") {
			return ""
		}
	}
	return pkg + " imports " + imp + ", which is not on its allow list (internal/archtest: allowed)"
}

// TestAllowListCatchesAnImport: the allow lists refuse what is not on them
// (a test of the check itself: it must be able to fail).
func TestAllowListCatchesAnImport(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ pkg, imp string }{
		{"engine", "github.com/google/uuid"},
		{"engine", "net/http"},
		{"engine", "net/http/httptest"},
		{"compiler", "github.com/santhosh-tekuri/jsonschema/v6"},
		{"handlers", mod + "/store"},
		{"handlers", "gorm.io/gorm"},
		{"engine", "github.com/tidwall/gjsonx"},
		{"internal/retrypolicy", "github.com/tidwall/gjson"},
		{"internal/retrypolicy", "net/http"},
		{"engine/enginetype", mod + "/engine"},
		{"engine/internal/writer", mod + "/engine"},
		{"engine/internal/writer", "github.com/tidwall/gjson"},
		{"engine/internal/commit", mod + "/engine"},
		{"engine/internal/commit", mod + "/engine/internal/writer"},
	} {
		require.NotEmpty(t, disallowed(c.pkg, c.imp), "%s importing %s", c.pkg, c.imp)
	}
	for _, c := range []struct{ pkg, imp string }{
		{"engine", "github.com/expr-lang/expr/vm"},
		{"engine", "encoding/json"},
		{"compiler", mod + "/engine"},
		{"handlers", "github.com/tidwall/gjson"},
		{"handlers", mod + "/internal/retrypolicy"},
		{"internal/retrypolicy", "math/rand/v2"},
		{"engine/internal/writer", mod + "/engine/enginetype"},
		{"store", "gorm.io/gorm"}, // no allow list: rules apply
	} {
		require.Empty(t, disallowed(c.pkg, c.imp), "%s importing %s", c.pkg, c.imp)
	}
}

func TestLayerDirection(t *testing.T) {
	t.Parallel()
	out, err := exec.CommandContext(t.Context(), "go", "list", "-f", `{{.ImportPath}} {{join .Imports " "}}`, mod+"/...").CombinedOutput()
	require.NoError(t, err, string(out))
	seen := map[string]bool{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		fields := strings.Fields(line)
		pkg := strings.TrimPrefix(fields[0], mod+"/")
		seen[pkg] = true
		for _, imp := range fields[1:] {
			// echo only in web; gorm and lib/pq only under store.
			if strings.HasPrefix(imp, "github.com/labstack/echo") && pkg != "web" {
				t.Errorf("%s imports %s: only web may import echo", pkg, imp)
			}
			if (strings.HasPrefix(imp, "gorm.io") || strings.HasPrefix(imp, "github.com/lib/pq")) && !strings.HasPrefix(pkg, "store") {
				t.Errorf("%s imports %s: only store may import gorm and lib/pq", pkg, imp)
			}
			if strings.HasPrefix(imp, "github.com/prometheus/") && pkg != "internal/metrics" {
				t.Errorf("%s imports %s: only internal/metrics may import Prometheus", pkg, imp)
			}
			if strings.HasPrefix(imp, "go.opentelemetry.io/") && pkg != "internal/tracing" {
				t.Errorf("%s imports %s: only internal/tracing may import OpenTelemetry", pkg, imp)
			}
			if (strings.HasPrefix(imp, "github.com/nats-io/") || strings.HasPrefix(imp, "github.com/rabbitmq/")) &&
				pkg != "internal/broker" && !strings.HasPrefix(pkg, "internal/broker/") {
				t.Errorf("%s imports %s: only internal/broker may import the broker clients", pkg, imp)
			}
			if imp == mod+"/internal/testkit" || imp == mod+"/internal/contracttest" {
				t.Errorf("%s imports %s: tests' helpers stay out of the program (test hooks: internal/testsignal)", pkg, imp)
			}
			if slices.Contains(stdlibOnly, pkg) && strings.Contains(strings.SplitN(imp, "/", 2)[0], ".") {
				t.Errorf("%s imports %s: it imports the standard library only (internal/archtest: stdlibOnly)", pkg, imp)
			}
			if why := disallowed(pkg, imp); why != "" {
				t.Error(why)
			}
			denied := rules[pkg]
			if denied != nil {
				denied = append(denied[:len(denied):len(denied)], observability...)
			}
			for _, bad := range denied {
				if imp == bad || strings.HasPrefix(imp, bad+"/") {
					t.Errorf("%s must not import %s (docs/architecture.md, Where things live)", pkg, imp)
				}
			}
		}
	}
	for pkg := range rules {
		require.True(t, seen[pkg], "package %s exists", pkg)
	}
	for pkg := range allowed {
		require.True(t, seen[pkg], "package %s exists", pkg)
	}
	for _, pkg := range stdlibOnly {
		require.True(t, seen[pkg], "package %s exists", pkg)
	}
}
