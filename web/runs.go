package web

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/stitchd/stitchd/engine"
	"github.com/stitchd/stitchd/store"
)

// runJSON is a run without its node states (a list of runs); writeRun
// streams them after it.
type runJSON struct {
	ID            string           `json:"id"`
	FlowID        string           `json:"flow_id"`
	FlowVersionID string           `json:"flow_version_id"`
	Status        engine.RunStatus `json:"status"`
	Input         json.RawMessage  `json:"input"`
	Output        json.RawMessage  `json:"output"`
	Error         *string          `json:"error"`
	EntityID      *string          `json:"entity_id"`
	Trigger       json.RawMessage  `json:"trigger,omitempty"`
	CreatedAt     time.Time        `json:"created_at"`
	UpdatedAt     time.Time        `json:"updated_at"`
	FinishedAt    *time.Time       `json:"finished_at"`
	DeadlineAt    *time.Time       `json:"deadline_at,omitempty"`
	// ParentRunID and ParentKey name the SubFlow node that started the
	// run (a sub-flow run).
	ParentRunID *string `json:"parent_run_id,omitempty"`
	ParentKey   *string `json:"parent_key,omitempty"`
	// StartedBy is the person who started the run (none: a trigger, a
	// schedule, the admin token).
	StartedBy string `json:"started_by,omitempty"`
	// Variables are the run's variables (data.setVariables), in the answer
	// of one run only.
	Variables json.RawMessage `json:"variables,omitempty"`
	// Compensation is the run's compensation once it began (undo nodes);
	// Compensated and CompensationFailed say how it ended.
	Compensation       *engine.Compensation `json:"compensation,omitempty"`
	Compensated        bool                 `json:"compensated,omitempty"`
	CompensationFailed string               `json:"compensation_failed,omitempty"`
}

func toRunJSON(r *engine.Run) runJSON {
	out := runJSON{ID: r.ID, FlowID: r.FlowID, FlowVersionID: r.FlowVersionID, Status: r.Status,
		Input: nullJSON(r.Input), Output: nullJSON(r.Output), Error: r.Error, EntityID: r.EntityID, Trigger: r.Trigger,
		CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt, FinishedAt: r.FinishedAt, DeadlineAt: r.DeadlineAt,
		ParentRunID: r.ParentRunID, ParentKey: r.ParentKey, StartedBy: r.StartedBy, Compensation: r.Compensation}
	if c := r.Compensation; c != nil {
		out.Compensated = c.State == engine.CompensationDone
		if c.State == engine.CompensationFailed {
			out.CompensationFailed = c.FailedNode
		}
	}
	return out
}

func nullJSON(b json.RawMessage) json.RawMessage {
	if len(b) == 0 {
		return json.RawMessage("null")
	}
	return b
}

func (s *Server) startRun(c echo.Context) error {
	flowID, err := s.pathUUID(c, "id", "flow")
	if err != nil {
		return err
	}
	var b struct {
		Input           json.RawMessage `json:"input"`
		EntityID        *string         `json:"entity_id"`
		Version         *int            `json:"version"`
		DeadlineSeconds *int            `json:"deadlineSeconds"`
	}
	if c.Request().ContentLength != 0 {
		if err := bind(c, &b); err != nil {
			return err
		}
	}
	if b.EntityID != nil && !validUUID(*b.EntityID) {
		return badRequest("entity_id must be a UUID")
	}
	deadline := 0
	if b.DeadlineSeconds != nil {
		if *b.DeadlineSeconds < 1 || *b.DeadlineSeconds > maxDeadlineSeconds {
			return badRequest(fmt.Sprintf("deadlineSeconds must be from 1 to %d", maxDeadlineSeconds))
		}
		deadline = *b.DeadlineSeconds
	}
	ctx := c.Request().Context()
	f, err := s.cfg.Store.GetFlow(ctx, flowID)
	if err != nil {
		return err
	}
	versionID, exec := f.VersionID, f.Execution
	if b.Version != nil {
		v, err := s.cfg.Store.GetVersion(ctx, flowID, *b.Version)
		if err != nil {
			if errors.Is(err, engine.ErrNotFound) {
				return badRequest("flow has no version " + strconv.Itoa(*b.Version))
			}
			return err
		}
		versionID, exec = v.ID, v.Execution
	}
	if b.EntityID != nil {
		e, err := s.cfg.Store.GetEntity(ctx, *b.EntityID)
		if errors.Is(err, engine.ErrNotFound) {
			return badRequest("entity " + *b.EntityID + " does not exist")
		} else if err != nil {
			return err
		}
		if err := s.checkEntityBoard(ctx, entityBoardCheck{Workspace: f.Workspace, FlowBoardID: f.BoardID, EntityBoardID: e.BoardID, Execution: exec,
			NotFound: "entity " + *b.EntityID + " does not exist"}); err != nil {
			return err
		}
	}
	key := strings.TrimSpace(c.Request().Header.Get("Idempotency-Key"))
	if len(key) > 255 {
		return badRequest("Idempotency-Key is longer than 255 characters")
	}
	trigger := json.RawMessage(`{"type":"api"}`)
	hash := ""
	if key != "" {
		// The request a key stands for: the same key with another request
		// is a mistake to say, not the first run to give back.
		if hash, err = requestHash(b.Version, b.Input, b.EntityID, b.DeadlineSeconds); err != nil {
			return err
		}
		trigger = json.RawMessage(`{"type":"api","request_hash":"` + hash + `"}`)
	}
	run, created, err := s.cfg.Engine.StartRun(ctx, engine.StartRunParams{FlowID: flowID, VersionID: versionID,
		Input: b.Input, EntityID: b.EntityID, Trigger: trigger, IdempotencyKey: key,
		DeadlineSeconds: deadline, StartedBy: startedByOf(c)})
	if err != nil {
		return err
	}
	if !created && hash != "" {
		var was struct {
			Hash string `json:"request_hash"`
		}
		_ = json.Unmarshal(run.Trigger, &was)
		if was.Hash != "" && was.Hash != hash {
			return &apiError{Status: http.StatusConflict, Code: "idempotency_key_reused",
				Message: "Idempotency-Key " + key + " was used for run " + run.ID + " with another request (input, version, entity or deadline); use a new key for a new request",
				Details: map[string]any{"run_id": run.ID}}
		}
	}
	return s.writeRun(c, http.StatusCreated, run.ID)
}

// requestHash is a run start's request in short: SHA-256 of its fields in
// a canonical form (object keys sorted, numbers as written), so the same
// request however formatted hashes the same.
func requestHash(version *int, input json.RawMessage, entityID *string, deadline *int) (string, error) {
	var in any
	if len(input) > 0 {
		dec := json.NewDecoder(bytes.NewReader(input))
		dec.UseNumber()
		if err := dec.Decode(&in); err != nil {
			return "", badRequest("input is not JSON: " + err.Error())
		}
	}
	b, err := json.Marshal(map[string]any{"version": version, "input": in, "entity_id": entityID, "deadline": deadline})
	if err != nil {
		return "", fmt.Errorf("error hashing a run start: %w", err)
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:16]), nil
}

func (s *Server) listRuns(c echo.Context) error {
	status, err := queryEnum(c, "status", string(engine.RunRunning), string(engine.RunPaused), string(engine.RunQueued),
		string(engine.RunCompleted), string(engine.RunFailed), string(engine.RunCancelled))
	if err != nil {
		return err
	}
	f := store.RunFilter{Workspace: workspaceOf(c), FlowID: c.QueryParam("flow_id"), Status: status, Cursor: c.QueryParam("cursor"),
		Node: c.QueryParam("node"), ErrorContains: c.QueryParam("error")}
	if len(f.Node) > 256 || len(f.ErrorContains) > 1024 {
		return badRequest("node is at most 256 and error at most 1,024 bytes")
	}
	if f.FlowID != "" && !validUUID(f.FlowID) {
		return badRequest("flow_id must be a UUID")
	}
	if l := c.QueryParam("limit"); l != "" {
		n, err := strconv.Atoi(l)
		if err != nil || n < 1 || n > 500 {
			return badRequest("limit must be between 1 and 500")
		}
		f.Limit = n
	}
	runs, next, err := s.cfg.Store.ListRuns(c.Request().Context(), f)
	if err != nil {
		return err
	}
	out := make([]runJSON, len(runs))
	for i := range runs {
		out[i] = toRunJSON(&runs[i])
	}
	var nc *string
	if next != "" {
		nc = &next
	}
	return c.JSON(http.StatusOK, map[string]any{"runs": out, "next_cursor": nc})
}

func (s *Server) getRun(c echo.Context) error {
	id, err := s.pathUUID(c, "id", "run")
	if err != nil {
		return err
	}
	return s.writeRun(c, http.StatusOK, id)
}

// writeRun answers a run with its node states, streamed as they are read
// (EachNode, by key: the order encoding/json gives a map) rather than
// loaded and encoded whole — a 100,000-item fan-out's run is 40 MB of JSON.
// The status line goes out with the first 32 KB: an error before that is
// answered as usual; after it, the response is aborted, which the client
// sees as truncated. Each write must finish within the stream write
// timeout, and the whole answer within runAnswerBudget, so a client that
// stops reading, or reads too slowly, releases the database connection the
// answer is read on.
//
// A request with "Prefer: return=minimal" (RFC 7240) is answered with the
// run without its nodes, as runs are listed: a client that starts a
// 100,000-item fan-out, or polls a run's status, need not read every node.
func (s *Server) writeRun(c echo.Context, code int, id string) error {
	setAuditTarget(c, "run:"+id)
	ctx := c.Request().Context()
	r, _, err := s.cfg.Store.GetRun(ctx, id, false)
	if err != nil {
		return err
	}
	rj := toRunJSON(r)
	if rj.Variables, err = s.cfg.Store.RunVariables(ctx, id); err != nil {
		return err
	}
	c.Response().Header().Add(echo.HeaderVary, "Prefer")
	if prefersMinimal(c.Request().Header) {
		c.Response().Header().Set("Preference-Applied", "return=minimal")
		return c.JSON(code, rj)
	}
	head, err := json.Marshal(rj)
	if err != nil {
		return fmt.Errorf("error encoding run %s: %w", id, err)
	}
	// The worker that leased each pulled step's attempt (a node's
	// "worker").
	workers, err := s.cfg.Store.TaskWorkers(ctx, id)
	if err != nil {
		return err
	}
	resp := c.Response()
	sw := &streamWriter{resp: resp, rc: http.NewResponseController(resp.Writer), code: code,
		timeout: s.cfg.StreamWriteTimeout, end: time.Now().Add(runAnswerBudget)}
	w := bufio.NewWriterSize(sw, 32<<10)
	// A bufio.Writer's errors are sticky: the last Write or Flush reports
	// any.
	_, _ = w.Write(head[:len(head)-1]) // without its closing brace
	_, _ = w.WriteString(`,"nodes":{`)
	n := 0
	err = s.cfg.Store.EachNode(ctx, id, func(ns *engine.NodeState) error {
		ns.Input, ns.Output = nullJSON(ns.Input), nullJSON(ns.Output)
		b, err := json.Marshal(ns)
		if err != nil {
			return fmt.Errorf("error encoding node %s: %w", ns.Key, err)
		}
		if wk := workers[ns.Key][ns.Attempt]; wk != "" {
			wj, _ := json.Marshal(wk) // a string always encodes
			b = append(append(append(b[:len(b)-1], `,"worker":`...), wj...), '}')
		}
		k, _ := json.Marshal(ns.Key)
		if n > 0 {
			_ = w.WriteByte(',')
		}
		n++
		_, _ = w.Write(k)
		_ = w.WriteByte(':')
		_, err = w.Write(b)
		return err
	})
	if err == nil {
		_, _ = w.WriteString("}}\n")
		err = w.Flush()
	}
	if err != nil {
		if !resp.Committed {
			return err
		}
		s.log.Warn("error streaming a run", "run_id", id, "error", err)
		panic(http.ErrAbortHandler)
	}
	return nil
}

// prefersMinimal reports whether the request's Prefer headers ask for
// return=minimal (preferences are comma-separated, may carry parameters
// after ";", and their names and values compare case-insensitively; of a
// repeated preference the first counts, RFC 7240 section 2).
func prefersMinimal(h http.Header) bool {
	for _, line := range h.Values("Prefer") {
		for _, pref := range strings.Split(line, ",") {
			pref, _, _ = strings.Cut(pref, ";")
			name, value, _ := strings.Cut(pref, "=")
			if strings.EqualFold(strings.TrimSpace(name), "return") {
				return strings.EqualFold(strings.Trim(strings.TrimSpace(value), `"`), "minimal")
			}
		}
	}
	return false
}

// runAnswerBudget bounds how long one run's answer may take to write: a
// client reading a 40 MB run slowly but steadily is cut off then, so that it
// does not hold a database connection (and a snapshot) for hours.
const runAnswerBudget = 2 * time.Minute

// streamWriter writes a streamed answer: the status line with the first
// bytes, each write bounded by the write timeout and by the answer's end.
// net/http lifts the deadline once the handler returned and the answer
// was flushed.
type streamWriter struct {
	resp    *echo.Response
	rc      *http.ResponseController
	code    int
	timeout time.Duration
	end     time.Time
}

func (w *streamWriter) Write(p []byte) (int, error) {
	if !w.resp.Committed {
		w.resp.Header().Set(echo.HeaderContentType, echo.MIMEApplicationJSON)
		w.resp.WriteHeader(w.code)
	}
	// After the header: its Before hook sets the ordinary answers'
	// deadline (writeDeadline), which this one replaces.
	dl := time.Now().Add(w.timeout)
	if w.end.Before(dl) {
		dl = w.end
	}
	_ = w.rc.SetWriteDeadline(dl)
	return w.resp.Write(p)
}

// cancelRun is POST /runs/{id}/cancel, {"compensate": true} to run the
// undo nodes of the run's completed steps first (the run answers
// running, its compensation under way, and ends cancelled).
func (s *Server) cancelRun(c echo.Context) error {
	id, err := s.pathUUID(c, "id", "run")
	if err != nil {
		return err
	}
	var b struct {
		Compensate bool `json:"compensate"`
	}
	if c.Request().ContentLength != 0 {
		if err := bind(c, &b); err != nil {
			return err
		}
	}
	if _, err := s.cfg.Engine.CancelRunWith(c.Request().Context(), engine.CancelRunParams{RunID: id, Compensate: b.Compensate}); err != nil {
		return err
	}
	return s.getRun(c)
}

func (s *Server) pauseRun(c echo.Context) error {
	id, err := s.pathUUID(c, "id", "run")
	if err != nil {
		return err
	}
	if _, err := s.cfg.Engine.PauseRun(c.Request().Context(), id); err != nil {
		return err
	}
	return s.getRun(c)
}

func (s *Server) resumeRun(c echo.Context) error {
	id, err := s.pathUUID(c, "id", "run")
	if err != nil {
		return err
	}
	if _, err := s.cfg.Engine.ResumeRun(c.Request().Context(), id); err != nil {
		return err
	}
	return s.getRun(c)
}

// skipNode completes a stuck node by hand: {"output"?: …}.
func (s *Server) skipNode(c echo.Context) error {
	id, err := s.pathUUID(c, "id", "run")
	if err != nil {
		return err
	}
	var b struct {
		Output json.RawMessage `json:"output"`
	}
	if c.Request().ContentLength != 0 {
		if err := bind(c, &b); err != nil {
			return err
		}
	}
	err = s.cfg.Engine.SkipNode(c.Request().Context(), engine.SkipNodeParams{RunID: id, Key: c.Param("key"),
		Output: b.Output, By: actorOf(c)})
	if err != nil {
		return err
	}
	return s.getRun(c)
}

func (s *Server) retryNode(c echo.Context) error {
	id, err := s.pathUUID(c, "id", "run")
	if err != nil {
		return err
	}
	if err := s.cfg.Engine.RetryNode(c.Request().Context(), id, c.Param("key")); err != nil {
		return err
	}
	return s.getRun(c)
}

func (s *Server) completeNode(c echo.Context) error {
	id, err := s.pathUUID(c, "id", "run")
	if err != nil {
		return err
	}
	var b struct {
		Outcome string          `json:"outcome"`
		Status  string          `json:"status"`
		Output  json.RawMessage `json:"output"`
		Comment string          `json:"comment"`
		Error   string          `json:"error"`
	}
	if err := bind(c, &b); err != nil {
		return err
	}
	if b.Outcome == "" && b.Status != "completed" && b.Status != "failed" {
		return badRequest(`give an "outcome" (one of the node's outcomes), or "status": "completed" or "failed"`)
	}
	if len(b.Comment) > maxCommentLen {
		return badRequest(fmt.Sprintf("comment is longer than %d bytes", maxCommentLen))
	}
	err = s.cfg.Engine.CompleteUX(c.Request().Context(), engine.CompleteUXParams{RunID: id, Key: c.Param("key"),
		Outcome: b.Outcome, Status: engine.Status(b.Status), Output: b.Output, Comment: b.Comment, Error: b.Error,
		By: actorOf(c), Actor: deciderOf(c)})
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	key := c.Param("key")
	waiting := false
	if n, err := s.cfg.Store.ApprovalNode(ctx, id, key); err == nil {
		waiting = n.Status == engine.StatusWaitingForUser
	}
	setAuditPhrase(c, decisionPhrase(b.Outcome, b.Status, s.stepLabel(ctx, id, key), id, waiting))
	return s.getRun(c)
}

// maxDeadlineSeconds bounds a run's deadline (a year).
const maxDeadlineSeconds = 366 * 24 * 3600

// maxCommentLen bounds a decision's comment.
const maxCommentLen = 4096

// actorOf names who made a request, for the records of what they decided:
// the user's email, "admin" for the admin token.
func actorOf(c echo.Context) string {
	if p := principalOf(c); p != nil {
		return p.Email()
	}
	return "admin"
}
