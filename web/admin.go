package web

import (
	"net/http"

	"github.com/labstack/echo/v4"

	stitchd "github.com/stitchd/stitchd"
	"github.com/stitchd/stitchd/callbacks"
)

// boardSummaryJSON is a board in the list: its sections without entities.
type boardSummaryJSON struct {
	ID       string `json:"id"`
	Name     string `json:"name"`
	Sections []struct {
		ID   string `json:"id"`
		Name string `json:"name"`
	} `json:"sections"`
}

func (s *Server) listBoards(c echo.Context) error {
	p, err := pageParams(c)
	if err != nil {
		return err
	}
	bs, next, err := s.cfg.Store.ListBoardsPage(c.Request().Context(), p)
	if err != nil {
		return err
	}
	out := make([]boardSummaryJSON, len(bs))
	for i, b := range bs {
		out[i].ID, out[i].Name = b.ID, b.Name
		out[i].Sections = make([]struct {
			ID   string `json:"id"`
			Name string `json:"name"`
		}, len(b.Sections))
		for j, sec := range b.Sections {
			out[i].Sections[j].ID, out[i].Sections[j].Name = sec.ID, sec.Name
		}
	}
	return c.JSON(http.StatusOK, map[string]any{"boards": out, "next_cursor": nextCursor(next)})
}

// webhookSecret returns the secret workers verify dispatch signatures with.
func (s *Server) webhookSecret(c echo.Context) error {
	secret, err := s.cfg.Store.WebhookSecret(c.Request().Context())
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, map[string]string{"secret": callbacks.FormatWebhookSecret(secret)})
}

// openAPI serves the public contract (behind the API token, like every
// /api/v1 route).
func (s *Server) openAPI(c echo.Context) error {
	return c.Blob(http.StatusOK, "application/yaml", stitchd.OpenAPI)
}
