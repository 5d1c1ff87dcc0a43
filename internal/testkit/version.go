package testkit

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"github.com/stitchd/stitchd/handlers"
	"testing"

	"github.com/google/uuid"

	"github.com/stitchd/stitchd/compiler"
	"github.com/stitchd/stitchd/store"
)

// Version compiles a visual graph (the editor's JSON) into a flow
// version to store, as the API would: for tests that drive an engine
// without the HTTP server.
func Version(tb testing.TB, graph string) store.NewVersion {
	tb.Helper()
	v, err := compiler.ParseVisual([]byte(graph))
	if err != nil {
		tb.Fatalf("testkit: error parsing graph: %v", err)
	}
	g, err := compiler.Compile(v, handlers.Types(handlers.Options{}))
	if err != nil {
		tb.Fatalf("testkit: error compiling graph: %v", err)
	}
	exec, err := json.Marshal(g)
	if err != nil {
		tb.Fatal(err)
	}
	canon, err := compiler.Canonical([]byte(graph))
	if err != nil {
		tb.Fatal(err)
	}
	sum := sha256.Sum256(canon)
	return store.NewVersion{ID: uuid.NewString(), Graph: canon, Execution: exec, Hash: hex.EncodeToString(sum[:])}
}
