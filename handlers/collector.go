package handlers

import (
	"context"

	"github.com/stitchd/stitchd/engine"
)

// Collector fans a Splitter's items back in: the engine fires it once every
// item has arrived, with the items' outputs ordered by index as its input,
// and that array is its output.
type Collector struct{}

// Fire completes the node with its items.
func (Collector) Fire(_ context.Context, fc engine.FireContext) error { return fc.Complete(fc.Input()) }
