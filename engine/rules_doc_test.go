package engine_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestEveryRuleHasATest: each section of docs/state_machine.md (a rule of
// the engine) names its rule tests in a "Rule tests" line, each one a test
// of this package or of engine/enginetype (the status state machines); and every TestRule… of this package is named there, so
// a rule and its test are found from either side.
func TestEveryRuleHasATest(t *testing.T) {
	t.Parallel()
	doc, err := os.ReadFile(filepath.Join("..", "docs/state_machine.md")) // the repository's root is one up
	require.NoError(t, err)
	files, err := filepath.Glob("*_test.go")
	require.NoError(t, err)
	leaf, err := filepath.Glob("enginetype/*_test.go") // the state machines' own
	require.NoError(t, err)
	files = append(files, leaf...)
	defined := map[string]bool{}
	funcs := regexp.MustCompile(`(?m)^func (Test\w+)\(t \*testing\.T\)`)
	for _, f := range files {
		b, err := os.ReadFile(f)
		require.NoError(t, err)
		for _, m := range funcs.FindAllStringSubmatch(string(b), -1) {
			defined[m[1]] = true
		}
	}
	named := map[string]bool{}
	var heading string
	var sectionNames []string
	check := func() {
		if heading != "" {
			require.NotEmpty(t, sectionNames, "%q names no rule test (a line \"Rule tests (`engine/`): …\")", heading)
		}
	}
	for _, line := range strings.Split(string(doc), "\n") {
		if strings.HasPrefix(line, "## ") || strings.HasPrefix(line, "### ") {
			check()
			heading, sectionNames = line, nil
			continue
		}
		rest, ok := strings.CutPrefix(line, "Rule tests (`engine/`): ")
		if !ok {
			continue
		}
		for _, name := range strings.Split(strings.TrimSuffix(rest, "."), ", ") {
			name = strings.Trim(name, "`")
			require.True(t, defined[name], "%q names %s, which is no test of package engine (or engine/enginetype)", heading, name)
			named[name] = true
			sectionNames = append(sectionNames, name)
		}
	}
	check()
	for name := range defined {
		if strings.HasPrefix(name, "TestRule") {
			require.True(t, named[name], "%s is not named under the rule it tests in docs/state_machine.md", name)
		}
	}
}
