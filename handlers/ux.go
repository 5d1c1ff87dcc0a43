package handlers

import (
	"context"

	"github.com/stitchd/stitchd/engine"
)

// UX waits for a person: the node stays waiting_for_user until someone
// completes it through the API or the web UI.
type UX struct{}

// Fire parks the node.
func (UX) Fire(_ context.Context, fc engine.FireContext) error { return fc.WaitForUser() }
