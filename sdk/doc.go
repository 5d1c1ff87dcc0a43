// Package sdk holds the worker libraries of other languages than Go —
// python/ (stitchd_worker.py, the standard library only) and node/ (in
// TypeScript, compiled to dist/, no runtime dependencies) — and the Go
// test that runs each one's own tests against a real stitchd, so that
// `go test ./...` covers them. The Go library is the package worker.
package sdk
