package app_test

import (
	"log/slog"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/stitchd/stitchd/internal/app"
	"github.com/stitchd/stitchd/internal/syncbuf"
)

// TestFailuresLogAtWarn: a delivery that fails, the node it fails and the
// run it fails are each a WARN line naming the run.
func TestFailuresLogAtWarn(t *testing.T) {
	t.Parallel()
	var logs syncbuf.Buffer
	h := newHarness(t, func(c *app.Config) {
		c.Logger = slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelWarn}))
	})
	h.worker.SetStatus(http.StatusBadRequest) // not retried: the node fails at once
	flow := h.createFlow([]map[string]any{wnode(h, "w")}, nil)
	r := h.startRun(flow, map[string]any{})
	h.waitRun(r.ID, "failed")
	h.eventually(func() bool {
		out := logs.String()
		for _, want := range []string{`msg="delivery failed" run_id=` + r.ID + ` node_key=w`,
			`msg="node failed" run_id=` + r.ID + ` node_key=w`, `msg="run failed" run_id=` + r.ID} {
			if !strings.Contains(out, want) {
				return false
			}
		}
		return true
	}, "the three WARN lines")
	require.Contains(t, logs.String(), "level=WARN")
}
