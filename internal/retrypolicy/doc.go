// Package retrypolicy holds stitchd's retry and backoff policies in one
// place, each where its caller reads it:
//
//   - Attempts: a Worker or HTTP node's retry of a failed attempt (its
//     retry.* config: maxAttempts, backoff, initialDelayMs, maxDelayMs,
//     multiplier, jitter, nonRetryable), with a jitter derived from the
//     run, key and attempt so a delay is reproducible (handlers);
//   - Delivery: the dispatcher's tries of one dispatch, equal jitter
//     (callbacks.Dispatcher);
//   - Notification: the notification webhook's tries (callbacks.Notifier);
//   - Reconnect: a broker consumer's wait after a failed or lost
//     connection (internal/broker).
//
// It is pure — the standard library, no I/O — because the handlers, held
// to the core's allow list (internal/archtest), import it.
package retrypolicy
