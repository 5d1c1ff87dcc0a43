package web

import (
	"encoding/json"
	"errors"
	"html/template"
	"net/http"
	"strings"
	"unicode/utf8"

	"github.com/labstack/echo/v4"

	"github.com/stitchd/stitchd/callbacks"
	"github.com/stitchd/stitchd/engine"
	"github.com/stitchd/stitchd/store"
)

// One-click approval links (docs/people.md): an approval.requested
// notification carries, for each assignee and outcome, a signed link to
// /approve/<token>. GET shows a confirmation page and decides nothing (mail
// scanners fetch links); POST decides as the link's person, once.

var approvePage = template.Must(template.New("approve").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>{{.Title}} · stitchd</title>
<style>body{font:16px system-ui,sans-serif;max-width:36rem;margin:3rem auto;padding:0 1rem;color:#1f2937}
h1{font-size:1.4rem}.muted{color:#6b7280}textarea{width:100%;min-height:5rem;font:inherit}
button{font:inherit;padding:.5rem 1.2rem;border-radius:.4rem;border:1px solid #2563eb;background:#2563eb;color:#fff;cursor:pointer}
.error{color:#b91c1c}</style></head><body>
<h1>{{.Title}}</h1>
{{if .Message}}<p class="{{if .Failed}}error{{end}}">{{.Message}}</p>{{end}}
{{if .Confirm}}
<p>{{if .Prompt}}{{.Prompt}}{{else}}Step <b>{{.Label}}</b> of run <code>{{.RunID}}</code> is waiting for a decision.{{end}}</p>
<p>You are choosing <b>{{.Outcome}}</b> as <b>{{.Email}}</b>.</p>
<form method="post">
<p><label for="comment">Comment (optional)</label><br><textarea id="comment" name="comment" maxlength="4096"></textarea></p>
<p><button type="submit">Confirm: {{.Outcome}}</button></p>
</form>
<p class="muted">This link works once and until {{.Expires}}.</p>
{{end}}
</body></html>`))

type approveView struct {
	Title, Message                                string
	Failed, Confirm                               bool
	Prompt, Label, RunID, Outcome, Email, Expires string
}

func (s *Server) renderApprove(c echo.Context, status int, v approveView) error {
	h := c.Response().Header()
	h.Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; frame-ancestors 'none'")
	h.Set("Referrer-Policy", "no-referrer") // the link is a credential
	var b strings.Builder
	if err := approvePage.Execute(&b, v); err != nil {
		return err
	}
	return c.HTML(status, b.String())
}

// approveClaims verifies a link's token, answering a page when it fails.
func (s *Server) approveClaims(c echo.Context) (callbacks.ActionClaims, bool, error) {
	cl, err := s.cfg.Keys.VerifyAction(c.Param("token"), s.cfg.Clock.Now())
	switch {
	case errors.Is(err, callbacks.ErrTokenExpired):
		return cl, false, s.renderApprove(c, http.StatusGone, approveView{Title: "This link has expired", Failed: true,
			Message: "Open the approval in stitchd to decide it."})
	case err != nil:
		return cl, false, s.renderApprove(c, http.StatusNotFound, approveView{Title: "This link is not valid", Failed: true,
			Message: "It may have been cut short, or its signing key was retired."})
	}
	return cl, true, nil
}

func (s *Server) approveForm(c echo.Context) error {
	cl, ok, err := s.approveClaims(c)
	if !ok {
		return err
	}
	v := approveView{Title: "Confirm your decision", Confirm: true, Label: cl.Key, RunID: cl.RunID, Outcome: cl.Outcome,
		Email: cl.Email, Expires: cl.Expiry.UTC().Format("2 Jan 2006 15:04 UTC")}
	ctx := c.Request().Context()
	n, err := s.cfg.Store.ApprovalNode(ctx, cl.RunID, cl.Key)
	if err == nil {
		var info struct {
			Label  string `json:"label"`
			Prompt string `json:"prompt"`
		}
		if jerr := json.Unmarshal(n.Config, &info); jerr == nil {
			if info.Label != "" {
				v.Label = info.Label
			}
			v.Prompt = info.Prompt
		}
		if n.Status != engine.StatusWaitingForUser || n.Attempt != cl.Attempt {
			return s.renderApprove(c, http.StatusConflict, approveView{Title: "Nothing to decide", Failed: true,
				Message: "This step is no longer waiting for this decision: it was decided, timed out, or the run moved on."})
		}
	} else if !errors.Is(err, engine.ErrNotFound) {
		return err
	} else {
		return s.renderApprove(c, http.StatusNotFound, approveView{Title: "Nothing to decide", Failed: true,
			Message: "The run or its step no longer exists."})
	}
	return s.renderApprove(c, http.StatusOK, v)
}

func (s *Server) approveSubmit(c echo.Context) error {
	cl, ok, err := s.approveClaims(c)
	if !ok {
		return err
	}
	comment := c.FormValue("comment")
	if !utf8.ValidString(comment) || strings.ContainsRune(comment, 0) {
		return s.renderApprove(c, http.StatusBadRequest, approveView{Title: "Comment not readable", Failed: true,
			Message: "The comment must be text (UTF-8, no NUL)."})
	}
	if len(comment) > maxCommentLen {
		return s.renderApprove(c, http.StatusBadRequest, approveView{Title: "Comment too long", Failed: true,
			Message: "Keep the comment under 4,096 bytes and try again."})
	}
	ctx := c.Request().Context()
	// The link decides as the account it was made for: one deleted and
	// made again with the same email is another person.
	var u *store.User
	if cl.UserID != "" {
		if u, err = s.cfg.Store.GetUser(ctx, cl.UserID); err != nil && !errors.Is(err, engine.ErrNotFound) {
			return err
		}
		if u != nil && !strings.EqualFold(u.Email, cl.Email) {
			u = nil
		}
	}
	// The link decides as its person, as if they had signed in to the
	// run's workspace: a user who may decide approvals there (an approver
	// or an admin), enabled.
	ws, err := s.cfg.Store.WorkspaceOf(ctx, store.OwnerRun, cl.RunID)
	if err != nil {
		return err
	}
	role := ""
	if u != nil {
		if role, err = s.roleIn(ctx, u, ws); err != nil {
			return err
		}
	}
	switch {
	case u == nil:
		return s.renderApprove(c, http.StatusForbidden, approveView{Title: "No such account", Failed: true,
			Message: "The account this link was made for does not exist (any more)."})
	case u.Disabled:
		return s.renderApprove(c, http.StatusForbidden, approveView{Title: "Account disabled", Failed: true,
			Message: "The account this link was made for is disabled."})
	case role != store.RoleApprover && role != store.RoleAdmin:
		return s.renderApprove(c, http.StatusForbidden, approveView{Title: "Not an approver", Failed: true,
			Message: "The account this link was made for (role " + orNone(role) + " in the run's workspace) may not decide approvals."})
	}
	actor := &engine.Actor{Email: u.Email, Groups: u.Groups, Override: role == store.RoleAdmin}
	now := s.cfg.Clock.Now()
	fresh, err := s.cfg.Store.UseActionLink(ctx, cl.Nonce, now)
	if err != nil {
		return err
	}
	if !fresh {
		return s.renderApprove(c, http.StatusGone, approveView{Title: "This link was already used", Failed: true,
			Message: "Each link works once. Open the approval in stitchd to see where it stands."})
	}
	// The link is for one attempt: a later attempt of the step (after a
	// retry or rerun) is not its to decide.
	if n, err := s.cfg.Store.ApprovalNode(ctx, cl.RunID, cl.Key); err != nil && !errors.Is(err, engine.ErrNotFound) {
		return err
	} else if err != nil || n.Status != engine.StatusWaitingForUser || n.Attempt != cl.Attempt {
		return s.renderApprove(c, http.StatusConflict, approveView{Title: "Nothing to decide", Failed: true,
			Message: "This step is no longer waiting for this decision: it was decided, timed out, or the run moved on."})
	}
	err = s.cfg.Engine.CompleteUX(ctx, engine.CompleteUXParams{RunID: cl.RunID, Key: cl.Key, Attempt: cl.Attempt,
		Outcome: cl.Outcome, Comment: comment, By: cl.Email, Actor: actor})
	if err != nil {
		ae := toAPIError(err)
		if ae.Status >= 500 {
			if rerr := s.cfg.Store.ReleaseActionLink(ctx, cl.Nonce); rerr != nil {
				s.log.Error("error releasing an approval link", "error", rerr)
			}
			return err
		}
		return s.renderApprove(c, ae.Status, approveView{Title: "Not decided", Failed: true, Message: ae.Message})
	}
	if aerr := s.cfg.Store.InsertAudit(ctx, store.AuditEntry{Workspace: &ws, At: now, Actor: cl.Email, Action: "POST /approve/:token",
		Target: "run:" + cl.RunID, RequestID: c.Response().Header().Get(echo.HeaderXRequestID), Status: http.StatusOK,
		Details: map[string]any{"key": cl.Key, "outcome": cl.Outcome, "via": "link"},
		Summary: cl.Email + " " + decisionPhrase(cl.Outcome, "", s.stepLabel(ctx, cl.RunID, cl.Key), cl.RunID, false) + " (by email link)"}); aerr != nil {
		s.log.Error("error writing an audit entry", "action", "approval link", "actor", cl.Email, "error", aerr)
	}
	return s.renderApprove(c, http.StatusOK, approveView{Title: "Thank you", Message: "Your decision (" + cl.Outcome + ") is recorded."})
}
