package web

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/stitchd/stitchd/callbacks"
	"github.com/stitchd/stitchd/store"
)

// Secret rotation's overlap: how long a replaced secret keeps working.
const (
	// DefaultSecretGrace is the overlap when a rotation names none.
	DefaultSecretGrace = 24 * time.Hour
	// MaxSecretGrace is the longest overlap a rotation may ask for.
	MaxSecretGrace = 7 * 24 * time.Hour
)

// graceBody is a rotation's optional body: {secret?, grace_seconds?}.
type graceBody struct {
	Secret       *string `json:"secret"`
	GraceSeconds *int64  `json:"grace_seconds"`
}

// readGrace reads a rotation's body (which may be empty) and its grace.
func readGrace(c echo.Context) (graceBody, time.Duration, error) {
	var b graceBody
	if err := bindOptional(c, &b); err != nil {
		return b, 0, err
	}
	grace := DefaultSecretGrace
	if b.GraceSeconds != nil {
		if *b.GraceSeconds < 0 || *b.GraceSeconds > int64(MaxSecretGrace/time.Second) {
			return b, 0, badRequest("grace_seconds must be from 0 (the old secret stops at once) to " +
				strconv.FormatInt(int64(MaxSecretGrace/time.Second), 10) + " (7 days)")
		}
		grace = time.Duration(*b.GraceSeconds) * time.Second
	}
	return b, grace, nil
}

// bindOptional is bind for a body that may be empty (v is then left
// as it is).
func bindOptional(c echo.Context, v any) error {
	body, err := io.ReadAll(c.Request().Body)
	if err != nil {
		var he *echo.HTTPError
		if errors.As(err, &he) {
			return he
		}
		return badRequest("error reading request body")
	}
	if len(bytes.TrimSpace(body)) == 0 {
		return nil
	}
	c.Request().Body = io.NopCloser(bytes.NewReader(body))
	return bind(c, v)
}

// rotateTriggerSecret gives a webhook trigger a new secret: the answer
// carries it (generated unless the body names one); requests signed with
// the old one are accepted until previous_secret_expires_at.
func (s *Server) rotateTriggerSecret(c echo.Context) error {
	t, err := s.trigger(c)
	if err != nil {
		return err
	}
	if t.webhook == nil {
		return badRequest("only a webhook trigger has a secret")
	}
	b, grace, err := readGrace(c)
	if err != nil {
		return err
	}
	var secret string
	if b.Secret != nil {
		if secret = *b.Secret; len(secret) < 16 || len(secret) > 256 {
			return badRequest("secret must be 16 to 256 characters")
		}
	} else {
		raw := make([]byte, 32)
		if _, err := rand.Read(raw); err != nil {
			return err
		}
		secret = hex.EncodeToString(raw)
	}
	rt, err := s.cfg.Store.RotateTriggerSecret(c.Request().Context(),
		store.RotateTriggerSecretParams{ID: t.webhook.ID, Secret: secret, Grace: grace})
	if err != nil {
		return err
	}
	out := webhookJSON(rt)
	out["secret"] = secret
	out["previous_secret_expires_at"] = rt.PreviousSecretExpiresAt
	return c.JSON(http.StatusOK, out)
}

// rotatedJSON is a dispatch secret rotation's answer.
func rotatedJSON(scope string, r *store.RotatedSecret) map[string]any {
	return map[string]any{"secret": callbacks.FormatWebhookSecret(r.Secret), "scope": scope,
		"previous_secret_expires_at": r.PreviousExpiresAt}
}

// rotateWebhookSecret rotates the server's dispatch-signing secret; the
// old one signs beside it (a second signature) for the grace period.
func (s *Server) rotateWebhookSecret(c echo.Context) error {
	return s.rotateDispatchSecret(c, "")
}

// rotateFlowWebhookSecret gives a flow a secret of its own, or rotates
// it: its dispatches are signed with it (and, for the grace period, with
// the one it replaces: the server's, the first time).
func (s *Server) rotateFlowWebhookSecret(c echo.Context) error {
	id, err := s.pathUUID(c, "id", "flow")
	if err != nil {
		return err
	}
	return s.rotateDispatchSecret(c, id)
}

func (s *Server) rotateDispatchSecret(c echo.Context, flowID string) error {
	b, grace, err := readGrace(c)
	if err != nil {
		return err
	}
	p := store.RotateWebhookSecretParams{FlowID: flowID, Grace: grace}
	if b.Secret != nil {
		if p.Secret, err = callbacks.ParseWebhookSecret(*b.Secret); err != nil {
			return badRequest(err.Error())
		}
	}
	r, err := s.cfg.Store.RotateWebhookSecret(c.Request().Context(), p)
	if err != nil {
		return err
	}
	scope := "server"
	if flowID != "" {
		scope = "flow"
	}
	return c.JSON(http.StatusOK, rotatedJSON(scope, r))
}

// flowWebhookSecret answers the secret a flow's dispatches are signed
// with: its own (scope flow), else the server's (scope server).
func (s *Server) flowWebhookSecret(c echo.Context) error {
	id, err := s.pathUUID(c, "id", "flow")
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	if _, err := s.cfg.Store.GetFlow(ctx, id); err != nil {
		return err
	}
	secret, err := s.cfg.Store.FlowWebhookSecret(ctx, id)
	if err != nil {
		return err
	}
	scope := "flow"
	if secret == nil {
		scope = "server"
		if secret, err = s.cfg.Store.WebhookSecret(ctx); err != nil {
			return err
		}
	}
	return c.JSON(http.StatusOK, map[string]any{"secret": callbacks.FormatWebhookSecret(secret), "scope": scope})
}

// dropFlowWebhookSecret returns a flow's dispatches to the server's
// secret; its own signs beside it for ?grace_seconds= (default 24 h).
func (s *Server) dropFlowWebhookSecret(c echo.Context) error {
	id, err := s.pathUUID(c, "id", "flow")
	if err != nil {
		return err
	}
	grace := DefaultSecretGrace
	if v := c.QueryParam("grace_seconds"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 || n > int64(MaxSecretGrace/time.Second) {
			return badRequest("grace_seconds must be from 0 to " + strconv.FormatInt(int64(MaxSecretGrace/time.Second), 10))
		}
		grace = time.Duration(n) * time.Second
	}
	if err := s.cfg.Store.DropFlowWebhookSecret(c.Request().Context(), id, grace); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}
