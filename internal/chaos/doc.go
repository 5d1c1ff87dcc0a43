// Package chaos holds the chaos soak: real stitchd processes (the built
// binary) sharing one throwaway Postgres cluster of their own, a loopback
// worker that misbehaves (5xx, 429 with Retry-After, hangs, dropped and
// refused connections, failures, heartbeats, duplicated and late
// callbacks), processes killed with SIGKILL and restarted, and Postgres
// restarted once. Afterwards stitchd's promises are checked from the
// database: every run completes, node histories follow the state machine,
// each attempt completes at most once, every collector fires exactly once
// with its items in order, no dispatch is lost and no node runs past its
// deadline by more than the sweeper's bound.
//
// go test runs the quick form (50 runs, one kill); make soak runs 500 runs
// with a kill every 5–15 s. See docs/reliability.md.
package chaos
