package web

import (
	"fmt"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/stitchd/stitchd/engine"
	"github.com/stitchd/stitchd/store"
)

// bulkBatch is how many runs a bulk action reads at a time.
const bulkBatch = 500

// maxBulkErrors bounds the per-run errors a bulk answer lists.
const maxBulkErrors = 100

// bulkRuns applies an action to every run a filter picks, in batches:
// {"action": "retry"|"cancel"|"pause"|"resume", "filter": {flow_id,
// status, node, error_contains, started_after, started_before},
// "dry_run": bool} → 200 {matched, applied, skipped, errors}. A run the
// action does not fit (cancel of a completed run, resume of a running one)
// is skipped: the action is idempotent, and applying it again changes
// nothing more.
func (s *Server) bulkRuns(c echo.Context) error {
	var b struct {
		Action string     `json:"action"`
		Filter bulkFilter `json:"filter"`
		DryRun bool       `json:"dry_run"`
		// All must be set to act on every run (an empty filter).
		All bool `json:"all"`
	}
	if err := bind(c, &b); err != nil {
		return err
	}
	ctx := c.Request().Context()
	var apply func(runID string) error
	switch b.Action {
	case "retry":
		apply = func(runID string) error {
			keys, err := s.cfg.Store.FailedKeys(ctx, runID)
			if err != nil {
				return err
			}
			retried := 0
			for _, k := range keys {
				err := s.cfg.Engine.RetryNode(ctx, runID, k)
				if err == nil {
					retried++
				} else if !conflict(err) { // a Collector waiting for its items: they fire it
					return err
				}
			}
			if retried == 0 {
				return fmt.Errorf("%w: nothing to retry", engine.ErrConflict)
			}
			return nil
		}
	case "cancel":
		apply = func(runID string) error { _, err := s.cfg.Engine.CancelRun(ctx, runID); return err }
	case "pause":
		apply = func(runID string) error { _, err := s.cfg.Engine.PauseRun(ctx, runID); return err }
	case "resume":
		apply = func(runID string) error { _, err := s.cfg.Engine.ResumeRun(ctx, runID); return err }
	default:
		return badRequest(`action must be "retry", "cancel", "pause" or "resume"`)
	}
	switch engine.RunStatus(b.Filter.Status) {
	case "", engine.RunRunning, engine.RunCompleted, engine.RunFailed, engine.RunCancelled, engine.RunPaused, engine.RunQueued:
	default:
		return badRequest("filter.status must be running, paused, queued, completed, failed or cancelled")
	}
	if b.Filter == (bulkFilter{}) && !b.All && !b.DryRun {
		return badRequest(`an empty filter picks every run: say "all": true to mean it`)
	}
	f := store.BulkFilter{Workspace: workspaceOf(c), FlowID: b.Filter.FlowID, Status: b.Filter.Status, Node: b.Filter.Node,
		ErrorContains: b.Filter.ErrorContains, StartedAfter: b.Filter.StartedAfter, StartedBefore: b.Filter.StartedBefore}
	type runError struct {
		RunID string `json:"run_id"`
		Error string `json:"error"`
	}
	matched, applied, skipped := 0, 0, 0
	errs := []runError{}
	for after := ""; ; {
		ids, err := s.cfg.Store.BulkRuns(ctx, f, after, bulkBatch)
		if err != nil {
			return err
		}
		matched += len(ids)
		if !b.DryRun {
			for _, id := range ids {
				switch err := apply(id); {
				case err == nil:
					applied++
				case conflict(err):
					skipped++
				default:
					if len(errs) < maxBulkErrors {
						errs = append(errs, runError{RunID: id, Error: err.Error()})
					}
				}
			}
		}
		if len(ids) < bulkBatch {
			break
		}
		after = ids[len(ids)-1]
	}
	return c.JSON(http.StatusOK, map[string]any{"action": b.Action, "dry_run": b.DryRun, "matched": matched,
		"applied": applied, "skipped": skipped, "errors": errs})
}

// bulkFilter picks the runs of a bulk action.
type bulkFilter struct {
	FlowID        string     `json:"flow_id"`
	Status        string     `json:"status"`
	Node          string     `json:"node"`
	ErrorContains string     `json:"error_contains"`
	StartedAfter  *time.Time `json:"started_after"`
	StartedBefore *time.Time `json:"started_before"`
}

// conflict reports whether err is an answer of 409: the action does not
// fit the run's state.
func conflict(err error) bool { return toAPIError(err).Status == http.StatusConflict }
