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

// runSuite runs a library's own test command in dir against s, with its
// address, the admin token, a worker token and the webhook secret in the
// environment, and fails when the command does.
func runSuite(t *testing.T, s *instance.Stitchd, dir string, argv ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "STITCHD_URL="+s.URL, "STITCHD_ADMIN_TOKEN="+instance.AdminToken,
		"STITCHD_WORKER_TOKEN="+s.WorkerToken("sdk-"+dir), "STITCHD_WEBHOOK_SECRET="+s.WebhookSecret)
	out := &syncbuf.Buffer{}
	cmd.Stdout, cmd.Stderr = out, out
	began := time.Now()
	err := cmd.Run()
	t.Logf("%v in %s (%v):\n%s", argv, dir, time.Since(began).Round(time.Millisecond), out)
	require.NoError(t, err, "%v failed", argv)
}

// TestLibraries runs the worker libraries' own suites against one real
// stitchd, side by side (each on flows and queues of its own):
//   - python: sdk/python's unittest suite (test_stitchd_worker.py);
//   - node: sdk/node's node:test suite (src/index.test.ts, run as compiled
//     in dist/: running needs no build).
func TestLibraries(t *testing.T) {
	t.Parallel()
	python, err := exec.LookPath("python3")
	require.NoError(t, err, "python3 is needed for the Python library's tests")
	node, err := exec.LookPath("node")
	require.NoError(t, err, "node is needed for the Node library's tests")
	s := instance.Start(t)
	t.Run("python", func(t *testing.T) {
		t.Parallel()
		runSuite(t, s, "python", python, "-m", "unittest", "-v", "test_stitchd_worker")
	})
	t.Run("node", func(t *testing.T) {
		t.Parallel()
		runSuite(t, s, "node", node, "--test", "--test-reporter=spec", "dist/index.test.js")
	})
}
