package handlers

import (
	"context"

	"github.com/stitchd/stitchd/engine"
)

// Condition does no work: it completes with its input at once, a readable
// place to branch with conditional, default and failure edges.
type Condition struct{}

// Fire completes the node with its input.
func (Condition) Fire(_ context.Context, fc engine.FireContext) error { return fc.Complete(fc.Input()) }
