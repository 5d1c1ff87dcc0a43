// Package archtest holds a test that enforces stitchd's layer direction
// (DESIGN.md, "Layers") on every `make test`, beside golangci-lint's
// depguard rules in `make lint`.
package archtest
