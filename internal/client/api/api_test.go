package api_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestGeneratedTypesAreFresh: api.gen.go is what oapi-codegen (the
// version go:generate names) makes of openapi.yaml today — a change to the
// spec without `go generate ./internal/client/api` fails here.
func TestGeneratedTypesAreFresh(t *testing.T) {
	out := filepath.Join(t.TempDir(), "api.gen.go")
	cmd := exec.CommandContext(t.Context(), "go", "run", "github.com/oapi-codegen/oapi-codegen/v2/cmd/oapi-codegen@v2.8.2",
		"-generate", "types", "-package", "api", "-o", out, "../../../openapi.yaml")
	msg, err := cmd.CombinedOutput()
	require.NoError(t, err, "oapi-codegen: %s", msg)
	want, err := os.ReadFile(out)
	require.NoError(t, err)
	got, err := os.ReadFile("api.gen.go")
	require.NoError(t, err)
	require.True(t, bytes.Equal(want, got), "internal/client/api/api.gen.go is not what openapi.yaml gives: run go generate ./internal/client/api")
}
