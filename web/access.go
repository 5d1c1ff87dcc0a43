package web

import (
	"slices"

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
	deciders   = roles(store.RoleAdmin, store.RoleApprover)
	// taskHands unclaim and reassign waiting tasks: operators and admins
	// any, an approver the one they claimed (the engine checks).
	taskHands = roles(store.RoleAdmin, store.RoleOperator, store.RoleApprover)
	admins    = roles(store.RoleAdmin)
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

	"POST /api/v1/auth/logout":     everyone,
	"GET /api/v1/me":               everyone,
	"POST /api/v1/tokens":          everyone,
	"GET /api/v1/tokens":           everyone,
	"DELETE /api/v1/tokens/:id":    everyone,
	"GET /api/v1/node-types":       everyone,
	"GET /api/v1/approvals":        everyone,
	"GET /api/v1/approvals/stream": everyone,
	"POST /api/v1/users":           admins,
	"GET /api/v1/users":            admins,
	"GET /api/v1/users/:id":        admins,
	"PATCH /api/v1/users/:id":      admins,
	"DELETE /api/v1/users/:id":     admins,
	"GET /api/v1/audit":            admins,

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
	"GET /api/v1/webhook-secret":                   admins,
	"POST /api/v1/secrets":                         editors,
	"GET /api/v1/secrets":                          editors,
	"PUT /api/v1/secrets/:name":                    editors,
	"DELETE /api/v1/secrets/:name":                 editors,
	"POST /api/v1/webhook-secret/rotate":           admins,

	"POST /api/v1/flows/:id/runs":               operators,
	"POST /api/v1/flows/:id/nodes/:key/test":    editors,
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
