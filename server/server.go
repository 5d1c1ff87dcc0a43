package server

import (
	"context"

	"github.com/stitchd/stitchd/engine"
	"github.com/stitchd/stitchd/internal/cli"
)

// Config is what a program brings to stitchd.
type Config struct {
	// Version is what `version` prints and the server reports ("dev"
	// when empty).
	Version string
	// NodeTypes are node types beside the built-in ones. A name may not
	// be a built-in type's (in any case); each needs a handler, and a
	// config schema that compiles: `serve` refuses to start otherwise.
	NodeTypes []engine.NodeTypeSpec
}

// Main runs stitchd's command line with args (without the program's
// name: os.Args[1:]) until ctx is done or the command ends: `serve` runs
// the server with cfg's node types, `migrate`, `version`, the client
// verbs and the rest are stitchd's own.
func Main(ctx context.Context, args []string, cfg Config) error {
	return cli.Main(ctx, args, cli.Params{Version: cfg.Version, NodeTypes: cfg.NodeTypes})
}
