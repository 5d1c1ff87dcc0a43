// Package cli is the stitchd command line: `serve` runs the server,
// `migrate` applies database migrations, `version` prints the version, and
// the client verbs (flow, run, approve, …) talk to a running server. Flags
// have environment overrides (flag > environment > default). Concrete
// types are wired in package internal/app. cmd/stitchd runs it with the
// built-in node types; package stitchd (the module's root) lets a program
// outside this module run it with node types of its own.
package cli
