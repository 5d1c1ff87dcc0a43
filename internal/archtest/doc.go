// Package archtest holds the checks of the repository itself that run on
// every `make test`.
//
// The layering (docs/architecture.md, "Where things live"): deny rules for
// every layer (echo only in web, gorm and lib/pq only in store, …) and
// allow lists for the core — engine, compiler and handlers may import the
// standard library (but its I/O), gjson, expr-lang, the engine, and the
// few pure libraries named in the list, nothing else. golangci-lint's
// depguard holds the same allow lists (make lint), and a test keeps them
// equal.
//
// The docs' links: every relative link of a markdown file leads to a file
// that exists (and to a heading it has), and every doc that code names
// (docs/state_machine.md, README.md) exists.
package archtest
