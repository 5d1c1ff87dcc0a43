package compiler

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"

	"github.com/stitchd/stitchd/engine"
	"github.com/tidwall/gjson"
)

// CodeInvalidSubFlow is reported when a SubFlow node names a flow or version that does not
// exist, or a flow that (through pinned versions) contains the flow being
// saved.
const CodeInvalidSubFlow = "invalid_subflow"

// maxSubFlowRef bounds a SubFlow node's flow reference (an id or a name).
const maxSubFlowRef = 200

// checkSubFlow checks a SubFlow node's data: flow (an id or a name),
// version (a whole number ≥ 1, or "latest", the default), passEntity (a
// bool). Whether they exist is LinkSubFlows' question.
func (c *compiler) checkSubFlow(id string, base loc, root gjson.Result) {
	if f := root.Get("flow"); f.Type != gjson.String || strings.TrimSpace(f.Str) == "" || len(f.Str) > maxSubFlowRef {
		c.errAt(CodeInvalidSubFlow, id, "", base.field("flow"), "SubFlow node %q needs a flow: the id or the name of the flow to run (1 to %d characters)", id, maxSubFlowRef)
	}
	if _, ok := subFlowVersion(root.Get("version")); !ok {
		c.errAt(CodeInvalidSubFlow, id, "", base.field("version"), "SubFlow node %q: version must be a version number (1, 2, …) or \"latest\"", id)
	}
	if p := root.Get("passEntity"); present(p) && p.Type != gjson.True && p.Type != gjson.False {
		c.errAt(CodeInvalidConfig, id, "", base.field("passEntity"), "SubFlow node %q: passEntity must be true or false", id)
	}
}

// subFlowVersion reads a SubFlow node's version: 0 for "latest" (or none).
func subFlowVersion(r gjson.Result) (int, bool) {
	switch {
	case !present(r), r.Type == gjson.String && r.Str == "latest":
		return 0, true
	case r.Type == gjson.Number:
		n, ok := integer(r)
		if !ok || n < 1 || n > math.MaxInt32 {
			return 0, false
		}
		return int(n), true
	}
	return 0, false
}

// SubFlowResolver finds the flows SubFlow nodes name (the store).
type SubFlowResolver interface {
	// ResolveSubFlow finds flow ref (an id, else a name) at version (0:
	// its latest); engine.ErrNotFound when there is no such flow or
	// version.
	ResolveSubFlow(ctx context.Context, ref string, version int) (engine.SubFlowTarget, error)
	// ExecutionGraph is a saved version's execution graph.
	ExecutionGraph(ctx context.Context, versionID string) (*engine.ExecutionGraph, error)
}

// LinkSubFlows pins the flow version each SubFlow node of g runs (set on
// the node: engine.Node.SubFlow), "latest" resolved now, so that a running
// parent never sees its child's flow move. It refuses a sub-flow that
// does not exist, or whose pinned versions (followed down every level)
// run flow self: a flow containing itself would start runs without end.
// self is the saved flow's id ("" for a new flow, which nothing can
// contain yet). Problems come back as *Error; other errors (the database)
// as they are.
func LinkSubFlows(ctx context.Context, v VisualGraph, g *engine.ExecutionGraph, self string, r SubFlowResolver) error {
	var problems []engine.Problem
	for vi, vn := range v.Nodes {
		n := g.Nodes[vn.ID]
		if n == nil || n.Type != engine.NodeTypeSubFlow {
			continue
		}
		root := gjson.ParseBytes(n.Config)
		ref := root.Get("flow").Str
		version, _ := subFlowVersion(root.Get("version"))
		at := nodeLoc(vi).field("data").field("flow")
		target, err := r.ResolveSubFlow(ctx, ref, version)
		if errors.Is(err, engine.ErrNotFound) {
			msg := fmt.Sprintf("SubFlow node %q: there is no flow %q", n.ID, ref)
			if version > 0 {
				at = nodeLoc(vi).field("data").field("version")
				msg = fmt.Sprintf("SubFlow node %q: flow %q has no version %d (or does not exist)", n.ID, ref, version)
			}
			problems = append(problems, engine.Problem{Code: CodeInvalidSubFlow, NodeID: n.ID, Path: at.String(), Message: msg})
			continue
		}
		if errors.Is(err, engine.ErrConflict) {
			problems = append(problems, engine.Problem{Code: CodeInvalidSubFlow, NodeID: n.ID, Path: at.String(),
				Message: fmt.Sprintf("SubFlow node %q: %s", n.ID, strings.TrimPrefix(err.Error(), engine.ErrConflict.Error()+": "))})
			continue
		}
		if err != nil {
			return fmt.Errorf("error resolving the sub-flow of node %s: %w", n.ID, err)
		}
		if target.FlowID == self && self != "" {
			problems = append(problems, engine.Problem{Code: CodeInvalidSubFlow, NodeID: n.ID, Path: at.String(),
				Message: fmt.Sprintf("SubFlow node %q runs this flow itself: a flow cannot contain itself", n.ID)})
			continue
		}
		if self != "" {
			path, err := containing(ctx, r, target, self, map[string]bool{})
			if err != nil {
				return err
			}
			if path != nil {
				problems = append(problems, engine.Problem{Code: CodeInvalidSubFlow, NodeID: n.ID, Path: at.String(),
					Message: fmt.Sprintf("SubFlow node %q: %s runs this flow again (%s): a flow cannot contain itself",
						n.ID, describe(target), strings.Join(path, " → "))})
				continue
			}
		}
		t := target
		n.SubFlow = &t
	}
	if len(problems) > 0 {
		return &Error{Problems: problems}
	}
	return nil
}

// containing returns the chain of pinned versions from t down to one that
// runs flow self, or nil when none does.
func containing(ctx context.Context, r SubFlowResolver, t engine.SubFlowTarget, self string, seen map[string]bool) ([]string, error) {
	if seen[t.VersionID] {
		return nil, nil
	}
	seen[t.VersionID] = true
	g, err := r.ExecutionGraph(ctx, t.VersionID)
	if err != nil {
		return nil, fmt.Errorf("error loading version %d of flow %s: %w", t.Version, t.FlowID, err)
	}
	for _, id := range sortedIDs(g) {
		child := g.Nodes[id].SubFlow
		if child == nil {
			continue
		}
		if child.FlowID == self {
			return []string{describe(t), describe(*child)}, nil
		}
		path, err := containing(ctx, r, *child, self, seen)
		if err != nil {
			return nil, err
		}
		if path != nil {
			return append([]string{describe(t)}, path...), nil
		}
	}
	return nil, nil
}

func describe(t engine.SubFlowTarget) string {
	return fmt.Sprintf("%q v%d", t.FlowName, t.Version)
}

func sortedIDs(g *engine.ExecutionGraph) []string { return slices.Sorted(maps.Keys(g.Nodes)) }
