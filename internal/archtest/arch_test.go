package archtest

import (
	"os/exec"
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
}

func TestLayerDirection(t *testing.T) {
	out, err := exec.Command("go", "list", "-f", `{{.ImportPath}} {{join .Imports " "}}`, mod+"/...").CombinedOutput()
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
				!strings.HasPrefix(pkg, "internal/broker") {
				t.Errorf("%s imports %s: only internal/broker may import the broker clients", pkg, imp)
			}
			denied := rules[pkg]
			if denied != nil {
				denied = append(denied[:len(denied):len(denied)], observability...)
			}
			for _, bad := range denied {
				if imp == bad || strings.HasPrefix(imp, bad+"/") {
					t.Errorf("%s must not import %s (DESIGN.md, Layers)", pkg, imp)
				}
			}
		}
	}
	for pkg := range rules {
		require.True(t, seen[pkg], "package %s exists", pkg)
	}
}
