package web

import (
	"slices"

	"github.com/labstack/echo/v4"

	"github.com/stitchd/stitchd/store"
)

// rule says who may call a route. Roles (README, People and access):
// admin everything; editor flows, triggers and boards; operator runs
// (start, cancel, retry, rerun, pause, repair); approver the approvals
// they may decide and the runs they are part of; viewer reads.
type rule struct {
	roles []string
	// participant also lets an approver read a run they are part of (one
	// assigned to them or their groups, or decided by them).
	participant bool
	// public routes need no credential at all.
	public bool
	// server routes are a server admin's only (the admin token, or a user
	// whose own role is admin), not a workspace's admin's.
	server bool
	// unscoped routes act in no workspace: a caller who is no member of
	// the request's still reaches them (their own account and tokens, the
	// workspaces they belong to).
	unscoped bool
}

func (r rule) allows(role string) bool { return slices.Contains(r.roles, role) }

func roles(rs ...string) rule { return rule{roles: rs} }

var (
	public   = rule{public: true}
	everyone = roles(store.Roles...)
	readers  = roles(store.RoleAdmin, store.RoleEditor, store.RoleOperator, store.RoleViewer)
	// runReaders are readers, and approvers for the runs they are part of.
	runReaders = rule{roles: readers.roles, participant: true}
	editors    = roles(store.RoleAdmin, store.RoleEditor)
	operators  = roles(store.RoleAdmin, store.RoleOperator)
	// boardHands move and add entities: the board's editors and the
	// operators who repair runs.
	boardHands = roles(store.RoleAdmin, store.RoleEditor, store.RoleOperator)
	// deciders claim, decide and delegate a run's waiting task: admins,
	// and approvers of the runs they are part of (a run they are not is
	// 404 to them, as to GET; the engine checks the task's assignees).
	deciders = rule{roles: []string{store.RoleAdmin, store.RoleApprover}, participant: true}
	// taskHands unclaim and reassign waiting tasks: operators and admins
	// any, an approver the one they claimed (the engine checks).
	taskHands = rule{roles: []string{store.RoleAdmin, store.RoleOperator, store.RoleApprover}, participant: true}
	admins    = roles(store.RoleAdmin)
	// mine are the caller's own account, tokens and workspaces.
	mine = rule{roles: store.Roles, unscoped: true}
	// serverAdmins run the server: users, workspaces, its webhook secret.
	serverAdmins = rule{roles: []string{store.RoleAdmin}, server: true}
	// pollers take tasks from queues: a worker token (store.RoleWorker,
	// which may do nothing else), operators and admins.
	pollers = roles(store.RoleAdmin, store.RoleOperator, store.RoleWorker)
)

// accessRules is every route's rule, by "METHOD path" as registered. A
// route missing here is refused to all but admins, and fails
// TestRoleRouteTable.
var accessRules = map[string]rule{
	"GET /healthz":             public,
	"GET /readyz":              public,
	"POST /callbacks/:token":   public,
	"POST /hooks/:slug":        public,
	"GET /*":                   public,
	"POST /api/v1/auth/login":  public,
	"GET /openapi.yaml":        public,
	"GET /api/v1/openapi.yaml": public,

	"GET /api/v1/auth/providers":     public,
	"GET /api/v1/auth/oidc/login":    public,
	"GET /api/v1/auth/oidc/callback": public,

	"POST /api/v1/auth/logout":                       mine,
	"GET /api/v1/me":                                 mine,
	"POST /api/v1/tokens":                            mine,
	"GET /api/v1/tokens":                             mine,
	"DELETE /api/v1/tokens/:id":                      mine,
	"GET /api/v1/node-types":                         mine,
	"GET /api/v1/workspaces":                         mine,
	"POST /api/v1/workspaces":                        serverAdmins,
	"GET /api/v1/workspaces/:slug":                   everyone,
	"PATCH /api/v1/workspaces/:slug":                 serverAdmins,
	"GET /api/v1/workspaces/:slug/members":           admins,
	"PUT /api/v1/workspaces/:slug/members/:email":    admins,
	"DELETE /api/v1/workspaces/:slug/members/:email": admins,
	"GET /api/v1/approvals":                          everyone,
	"GET /api/v1/approvals/stream":                   everyone,
	"POST /api/v1/users":                             serverAdmins,
	"GET /api/v1/users":                              serverAdmins,
	"GET /api/v1/users/:id":                          serverAdmins,
	"PATCH /api/v1/users/:id":                        serverAdmins,
	"DELETE /api/v1/users/:id":                       serverAdmins,
	"GET /api/v1/audit":                              admins,

	"POST /api/v1/flows":                           editors,
	"GET /api/v1/flows":                            readers,
	"GET /api/v1/flows/:id":                        readers,
	"GET /api/v1/flows/:id/analytics":              readers,
	"PUT /api/v1/flows/:id":                        editors,
	"DELETE /api/v1/flows/:id":                     editors,
	"GET /api/v1/flows/:id/versions":               readers,
	"GET /api/v1/flows/:id/versions/:number":       readers,
	"GET /api/v1/flows/:id/webhook-secret":         editors,
	"POST /api/v1/flows/:id/webhook-secret/rotate": editors,
	"DELETE /api/v1/flows/:id/webhook-secret":      editors,
	"POST /api/v1/flows/:id/triggers":              editors,
	"GET /api/v1/flows/:id/triggers":               readers,
	"GET /api/v1/triggers/:id":                     readers,
	"PATCH /api/v1/triggers/:id":                   editors,
	"DELETE /api/v1/triggers/:id":                  editors,
	"POST /api/v1/triggers/:id/rotate-secret":      editors,
	"GET /api/v1/webhook-secret":                   serverAdmins,
	"POST /api/v1/secrets":                         editors,
	"GET /api/v1/secrets":                          editors,
	"PUT /api/v1/secrets/:name":                    editors,
	"DELETE /api/v1/secrets/:name":                 editors,
	"POST /api/v1/webhook-secret/rotate":           serverAdmins,

	"POST /api/v1/flows/:id/runs":               operators,
	"POST /api/v1/flows/:id/nodes/:key/test":    editors,
	"POST /api/v1/nodes/:key/test":              editors,
	"POST /api/v1/tasks/poll":                   pollers,
	"GET /api/v1/queues":                        readers,
	"POST /api/v1/credentials":                  editors,
	"GET /api/v1/credentials":                   editors,
	"GET /api/v1/credentials/:name":             editors,
	"PUT /api/v1/credentials/:name":             editors,
	"DELETE /api/v1/credentials/:name":          editors,
	"GET /api/v1/runs":                          readers,
	"GET /api/v1/runs/:id":                      runReaders,
	"GET /api/v1/runs/:id/events":               runReaders,
	"GET /api/v1/events":                        readers,
	"POST /api/v1/events":                       operators,
	"POST /api/v1/runs/:id/cancel":              operators,
	"POST /api/v1/runs/bulk":                    operators,
	"POST /api/v1/runs/:id/pause":               operators,
	"POST /api/v1/runs/:id/resume":              operators,
	"POST /api/v1/runs/:id/migrate":             operators,
	"POST /api/v1/runs/:id/nodes/:key/skip":     operators,
	"POST /api/v1/runs/:id/nodes/:key/rerun":    operators,
	"POST /api/v1/runs/:id/nodes/:key/retry":    operators,
	"POST /api/v1/runs/:id/nodes/:key/complete": deciders,
	"POST /api/v1/runs/:id/nodes/:key/claim":    deciders,
	"POST /api/v1/runs/:id/nodes/:key/unclaim":  taskHands,
	"POST /api/v1/runs/:id/nodes/:key/reassign": taskHands,
	"POST /api/v1/runs/:id/nodes/:key/delegate": deciders,
	"GET /api/v1/runs/:id/nodes/:key/task":      runReaders,

	"POST /api/v1/boards":              editors,
	"GET /api/v1/boards":               readers,
	"GET /api/v1/boards/:id":           readers,
	"GET /api/v1/boards/:id/analytics": readers,
	"POST /api/v1/entities":            boardHands,
	"GET /api/v1/entities/:id":         readers,
	"POST /api/v1/entities/:id/move":   boardHands,

	"PATCH /api/v1/boards/:id":                    editors,
	"DELETE /api/v1/boards/:id":                   editors,
	"POST /api/v1/boards/:id/sections":            editors,
	"PATCH /api/v1/boards/:id/sections/:section":  editors,
	"DELETE /api/v1/boards/:id/sections/:section": editors,
	"PATCH /api/v1/entities/:id":                  boardHands,
	"DELETE /api/v1/entities/:id":                 boardHands,
}

// ruleOf is the rule of the request's route. A route missing from
// accessRules is closed to all but admins (and TestRoleRouteTable fails).
func ruleOf(c echo.Context) rule {
	if r, ok := accessRules[c.Request().Method+" "+c.Path()]; ok {
		return r
	}
	return admins
}
