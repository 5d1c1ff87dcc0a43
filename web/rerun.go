package web

import (
	"encoding/json"

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
