// Package instance starts a real stitchd in-process for the tests of its
// clients — the worker libraries (worker, sdk/) — on a database of the
// test's own, with the admin token, the webhook secret and a worker token
// at hand. Tests only.
package instance
