// Package metrics is stitchd's Prometheus instrumentation: a registry
// created by internal/app (no global state) holding run, node, dispatch,
// callback, outbox and sweeper series, fed by the engine's commit hook and
// thin wrappers around the dispatcher and the HTTP handler. The engine
// itself knows nothing of Prometheus.
package metrics
