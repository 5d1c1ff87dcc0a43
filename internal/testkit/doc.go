// Package testkit is the helpers stitchd's tests share, so that each
// package does not grow its own copy: Eventually (poll a condition
// against a deadline instead of sleeping), Clock (a clock a test moves
// forward) and Worker (a loopback worker that records the dispatches
// stitchd sends it and calls back). Tests only: production code never
// imports it (internal/archtest); a service's test hooks are
// internal/testsignal.
package testkit
