// Package migrations embeds stitchd's numbered goose SQL migrations. They are
// applied by `stitchd migrate` and at `stitchd serve` start-up (see store.Migrate),
// under goose's Postgres session lock so that several processes starting at
// once are safe.
package migrations
