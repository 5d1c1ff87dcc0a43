package web

import (
	"encoding/json"
	"net/http"
	"strconv"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/stitchd/stitchd/engine"
	"github.com/stitchd/stitchd/store"
)

// Answering the caller (docs/triggers.md, Answering the caller): a webhook
// trigger with respond {"mode": "wait", "timeout_seconds": N} holds its
// hook request until the run answers it — a Respond node's status and
// body, the run's output once it completes (200 {"run_id", "status":
// "completed", "output"}), its error once it fails (200 {"run_id",
// "status": "failed", "error"}) — or N seconds passed (202 {"run_id",
// "status": "running"}). The run may go on in another process: each
// commit's NOTIFY of the run (store.Listen, Hub) wakes the request, which
// reads the run's row; a read every second covers a lost notification.

// Bounds of a trigger's respond.timeout_seconds.
const (
	minRespondTimeout     = 1
	maxRespondTimeout     = 60
	defaultRespondTimeout = 30
)

// respondBody is a trigger's respond setting as written to the API.
type respondBody struct {
	Mode           string `json:"mode"`
	TimeoutSeconds *int   `json:"timeout_seconds"`
}

// triggerRespond checks a respond setting: nil for none.
func triggerRespond(raw json.RawMessage) (*store.TriggerRespond, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var b respondBody
	if err := json.Unmarshal(raw, &b); err != nil {
		return nil, badRequest(`respond must be {"mode": "wait", "timeout_seconds": 1 to 60}`)
	}
	switch b.Mode {
	case "wait":
	case "none", "":
		return nil, nil
	default:
		return nil, badRequest(`respond.mode must be "wait" (the hook answers with the run's outcome) or "none"`)
	}
	r := &store.TriggerRespond{Mode: "wait", TimeoutSeconds: defaultRespondTimeout}
	if b.TimeoutSeconds != nil {
		if *b.TimeoutSeconds < minRespondTimeout || *b.TimeoutSeconds > maxRespondTimeout {
			return nil, badRequest("respond.timeout_seconds must be from " + strconv.Itoa(minRespondTimeout) + " to " +
				strconv.Itoa(maxRespondTimeout))
		}
		r.TimeoutSeconds = *b.TimeoutSeconds
	}
	return r, nil
}

// awaitRun answers a hook request for run runID once the run answers it
// or the trigger's timeout passes.
func (s *Server) awaitRun(c echo.Context, runID string, r *store.TriggerRespond) error {
	ctx := c.Request().Context()
	wait := time.Duration(r.TimeoutSeconds) * time.Second
	// The request was read: its read deadline (ReadTimeout) must not end
	// the wait (net/http cancels the request's context when it passes).
	_ = http.NewResponseController(c.Response().Writer).SetReadDeadline(time.Now().Add(wait + 10*time.Second))
	sub := s.cfg.Hub.subscribe(runID) // before the first read: no commit in between is missed
	defer s.cfg.Hub.unsubscribe(sub)
	deadline := time.NewTimer(wait)
	defer deadline.Stop()
	recheck := s.cfg.HookRecheck
	if recheck <= 0 {
		recheck = time.Second
	}
	poll := time.NewTicker(recheck)
	defer poll.Stop()
	var status engine.RunStatus
	for {
		a, err := s.cfg.Store.RunAnswer(ctx, runID)
		if err != nil {
			return err
		}
		status = a.Status
		if done, err := answerCaller(c, runID, a); done {
			return err
		}
		select {
		case <-sub.wake:
		case <-poll.C:
		case <-deadline.C:
			return c.JSON(http.StatusAccepted, map[string]any{"run_id": runID, "status": status})
		case <-s.cfg.Hub.done:
			return c.JSON(http.StatusAccepted, map[string]any{"run_id": runID, "status": status})
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// answerCaller answers a waiting hook request from what the run says, and
// reports whether it did: a Respond node's answer first, then the run's
// end.
func answerCaller(c echo.Context, runID string, a *store.RunAnswer) (bool, error) {
	if r := a.Response; r != nil {
		h := c.Response().Header()
		h.Set("Stitchd-Run-Id", runID)
		if r.ContentType != "" {
			h.Set(echo.HeaderContentType, r.ContentType)
		}
		if r.Body == "" {
			return true, c.NoContent(r.Status)
		}
		c.Response().WriteHeader(r.Status)
		_, err := c.Response().Write([]byte(r.Body))
		return true, err
	}
	switch a.Status {
	case engine.RunCompleted:
		return true, c.JSON(http.StatusOK, map[string]any{"run_id": runID, "status": a.Status, "output": nullJSON(a.Output)})
	case engine.RunFailed, engine.RunCancelled:
		msg := ""
		if a.Error != nil {
			msg = *a.Error
		}
		return true, c.JSON(http.StatusOK, map[string]any{"run_id": runID, "status": a.Status, "error": msg})
	case engine.RunRunning, engine.RunPaused, engine.RunQueued:
	}
	return false, nil
}
