package web

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"sort"

	"github.com/tidwall/gjson"

	"github.com/stitchd/stitchd/engine"
	"github.com/stitchd/stitchd/store"
)

// Codes of a run refused for its entity's board (422).
const (
	codeEntityBoard    = "entity_board_mismatch"
	codeUnknownSection = "unknown_section"
)

// entityBoardCheck is a run about to start with an entity.
type entityBoardCheck struct {
	// FlowBoardID is the flow's board (nil: none).
	FlowBoardID *string
	// EntityBoardID is the board the entity is (or will be) on.
	EntityBoardID string
	// Workspace is the flow's: the entity's board must be of it.
	Workspace string
	// Execution is the execution graph of the version the run is pinned to.
	Execution json.RawMessage
	// NotFound is the 400's message for a board of another workspace: the
	// same as for an entity or board that does not exist, which it is
	// here (docs/workspaces.md).
	NotFound string
}

// checkEntityBoard refuses a board of another workspace as one that does
// not exist (400 NotFound), and (422) a run that would leave its entity in a
// section its board does not have: an entity on another board than the
// flow's, or a flow (without a board, so not checked when saved) whose
// nodes move entities to sections the entity's board lacks. An entity
// never changes board and sections are never removed, so what holds here
// holds when the nodes move it.
func (s *Server) checkEntityBoard(ctx context.Context, p entityBoardCheck) error {
	owner, err := s.cfg.Store.WorkspaceOf(ctx, store.OwnerBoard, p.EntityBoardID)
	if err != nil {
		return err
	}
	if owner != p.Workspace {
		return badRequest(p.NotFound)
	}
	if p.FlowBoardID != nil && *p.FlowBoardID != p.EntityBoardID {
		return &apiError{Status: http.StatusUnprocessableEntity, Code: codeEntityBoard,
			Message: "the entity is on board " + p.EntityBoardID + ", the flow's board is " + *p.FlowBoardID}
	}
	targets := movementTargets(p.Execution)
	if len(targets) == 0 {
		return nil
	}
	secs, err := s.cfg.Store.BoardSections(ctx, p.EntityBoardID)
	if err != nil {
		return err
	}
	var problems []engine.Problem
	for _, t := range targets {
		if !slices.Contains(secs, t.section) {
			problems = append(problems, engine.Problem{Code: codeUnknownSection, NodeID: t.node, Path: t.path,
				Message: "node " + t.node + " moves the entity to section " + t.section + ", which its board does not have"})
		}
	}
	if len(problems) == 0 {
		return nil
	}
	return &apiError{Status: http.StatusUnprocessableEntity, Code: codeUnknownSection,
		Message: "the flow moves the entity to sections its board " + p.EntityBoardID + " does not have", Details: problems}
}

// movementTarget is one entityMovement targetSectionId of a node.
type movementTarget struct{ node, path, section string }

// movementTargets lists the sections an execution graph's nodes move
// entities to (entityMovement onSuccess, onFailure, onOutcome.*), by node
// and path.
func movementTargets(exec json.RawMessage) []movementTarget {
	var out []movementTarget
	gjson.GetBytes(exec, "nodes").ForEach(func(id, n gjson.Result) bool {
		m := n.Get("config.entityMovement")
		add := func(path string, mv gjson.Result) {
			if t := mv.Get("targetSectionId"); t.Type == gjson.String && t.Str != "" {
				out = append(out, movementTarget{node: id.Str, path: "entityMovement." + path + ".targetSectionId", section: t.Str})
			}
		}
		add("onSuccess", m.Get("onSuccess"))
		add("onFailure", m.Get("onFailure"))
		m.Get("onOutcome").ForEach(func(k, v gjson.Result) bool {
			add("onOutcome."+k.Str, v)
			return true
		})
		return true
	})
	sort.Slice(out, func(i, j int) bool {
		if out[i].node != out[j].node {
			return out[i].node < out[j].node
		}
		return out[i].path < out[j].path
	})
	return out
}

// entityExists maps store.ErrEntityExists (an unauthenticated hook naming
// an existing entity) onto 409.
func entityExists(err error) error {
	if errors.Is(err, store.ErrEntityExists) {
		return errorf(http.StatusConflict, "entity_exists", "an entity with this email is already on the board: "+
			"a trigger without a secret only creates entities; give the trigger a secret to update them")
	}
	return err
}
