package retrypolicy

import (
	"hash/fnv"
	"math"
	"strconv"
	"strings"
)

// Backoff kinds of Attempts.Backoff.
const (
	BackoffExponential = "exponential"
	BackoffLinear      = "linear"
	BackoffFixed       = "fixed"
)

// Attempts is a node's policy for retrying a failed attempt as a new one
// (a Worker's or an HTTP node's retry.* config, defaults applied by the
// caller).
type Attempts struct {
	// MaxAttempts bounds the attempts, the first included.
	MaxAttempts int
	// Backoff is exponential (any unknown kind too), linear or fixed.
	Backoff                    string
	InitialDelayMs, MaxDelayMs int64
	// Multiplier is the exponential backoff's factor.
	Multiplier float64
	// Jitter is the fraction of each delay drawn at random (0: none, 1:
	// full jitter, a uniform delay in (0, d]).
	Jitter float64
	// NonRetryable are error substrings: a failure whose error contains
	// one is not retried.
	NonRetryable []string
}

// Retryable reports whether a failure with error msg may be retried: it
// contains none of the policy's nonRetryable substrings.
func (a Attempts) Retryable(msg string) bool {
	for _, s := range a.NonRetryable {
		if strings.Contains(msg, s) {
			return false
		}
	}
	return true
}

// BaseDelayMs is the backoff before attempt n+1 after n failures, before
// jitter.
func (a Attempts) BaseDelayMs(n int) int64 {
	d := float64(a.InitialDelayMs)
	switch a.Backoff {
	case BackoffFixed:
	case BackoffLinear:
		d *= float64(n)
	default:
		for i := 1; i < n && d < float64(a.MaxDelayMs); i++ {
			d *= a.Multiplier
		}
	}
	if d > float64(a.MaxDelayMs) || math.IsInf(d, 0) {
		d = float64(a.MaxDelayMs)
	}
	return int64(d)
}

// DelayMs is the backoff before attempt n+1 after n failures, with the
// policy's jitter: d·(1 − jitter·u) for u in [0, 1), so within
// [d·(1 − jitter), d]. u is the caller's (JitterFraction derives one
// from the run, key and attempt, so a delay is reproducible).
func (a Attempts) DelayMs(n int, u float64) int64 {
	d := a.BaseDelayMs(n)
	if a.Jitter > 0 && d > 0 {
		d = int64(math.Ceil(float64(d) * (1 - a.Jitter*u)))
	}
	return d
}

// Next decides what follows the failure of attempt n (1-based) of node
// key in run runID, with error msg: retry after delayMs (at least 1), or
// not at all (the last attempt failed, or msg is not retryable).
func (a Attempts) Next(runID, key string, n int, msg string) (delayMs int64, retry bool) {
	if n >= a.MaxAttempts || !a.Retryable(msg) {
		return 0, false
	}
	return max(a.DelayMs(n, JitterFraction(runID, key, n)), 1), true
}

// JitterFraction is a number in [0, 1) derived from a node instance's run,
// key and attempt: the same attempt of the same node always waits the same
// delay, and the instances of a fan-out that fail together spread out.
func JitterFraction(runID, key string, attempt int) float64 {
	h := fnv.New64a()
	h.Write([]byte(runID))
	h.Write([]byte{0})
	h.Write([]byte(key))
	h.Write([]byte{0})
	h.Write([]byte(strconv.Itoa(attempt)))
	return float64(h.Sum64()>>11) / (1 << 53)
}
