package callbacks

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/stitchd/stitchd/engine"
	"github.com/stitchd/stitchd/internal/jsbox"
)

// runScript runs a Code step's script (a DispatchCode row) in the sandbox,
// outside any transaction, and fills r with its value or why it failed.
// A script is pure: a row claimed again after a lost process runs it
// again, so there is no "sent" to record. Its lease is kept while it runs.
func (d *Dispatcher) runScript(ctx context.Context, c engine.ClaimedDispatch, r *engine.Response) {
	timeout := time.Duration(c.Request.TimeoutMs) * time.Millisecond
	if timeout <= 0 {
		timeout = jsbox.DefaultTimeout
	}
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if timeout > d.cfg.Lease/4 {
		stop := d.keepLease(sctx, c, cancel)
		defer stop()
	}
	d.script(sctx, c.Payload, timeout, r)
}

// scriptRow is a DispatchCode row's body.
type scriptRow struct {
	Source string          `json:"source"`
	Env    json.RawMessage `json:"env"`
}

// script runs the script of payload (scriptRow) within timeout and the
// dispatcher's memory bound, waiting for a slot (CodeConcurrency).
func (d *Dispatcher) script(ctx context.Context, payload []byte, timeout time.Duration, r *engine.Response) {
	var row scriptRow
	if err := json.Unmarshal(payload, &row); err != nil {
		r.Error, r.NoRetry = fmt.Sprintf("the script's row cannot be read: %v", err), true
		return
	}
	select {
	case d.scripts <- struct{}{}:
		defer func() { <-d.scripts }()
	case <-ctx.Done():
		r.Error = "stopped before the script ran"
		return
	}
	res, err := jsbox.Run(ctx, row.Source, row.Env, jsbox.Limits{MemoryBytes: d.cfg.CodeMemory, Timeout: timeout})
	if res != nil {
		r.Logs = res.Logs
	}
	switch {
	case err == nil:
		r.Status, r.Body = 200, res.Output
	case errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded):
		r.Error = "stopped before the script ended: " + err.Error()
	default:
		r.Error, r.NoRetry = err.Error(), true
	}
}
