// Package bench is the end-to-end benchmark behind `stitchd bench`: it
// starts a stitchd process against a fresh database, serves an instant
// worker on loopback (real HTTP both ways), runs each scenario and reports
// throughput, callback-to-next-dispatch latency, stitchd's CPU and memory,
// and database work per completion. docs/performance.md explains the
// method and lists the figures.
package bench
