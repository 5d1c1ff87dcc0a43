// Package app wires stitchd's concrete parts together — store, engine,
// handlers, dispatcher, listener, web server — for `stitchd serve` and for
// the end-to-end tests. It holds no logic of its own beyond start-up and
// shutdown order.
package app
