package worker

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestHeartbeatInterval: the automatic heartbeats come every third of the
// deadline as stitchd reads it — a fraction of a second rounded up, as
// stitchd does (timeoutSeconds 0.5 is a 1 s deadline: not the 300 s
// default's 100 s between beats) — and a deadline of centuries (stitchd
// allows 9,223,372,037 s) neither overflows into no heartbeats nor waits
// longer than 24 days between them.
func TestHeartbeatInterval(t *testing.T) {
	t.Parallel()
	r := newRunner(nil, nil, nil, 0, "timeoutSeconds")
	for cfg, want := range map[string]time.Duration{
		`{}`:                             100 * time.Second,
		`{"timeoutSeconds": 0.5}`:        time.Second / 3,
		`{"timeoutSeconds": 1.5}`:        2 * time.Second / 3,
		`{"timeoutSeconds": 6}`:          2 * time.Second,
		`{"timeoutSeconds": 0}`:          100 * time.Second,
		`{"timeoutSeconds": "6"}`:        100 * time.Second,
		`{"timeoutSeconds": 7000000}`:    24 * 24 * time.Hour,
		`{"timeoutSeconds": 9223372037}`: 24 * 24 * time.Hour,
	} {
		require.Equal(t, want, r.interval(&Task{Config: []byte(cfg)}), cfg)
	}
}
