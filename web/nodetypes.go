package web

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/stitchd/stitchd/engine"
)

// nodeTypesAnswer is GET /api/v1/node-types: every node type a flow may
// use, in palette order (engine.NodeTypeSpec).
type nodeTypesAnswer struct {
	Types []engine.NodeTypeSpec `json:"types"`
}

func (s *Server) listNodeTypes(c echo.Context) error {
	return c.JSON(http.StatusOK, nodeTypesAnswer{Types: s.cfg.NodeTypes})
}
