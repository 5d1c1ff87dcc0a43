package web

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/tidwall/gjson"

	"github.com/stitchd/stitchd/callbacks"
	"github.com/stitchd/stitchd/engine"
	"github.com/stitchd/stitchd/internal/jsonlimit"
	"github.com/stitchd/stitchd/store"
)

// webhookTolerance bounds the age of a signed inbound webhook (replays).
const webhookTolerance = 5 * time.Minute

// hook is the inbound trigger endpoint: verify, upsert the entity (only
// create it, for a trigger without a secret), start a run with the body as
// input.
func (s *Server) hook(c echo.Context) error {
	ctx := c.Request().Context()
	body, err := io.ReadAll(c.Request().Body)
	if err != nil {
		var he *echo.HTTPError
		if errors.As(err, &he) {
			return he
		}
		return badRequest("error reading body")
	}
	t, err := s.cfg.Store.TriggerBySlug(ctx, c.Param("slug"))
	if err != nil {
		return err
	}
	if t.Secret != nil {
		err := verifyInbound([]byte(*t.Secret), c.Request().Header, body, s.cfg.Clock.Now())
		if err != nil && t.PreviousSecret != nil {
			// A rotation's overlap: the replaced secret until it expires.
			if verifyInbound([]byte(*t.PreviousSecret), c.Request().Header, body, s.cfg.Clock.Now()) == nil {
				err = nil
			}
		}
		if err != nil {
			return errorf(http.StatusUnauthorized, "unauthorized", "bad signature: "+err.Error())
		}
	}
	if err := jsonlimit.Check(body, jsonlimit.MaxDepth); err != nil {
		return bodyError(err)
	}
	if !json.Valid(body) {
		return badRequest("body must be JSON")
	}
	if len(t.InputSchema) > 0 {
		if err := s.checkInput(t.InputSchema, body); err != nil {
			return err
		}
	}
	f, err := s.cfg.Store.GetFlow(ctx, t.FlowID)
	if err != nil {
		return err
	}
	p := engine.StartRunParams{FlowID: f.ID, VersionID: f.VersionID, Input: body,
		Trigger: webhookTrigger(t.Slug, t.ID)}
	if len(t.Entity) > 0 && string(t.Entity) != "null" {
		var m struct {
			BoardID   string `json:"board_id"`
			Type      string `json:"type"`
			NamePath  string `json:"name_path"`
			EmailPath string `json:"email_path"`
		}
		_ = json.Unmarshal(t.Entity, &m)
		up := engine.EntityUpsert{BoardID: m.BoardID, Type: m.Type}
		if m.EmailPath != "" {
			up.Email = gjson.GetBytes(body, m.EmailPath).String()
		}
		if m.NamePath != "" {
			up.Name = gjson.GetBytes(body, m.NamePath).String()
		}
		if err := checkName("the entity name at "+m.NamePath, up.Name); err != nil {
			return err
		}
		if err := checkName("the entity email at "+m.EmailPath, up.Email); err != nil {
			return err
		}
		if up.Name == "" {
			up.Name = up.Email
		}
		if up.Name == "" {
			up.Name = m.Type
		}
		if err := s.checkEntityBoard(ctx, entityBoardCheck{Workspace: f.Workspace, FlowBoardID: f.BoardID, EntityBoardID: m.BoardID,
			Execution: f.Execution, NotFound: "board " + m.BoardID + " does not exist"}); err != nil {
			return err
		}
		p.Entity = &up
		if t.Secret == nil {
			// Unauthenticated: anyone who knows an email could otherwise
			// rename its entity and take over its current run.
			ctx = store.CreateEntitiesOnly(ctx)
		}
	}
	if p.IdempotencyKey, err = hookIdempotencyKey(t, c.Request().Header); err != nil {
		return err
	}
	// Counted once the request is known good (signed, valid): unsigned
	// junk sent to a signed trigger spends none of its senders' rate. A
	// loop through a name of stitchd the dispatch guard does not know is
	// slowed to the rate.
	if ok, wait := s.hookRate.take(t.ID, s.cfg.Clock.Now()); !ok {
		c.Response().Header().Set("Retry-After", strconv.Itoa(retryAfterSeconds(wait)))
		return errorf(http.StatusTooManyRequests, "rate_limited", "trigger "+t.Slug+" starts at most "+
			strconv.FormatFloat(s.cfg.TriggerRate, 'f', -1, 64)+" runs a second; retry later")
	}
	run, _, err := s.cfg.Engine.StartRun(ctx, p)
	if eb, ok := engine.IsEntityBusy(err); ok {
		// entityConcurrency skip: the sender did nothing wrong and must not
		// retry — a 200 that says the start was skipped for the run going.
		return c.JSON(http.StatusOK, map[string]any{"skipped": true, "run_id": eb.RunID, "entity_id": eb.EntityID,
			"reason": eb.Error()})
	}
	if err != nil {
		return entityExists(err)
	}
	if t.Respond != nil && t.Respond.Mode == "wait" {
		return s.awaitRun(c, run.ID, t.Respond)
	}
	return c.JSON(http.StatusAccepted, map[string]any{"run_id": run.ID, "entity_id": run.EntityID, "status": run.Status})
}

// verifyInbound accepts Standard Webhooks (webhook-id, webhook-timestamp,
// webhook-signature) or GitHub's X-Hub-Signature-256.
func verifyInbound(secret []byte, h http.Header, body []byte, now time.Time) error {
	if sig := h.Get("webhook-signature"); sig != "" {
		return callbacks.VerifyWebhook(secret, h.Get("webhook-id"), h.Get("webhook-timestamp"), sig, body, now, webhookTolerance)
	}
	if sig := h.Get("X-Hub-Signature-256"); sig != "" {
		hexSig, ok := strings.CutPrefix(sig, "sha256=")
		want, err := hex.DecodeString(hexSig)
		if !ok || err != nil {
			return errors.New("malformed X-Hub-Signature-256")
		}
		m := hmac.New(sha256.New, secret)
		m.Write(body)
		if !hmac.Equal(want, m.Sum(nil)) {
			return errors.New("signature mismatch")
		}
		return nil
	}
	return errors.New("missing webhook-signature or X-Hub-Signature-256")
}

// webhookTrigger is a run's trigger when a webhook started it.
func webhookTrigger(slug, id string) json.RawMessage {
	b, _ := json.Marshal(map[string]string{"type": "webhook", "slug": slug, "trigger_id": id})
	return b
}

// checkInput checks a hook's body against its trigger's input_schema: a
// 400 listing every way it breaks it ($.email, $.items[2]).
func (s *Server) checkInput(schema, body json.RawMessage) error {
	f, err := s.inputSchemas.Get(schema)
	if err != nil {
		return fmt.Errorf("error compiling a trigger's input_schema: %w", err)
	}
	issues := f.Check(body)
	if len(issues) == 0 {
		return nil
	}
	ps := make([]engine.Problem, len(issues))
	for i, is := range issues {
		ps[i] = engine.Problem{Code: "input_invalid", Path: "$" + is.Path, Message: is.Message}
	}
	return &apiError{Status: http.StatusBadRequest, Code: "invalid_request",
		Message: "the body does not fit the trigger's input_schema: " + plural(len(ps), "problem"), Details: ps}
}
