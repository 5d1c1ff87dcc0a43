// Command stitchd is the stitchd server and command line (package
// internal/cli) with the built-in node types.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/stitchd/stitchd/internal/cli"
)

// version is set at build time with -ldflags "-X main.version=…".
var version = "dev"

func main() { os.Exit(run()) }

func run() int {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	if err := cli.Main(ctx, os.Args[1:], cli.Params{Version: version}); err != nil {
		fmt.Fprintln(os.Stderr, "stitchd:", err)
		return 1
	}
	return 0
}
