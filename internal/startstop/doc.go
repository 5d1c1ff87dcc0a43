// Package startstop gives stitchd's goroutine owners (the dispatcher, the
// notifier, the sweeper, the schedule and key loops, the broker consumers)
// one guarded, idempotent lifecycle, after River's startstop: Start starts
// a stopped service and does nothing to a running one; Stop cancels its
// context and waits for every goroutine it started, and does nothing to a
// stopped one; both may be called from any goroutine, at once, any number
// of times, and a stopped service may be started again.
package startstop
