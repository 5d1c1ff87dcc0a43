package testkit

import (
	"os"
	"strconv"
	"strings"
	"testing"
)

// RSSMiB is this process's resident memory in MiB (/proc/self/status),
// for tests that hold a bound loosely.
func RSSMiB(tb testing.TB) int {
	tb.Helper()
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		tb.Fatalf("testkit: %v", err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, err := strconv.Atoi(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")))
			if err != nil {
				tb.Fatalf("testkit: VmRSS %q: %v", rest, err)
			}
			return kb >> 10
		}
	}
	tb.Fatal("testkit: no VmRSS in /proc/self/status")
	return 0
}
