package web

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strings"

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

// openAPI serves the public contract, without a credential: a client
// generator is pointed at it before it has one.
func (s *Server) openAPI(c echo.Context) error {
	return c.Blob(http.StatusOK, "application/yaml", s.spec)
}

// specServers is the servers list of openapi.yaml as written: the local
// default, replaced by the server's base URL where it has one.
const specServers = "servers:\n  - url: http://127.0.0.1:8080\n"

// specFor is openapi.yaml with servers naming baseURL (unchanged when
// baseURL is empty), so a client generated from the served document calls
// the server that served it.
func specFor(baseURL string) []byte {
	baseURL = strings.TrimRight(baseURL, "/")
	if baseURL == "" {
		return stitchd.OpenAPI
	}
	// A JSON string is a YAML double-quoted scalar: any URL stays one value
	// (a string's encoding cannot fail).
	q, _ := json.Marshal(baseURL)
	return bytes.Replace(stitchd.OpenAPI, []byte(specServers), []byte("servers:\n  - url: "+string(q)+"\n"), 1)
}
