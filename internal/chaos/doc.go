// Package chaos holds tests that run real stitchd processes on one
// database and kill them with SIGKILL, checking stitchd's promises from the
// database afterwards: every run finishes, every collector fires exactly
// once with its items in order, no node is completed twice, nothing stays
// running, no dispatch is lost.
package chaos
