package retrypolicy

import (
	"math/rand/v2"
	"time"
)

// Exponential is base doubled for each try after the first, at most
// ceiling: the delay before try+1.
func Exponential(try int, base, ceiling time.Duration) time.Duration {
	d := base
	for i := 1; i < try && d < ceiling; i++ {
		d *= 2
	}
	return min(d, ceiling)
}

// EqualJitter is exponential backoff with equal jitter: d = min(max,
// base·2^(try-1)), and a delay uniform in [d/2, d] — never much shorter
// than the schedule says, so the tries of a dispatch span what the docs
// promise (docs/workers.md), and never all at once.
func EqualJitter(try int, base, ceiling time.Duration) time.Duration {
	d := Exponential(try, base, ceiling)
	return d/2 + time.Duration(rand.Int64N(int64(d/2)+1)) //nolint:gosec // jitter, not a secret
}

// Delivery bounds: a dispatch's tries wait 0.5 s doubling to a minute.
const (
	DeliveryBase    = 500 * time.Millisecond
	DeliveryCeiling = time.Minute
)

// Delivery is the dispatcher's default delay before try+1 of a dispatch
// (callbacks.DispatcherConfig.Backoff): EqualJitter from DeliveryBase to
// DeliveryCeiling, so the default 12 tries span 2.5 to 5 minutes.
func Delivery(try int) time.Duration { return EqualJitter(try, DeliveryBase, DeliveryCeiling) }

// Notification is the notifier's default delay before try+1 of a
// notification (callbacks.NotifierConfig.Backoff): 1 s doubling, at most
// 5 minutes, no jitter — 12 tries are about 20 minutes of retrying.
func Notification(try int) time.Duration { return Exponential(try, time.Second, 5*time.Minute) }

// Reconnect is a broker consumer's wait after n consecutive failed or
// lost connections (n from 0): lo doubled n times, at most hi, with up to
// 25% jitter either way (internal/broker's MinBackoff and MaxBackoff).
func Reconnect(n int, lo, hi time.Duration) time.Duration {
	d := Exponential(n+1, lo, hi)
	jitter := time.Duration(rand.Int64N(int64(d)/2+1)) - d/4 //nolint:gosec // G404: backoff jitter, no secret
	return d + jitter
}
