package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
)

// Human tasks (docs/approvals.md): a UX node waiting for a person may be
// claimed by one of those who may decide it — while claimed, only the
// claimer (or someone they delegated to, or an admin) decides it —
// reassigned to other people and groups, and delegated by its claimer to
// someone deciding on their behalf. A claim belongs to the node's attempt:
// it ends when the node is decided, times out, is retried or rerun (a new
// attempt) or the run is cancelled (the node no longer waits), and when
// the claimer (or their delegate) has voted at an N-of-M node.

// Events of human tasks.
const (
	EventNodeClaimed    = "node.claimed"
	EventNodeUnclaimed  = "node.unclaimed"
	EventNodeReassigned = "node.reassigned"
	EventNodeDelegated  = "node.delegated"
	// EventDecidedFor is recorded when a delegate decided on a claimer's
	// behalf.
	EventDecidedFor = "approval.decided_for"
)

// ErrClaimed is the error of a node claimed by someone else. It is a conflict
// (errors.Is(err, ErrConflict)).
var ErrClaimed error = claimedError{}

type claimedError struct{}

func (claimedError) Error() string        { return "claimed" }
func (claimedError) Is(target error) bool { return target == ErrConflict }

// TaskParams names a waiting UX node and who acts on it.
type TaskParams struct {
	RunID, Key string
	// Actor is the person acting (nil: the admin token, which may do
	// anything but claim).
	Actor *Actor
}

// ReassignParams replaces whom a waiting UX node is assigned to.
type ReassignParams struct {
	TaskParams
	Assignees Assignees
	Comment   string
}

// DelegateParams lets To decide a claimed UX node on its claimer's behalf.
type DelegateParams struct {
	TaskParams
	To string
}

// personsNode loads run runID, locking it, and its node key, which must
// be one a person decides.
func (t *txn) personsNode(runID, key string) (*NodeState, error) {
	if err := t.load(runID); err != nil {
		return nil, err
	}
	cur, err := t.tx.Node(t.ctx, runID, key)
	if err != nil {
		return nil, err
	}
	if !t.e.caps[cur.Type].WaitsForPerson {
		return nil, fmt.Errorf("%w: node %s is a %s node, which no person decides", ErrInvalidRequest, key, cur.Type)
	}
	return cur, nil
}

// onTask runs fn under the run's lock on UX node p.Key of run p.RunID,
// which must be waiting for a person; claim is its current claim (nil:
// none).
func (e *Engine) onTask(ctx context.Context, p TaskParams, fn func(t *txn, n *Node, cur *NodeState, claim *Claim) error) error {
	return e.submit(ctx, p.RunID, func(t *txn) error {
		cur, err := t.personsNode(p.RunID, p.Key)
		if err != nil {
			return err
		}
		if cur.Status != StatusWaitingForUser {
			return fmt.Errorf("%w: step %s of run %s is %s, not waiting for a person", ErrConflict, p.Key, p.RunID, cur.Status)
		}
		n := t.graph.Nodes[cur.NodeID]
		if n == nil {
			return fmt.Errorf("node %s is not in the run's graph: %w", cur.NodeID, ErrNotFound)
		}
		claim, err := t.tx.Claim(t.ctx, p.RunID, p.Key)
		if err != nil {
			return fmt.Errorf("error loading the claim of %s: %w", p.Key, err)
		}
		return fn(t, n, cur, claim)
	})
}

// person checks that a is a person with an email.
func person(a *Actor, what string) error {
	if a == nil || strings.TrimSpace(a.Email) == "" {
		return fmt.Errorf("%w: %s needs a person with an email", ErrInvalidRequest, what)
	}
	return nil
}

// ClaimUX claims a waiting UX node for p.Actor, who must be allowed to
// decide it. Claiming a node one holds already answers the claim; one
// claimed by someone else is ErrClaimed.
func (e *Engine) ClaimUX(ctx context.Context, p TaskParams) (*Claim, error) {
	var out *Claim
	err := e.onTask(ctx, p, func(t *txn, n *Node, cur *NodeState, claim *Claim) error {
		if err := person(p.Actor, "a claim"); err != nil {
			return err
		}
		if claim != nil {
			if strings.EqualFold(claim.By, p.Actor.Email) {
				out = claim
				return nil
			}
			return claimedBy(cur, t.run.ID, claim)
		}
		if err := t.mayAct(cur, p.Actor, UXPeopleOf(n)); err != nil {
			return err
		}
		c := &Claim{By: strings.ToLower(p.Actor.Email), At: t.e.cfg.Clock.Now().UTC()}
		if err := t.w.SetClaim(t.run.ID, cur.Key, cur.Attempt, c); err != nil {
			return fmt.Errorf("error claiming %s: %w", cur.Key, err)
		}
		t.event(EventNodeClaimed, cur.Key, map[string]any{"attempt": cur.Attempt, "by": c.By})
		out = c
		return nil
	})
	return out, err
}

func claimedBy(cur *NodeState, runID string, c *Claim) error {
	return fmt.Errorf("%w: step %s of run %s is claimed by %s", ErrClaimed, cur.Key, runID, c.By)
}

// UnclaimUX ends the claim of a waiting UX node: by its claimer, a
// manager (an operator or an admin) or the admin token. A node not
// claimed is left as it is.
func (e *Engine) UnclaimUX(ctx context.Context, p TaskParams) error {
	return e.onTask(ctx, p, func(t *txn, _ *Node, cur *NodeState, claim *Claim) error {
		if claim == nil {
			return nil
		}
		if !p.Actor.Manages() && !strings.EqualFold(claim.By, p.Actor.Email) {
			return fmt.Errorf("%w: step %s of run %s is claimed by %s; only they, an operator or an admin may unclaim it",
				ErrForbidden, cur.Key, t.run.ID, claim.By)
		}
		if err := t.w.SetClaim(t.run.ID, cur.Key, cur.Attempt, nil); err != nil {
			return fmt.Errorf("error unclaiming %s: %w", cur.Key, err)
		}
		t.event(EventNodeUnclaimed, cur.Key, map[string]any{"attempt": cur.Attempt, "by": p.Actor.Name(),
			"claimed_by": claim.By})
		return nil
	})
}

// ReassignUX replaces whom a waiting UX node's attempt is assigned to (the
// new assignees, checked and normalized, are returned), and ends its claim: by a manager (an operator or an admin), the admin token,
// or the claimer.
func (e *Engine) ReassignUX(ctx context.Context, p ReassignParams) (*Assignees, error) {
	users := make([]any, len(p.Assignees.Users))
	for i, u := range p.Assignees.Users {
		users[i] = u
	}
	groups := make([]any, len(p.Assignees.Groups))
	for i, g := range p.Assignees.Groups {
		groups[i] = g
	}
	a, err := AssigneesOf(map[string]any{"users": users, "groups": groups})
	if err != nil {
		return nil, fmt.Errorf("%w: the reassignment %s", ErrInvalidRequest, err)
	}
	return a, e.onTask(ctx, p.TaskParams, func(t *txn, _ *Node, cur *NodeState, claim *Claim) error {
		if !p.Actor.Manages() && (claim == nil || !strings.EqualFold(claim.By, p.Actor.Email)) {
			return fmt.Errorf("%w: only an operator, an admin or the step's claimer may reassign step %s of run %s",
				ErrForbidden, cur.Key, t.run.ID)
		}
		if err := t.w.Reassign(t.run.ID, cur.Key, cur.Attempt, a); err != nil {
			return fmt.Errorf("error reassigning %s: %w", cur.Key, err)
		}
		ev := map[string]any{"attempt": cur.Attempt, "by": p.Actor.Name(), "assignees": a, "comment": p.Comment}
		if claim != nil {
			ev["claimed_by"] = claim.By
		}
		t.event(EventNodeReassigned, cur.Key, ev)
		return t.taskJourney(JourneyReassigned, cur.Key, p.Actor.Name(), p.Comment, map[string]any{"assignees": a})
	})
}

// DelegateUX lets p.To decide a UX node claimed by p.Actor on their
// behalf (its decision records by p.To, for the claimer). Only the
// claimer delegates; delegating again replaces the delegate.
func (e *Engine) DelegateUX(ctx context.Context, p DelegateParams) (*Claim, error) {
	if err := person(p.Actor, "delegating"); err != nil {
		return nil, err
	}
	to := strings.ToLower(strings.TrimSpace(p.To))
	if err := CheckEmail(to); err != nil {
		return nil, fmt.Errorf("%w: user: %s", ErrInvalidRequest, err)
	}
	if strings.EqualFold(to, p.Actor.Email) {
		return nil, fmt.Errorf("%w: one does not delegate to oneself", ErrInvalidRequest)
	}
	var out *Claim
	err := e.onTask(ctx, p.TaskParams, func(t *txn, _ *Node, cur *NodeState, claim *Claim) error {
		if claim == nil || !strings.EqualFold(claim.By, p.Actor.Email) {
			return fmt.Errorf("%w: only the claimer of step %s of run %s may delegate it; claim it first", ErrForbidden,
				cur.Key, t.run.ID)
		}
		c := *claim
		c.Delegate = to
		if err := t.w.SetClaim(t.run.ID, cur.Key, cur.Attempt, &c); err != nil {
			return fmt.Errorf("error delegating %s: %w", cur.Key, err)
		}
		t.event(EventNodeDelegated, cur.Key, map[string]any{"attempt": cur.Attempt, "by": claim.By, "to": to})
		out = &c
		return t.taskJourney(JourneyDelegated, cur.Key, claim.By, "", map[string]any{"to": to})
	})
	return out, err
}

// taskJourney records, in the journey of the run's entity (if it has
// one), what became of a task without moving the entity: kind
// (JourneyReassigned, …), by whom, their comment, and details ({"to"},
// {"assignees"}).
func (t *txn) taskJourney(kind, key, by, comment string, details map[string]any) error {
	if t.run.EntityID == nil {
		return nil
	}
	d, err := json.Marshal(details)
	if err != nil {
		return fmt.Errorf("error encoding a journey entry: %w", err)
	}
	return t.moveEntity(EntityMove{Kind: kind, NodeKey: key, Actor: by, Comment: comment, Details: d})
}

// EventNodeEscalated is recorded when a UX node still waiting was
// reassigned by its data.escalation.
const EventNodeEscalated = "node.escalated"

// Escalation is one step of a UX node's data.escalation: once the node has
// waited AfterSeconds, it is reassigned to Assignees ({users, groups}).
type Escalation struct {
	AfterSeconds int             `json:"afterSeconds"`
	Assignees    json.RawMessage `json:"assignees"`
}

// uxEscalations reads a UX node's data.escalation (the compiler checked
// it: ascending afterSeconds, static assignees).
func uxEscalations(n *Node) []Escalation {
	var cfg struct {
		Escalation []Escalation `json:"escalation"`
	}
	if len(n.Config) > 0 {
		_ = json.Unmarshal(n.Config, &cfg)
	}
	return cfg.Escalation
}

// firstEscalation is when a UX node's first escalation falls due, in
// seconds from when it starts waiting (0: it has none).
func firstEscalation(n *Node) int {
	if !n.Caps.WaitsForPerson {
		return 0
	}
	if es := uxEscalations(n); len(es) > 0 {
		return max(es[0].AfterSeconds, 1)
	}
	return 0
}

// EscalateApproval reassigns a UX node still waiting for a person when its
// next escalation fell due: its assignees are replaced by the
// escalation's (and its claim ends), a node.escalated event and an
// approval.requested notification to the new assignees, and the next
// escalation is set as far ahead as its afterSeconds is after this one's.
// A node no longer waiting that attempt is left alone.
func (e *Engine) EscalateApproval(ctx context.Context, runID, key string, attempt int) error {
	return e.whileIn(ctx, runID, key, attempt, StatusWaitingForUser, func(t *txn, n *Node, _ *NodeState) error {
		es := uxEscalations(n)
		step, err := t.tx.EscalationStep(t.ctx, runID, key)
		if err != nil {
			return fmt.Errorf("error loading the escalation of %s: %w", key, err)
		}
		if step >= len(es) {
			return t.w.SetEscalation(runID, key, step, 0)
		}
		v, err := decodeJSON(es[step].Assignees)
		if err != nil {
			return err
		}
		a, err := AssigneesOf(v)
		if err != nil {
			return fmt.Errorf("escalation %d of node %s: %w", step, key, err)
		}
		if err := t.w.Reassign(runID, key, attempt, a); err != nil {
			return fmt.Errorf("error escalating %s: %w", key, err)
		}
		t.event(EventNodeEscalated, key, map[string]any{"attempt": attempt, "step": step, "assignees": a,
			"after_seconds": es[step].AfterSeconds})
		t.notifyApproval(NotifyApprovalRequested, n, key, attempt, map[string]any{"assignees": a, "escalated": true})
		next := 0
		if step+1 < len(es) {
			next = max(es[step+1].AfterSeconds-es[step].AfterSeconds, 1)
		}
		if err := t.w.SetEscalation(runID, key, step+1, next); err != nil {
			return fmt.Errorf("error setting the next escalation of %s: %w", key, err)
		}
		return t.taskJourney(JourneyEscalated, key, "", "", map[string]any{"assignees": a,
			"after_seconds": es[step].AfterSeconds})
	})
}
