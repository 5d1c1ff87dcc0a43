// Command stitchd is the stitchd CLI: `serve` runs the server, `migrate`
// applies database migrations, `version` prints the version. Flags have
// environment overrides (flag > environment > default). Concrete types are
// wired in package internal/app.
package main
