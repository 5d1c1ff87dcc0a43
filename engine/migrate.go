package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
)

// EventRunMigrated is recorded when an operator moved a run to another version of its flow.
const EventRunMigrated = "run.migrated"

// MigrateParams moves a run to another version of its flow.
type MigrateParams struct {
	RunID, FlowID string
	// VersionID and Version are the target version (of FlowID).
	VersionID string
	Version   int
	By        string
}

// MissingNodesError refuses a migration: nodes the run has started are
// not in the target version as they were (missing, of another type, or in
// another parallel region). It wraps ErrConflict.
type MissingNodesError struct {
	Nodes []string
}

func (e *MissingNodesError) Error() string {
	return fmt.Sprintf("the target version lacks nodes this run has started: %s", strings.Join(e.Nodes, ", "))
}

func (e *MissingNodesError) Unwrap() error { return ErrConflict }

// MigrateRun moves a running, paused or failed run to another version of
// its flow, when every node it has started is in that version with the
// same type and parallel region (else a *MissingNodesError). Its static
// nodes are set to the target's: a node the target lacks is dropped if it
// never started, a node it adds is created pending, and every pending node
// counts again the upstream nodes (of the target) that are not done; those
// with none left fire (or are skipped) in the same transaction, as after a
// resume. Fanned-out regions keep their instances. Node rows whose work is
// done keep their results.
func (e *Engine) MigrateRun(ctx context.Context, p MigrateParams) error {
	g, err := e.Graph(ctx, p.VersionID)
	if err != nil {
		return err
	}
	return e.submitAlone(ctx, p.RunID, func(t *txn) error {
		if err := t.load(p.RunID); err != nil {
			return err
		}
		if t.run.FlowID != p.FlowID {
			return fmt.Errorf("version %s is not of run %s's flow: %w", p.VersionID, p.RunID, ErrNotFound)
		}
		if err := t.refuseWhileDeferred("migrated"); err != nil {
			return err
		}
		if err := t.refuseCompensated("", "migrated"); err != nil {
			return err
		}
		switch t.run.Status {
		case RunRunning, RunPaused, RunFailed:
		default:
			return fmt.Errorf("%w: run %s is %s; only a running, paused or failed run is migrated", ErrConflict, p.RunID, t.run.Status)
		}
		if t.run.FlowVersionID == p.VersionID {
			return fmt.Errorf("%w: run %s is on version %d already", ErrConflict, p.RunID, p.Version)
		}
		from := t.graph
		started, err := t.tx.StartedNodeIDs(t.ctx, p.RunID)
		if err != nil {
			return fmt.Errorf("error listing the started nodes of run %s: %w", p.RunID, err)
		}
		var missing []string
		for _, id := range started {
			old, now := from.Nodes[id], g.Nodes[id]
			if now == nil || old == nil || now.Type != old.Type || now.Region != old.Region || now.Depth != old.Depth {
				missing = append(missing, id)
			}
		}
		if len(missing) > 0 {
			slices.Sort(missing)
			return &MissingNodesError{Nodes: missing}
		}
		// A node the target adds inside a region that has fanned out would
		// need an instance per item: refused too.
		for id, n := range g.Nodes {
			if n.Depth > 0 && from.Nodes[id] == nil && slices.Contains(started, n.Region) {
				return fmt.Errorf("%w: the target version adds node %s to the parallel region of %s, which has fanned out",
					ErrConflict, id, n.Region)
			}
		}
		var gone []string
		for id := range from.Nodes {
			if g.Nodes[id] == nil {
				gone = append(gone, id)
			}
		}
		if err := t.w.DeletePendingNodes(p.RunID, gone); err != nil {
			return fmt.Errorf("error dropping the nodes version %d lacks: %w", p.Version, err)
		}
		statics := sortedStatic(g)
		states, err := t.tx.NodeStates(t.ctx, p.RunID, statics)
		if err != nil {
			return err
		}
		var added []NodeState
		for _, id := range statics {
			if states[id] == nil {
				added = append(added, NodeState{Key: id, NodeID: id, Type: g.Nodes[id].Type, Index: []int{}, Status: StatusPending})
			}
		}
		if err := t.w.InsertNodes(p.RunID, added); err != nil {
			return fmt.Errorf("error adding the nodes of version %d: %w", p.Version, err)
		}
		if err := t.w.SetRunVersion(p.RunID, p.VersionID); err != nil {
			return err
		}
		// Edges of the old version counted as not taken may not be the new
		// one's: a region's rows keep their pending count, so the count of
		// edges not taken starts again from none (an undercount, which
		// readyDecided reads only as a reason to read the upstream rows).
		if err := t.w.ResetUntaken(p.RunID); err != nil {
			return err
		}
		t.event(EventRunMigrated, "", map[string]any{"from_version_id": t.run.FlowVersionID, "to_version_id": p.VersionID,
			"version": p.Version, "by": p.By, "added": len(added), "dropped": len(gone)})
		t.run.FlowVersionID = p.VersionID
		t.setRun(t.run, g)
		t.run.TerminalsLeft = 0
		done := func(st *NodeState) bool {
			return st != nil && (st.Status == StatusCompleted || st.Status == StatusSkipped ||
				(st.Status == StatusFailed && st.Taken != nil))
		}
		for _, id := range statics {
			st := states[id]
			if len(g.Adjacency[id]) == 0 && !done(st) {
				t.run.TerminalsLeft++
			}
			if st != nil && st.Status != StatusPending {
				continue
			}
			n := g.Nodes[id]
			left := 0
			switch {
			case n.Caps.Collects && st != nil:
				left = st.PendingParents // items, not parents
			case n.Caps.Collects:
				left = len(g.Upstream[id]) // as at a run's start: armed when its Splitter fans out
			default:
				for _, u := range g.Upstream[id] {
					if un := g.Nodes[u]; un.Depth == 0 && !done(states[u]) {
						left++
					}
				}
				if g.joinAny(n) && left < len(g.Upstream[id]) {
					left = 0 // an upstream node is done: the join settles from its rows
				}
			}
			if err := t.w.SetPending(p.RunID, id, left); err != nil {
				return err
			}
		}
		if t.run.Status == RunPaused {
			return nil // the resume fires what is ready
		}
		return t.fireReadyNodes()
	})
}

// fireReadyNodes fires (or skips, when no inbound edge was taken) every
// pending node of the run whose count reached zero, and retries failed
// Collectors whose items all arrived.
func (t *txn) fireReadyNodes() error {
	ready, err := t.tx.ReadyNodes(t.ctx, t.run.ID)
	if err != nil {
		return fmt.Errorf("error finding the ready nodes of run %s: %w", t.run.ID, err)
	}
	for _, st := range ready {
		n := t.graph.Nodes[st.NodeID]
		if n == nil {
			return fmt.Errorf("node %s is not in the run's graph: %w", st.NodeID, ErrNotFound)
		}
		if t.cancelledByJoin(st.Key) {
			continue // a join fired before it cancelled its branch
		}
		tg := target{node: n, idx: st.Index, key: st.Key}
		outputs := map[string]json.RawMessage{}
		if t.graph.joinAny(n) && st.Status == StatusPending {
			err = t.joinDecided(tg, outputs)
		} else if t.graph.MaySkip[n.ID] && !n.Caps.Collects {
			err = t.readyDecided(tg, Pending{Status: StatusPending}, "", nil, outputs)
		} else {
			// A failed Collector whose items arrived fires again.
			err = t.fireReady(tg, st.Status, outputs)
		}
		if err != nil {
			return err
		}
	}
	return nil
}
