package enginetype

import (
	"encoding/json"
	"slices"
	"strings"
	"time"
)

// Assignees is whom a UX node waiting for a person is assigned to: any of
// Users (emails, lower case) or any member of one of Groups.
type Assignees struct {
	Users  []string `json:"users"`
	Groups []string `json:"groups"`
}

// Includes reports whether actor is one of the assignees (nil: anyone is).
func (a *Assignees) Includes(actor *Actor) bool {
	if a == nil {
		return true
	}
	for _, u := range a.Users {
		if strings.EqualFold(u, actor.Email) {
			return true
		}
	}
	for _, g := range a.Groups {
		if slices.Contains(actor.Groups, g) {
			return true
		}
	}
	return false
}

// Vote is one person's decision at a UX node's attempt: a row of
// ux_decisions, and an entry of an N-of-M node's output "decisions".
type Vote struct {
	By string `json:"by"`
	// For is the claimer a delegate (By) decided for ("" for one's own).
	For     string          `json:"for,omitempty"`
	Outcome string          `json:"outcome"`
	Comment string          `json:"comment"`
	Answer  json.RawMessage `json:"answer"`
	At      time.Time       `json:"at"`
}

// UXDecision is a vote at attempt Attempt of node Key of run RunID
// (Tx.AddDecision).
type UXDecision struct {
	RunID, Key string
	Attempt    int
	Vote
}

// Actor is a person deciding at a UX node (CompleteUXParams.Actor).
type Actor struct {
	Email  string
	Groups []string
	// Override: may decide any approval, assigned or not (admins).
	// Separation of duties still holds.
	Override bool
	// Manager: may unclaim and reassign any waiting task (operators and
	// admins).
	Manager bool
}

// Claim is who took a waiting UX node's current attempt, and since when;
// Delegate, when set, may decide it on the claimer's behalf.
type Claim struct {
	By       string    `json:"claimed_by"`
	At       time.Time `json:"claimed_at"`
	Delegate string    `json:"delegate,omitempty"`
}

// Manages reports whether a may unclaim and reassign any task: the admin
// token (nil), an operator or an admin.
func (a *Actor) Manages() bool { return a == nil || a.Manager || a.Override }

// Name is who a is in the records ("admin" for the admin token).
func (a *Actor) Name() string {
	if a == nil {
		return "admin"
	}
	return a.Email
}

// Compensation is a run's compensation, kept on its row from the moment
// it began.
type Compensation struct {
	// Reason is why it began: "failed" (a node failed for good) or
	// "cancelled" (POST /runs/{id}/cancel with compensate).
	Reason string `json:"reason"`
	// Error is the failure the undo nodes are given (the run's error), or
	// "cancelled".
	Error string `json:"error"`
	// Steps are the steps undone, in the order their undo nodes run
	// (the reverse of the order the steps completed in).
	Steps []CompensationStep `json:"steps"`
	// State is compensating, compensated (every undo node completed),
	// failed (FailedNode failed) or interrupted (the run was cancelled or
	// passed its deadline first).
	State string `json:"state"`
	// FailedNode is the undo node that failed (State failed).
	FailedNode string `json:"failed_node,omitempty"`
}

// CompensationStep is one step undone by its undo node.
type CompensationStep struct {
	Step string `json:"step"`
	Undo string `json:"undo"`
}

// EntityUpsert creates an entity, or updates the one with the same email on
// the same board, as part of starting a run (inbound triggers).
type EntityUpsert struct {
	BoardID  string
	Type     string
	Name     string
	Email    string
	Metadata json.RawMessage
}

// EntityMove moves an entity inside a transaction and records a journey
// event. Empty ToSection keeps the section (only run/node bookkeeping).
type EntityMove struct {
	ID         string // journey event id
	EntityID   string
	Kind       string
	ToSection  string
	RunID      string
	NodeKey    string
	CompleteAs string
	SetType    string
	// Actor is who decided the move (journey_events.actor; "" none).
	Actor string
	// Comment is the decision's comment (journey_events.comment; "" none).
	Comment string
	// Metadata, a JSON object, is merged into the entity's metadata (its
	// keys replace the entity's; nil changes nothing).
	Metadata json.RawMessage
	// Details, a JSON object, says more of a journey entry that moves
	// nothing (journey_events.details; nil none).
	Details json.RawMessage
}

// EntityMoved is what Tx.MoveEntity reports: the entity's board, and its
// move count after the move (the move's entity_seq when it has a Kind).
type EntityMoved struct {
	BoardID string
	Seq     int64
}

// CallerAnswer is the HTTP answer a Respond node gives the run's caller:
// its status, content type and body.
type CallerAnswer struct {
	Status      int    `json:"status"`
	ContentType string `json:"content_type"`
	Body        string `json:"body"`
	// Node is the key of the node that answered (set by the engine).
	Node string `json:"node"`
}

// Notification is one outbox row of the notification webhook.
type Notification struct {
	ID      string
	Type    string
	RunID   string
	Payload json.RawMessage
	// URL is where it goes; "" for the notification webhook.
	URL string
	// Tries is how many deliveries were tried before this one (claimed
	// rows).
	Tries int
}

// ResetNode is one node state a rerun resets to pending, and the upstream
// nodes it must wait for again.
type ResetNode struct {
	Key            string
	PendingParents int
}

// ItemFailure is a failed item of a fan-out: its index, the key of the
// failed node instance and its error.
type ItemFailure struct {
	Index int    `json:"index"`
	Key   string `json:"key"`
	Error string `json:"error"`
}

// DueNode is a node whose time came, at the attempt it was due in.
type DueNode struct {
	Key     string
	Attempt int
	// Deferred: the node is pending, left to fire by a transaction that
	// fired its most (Config.MaxFirings), not sleeping.
	Deferred bool
}
