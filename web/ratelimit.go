package web

import (
	"math"
	"sync"
	"time"
)

// rateLimiter is a token bucket per key (an inbound trigger): rate tokens
// a second, bursts of burst. It lives in one process: several stitchd
// processes each allow the rate.
type rateLimiter struct {
	rate, burst float64
	mu          sync.Mutex
	buckets     map[string]*bucket
}

type bucket struct {
	tokens float64
	at     time.Time
}

// maxIdleBuckets is how many buckets are kept before full ones (idle for
// at least burst/rate) are dropped: a dropped bucket starts full again,
// as it would have been.
const maxIdleBuckets = 4096

// newRateLimiter returns a limiter of rate a second (bursts of rate,
// at least 1), or nil for rate <= 0 (no limit).
func newRateLimiter(rate float64) *rateLimiter {
	if rate <= 0 || math.IsNaN(rate) || math.IsInf(rate, 0) {
		return nil
	}
	return &rateLimiter{rate: rate, burst: max(math.Ceil(rate), 1), buckets: map[string]*bucket{}}
}

// take spends a token of key's bucket at now; when there is none it
// returns false and how long until there is one.
func (l *rateLimiter) take(key string, now time.Time) (bool, time.Duration) {
	if l == nil {
		return true, 0
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	b := l.buckets[key]
	if b == nil {
		if len(l.buckets) >= maxIdleBuckets {
			l.prune(now)
		}
		b = &bucket{tokens: l.burst, at: now}
		l.buckets[key] = b
	}
	if el := now.Sub(b.at).Seconds(); el > 0 {
		b.tokens = min(l.burst, b.tokens+el*l.rate)
		b.at = now
	}
	if b.tokens >= 1 {
		b.tokens--
		return true, 0
	}
	return false, time.Duration((1 - b.tokens) / l.rate * float64(time.Second))
}

// prune drops the buckets that have refilled (l.mu held).
func (l *rateLimiter) prune(now time.Time) {
	for k, b := range l.buckets {
		if b.tokens+now.Sub(b.at).Seconds()*l.rate >= l.burst {
			delete(l.buckets, k)
		}
	}
}

// retryAfterSeconds is d in whole seconds for Retry-After, at least 1.
func retryAfterSeconds(d time.Duration) int {
	return max(int(math.Ceil(d.Seconds())), 1)
}
