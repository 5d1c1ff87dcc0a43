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

// tryNodeBody is POST /api/v1/flows/{id}/nodes/{key}/test (and
// /api/v1/nodes/{key}/test): what the step sees, and the editor's unsaved
// graph (optional for a saved flow).
type tryNodeBody struct {
	Input json.RawMessage              `json:"input"`
	Steps map[string]engine.StepSample `json:"steps"`
	Run   struct {
		Input json.RawMessage `json:"input"`
	} `json:"run"`
	Vars  map[string]any  `json:"vars"`
	Graph json.RawMessage `json:"graph"`
	// BoardID is a draft's board (POST /api/v1/nodes/{key}/test): the
	// sections its steps may move an entity to.
	BoardID string `json:"board_id"`
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
	var b tryNodeBody
	if err := bind(c, &b); err != nil {
		return err
	}
	setAuditTarget(c, "flow:"+flowID)
	flow, err := s.cfg.Store.GetFlow(c.Request().Context(), flowID)
	if err != nil {
		return err
	}
	return s.try(c, tryStep{flowID: flowID, boardID: flow.BoardID, versionID: flow.VersionID, body: b})
}

// tryDraftNode is tryNode for a flow not saved yet (POST
// /api/v1/nodes/{key}/test): the editor's graph is the flow.
func (s *Server) tryDraftNode(c echo.Context) error {
	var b tryNodeBody
	if err := bind(c, &b); err != nil {
		return err
	}
	if len(b.Graph) == 0 || string(b.Graph) == "null" {
		return badRequest("graph is required: a flow not saved yet is the graph given")
	}
	var boardID *string
	if b.BoardID != "" {
		if err := s.boardHere(c, b.BoardID); err != nil {
			return err
		}
		boardID = &b.BoardID
	}
	return s.try(c, tryStep{boardID: boardID, body: b})
}

// tryStep is a step to try: of a saved flow (flowID, its board and
// current version), or of a draft's graph alone.
type tryStep struct {
	flowID, versionID string
	boardID           *string
	body              tryNodeBody
}

func (s *Server) try(c echo.Context, p tryStep) error {
	ctx := c.Request().Context()
	key, b := c.Param("key"), p.body
	var g *engine.ExecutionGraph
	var err error
	if len(b.Graph) > 0 && string(b.Graph) != "null" {
		// The editor's graph as it stands, checked as a save would check it.
		nv, err := s.compileGraph(ctx, workspaceOf(c), b.Graph, "", p.boardID, p.flowID)
		if err != nil {
			return err
		}
		g = &engine.ExecutionGraph{}
		if err := json.Unmarshal(nv.Execution, g); err != nil {
			return fmt.Errorf("error reading the compiled graph: %w", err)
		}
		g.SetCaps(engine.CapsOf(s.cfg.NodeTypes))
	} else if g, err = s.cfg.Engine.Graph(ctx, p.versionID); err != nil {
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
	case errors.Is(err, engine.ErrNotFound) && p.flowID == "":
		return errorf(http.StatusNotFound, "not_found", fmt.Sprintf("the graph has no step %q", key))
	case errors.Is(err, engine.ErrNotFound):
		return errorf(http.StatusNotFound, "not_found", fmt.Sprintf("flow %s has no step %q", p.flowID, key))
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
