package engine

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
)

// Assignment and decisions (README, Approvals): a UX node may be assigned
// to people and groups (data.assignees: static, or an expression over its
// input evaluated when it starts waiting), may need requiredApprovals
// distinct people to choose the same outcome before it completes
// (rejectPolicy says whether one rejecting vote is enough), and may refuse
// a decision by the person who started the run (separationOfDuties). Each
// person's vote is a row of ux_decisions, keyed by the node's attempt, so
// a retried node starts with none.

// Reject policies: with "any", one vote for an outcome that does not
// complete the node (reject) decides it; with "majority" such an outcome
// needs requiredApprovals votes too.
const (
	RejectAny      = "any"
	RejectMajority = "majority"
)

// EventApprovalVote is recorded when a person voted at an N-of-M UX node
// (requiredApprovals > 1); the node keeps waiting unless the vote decided.
const EventApprovalVote = "approval.vote"

// UXPeople is what a UX node's data says about who decides it.
type UXPeople struct {
	// Assignees is data.assignees as written: an object {users, groups},
	// or a string (an expression), or nothing.
	Assignees          json.RawMessage `json:"assignees"`
	RequiredApprovals  int             `json:"requiredApprovals"`
	RejectPolicy       string          `json:"rejectPolicy"`
	SeparationOfDuties bool            `json:"separationOfDuties"`
}

// UXPeopleOf reads a UX node's people settings, with their defaults
// (requiredApprovals 1, rejectPolicy any).
func UXPeopleOf(n *Node) UXPeople {
	var p UXPeople
	if len(n.Config) > 0 {
		_ = json.Unmarshal(n.Config, &p) // the compiler checked it
	}
	if p.RequiredApprovals < 1 {
		p.RequiredApprovals = 1
	}
	if p.RejectPolicy == "" {
		p.RejectPolicy = RejectAny
	}
	return p
}

// Assigned reports whether the node names assignees.
func (p UXPeople) Assigned() bool {
	a := strings.TrimSpace(string(p.Assignees))
	return a != "" && a != "null"
}

// expression returns the assignees expression, if assignees is one.
func (p UXPeople) expression() (string, bool) {
	var src string
	if json.Unmarshal(p.Assignees, &src) != nil {
		return "", false
	}
	return src, true
}

// Limits of assignees.
const (
	MaxAssignees   = 1000
	maxEmailLen    = 320
	maxGroupLen    = 200
	maxRequiredVal = 1000
)

// MaxRequiredApprovals bounds requiredApprovals.
const MaxRequiredApprovals = maxRequiredVal

// AssigneesOf reads assignees from a value: an email, a list of emails, or
// an object {users: email or [emails], groups: name or [names]}. Emails
// are trimmed and lowered, repeats dropped. The error says what was wrong
// for the person who wrote the flow.
func AssigneesOf(v any) (*Assignees, error) {
	a := &Assignees{Users: []string{}, Groups: []string{}}
	var err error
	switch x := v.(type) {
	case string, []any, []string:
		a.Users, err = names(x, "the value", CheckEmail, true)
	case map[string]any:
		for k, e := range x {
			switch k {
			case "users":
				a.Users, err = names(e, "users", CheckEmail, true)
			case "groups":
				a.Groups, err = names(e, "groups", CheckGroup, false)
			default:
				err = fmt.Errorf("has %q: only users and groups are allowed", k)
			}
			if err != nil {
				return nil, err
			}
		}
	default:
		return nil, fmt.Errorf("gave %s, not an email, a list of emails or {users, groups}", describe(v))
	}
	if err != nil {
		return nil, err
	}
	if len(a.Users) == 0 && len(a.Groups) == 0 {
		return nil, fmt.Errorf("names no one (no users and no groups)")
	}
	if len(a.Users)+len(a.Groups) > MaxAssignees {
		return nil, fmt.Errorf("names %d users and groups, more than %d", len(a.Users)+len(a.Groups), MaxAssignees)
	}
	return a, nil
}

// names reads a string or a list of strings, each trimmed, checked by
// check, and lowered when lower is set.
func names(v any, what string, check func(string) error, lower bool) ([]string, error) {
	var list []string
	switch x := v.(type) {
	case string:
		list = []string{x}
	case []string:
		list = x
	case []any:
		for i, e := range x {
			s, ok := e.(string)
			if !ok {
				return nil, fmt.Errorf("%s[%d] is %s, not a string", what, i, describe(e))
			}
			list = append(list, s)
		}
	default:
		return nil, fmt.Errorf("%s is %s, not a string or a list of strings", what, describe(v))
	}
	out := make([]string, 0, len(list))
	for _, s := range list {
		s = strings.TrimSpace(s)
		if err := check(s); err != nil {
			return nil, err
		}
		if lower {
			s = strings.ToLower(s)
		}
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out, nil
}

// CheckEmail checks an assignee's email: not empty, with an @, at most 320
// bytes.
func CheckEmail(s string) error {
	if s == "" || len(s) > maxEmailLen || !strings.Contains(s, "@") || strings.ContainsAny(s, " \t\r\n") || storableText(s) != s {
		return fmt.Errorf("%q is not an email address", s)
	}
	return nil
}

// CheckGroup checks a group's name: not empty, at most 200 bytes.
func CheckGroup(s string) error {
	if s == "" || len(s) > maxGroupLen || storableText(s) != s {
		return fmt.Errorf("%q is not a group name (1 to %d characters)", s, maxGroupLen)
	}
	return nil
}

// describe names a value's JSON kind for an error.
func describe(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case bool:
		return "a boolean"
	case int, int64, float64, json.Number:
		return "a number"
	case string:
		return fmt.Sprintf("the string %q", x)
	case []any:
		return "a list"
	case map[string]any:
		return "an object"
	}
	return fmt.Sprintf("a %T", v)
}

// assignees works out whom the UX node firing is assigned to (nil: no
// one in particular), evaluating its expression over its input.
func (f *fireCtx) assignees(p UXPeople) (*Assignees, error) {
	if !p.Assigned() {
		return nil, nil
	}
	if src, ok := p.expression(); ok {
		v, err := f.Eval(src)
		if err != nil {
			return nil, fmt.Errorf("the assignees expression of node %s could not be evaluated: %s", f.key, ExprMessage(err))
		}
		a, err := AssigneesOf(v)
		if err != nil {
			return nil, fmt.Errorf("the assignees expression of node %s %s", f.key, err)
		}
		return a, nil
	}
	v, err := decodeJSON(p.Assignees)
	if err != nil {
		return nil, err
	}
	a, err := AssigneesOf(v)
	if err != nil {
		return nil, fmt.Errorf("the assignees of node %s: %s", f.key, err)
	}
	return a, nil
}

// mayDecide checks that p's actor may decide UX node n (cur: its state).
// A claimed node is decided only by its claimer, their delegate (on the
// claimer's behalf: forWhom is the claimer), or an override (admins):
// anyone else is ErrClaimed. Otherwise mayAct checks the actor. An
// internal caller (no actor) is not checked. viaClaim reports that the
// decision is the claimer's (theirs, or their delegate's).
func (t *txn) mayDecide(_ *Node, cur *NodeState, p CompleteUXParams, people UXPeople) (forWhom string, viaClaim bool, err error) {
	a := p.Actor
	if a == nil {
		return "", false, nil
	}
	if strings.TrimSpace(a.Email) == "" {
		return "", false, fmt.Errorf("%w: a decision needs a person with an email", ErrForbidden)
	}
	claim, err := t.tx.Claim(t.ctx, t.run.ID, cur.Key)
	if err != nil {
		return "", false, fmt.Errorf("error loading the claim of %s: %w", cur.Key, err)
	}
	switch {
	case claim == nil:
	case strings.EqualFold(claim.By, a.Email):
		viaClaim = true
	case claim.Delegate != "" && strings.EqualFold(claim.Delegate, a.Email):
		// The delegate decides as the claimer, who was allowed to:
		// separation of duties holds for both.
		if !people.SeparationOfDuties {
			return claim.By, true, nil
		}
		if err := t.separate(cur, a.Email); err != nil {
			return "", false, err
		}
		return claim.By, true, t.separate(cur, claim.By)
	case a.Override:
	default:
		return "", false, claimedBy(cur, t.run.ID, claim)
	}
	return "", viaClaim, t.mayAct(cur, a, people)
}

// separate refuses, under separation of duties, a decision by the person
// who started the run.
func (t *txn) separate(cur *NodeState, email string) error {
	if t.run.StartedBy != "" && strings.EqualFold(t.run.StartedBy, email) {
		return fmt.Errorf("%w: separation of duties: %s started run %s, so someone else must decide its step %s",
			ErrForbidden, email, t.run.ID, cur.Key)
	}
	return nil
}

// mayAct checks that person a may decide UX node cur (or claim it):
// separation of duties (the person who started the run may not, admins
// included), then the node's assignees (anyone when it has none; an
// override decides any).
func (t *txn) mayAct(cur *NodeState, a *Actor, people UXPeople) error {
	if people.SeparationOfDuties {
		if err := t.separate(cur, a.Email); err != nil {
			return err
		}
	}
	if a.Override {
		return nil
	}
	as, err := t.tx.Assignment(t.ctx, t.run.ID, cur.Key)
	if err != nil {
		return fmt.Errorf("error loading the assignees of %s: %w", cur.Key, err)
	}
	if !as.Includes(a) {
		return fmt.Errorf("%w: step %s of run %s is not assigned to %s or to a group of theirs", ErrForbidden, cur.Key,
			t.run.ID, a.Email)
	}
	return nil
}

// vote records p's decision (outcome; completes: whether that outcome
// completes the node) at the node's current attempt and reports whether
// the node is decided now, with every vote of the attempt, oldest first.
// An internal caller's decision decides at once; a person's counts
// towards requiredApprovals of the same outcome (one vote for an outcome
// that does not complete the node is enough under rejectPolicy any). A
// second vote by the same person is a conflict.
func (t *txn) vote(cur *NodeState, p CompleteUXParams, people UXPeople, d decider, outcome string, completes bool) ([]Vote, bool, error) {
	if cur.Status != StatusWaitingForUser {
		return nil, false, &TransitionError{Key: cur.Key, Want: StatusWaitingForUser, Current: cur}
	}
	by := d.by
	v := Vote{By: by, For: d.forWhom, Outcome: outcome, Comment: p.Comment, Answer: orNull(p.Output), At: t.e.cfg.Clock.Now().UTC()}
	all, added, err := t.w.AddDecision(UXDecision{RunID: t.run.ID, Key: cur.Key, Attempt: cur.Attempt, Vote: v})
	if err != nil {
		return nil, false, fmt.Errorf("error recording the decision of %s at %s: %w", by, cur.Key, err)
	}
	if !added {
		who := by
		if d.forWhom != "" {
			who = d.forWhom + " (through " + by + ")"
		}
		return nil, false, fmt.Errorf("%w: %s already decided step %s of run %s (attempt %d); each person decides once",
			ErrConflict, who, cur.Key, t.run.ID, cur.Attempt)
	}
	need := people.RequiredApprovals
	if !completes && people.RejectPolicy != RejectMajority {
		need = 1
	}
	count := 0
	for _, o := range all {
		if o.Outcome == outcome {
			count++
		}
	}
	decided := p.Actor == nil || count >= need
	if people.RequiredApprovals > 1 {
		ev := map[string]any{"attempt": cur.Attempt, "by": by, "outcome": outcome,
			"comment": v.Comment, "votes": count, "required": need, "decided": decided}
		if d.forWhom != "" {
			ev["for"] = d.forWhom
		}
		t.event(EventApprovalVote, cur.Key, ev)
	}
	if d.forWhom != "" {
		t.event(EventDecidedFor, cur.Key, map[string]any{"attempt": cur.Attempt, "by": by, "for": d.forWhom,
			"outcome": outcome, "comment": v.Comment, "decided": decided})
	}
	if d.viaClaim && !decided {
		// The claimer has voted: the claim has served (others vote next).
		if err := t.w.SetClaim(t.run.ID, cur.Key, cur.Attempt, nil); err != nil {
			return nil, false, fmt.Errorf("error ending the claim of %s: %w", cur.Key, err)
		}
	}
	return all, decided, nil
}

// decider is who decides: by (the voter), forWhom (the claimer a
// delegate decides for, else ""), viaClaim (the claimer's decision).
type decider struct {
	by, forWhom string
	viaClaim    bool
}

// deciderOf is who decides p: the actor's email, else p.By ("system" when
// empty).
func deciderOf(p CompleteUXParams) string {
	switch {
	case p.Actor != nil:
		return p.Actor.Email
	case p.By != "":
		return p.By
	}
	return "system"
}

// withVotes adds every vote of an N-of-M node (oldest first) to its
// output object, under "decisions".
func withVotes(out json.RawMessage, votes []Vote) (json.RawMessage, error) {
	obj := map[string]json.RawMessage{}
	if err := json.Unmarshal(out, &obj); err != nil {
		return nil, fmt.Errorf("error decoding a UX node's output: %w", err)
	}
	vj, err := json.Marshal(votes)
	if err != nil {
		return nil, fmt.Errorf("error encoding decisions: %w", err)
	}
	obj["decisions"] = vj
	return json.Marshal(obj)
}
