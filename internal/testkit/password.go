package testkit

import "github.com/stitchd/stitchd/internal/password"

// CheapPasswords is the argon2id cost tests hash and check passwords with
// (64 KiB, one pass): the production cost (19 MiB, two passes) is CPU that
// the race detector multiplies — a good part of a second per sign-in on a
// loaded machine, and once 8 s for one user write — spent on nothing a
// test looks at. Tests of the cost itself set password.Default.
func CheapPasswords() password.Params {
	return password.Params{MemoryKiB: 64, Time: 1, Threads: 1}
}
