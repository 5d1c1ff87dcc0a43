package web

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/stitchd/stitchd/engine"
)

// rerunNode re-runs a finished node and everything downstream of it:
// {"input"?: {…}} replaces the node's input.
func (s *Server) rerunNode(c echo.Context) error {
	id, err := s.pathUUID(c, "id", "run")
	if err != nil {
		return err
	}
	var b struct {
		Input json.RawMessage `json:"input"`
	}
	if c.Request().ContentLength != 0 {
		if err := bind(c, &b); err != nil {
			return err
		}
	}
	if string(b.Input) == "null" {
		b.Input = nil
	}
	err = s.cfg.Engine.RerunNode(c.Request().Context(), engine.RerunParams{RunID: id, Key: c.Param("key"),
		Input: b.Input, By: actorOf(c)})
	if err != nil {
		return err
	}
	return s.getRun(c)
}

// migrateRun moves a run to another version of its flow: {"version": n}.
func (s *Server) migrateRun(c echo.Context) error {
	id, err := s.pathUUID(c, "id", "run")
	if err != nil {
		return err
	}
	var b struct {
		Version *int `json:"version"`
	}
	if err := bind(c, &b); err != nil {
		return err
	}
	if b.Version == nil || *b.Version < 1 {
		return badRequest("version must be a version number (1, 2, …)")
	}
	ctx := c.Request().Context()
	r, _, err := s.cfg.Store.GetRun(ctx, id, false)
	if err != nil {
		return err
	}
	v, err := s.cfg.Store.GetVersion(ctx, r.FlowID, *b.Version)
	if err != nil {
		return err
	}
	err = s.cfg.Engine.MigrateRun(ctx, engine.MigrateParams{RunID: id, FlowID: r.FlowID, VersionID: v.ID,
		Version: v.Number, By: actorOf(c)})
	var me *engine.MissingNodesError
	if errors.As(err, &me) {
		return &apiError{Status: http.StatusConflict, Code: "conflict", Message: me.Error(),
			Details: map[string]any{"missing_nodes": me.Nodes}}
	}
	// A node the new version reorders had left pending when the migrate
	// reached it (it started, or the run moved on meanwhile).
	var qe *engine.QueuedTransitionError
	if errors.As(err, &qe) {
		return errorf(http.StatusConflict, "conflict", fmt.Sprintf("the run cannot be migrated to version %d: "+
			"node %s is no longer %s (it has started, or the run moved on meanwhile); nothing was changed",
			v.Number, qe.Key, qe.From))
	}
	if err != nil {
		return err
	}
	return s.getRun(c)
}
