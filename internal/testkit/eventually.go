package testkit

import (
	"testing"
	"time"
)

// Eventually polls cond until it holds, and fails the test (Fatalf, with
// the message) when it still does not after timeout. The first checks are
// a millisecond apart, later ones up to 20 ms: a condition that holds
// returns at once, and only a failing test waits the whole timeout.
func Eventually(tb testing.TB, timeout time.Duration, cond func() bool, format string, args ...any) {
	tb.Helper()
	if !Poll(timeout, cond) {
		tb.Fatalf("timed out after %s waiting for "+format, append([]any{timeout}, args...)...)
	}
}

// Poll polls cond until it holds (true) or timeout passed (false): for
// code that cannot fail a test (a goroutine, a benchmark's helper).
func Poll(timeout time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(timeout)
	wait := time.Millisecond
	for !cond() {
		if time.Now().After(deadline) {
			return false
		}
		timer := time.NewTimer(wait)
		<-timer.C
		wait = min(2*wait, 20*time.Millisecond)
	}
	return true
}

// Later is a message argument read when the message is written (a
// failure), not when the wait begins: the last state a wait saw.
type Later func() string

func (l Later) String() string { return l() }
