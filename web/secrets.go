package web

import (
	"context"
	"fmt"
	"net/http"
	"slices"
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

// secretBody is POST /api/v1/secrets: {name, value, allowed_hosts}, and
// PUT /api/v1/secrets/{name}: {value, allowed_hosts}, either optional.
type secretBody struct {
	Name         *string   `json:"name"`
	Value        *string   `json:"value"`
	AllowedHosts *[]string `json:"allowed_hosts"`
}

// checkValue and checkHosts add the problems of a body's value and
// allowed_hosts; hosts are normalised in place.
func (b *secretBody) checkValue(problems []engine.Problem, required bool) []engine.Problem {
	switch {
	case b.Value == nil && required:
		problems = append(problems, engine.Problem{Code: "required", Path: "value", Message: "value is required (a string)"})
	case b.Value == nil:
	case *b.Value == "" || len(*b.Value) > MaxSecretValue || !utf8.ValidString(*b.Value) || strings.ContainsRune(*b.Value, 0):
		problems = append(problems, engine.Problem{Code: "invalid", Path: "value",
			Message: "value must be 1 to " + strconv.Itoa(MaxSecretValue) + " bytes of text (UTF-8, no NUL)"})
	}
	return problems
}

func (b *secretBody) checkHosts(problems []engine.Problem) []engine.Problem {
	if b.AllowedHosts == nil {
		return problems
	}
	hosts := *b.AllowedHosts
	if len(hosts) > engine.MaxAllowedHosts {
		return append(problems, engine.Problem{Code: "invalid", Path: "allowed_hosts",
			Message: "allowed_hosts lists at most " + strconv.Itoa(engine.MaxAllowedHosts) + " hosts"})
	}
	out := make([]string, 0, len(hosts))
	for i, h := range hosts {
		n, err := engine.NormalizeAllowedHost(h)
		if err != nil {
			problems = append(problems, engine.Problem{Code: "invalid", Path: "allowed_hosts[" + strconv.Itoa(i) + "]",
				Message: "allowed_hosts[" + strconv.Itoa(i) + "]: " + err.Error()})
			continue
		}
		if !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	*b.AllowedHosts = out
	return problems
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
	problems = b.checkValue(problems, true)
	problems = b.checkHosts(problems)
	if len(problems) > 0 {
		return secretInvalid(problems)
	}
	if s.cfg.Secrets == nil {
		return secretsOff()
	}
	info, created, err := s.cfg.Store.PutSecret(c.Request().Context(), store.PutSecretParams{Workspace: workspaceOf(c), Name: *b.Name, Value: []byte(*b.Value),
		AllowedHosts: b.AllowedHosts, Box: s.cfg.Secrets, Actor: principalOf(c).Email(), Now: s.cfg.Clock.Now()})
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

// updateSecret changes an existing secret: its value, its allowed hosts,
// or both (404 when there is none; the value needs the server's key, the
// hosts do not).
func (s *Server) updateSecret(c echo.Context) error {
	name := c.Param("name")
	if !engine.ValidSecretName(name) {
		return errorf(http.StatusNotFound, "not_found", "secret not found")
	}
	var b secretBody
	if err := bind(c, &b); err != nil {
		return err
	}
	var problems []engine.Problem
	if b.Name != nil && *b.Name != name {
		problems = append(problems, engine.Problem{Code: "invalid", Path: "name", Message: "name cannot be changed (it is the path's)"})
	}
	if b.Value == nil && b.AllowedHosts == nil {
		problems = append(problems, engine.Problem{Code: "required", Path: "value", Message: "set value, allowed_hosts or both"})
	}
	problems = b.checkValue(problems, false)
	problems = b.checkHosts(problems)
	if len(problems) > 0 {
		return secretInvalid(problems)
	}
	ctx := c.Request().Context()
	actor, now := principalOf(c).Email(), s.cfg.Clock.Now()
	var info store.SecretInfo
	var err error
	if b.Value == nil {
		info, err = s.cfg.Store.SetSecretHosts(ctx, workspaceOf(c), name, *b.AllowedHosts, actor, now)
	} else {
		if s.cfg.Secrets == nil {
			return secretsOff()
		}
		if missing, err := s.cfg.Store.MissingSecrets(ctx, workspaceOf(c), []string{name}); err != nil {
			return err
		} else if len(missing) > 0 {
			return errorf(http.StatusNotFound, "not_found", "secret not found (POST /api/v1/secrets creates one)")
		}
		info, _, err = s.cfg.Store.PutSecret(ctx, store.PutSecretParams{Workspace: workspaceOf(c), Name: name, Value: []byte(*b.Value),
			AllowedHosts: b.AllowedHosts, Box: s.cfg.Secrets, Actor: actor, Now: now})
	}
	if store.IsSecretsOff(err) {
		return secretsOff()
	} else if err != nil {
		return err
	}
	setAuditTarget(c, "secret:"+info.Name)
	return c.JSON(http.StatusOK, info)
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
	if err := s.cfg.Store.DeleteSecret(c.Request().Context(), workspaceOf(c), name); err != nil {
		return err
	}
	setAuditTarget(c, "secret:"+name)
	return c.NoContent(http.StatusNoContent)
}

// secretWarnings are the warnings of a graph's secrets when it is saved:
// names no secret has (the node fails when it runs, unless the secret is
// set by then), or every use when the server has no key. The flow is
// saved either way: secrets may be set after the flows that use them.
func (s *Server) secretWarnings(ctx context.Context, ws string, refs []engine.SecretRef) ([]engine.Problem, error) {
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
	missing, err := s.cfg.Store.MissingSecrets(ctx, ws, names)
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

// secretHostProblems refuses, at save, each use of a secret in an HTTP
// node whose url's host comes from a template, unless the secret has
// allowed_hosts (then each request is checked as it is sent).
func (s *Server) secretHostProblems(ctx context.Context, ws string, refs []engine.SecretRef) error {
	var names []string
	for _, r := range refs {
		if r.HostTemplated && !slices.Contains(names, r.Name) {
			names = append(names, r.Name)
		}
	}
	if len(names) == 0 {
		return nil
	}
	hosts, err := s.cfg.Store.SecretAllowedHosts(ctx, ws, names)
	if err != nil {
		return err
	}
	var problems []engine.Problem
	for _, r := range refs {
		if r.HostTemplated && len(hosts[r.Name]) == 0 {
			problems = append(problems, engine.Problem{Code: compiler.CodeSecretHost, NodeID: r.NodeID, Path: r.Path,
				Message: fmt.Sprintf("node %q uses secret %q, and its url takes its scheme, host or port from a template: "+
					"whoever supplies the input could send the secret anywhere. Write the host into the url, "+
					"or set the secret's allowed_hosts (PUT /api/v1/secrets/%s)", r.NodeID, r.Name, r.Name)})
		}
	}
	if len(problems) > 0 {
		return &compiler.Error{Problems: problems}
	}
	return nil
}

// secretInvalid is the 400 for a secret's problems.
func secretInvalid(problems []engine.Problem) *apiError {
	ae := badRequest("the secret is not valid: " + plural(len(problems), "problem"))
	ae.Details = problems
	return ae
}
