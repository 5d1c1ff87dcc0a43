package engine

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestWritesGoThroughTheWriter: the engine writes only through a txn's
// writer, which counts its writes for group commit (a write it did not
// count let a rejected operation's changes commit). The rules hold
// TxReads, so the compiler stops them; this stops code holding a whole Tx
// (the commit service) too, but for the one write group commit counts
// itself.
func TestWritesGoThroughTheWriter(t *testing.T) {
	t.Parallel()
	writes := map[string]bool{}
	rt := reflect.TypeFor[TxWrites]()
	for i := range rt.NumMethod() {
		writes[rt.Method(i).Name] = true
	}
	allowed := map[string]bool{
		"commit_together.go:CompleteAcrossRuns": true, // counted by together.give
	}
	files, err := filepath.Glob("*.go")
	require.NoError(t, err)
	var found []string
	fset := token.NewFileSet()
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		file, err := parser.ParseFile(fset, f, nil, 0)
		require.NoError(t, err)
		ast.Inspect(file, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			sel, ok := call.Fun.(*ast.SelectorExpr)
			if !ok || !writes[sel.Sel.Name] {
				return true
			}
			// t.w.X(…) is the writer's.
			if x, ok := sel.X.(*ast.SelectorExpr); ok && x.Sel.Name == "w" {
				return true
			}
			if !allowed[f+":"+sel.Sel.Name] {
				found = append(found, fset.Position(call.Pos()).String()+" "+sel.Sel.Name)
			}
			return true
		})
	}
	require.Empty(t, found, "writes that bypass the writer")
}
