// Package chaos holds the chaos soak: real stitchd processes (the built
// binary) sharing one throwaway Postgres cluster of their own, a loopback
// worker that misbehaves (5xx, 429 with Retry-After, hangs, dropped and
// refused connections, failures, heartbeats, duplicated and late
// callbacks), processes killed with SIGKILL and restarted, and Postgres
// restarted once, while clients follow event streams across it all.
// Afterwards stitchd's promises are checked from the database, against
// rules written out in the test (docs/state_machine.md's moves, never the
// engine's own tables): every run completes, node and run histories follow
// the state machines, each attempt completes at most once, every collector
// fires exactly once with its items in order, no dispatch is lost, no node
// runs past its deadline by more than the sweeper's bound, every callback
// got the answer its attempt's history says and changed only that, and a
// run's event stream delivered every event exactly once, in order.
//
// go test runs the quick form (50 runs, three kills); make soak runs 500
// runs with a kill every 5–15 s. See docs/reliability.md.
//
// TestHASoak runs the same workload on three stitchd processes given a
// multi-host URL to a Postgres pair under Patroni (etcd, synchronous
// replication) and SIGKILLs the primary's postmaster mid-flight: Patroni
// promotes the standby, stitchd follows it. Its quick form (50 runs, one
// failover) is part of go test; make ha-soak runs 200 runs and three
// failovers.
package chaos
