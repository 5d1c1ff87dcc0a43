package web

import (
	"encoding/json"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/stitchd/stitchd/engine"
	"github.com/stitchd/stitchd/internal/credential"
	"github.com/stitchd/stitchd/store"
)

// credentialBody is POST /api/v1/credentials {name, type, data,
// allowed_hosts} and PUT /api/v1/credentials/{name} {type, data,
// allowed_hosts}: the whole credential, replaced.
type credentialBody struct {
	Name         *string         `json:"name"`
	Type         string          `json:"type"`
	Data         json.RawMessage `json:"data"`
	AllowedHosts *[]string       `json:"allowed_hosts"`
}

// check reads a body into store params: every problem with its path.
func (b *credentialBody) check(name string) (store.PutCredentialParams, []engine.Problem) {
	var problems []engine.Problem
	if !engine.ValidSecretName(name) {
		problems = append(problems, engine.Problem{Code: "invalid", Path: "name", Message: engine.SecretNameRule})
	}
	var data credential.Data
	if err := credential.CheckType(b.Type); err != nil {
		problems = append(problems, engine.Problem{Code: "invalid", Path: "type", Message: err.Error()})
	} else if len(b.Data) == 0 {
		problems = append(problems, engine.Problem{Code: "required", Path: "data", Message: "data is required (the type's fields)"})
	} else {
		var err error
		if data, err = credential.Parse(b.Type, b.Data); err != nil {
			problems = append(problems, engine.Problem{Code: "invalid", Path: "data", Message: err.Error()})
		}
	}
	hosts := secretBody{AllowedHosts: b.AllowedHosts}
	problems = hosts.checkHosts(problems)
	if b.AllowedHosts == nil || len(*b.AllowedHosts) == 0 {
		problems = append(problems, engine.Problem{Code: "required", Path: "allowed_hosts",
			Message: "allowed_hosts is required: the hosts (host, or host:port) a request carrying it may go to"})
	}
	p := store.PutCredentialParams{Name: name, Type: b.Type, Data: data}
	if b.AllowedHosts != nil {
		p.AllowedHosts = *b.AllowedHosts
	}
	return p, problems
}

// postCredential creates or replaces a credential: 201 for a new name, 200
// for a replaced one; the answer never holds its data.
func (s *Server) postCredential(c echo.Context) error {
	var b credentialBody
	if err := bind(c, &b); err != nil {
		return err
	}
	if b.Name == nil {
		return credentialInvalid([]engine.Problem{{Code: "required", Path: "name", Message: "name is required"}})
	}
	return s.storeCredential(c, *b.Name, &b, false)
}

// putCredential replaces an existing credential (404 when there is none).
func (s *Server) putCredential(c echo.Context) error {
	name := c.Param("name")
	if !engine.ValidSecretName(name) {
		return errorf(http.StatusNotFound, "not_found", "credential not found")
	}
	var b credentialBody
	if err := bind(c, &b); err != nil {
		return err
	}
	if b.Name != nil && *b.Name != name {
		return credentialInvalid([]engine.Problem{{Code: "invalid", Path: "name", Message: "name cannot be changed (it is the path's)"}})
	}
	return s.storeCredential(c, name, &b, true)
}

func (s *Server) storeCredential(c echo.Context, name string, b *credentialBody, replace bool) error {
	p, problems := b.check(name)
	if len(problems) > 0 {
		return credentialInvalid(problems)
	}
	if s.cfg.Secrets == nil {
		return secretsOff()
	}
	p.Box, p.Replace, p.Actor, p.Now, p.Workspace = s.cfg.Secrets, replace, principalOf(c).Email(), s.cfg.Clock.Now(), workspaceOf(c)
	info, created, err := s.cfg.Store.PutCredential(c.Request().Context(), p)
	switch {
	case store.IsSecretsOff(err):
		return secretsOff()
	case err != nil:
		return err
	}
	setAuditTarget(c, "credential:"+info.Name)
	status := http.StatusOK
	if created {
		status = http.StatusCreated
	}
	return c.JSON(status, info)
}

// listCredentials lists credentials: names, types, hosts and times, never
// data.
func (s *Server) listCredentials(c echo.Context) error {
	out, err := s.cfg.Store.Credentials(c.Request().Context(), workspaceOf(c))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, map[string]any{"credentials": out})
}

func (s *Server) getCredential(c echo.Context) error {
	name := c.Param("name")
	if !engine.ValidSecretName(name) {
		return errorf(http.StatusNotFound, "not_found", "credential not found")
	}
	info, err := s.cfg.Store.CredentialInfoOf(c.Request().Context(), workspaceOf(c), name)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, info)
}

// deleteCredential deletes a credential: runs whose HTTP steps carry it
// fail those steps when they next send their request.
func (s *Server) deleteCredential(c echo.Context) error {
	name := c.Param("name")
	if !engine.ValidSecretName(name) {
		return errorf(http.StatusNotFound, "not_found", "credential not found")
	}
	if err := s.cfg.Store.DeleteCredential(c.Request().Context(), workspaceOf(c), name); err != nil {
		return err
	}
	setAuditTarget(c, "credential:"+name)
	return c.NoContent(http.StatusNoContent)
}

func credentialInvalid(problems []engine.Problem) *apiError {
	ae := badRequest("the credential is not valid: " + plural(len(problems), "problem"))
	ae.Details = problems
	return ae
}
