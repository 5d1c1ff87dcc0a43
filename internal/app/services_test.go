package app_test

import (
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stitchd/stitchd/internal/startstop/startstoptest"
)

// TestServicesSurviveStartStopStorms: the dispatcher and the notification
// sender of a running stitchd, started and stopped from 64 goroutines at
// once (under -race in make test), end stopped — the dispatcher's 64
// delivery workers are gone, none left behind by a start that raced a
// stop — and, started again, the dispatcher delivers a run's work.
func TestServicesSurviveStartStopStorms(t *testing.T) {
	h := newHarness(t)
	running := runtime.NumGoroutine()
	began := time.Now()
	startstoptest.Stress(t, h.app.Dispatcher, 10)
	startstoptest.Stress(t, h.app.Notifications, 10)
	t.Logf("two storms of 640 starts and stops: %s", time.Since(began))
	h.eventually(func() bool { return runtime.NumGoroutine() <= running-64 },
		"the dispatcher's workers to end (%d goroutines running, %d now)", running, runtime.NumGoroutine())

	require.NoError(t, h.app.Dispatcher.Start(t.Context()))
	require.NoError(t, h.app.Notifications.Start(t.Context()))
	flow := h.createFlow([]map[string]any{wnode(h, "w")}, nil)
	r := h.startRun(flow, map[string]any{"n": 1})
	h.waitDispatch(r.ID, "w", 1)
}
