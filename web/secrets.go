package web

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/labstack/echo/v4"

	"github.com/stitchd/stitchd/compiler"
	"github.com/stitchd/stitchd/engine"
	"github.com/stitchd/stitchd/internal/secretbox"
	"github.com/stitchd/stitchd/store"
)

// MaxSecretValue bounds a secret's value (bytes of UTF-8).
const MaxSecretValue = 8 << 10

// secretBody is POST /api/v1/secrets: {name, value}.
type secretBody struct {
	Name  *string `json:"name"`
	Value *string `json:"value"`
}

// secretsOff is the answer to a write when the server has no key.
func secretsOff() *apiError {
	return errorf(http.StatusServiceUnavailable, "unavailable",
		"secrets are off on this server: start it with "+secretbox.EnvKey+" set to 32 random bytes (64 hex digits or base64, `openssl rand -base64 32`)")
}

// putSecret creates or replaces a secret: 201 for a new name, 200 for a
// replaced one; the answer names it, never its value.
func (s *Server) putSecret(c echo.Context) error {
	var b secretBody
	if err := bind(c, &b); err != nil {
		return err
	}
	var problems []engine.Problem
	switch {
	case b.Name == nil:
		problems = append(problems, engine.Problem{Code: "required", Path: "name", Message: "name is required"})
	case !engine.ValidSecretName(*b.Name):
		problems = append(problems, engine.Problem{Code: "invalid", Path: "name", Message: engine.SecretNameRule})
	}
	switch {
	case b.Value == nil:
		problems = append(problems, engine.Problem{Code: "required", Path: "value", Message: "value is required (a string)"})
	case *b.Value == "" || len(*b.Value) > MaxSecretValue || !utf8.ValidString(*b.Value) || strings.ContainsRune(*b.Value, 0):
		problems = append(problems, engine.Problem{Code: "invalid", Path: "value",
			Message: "value must be 1 to " + strconv.Itoa(MaxSecretValue) + " bytes of text (UTF-8, no NUL)"})
	}
	if len(problems) > 0 {
		ae := badRequest("the secret is not valid: " + plural(len(problems), "problem"))
		ae.Details = problems
		return ae
	}
	if s.cfg.Secrets == nil {
		return secretsOff()
	}
	info, created, err := s.cfg.Store.PutSecret(c.Request().Context(), store.PutSecretParams{Name: *b.Name, Value: []byte(*b.Value),
		Box: s.cfg.Secrets, Actor: principalOf(c).Email(), Now: s.cfg.Clock.Now()})
	if store.IsSecretsOff(err) {
		return secretsOff()
	} else if err != nil {
		return err
	}
	setAuditTarget(c, "secret:"+info.Name)
	status := http.StatusOK
	if created {
		status = http.StatusCreated
	}
	return c.JSON(status, info)
}

// listSecrets lists secrets by name: names and times, never values. It
// works without a key (names are not sealed).
func (s *Server) listSecrets(c echo.Context) error {
	p, err := pageParams(c)
	if err != nil {
		return err
	}
	out, next, err := s.cfg.Store.SecretsPage(c.Request().Context(), p)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, map[string]any{"secrets": out, "next_cursor": nextCursor(next)})
}

// deleteSecret deletes a secret (without a key too: a name can be
// cleaned up whatever the key). Runs that use it fail their node when it
// next sends its request.
func (s *Server) deleteSecret(c echo.Context) error {
	name := c.Param("name")
	if !engine.ValidSecretName(name) {
		return errorf(http.StatusNotFound, "not_found", "secret not found")
	}
	if err := s.cfg.Store.DeleteSecret(c.Request().Context(), name); err != nil {
		return err
	}
	setAuditTarget(c, "secret:"+name)
	return c.NoContent(http.StatusNoContent)
}

// secretWarnings are the warnings of a graph's secrets when it is saved:
// names no secret has (the node fails when it runs, unless the secret is
// set by then), or every use when the server has no key. The flow is
// saved either way: secrets may be set after the flows that use them.
func (s *Server) secretWarnings(ctx context.Context, refs []engine.SecretRef) ([]engine.Problem, error) {
	if len(refs) == 0 {
		return nil, nil
	}
	var out []engine.Problem
	if s.cfg.Secrets == nil {
		for _, r := range refs {
			out = append(out, engine.Problem{Code: compiler.CodeSecretsOff, NodeID: r.NodeID, Path: r.Path,
				Message: fmt.Sprintf("node %q uses secret %q, and secrets are off on this server (%s is not set): the node fails when it runs",
					r.NodeID, r.Name, secretbox.EnvKey)})
		}
		return out, nil
	}
	names := make([]string, 0, len(refs))
	for _, r := range refs {
		names = append(names, r.Name)
	}
	missing, err := s.cfg.Store.MissingSecrets(ctx, names)
	if err != nil {
		return nil, err
	}
	for _, r := range refs {
		for _, m := range missing {
			if r.Name == m {
				out = append(out, engine.Problem{Code: compiler.CodeUnknownSecret, NodeID: r.NodeID, Path: r.Path,
					Message: fmt.Sprintf("node %q uses secret %q, which was not set when the flow was saved (POST /api/v1/secrets): until it is, the node fails when it runs",
						r.NodeID, r.Name)})
			}
		}
	}
	return out, nil
}
