// Package demo is what `make run` shows a newcomer: a "Lead qualification"
// board and flow (Load, idempotent) and the built-in demo worker that
// serves the flow's Worker nodes (Worker: verifies the Standard Webhooks
// signature, answers 202 at once and calls back after a random delay).
package demo
