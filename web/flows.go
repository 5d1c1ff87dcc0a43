package web

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/labstack/echo/v4"

	"github.com/stitchd/stitchd/compiler"
	"github.com/stitchd/stitchd/engine"
	"github.com/stitchd/stitchd/store"
)

type flowBody struct {
	Name    *string         `json:"name"`
	Graph   json.RawMessage `json:"graph"`
	Message string          `json:"message"`
	BoardID *string         `json:"board_id"`
}

type versionRef struct {
	ID     string `json:"id"`
	Number int    `json:"number"`
}

type flowJSON struct {
	ID        string           `json:"id"`
	Name      string           `json:"name"`
	BoardID   *string          `json:"board_id"`
	Version   versionRef       `json:"version"`
	Warnings  []engine.Problem `json:"warnings"`
	Graph     json.RawMessage  `json:"graph,omitempty"`
	CreatedAt time.Time        `json:"created_at"`
	UpdatedAt time.Time        `json:"updated_at"`
	// VersionCreated tells an update whether it made a new version.
	VersionCreated *bool `json:"version_created,omitempty"`
}

func toFlowJSON(f *store.Flow, withGraph bool) flowJSON {
	out := flowJSON{ID: f.ID, Name: f.Name, BoardID: f.BoardID, Version: versionRef{f.VersionID, f.VersionNumber},
		Warnings: []engine.Problem{}, CreatedAt: f.CreatedAt, UpdatedAt: f.UpdatedAt}
	var g engine.ExecutionGraph
	if json.Unmarshal(f.Execution, &g) == nil && g.Warnings != nil {
		out.Warnings = g.Warnings
	}
	if withGraph {
		out.Graph = engine.OrderGraphForms(f.Graph)
	}
	return out
}

// compileGraph parses and compiles a visual graph, returning the version to
// store (canonical visual JSON, execution JSON, hash).
// self is the flow's id ("" for a new flow): its SubFlow nodes are pinned
// to versions of other flows, none of which may contain it.
func (s *Server) compileGraph(ctx context.Context, ws string, raw json.RawMessage, message string, boardID *string, self string) (*store.NewVersion, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, badRequest("graph is required")
	}
	// The forms' field order, as written, kept as x-order (the stored
	// graph sorts object keys).
	raw, err := engine.RecordFormOrders(raw)
	if err != nil {
		return nil, badRequest("graph: " + err.Error())
	}
	v, err := compiler.ParseVisual(raw)
	if err != nil {
		return nil, badRequest("graph: " + err.Error())
	}
	opts := compiler.Options{Types: s.cfg.NodeTypes}
	if boardID != nil {
		secs, err := s.cfg.Store.BoardSections(ctx, *boardID)
		if err == nil {
			// Another workspace's board is as good as none.
			var owner string
			if owner, err = s.cfg.Store.WorkspaceOf(ctx, store.OwnerBoard, *boardID); err == nil && owner != ws {
				err = engine.ErrNotFound
			}
		}
		if errors.Is(err, engine.ErrNotFound) {
			return nil, badRequest("board " + *boardID + " does not exist")
		} else if err != nil {
			return nil, err
		}
		opts.BoardSections = secs
	}
	g, err := compiler.CompileWithOptions(v, opts)
	if err != nil {
		return nil, err
	}
	if err := compiler.LinkSubFlows(ctx, v, g, self, s.cfg.Store.FlowsIn(ws)); err != nil {
		return nil, err
	}
	if err := s.secretHostProblems(ctx, ws, g.Secrets); err != nil {
		return nil, err
	}
	warn, err := s.secretWarnings(ctx, ws, g.Secrets)
	if err != nil {
		return nil, err
	}
	g.Warnings = append(g.Warnings, warn...)
	if raw, err = graphLists(raw); err != nil {
		return nil, badRequest("graph: " + err.Error())
	}
	canon, err := compiler.Canonical(raw)
	if err != nil {
		return nil, badRequest("graph: " + err.Error())
	}
	exec, err := json.Marshal(g)
	if err != nil {
		return nil, err
	}
	// The versions "latest" pinned are part of what a version is: saving
	// the same drawing after a sub-flow changed makes a new version.
	h := sha256.New()
	h.Write(canon)
	for _, id := range g.SubFlowVersions() {
		h.Write([]byte("\n" + id))
	}
	var sum [sha256.Size]byte
	h.Sum(sum[:0])
	return &store.NewVersion{ID: uuid.NewString(), Graph: canon, Execution: exec, Hash: hex.EncodeToString(sum[:]), Message: message}, nil
}

// graphLists gives a graph its nodes and edges as lists: absent or null,
// which are taken as none, are stored (and answered) as [], as the
// contract's Graph has them.
func graphLists(raw json.RawMessage) (json.RawMessage, error) {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(raw, &top); err != nil {
		return nil, err
	}
	changed := false
	for _, list := range []string{"nodes", "edges"} {
		present := false
		for k, v := range top {
			// encoding/json matches keys in any case (ParseVisual read
			// "Edges" as the edges).
			if strings.EqualFold(k, list) && string(bytes.TrimSpace(v)) != "null" {
				present = true
			}
		}
		if !present {
			for k := range top {
				if strings.EqualFold(k, list) {
					delete(top, k)
				}
			}
			top[list] = json.RawMessage("[]")
			changed = true
		}
	}
	if !changed {
		return raw, nil
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(top); err != nil {
		return nil, err
	}
	return bytes.TrimSpace(buf.Bytes()), nil
}

func (s *Server) createFlow(c echo.Context) error {
	var b flowBody
	if err := bind(c, &b); err != nil {
		return err
	}
	if b.Name == nil || strings.TrimSpace(*b.Name) == "" {
		return badRequest("name is required")
	}
	if err := checkName("name", strings.TrimSpace(*b.Name)); err != nil {
		return err
	}
	if b.BoardID != nil && !validUUID(*b.BoardID) {
		return badRequest("board_id must be a UUID")
	}
	v, err := s.compileGraph(c.Request().Context(), workspaceOf(c), b.Graph, b.Message, b.BoardID, "")
	if err != nil {
		return err
	}
	f, err := s.cfg.Store.CreateFlow(c.Request().Context(), workspaceOf(c), uuid.NewString(), strings.TrimSpace(*b.Name), b.BoardID, *v)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusCreated, toFlowJSON(f, true))
}

// flowListJSON is a flow as the list shows it: with its runs counted by
// status and its triggers by kind.
type flowListJSON struct {
	flowJSON
	RunCounts       map[string]int `json:"run_counts,omitempty"`
	RunCountsCapped []string       `json:"run_counts_capped,omitempty"`
	Triggers        map[string]int `json:"triggers,omitempty"`
}

// queryBool reads an optional true/false query parameter.
func queryBool(c echo.Context, name string, def bool) (bool, error) {
	vs, ok := c.QueryParams()[name]
	if !ok {
		return def, nil
	}
	switch vs[0] {
	case "true", "1":
		return true, nil
	case "false", "0":
		return false, nil
	}
	return false, badRequest(name + " must be true or false")
}

// queryEnum is the query parameter name, "" when absent; present, it must
// be one of allowed: an empty value (?assigned=) is 400 like any other
// outside the set, not taken for absent.
func queryEnum(c echo.Context, name string, allowed ...string) (string, error) {
	vs, ok := c.QueryParams()[name]
	if !ok {
		return "", nil
	}
	if slices.Contains(allowed, vs[0]) {
		return vs[0], nil
	}
	return "", badRequest(name + " must be " + orList(allowed))
}

// orList is "a", "a or b", "a, b or c".
func orList(xs []string) string {
	if len(xs) < 2 {
		return strings.Join(xs, "")
	}
	return strings.Join(xs[:len(xs)-1], ", ") + " or " + xs[len(xs)-1]
}

func (s *Server) listFlows(c echo.Context) error {
	p, err := pageParams(c)
	if err != nil {
		return err
	}
	// counts=false: a caller that wants names only skips the counting.
	counts, err := queryBool(c, "counts", true)
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	fs, next, err := s.cfg.Store.ListFlowsPage(ctx, p)
	if err != nil {
		return err
	}
	out := make([]flowListJSON, len(fs))
	ids := make([]string, len(fs))
	for i := range fs {
		out[i] = flowListJSON{flowJSON: toFlowJSON(&fs[i], false)}
		ids[i] = fs[i].ID
	}
	if counts {
		runs, err := s.cfg.Store.FlowRunCounts(ctx, ids)
		if err != nil {
			return err
		}
		trigs, err := s.cfg.Store.FlowTriggerCounts(ctx, ids)
		if err != nil {
			return err
		}
		for i := range out {
			rc := runs[ids[i]]
			out[i].RunCounts, out[i].RunCountsCapped, out[i].Triggers = rc.ByStatus, rc.Capped, trigs[ids[i]]
			if out[i].RunCountsCapped == nil {
				out[i].RunCountsCapped = []string{}
			}
		}
	}
	return c.JSON(http.StatusOK, map[string]any{"flows": out, "next_cursor": nextCursor(next)})
}

func (s *Server) getFlow(c echo.Context) error {
	id, err := s.pathUUID(c, "id", "flow")
	if err != nil {
		return err
	}
	f, err := s.cfg.Store.GetFlow(c.Request().Context(), id)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, toFlowJSON(f, true))
}

func (s *Server) updateFlow(c echo.Context) error {
	id, err := s.pathUUID(c, "id", "flow")
	if err != nil {
		return err
	}
	var raw map[string]json.RawMessage
	if err := bind(c, &raw); err != nil {
		return err
	}
	var b flowBody
	if err := bind2(raw, &b); err != nil {
		return err
	}
	p := store.UpdateFlowParams{}
	if b.Name != nil {
		n, err := newName(*b.Name)
		if err != nil {
			return err
		}
		p.Name = n
	}
	if bv, ok := raw["board_id"]; ok {
		if string(bv) == "null" {
			p.ClearBoard = true
		} else if b.BoardID == nil || !validUUID(*b.BoardID) {
			return badRequest("board_id must be a UUID or null")
		} else {
			p.BoardID = b.BoardID
		}
	}
	ctx := c.Request().Context()
	cur, err := s.cfg.Store.GetFlow(ctx, id)
	if err != nil {
		return err
	}
	board := cur.BoardID
	if p.ClearBoard {
		board = nil
	} else if p.BoardID != nil {
		board = p.BoardID
	}
	graph := b.Graph
	if len(graph) == 0 && (p.BoardID != nil || p.ClearBoard) {
		graph = engine.OrderGraphForms(cur.Graph) // re-check the current graph against the new board
	}
	if len(graph) > 0 {
		v, err := s.compileGraph(ctx, workspaceOf(c), graph, b.Message, board, id)
		if err != nil {
			return err
		}
		if len(b.Graph) > 0 {
			p.Version = v
		}
	}
	f, created, err := s.cfg.Store.UpdateFlow(c.Request().Context(), id, p)
	if err != nil {
		return err
	}
	out := toFlowJSON(f, true)
	out.VersionCreated = &created
	return c.JSON(http.StatusOK, out)
}

func bind2(raw map[string]json.RawMessage, v any) error {
	b, err := json.Marshal(raw)
	if err != nil {
		return badRequest("malformed body: " + err.Error())
	}
	if err := json.Unmarshal(b, v); err != nil {
		return badRequest("malformed body: " + err.Error())
	}
	return nil
}

// deleteRounds bounds how often a delete with cancel_runs cancels the
// runs going and tries again, when triggers keep starting new ones.
const deleteRounds = 5

// deleteFlow deletes a flow. While runs of it are going it answers 409
// flow_busy, unless cancel_runs=true: then it cancels them (as POST
// /runs/{id}/cancel does; the caller's role must allow that too) and
// deletes. A run a trigger starts meanwhile is cancelled in the next round.
func (s *Server) deleteFlow(c echo.Context) error {
	id, err := s.pathUUID(c, "id", "flow")
	if err != nil {
		return err
	}
	cancel, err := queryBool(c, "cancel_runs", false)
	if err != nil {
		return err
	}
	if p := principalOf(c); cancel && p != nil && !accessRules["POST /api/v1/runs/:id/cancel"].allows(p.Role()) {
		return forbidden("forbidden", "role "+p.Role()+" may not cancel runs: delete without cancel_runs once they have ended, or ask an operator")
	}
	ctx := c.Request().Context()
	cancelled := 0
	for round := 0; ; round++ {
		err := s.cfg.Store.DeleteFlow(ctx, id)
		var busy *store.FlowBusyError
		switch {
		case err == nil:
			if cancelled > 0 {
				c.Set(auditDetailsKey, map[string]any{"cancelled_runs": cancelled})
			}
			return c.NoContent(http.StatusNoContent)
		case !errors.As(err, &busy):
			return err
		case !cancel || round == deleteRounds:
			return &apiError{Status: http.StatusConflict, Code: "flow_busy", Message: busy.Error(),
				Details: map[string]int{"running": busy.Running, "paused": busy.Paused, "queued": busy.Queued}}
		}
		n, err := s.cancelFlowRuns(ctx, id)
		cancelled += n
		if err != nil {
			return err
		}
	}
}

// cancelFlowRuns cancels every run of a flow still going, and says how
// many it cancelled.
func (s *Server) cancelFlowRuns(ctx context.Context, flowID string) (int, error) {
	n := 0
	for {
		ids, err := s.cfg.Store.GoingFlowRuns(ctx, flowID, 500)
		if err != nil {
			return n, err
		}
		if len(ids) == 0 {
			return n, nil
		}
		before := n
		for _, runID := range ids {
			_, err := s.cfg.Engine.CancelRun(ctx, runID)
			switch {
			case err == nil:
				n++
			case errors.Is(err, engine.ErrConflict):
				// It ended meanwhile.
			default:
				return n, fmt.Errorf("error cancelling run %s of flow %s: %w", runID, flowID, err)
			}
		}
		if n == before {
			return n, nil // what is left is for the caller's next round
		}
	}
}

func (s *Server) listVersions(c echo.Context) error {
	id, err := s.pathUUID(c, "id", "flow")
	if err != nil {
		return err
	}
	p, err := pageParams(c)
	if err != nil {
		return err
	}
	vs, next, err := s.cfg.Store.ListVersionsPage(c.Request().Context(), id, p)
	if err != nil {
		return err
	}
	type vj struct {
		ID        string    `json:"id"`
		Number    int       `json:"number"`
		Message   string    `json:"message"`
		CreatedAt time.Time `json:"created_at"`
	}
	out := make([]vj, len(vs))
	for i, v := range vs {
		out[i] = vj{v.ID, v.Number, v.Message, v.CreatedAt}
	}
	return c.JSON(http.StatusOK, map[string]any{"versions": out, "next_cursor": nextCursor(next)})
}

func (s *Server) getVersion(c echo.Context) error {
	id, err := s.pathUUID(c, "id", "flow")
	if err != nil {
		return err
	}
	n, err := strconv.Atoi(c.Param("number"))
	if err != nil || n < 1 {
		return errorf(http.StatusNotFound, "not_found", "version "+c.Param("number")+" not found")
	}
	v, err := s.cfg.Store.GetVersion(c.Request().Context(), id, n)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, map[string]any{"id": v.ID, "number": v.Number, "message": v.Message,
		"graph": engine.OrderGraphForms(v.Graph), "execution_graph": v.Execution, "created_at": v.CreatedAt})
}
