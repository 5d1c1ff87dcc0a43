// Package client is a small Go client of stitchd's HTTP API (the public
// contract in openapi.yaml): what the `stitchd` CLI verbs for scripts and
// the demo worker use to talk to a running server.
package client
