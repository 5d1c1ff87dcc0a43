package sdk_test

import (
	"context"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stitchd/stitchd/internal/syncbuf"
	"github.com/stitchd/stitchd/internal/testkit/instance"
	"github.com/stitchd/stitchd/store/storetest"
)

func TestMain(m *testing.M) { storetest.Main(m) }

// runSuite runs a library's own test command in dir against a new
// stitchd, with its address, the admin token, a worker token and the
// webhook secret in the environment, and fails when the command does.
func runSuite(t *testing.T, dir string, argv ...string) {
	t.Helper()
	s := instance.Start(t)
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "STITCHD_URL="+s.URL, "STITCHD_ADMIN_TOKEN="+instance.AdminToken,
		"STITCHD_WORKER_TOKEN="+s.WorkerToken("sdk"), "STITCHD_WEBHOOK_SECRET="+s.WebhookSecret)
	out := &syncbuf.Buffer{}
	cmd.Stdout, cmd.Stderr = out, out
	began := time.Now()
	err := cmd.Run()
	t.Logf("%v in %s (%v):\n%s", argv, dir, time.Since(began).Round(time.Millisecond), out)
	require.NoError(t, err, "%v failed", argv)
}

// TestPythonLibrary: sdk/python's unittest suite (test_stitchd_worker.py)
// against a real stitchd.
func TestPythonLibrary(t *testing.T) {
	t.Parallel()
	python, err := exec.LookPath("python3")
	require.NoError(t, err, "python3 is needed for the Python library's tests")
	runSuite(t, "python", python, "-m", "unittest", "-v", "test_stitchd_worker")
}

// TestNodeLibrary: sdk/node's node:test suite (src/index.test.ts, run as
// compiled in dist/: running needs no build) against a real stitchd.
func TestNodeLibrary(t *testing.T) {
	t.Parallel()
	node, err := exec.LookPath("node")
	require.NoError(t, err, "node is needed for the Node library's tests")
	runSuite(t, "node", node, "--test", "--test-reporter=spec", "dist/index.test.js")
}
