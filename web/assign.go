package web

import (
	"github.com/labstack/echo/v4"

	"github.com/stitchd/stitchd/engine"
	"github.com/stitchd/stitchd/store"
)

// deciderOf is the person deciding a UX node in request c, checked by the
// engine against the node's assignees and separation of duties (an admin
// may decide any approval). The admin token is no person: its decision
// (by "admin") decides the step at once, as a break-glass repair, and is
// not one of N votes — else an admin holding it could vote twice. Nil for
// it and outside /api/v1.
func deciderOf(c echo.Context) *engine.Actor {
	p := principalOf(c)
	if p == nil || p.Bootstrap() {
		return nil
	}
	return &engine.Actor{Email: p.Email(), Groups: p.Groups(), Override: p.Role() == store.RoleAdmin}
}

// startedByOf is who starts a run in request c: a user's email, "" for
// the admin token (runs.started_by is for separation of duties between
// people).
func startedByOf(c echo.Context) string {
	p := principalOf(c)
	if p == nil || p.Bootstrap() {
		return ""
	}
	return p.Email()
}
