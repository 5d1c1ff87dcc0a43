package web

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/stitchd/stitchd/engine"
)

// tryNodeBody is POST /api/v1/flows/{id}/nodes/{key}/test: what the step
// sees, and optionally the editor's unsaved graph.
type tryNodeBody struct {
	Input json.RawMessage              `json:"input"`
	Steps map[string]engine.StepSample `json:"steps"`
	Run   struct {
		Input json.RawMessage `json:"input"`
	} `json:"run"`
	Vars  map[string]any  `json:"vars"`
	Graph json.RawMessage `json:"graph"`
}

// tryNodeAnswer is its answer: engine.TryNodeResult and how long it took.
type tryNodeAnswer struct {
	*engine.TryNodeResult
	DurationMs int64 `json:"duration_ms"`
}

// tryNode runs one step of a flow alone (engine.TryNode): a Transform's
// value, a Condition's edges, an HTTP step's request sent for real, a
// template's text — and nothing written as a run. A step that waits is
// 400 not_testable.
func (s *Server) tryNode(c echo.Context) error {
	flowID, err := s.pathUUID(c, "id", "flow")
	if err != nil {
		return err
	}
	key := c.Param("key")
	var b tryNodeBody
	if err := bind(c, &b); err != nil {
		return err
	}
	ctx := c.Request().Context()
	setAuditTarget(c, "flow:"+flowID)
	flow, err := s.cfg.Store.GetFlow(ctx, flowID)
	if err != nil {
		return err
	}
	var g *engine.ExecutionGraph
	if len(b.Graph) > 0 && string(b.Graph) != "null" {
		// The editor's graph as it stands, checked as a save would check it.
		nv, err := s.compileGraph(ctx, workspaceOf(c), b.Graph, "", flow.BoardID, flowID)
		if err != nil {
			return err
		}
		g = &engine.ExecutionGraph{}
		if err := json.Unmarshal(nv.Execution, g); err != nil {
			return fmt.Errorf("error reading the compiled graph: %w", err)
		}
		g.SetCaps(engine.CapsOf(s.cfg.NodeTypes))
	} else if g, err = s.cfg.Engine.Graph(ctx, flow.VersionID); err != nil {
		return err
	}
	for _, raw := range []json.RawMessage{b.Input, b.Run.Input} {
		if len(raw) > 0 && !json.Valid(raw) {
			return badRequest("input is not JSON")
		}
	}
	began := time.Now()
	res, err := s.cfg.Engine.TryNode(ctx, engine.TryNodeParams{Graph: g, NodeID: key, Input: b.Input, RunInput: b.Run.Input,
		Steps: b.Steps, Vars: b.Vars, Send: s.sendIn(workspaceOf(c))})
	switch {
	case errors.Is(err, engine.ErrNotTestable):
		return errorf(http.StatusBadRequest, "not_testable", err.Error())
	case errors.Is(err, engine.ErrNotFound):
		return errorf(http.StatusNotFound, "not_found", fmt.Sprintf("flow %s has no step %q", flowID, key))
	case err != nil:
		return err
	}
	return c.JSON(http.StatusOK, tryNodeAnswer{TryNodeResult: res, DurationMs: time.Since(began).Milliseconds()})
}

// sendIn sends a tried step's request with workspace ws's secrets and
// credentials (nil: the server sends none).
func (s *Server) sendIn(ws string) func(ctx context.Context, url string, rq *engine.HTTPRequest, payload []byte) engine.Response {
	if s.cfg.TryRequest == nil {
		return nil
	}
	return func(ctx context.Context, url string, rq *engine.HTTPRequest, payload []byte) engine.Response {
		return s.cfg.TryRequest(ctx, ws, url, rq, payload)
	}
}
