package testkit

import (
	"context"
	"fmt"
	"log/slog"
	"testing"

	"github.com/google/uuid"

	"github.com/stitchd/stitchd/engine"
	"github.com/stitchd/stitchd/handlers"
)

// Engine builds an engine on cfg.Store, filling what cfg leaves unset
// (the built-in node types, uuid ids, a plain callback minter, a silent
// logger), starts it and stops it when the test ends: for tests that
// drive an engine without the rest of stitchd.
func Engine(tb testing.TB, cfg engine.Config) *engine.Engine {
	tb.Helper()
	if cfg.Types == nil {
		cfg.Types = handlers.Types(handlers.Options{})
	}
	if cfg.NewID == nil {
		cfg.NewID = uuid.NewString
	}
	if cfg.Minter == nil {
		cfg.Minter = Minter{}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	eng, err := engine.New(cfg)
	if err != nil {
		tb.Fatalf("testkit: %v", err)
	}
	if err := eng.Start(context.Background()); err != nil {
		tb.Fatalf("testkit: %v", err)
	}
	tb.Cleanup(eng.Stop)
	return eng
}

// Minter mints plain, unsigned callback URLs (the engine only stores
// them): http://stitchd.invalid/cb/{run}/{key}/{attempt}.
type Minter struct{}

// CallbackURL implements engine.CallbackMinter.
func (Minter) CallbackURL(runID, key string, attempt int) (string, error) {
	return fmt.Sprintf("http://stitchd.invalid/cb/%s/%s/%d", runID, key, attempt), nil
}
