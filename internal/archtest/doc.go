// Package archtest holds the tests that enforce stitchd's layering
// (DESIGN.md, "Layers") on every `make test`, beside golangci-lint's
// depguard rules in `make lint`: deny rules for every layer (echo only in
// web, gorm and lib/pq only in store, …) and allow lists for the core —
// engine, compiler and handlers may import the standard library (but its
// I/O), gjson, expr-lang, the engine, and the few pure libraries named in
// the list, nothing else.
package archtest
