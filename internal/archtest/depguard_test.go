package archtest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"
)

// depguardRule is one rule of .golangci.yml's depguard settings.
type depguardRule struct {
	ListMode string   `yaml:"list-mode"`
	Files    []string `yaml:"files"`
	Allow    []string `yaml:"allow"`
	Deny     []struct {
		Pkg string `yaml:"pkg"`
	} `yaml:"deny"`
}

// TestDepguardMirrorsArchtest: golangci-lint's allow lists for the core
// (core-engine, core-compiler, core-handlers) are this package's allowed
// and stdlibDenied, and those of the public standard-library-only packages
// (stdlib-worker) its stdlibOnly, so the editor's lint and make test
// refuse the same imports.
func TestDepguardMirrorsArchtest(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile(filepath.Join(repoRoot(t), ".golangci.yml"))
	require.NoError(t, err)
	var cfg struct {
		Linters struct {
			Settings struct {
				Depguard struct {
					Rules map[string]depguardRule `yaml:"rules"`
				} `yaml:"depguard"`
			} `yaml:"settings"`
		} `yaml:"linters"`
	}
	require.NoError(t, yaml.Unmarshal(b, &cfg))
	rules := cfg.Linters.Settings.Depguard.Rules
	for pkg, allow := range allowed {
		r, ok := rules["core-"+pkg]
		require.True(t, ok, ".golangci.yml has a depguard rule core-%s", pkg)
		require.Equal(t, "strict", r.ListMode, "core-%s is an allow list", pkg)
		require.ElementsMatch(t, []string{"**/" + pkg + "/*.go", "!$test"}, r.Files, "core-%s's files", pkg)
		require.ElementsMatch(t, append([]string{"$gostd"}, allow...), r.Allow, "core-%s allows what allowed[%q] does", pkg, pkg)
		var deny []string
		for _, d := range r.Deny {
			deny = append(deny, d.Pkg)
		}
		require.ElementsMatch(t, stdlibDenied, deny, "core-%s denies stdlibDenied", pkg)
	}
	for _, pkg := range stdlibOnly {
		r, ok := rules["stdlib-"+pkg]
		require.True(t, ok, ".golangci.yml has a depguard rule stdlib-%s", pkg)
		require.Equal(t, "strict", r.ListMode, "stdlib-%s is an allow list", pkg)
		require.ElementsMatch(t, []string{"**/" + pkg + "/*.go", "!$test"}, r.Files, "stdlib-%s's files", pkg)
		require.Equal(t, []string{"$gostd"}, r.Allow, "stdlib-%s allows the standard library only", pkg)
	}
	for name := range rules {
		if pkg, ok := strings.CutPrefix(name, "stdlib-"); ok {
			require.Contains(t, stdlibOnly, pkg, "depguard rule %s is in internal/archtest's stdlibOnly", name)
		}
		if pkg, ok := strings.CutPrefix(name, "core-"); ok {
			_, mirrored := allowed[pkg]
			require.True(t, mirrored, "depguard rule %s has an allow list in internal/archtest", name)
		}
	}
}

// repoRoot is the module's root: the nearest directory above with go.mod.
func repoRoot(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	require.NoError(t, err)
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		require.NotEqual(t, dir, parent, "no go.mod above the test's directory")
		dir = parent
	}
}
