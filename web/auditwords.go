package web

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/stitchd/stitchd/engine"
)

// The audit trail in business language (docs/approvals.md): each entry
// carries a sentence — "fiona@example.com approved Finance approval — run
// 01a2…c3f9e1" — beside its route. A handler that knows more (the step's
// label, the outcome) sets its phrase (setAuditPhrase); other writes get
// one from auditPhrases.

const auditPhraseKey = "stitchd.audit.phrase"

// setAuditPhrase sets what the audit entry of this request says the actor
// did ("approved Finance approval — run 01a2…c3f9e1").
func setAuditPhrase(c echo.Context, phrase string) { c.Set(auditPhraseKey, phrase) }

// shortRun is a run id as people tell runs apart: its head (a UUIDv7
// begins with the time it was made, alike for runs started together) and
// its distinguishing tail.
func shortRun(id string) string {
	if len(id) < 16 {
		return id
	}
	return id[:4] + "…" + id[len(id)-6:]
}

// auditPhrases are the phrases of writes no handler words: what the actor
// did, and the kind of thing the target names.
var auditPhrases = map[string]string{ //nolint:gosec // G101: routes and phrases, no credentials
	"POST /api/v1/flows":                           "created a flow",
	"PUT /api/v1/flows/:id":                        "saved a flow",
	"DELETE /api/v1/flows/:id":                     "deleted a flow",
	"POST /api/v1/flows/:id/runs":                  "started a run",
	"POST /api/v1/flows/:id/triggers":              "added a trigger",
	"PATCH /api/v1/triggers/:id":                   "changed a trigger",
	"DELETE /api/v1/triggers/:id":                  "deleted a trigger",
	"POST /api/v1/runs/:id/cancel":                 "cancelled",
	"POST /api/v1/runs/:id/pause":                  "paused",
	"POST /api/v1/runs/:id/resume":                 "resumed",
	"POST /api/v1/runs/:id/migrate":                "migrated",
	"POST /api/v1/runs/:id/nodes/:key/skip":        "completed by hand",
	"POST /api/v1/runs/:id/nodes/:key/rerun":       "reran",
	"POST /api/v1/runs/:id/nodes/:key/retry":       "retried",
	"POST /api/v1/runs/bulk":                       "acted on runs in bulk",
	"POST /api/v1/boards":                          "created a board",
	"PATCH /api/v1/boards/:id":                     "changed a board",
	"DELETE /api/v1/boards/:id":                    "deleted a board",
	"POST /api/v1/entities":                        "added an entity",
	"PATCH /api/v1/entities/:id":                   "changed an entity",
	"DELETE /api/v1/entities/:id":                  "deleted an entity",
	"POST /api/v1/entities/:id/move":               "moved an entity",
	"POST /api/v1/users":                           "created a user",
	"PATCH /api/v1/users/:id":                      "changed a user",
	"DELETE /api/v1/users/:id":                     "deleted a user",
	"POST /api/v1/tokens":                          "created an API token",
	"DELETE /api/v1/tokens/:id":                    "revoked an API token",
	"POST /api/v1/secrets":                         "added a secret",
	"PUT /api/v1/secrets/:name":                    "changed a secret",
	"DELETE /api/v1/secrets/:name":                 "deleted a secret",
	"POST /api/v1/credentials":                     "added a credential",
	"PUT /api/v1/credentials/:name":                "changed a credential",
	"DELETE /api/v1/credentials/:name":             "deleted a credential",
	"POST /api/v1/events":                          "posted an event",
	"POST /api/v1/auth/logout":                     "signed out",
	"POST /api/v1/webhook-secret/rotate":           "rotated the webhook secret",
	"POST /api/v1/flows/:id/webhook-secret/rotate": "rotated a flow's webhook secret",
}

// auditSummary is the sentence of a write's audit entry: the handler's
// phrase, else auditPhrases' with what the target names ("" for a route
// neither knows).
func auditSummary(c echo.Context, actor, action, target string) string {
	if actor == "" {
		actor = "someone"
	}
	if p, ok := c.Get(auditPhraseKey).(string); ok && p != "" {
		return actor + " " + p
	}
	p, ok := auditPhrases[action]
	if !ok {
		return ""
	}
	kind, id, _ := strings.Cut(target, ":")
	switch {
	case kind == "run" && id != "" && !strings.Contains(p, " "):
		// A verb alone acts on the run ("cancelled run 01a2…c3f9e1").
		p += " run " + shortRun(id)
		if k := c.Param("key"); k != "" {
			p = strings.Replace(p, " run ", " step "+k+" of run ", 1)
		}
	case kind == "run" && id != "":
		p += " — run " + shortRun(id)
	case id != "" && kind != "user":
		p += " (" + id + ")"
	}
	return actor + " " + p
}

// stepLabel is the label of step key of run runID ("" when unknown).
func (s *Server) stepLabel(ctx context.Context, runID, key string) string {
	n, err := s.cfg.Store.ApprovalNode(ctx, runID, key)
	if err != nil {
		return key
	}
	var cfg struct {
		Label string `json:"label"`
	}
	if json.Unmarshal(n.Config, &cfg) != nil || cfg.Label == "" {
		return key
	}
	return cfg.Label
}

// decisionPhrase words a decision: "approved Finance approval — run
// 01a2…c3f9e1", "rejected …", `chose "escalate" at …`; still waiting (a
// vote of several needed) `voted "approve" at …`.
func decisionPhrase(outcome, status, label, runID string, waiting bool) string {
	var verb string
	switch {
	case waiting:
		o := outcome
		if o == "" {
			o = status
		}
		verb = fmt.Sprintf("voted %q at", o)
	case outcome == "approve" || (outcome == "" && status == string(engine.StatusCompleted)):
		verb = "approved"
	case outcome == "reject" || (outcome == "" && status == string(engine.StatusFailed)):
		verb = "rejected"
	default:
		verb = fmt.Sprintf("chose %q at", outcome)
	}
	return verb + " " + label + " — run " + shortRun(runID)
}
