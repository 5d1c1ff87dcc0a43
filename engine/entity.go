package engine

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/tidwall/gjson"
)

// Journey event kinds.
const (
	JourneyRunStarted = "run_started"
	JourneyMoved      = "moved"
	JourneyManualMove = "manual_move"
	JourneyCreated    = "created"
	// JourneyReassigned, JourneyDelegated and JourneyEscalated: a task of
	// the run's (a UX node waiting for a person) reassigned, delegated or
	// escalated; the entity stays where it is.
	JourneyReassigned = "reassigned"
	JourneyDelegated  = "delegated"
	JourneyEscalated  = "escalated"
)

// Entity is a thing (a lead, a customer, an order) that rides along runs and
// moves across the sections of a board.
type Entity struct {
	ID             string          `json:"id"`
	BoardID        string          `json:"board_id"`
	Type           string          `json:"type"`
	Name           string          `json:"name"`
	Email          *string         `json:"email"`
	Metadata       json.RawMessage `json:"metadata"`
	SectionID      *string         `json:"section_id"`
	SectionSince   *time.Time      `json:"section_since"`
	CurrentRunID   *string         `json:"current_run_id"`
	CurrentNodeKey *string         `json:"current_node_key"`
	CreatedAt      time.Time       `json:"created_at"`
	UpdatedAt      time.Time       `json:"updated_at"`
}

// JourneyEvent records an entity's move.
type JourneyEvent struct {
	ID            string  `json:"id"`
	EntityID      string  `json:"-"`
	Kind          string  `json:"kind"`
	FromSectionID *string `json:"from_section_id"`
	ToSectionID   *string `json:"to_section_id"`
	RunID         *string `json:"run_id"`
	NodeKey       *string `json:"node_key"`
	CompleteAs    *string `json:"complete_as"`
	// EntitySeq is the entity's move count this event reached: its moves
	// in the order they were applied (created is 1).
	EntitySeq int64 `json:"entity_seq"`
	// Actor is who moved the entity by hand, or decided the UX step that
	// moved it (a user's email, "timeout", …; nil when no one did).
	Actor *string `json:"actor,omitempty"`
	// Comment is the comment of the decision that moved the entity (a
	// rejection's reason; nil when none was given).
	Comment *string `json:"comment,omitempty"`
	// Details says more of an entry that moves nothing (a task
	// reassigned, delegated or escalated: {"assignees"}, {"to"}).
	Details   json.RawMessage `json:"details,omitempty"`
	CreatedAt time.Time       `json:"created_at"`
}

// Movement is one side (onSuccess/onFailure) of a node's entityMovement.
type Movement struct {
	TargetSectionID string `json:"targetSectionId"`
	CompleteAs      string `json:"completeAs"`
	SetEntityType   string `json:"setEntityType"`
	// SetMetadata writes values of the node's output into the entity's
	// metadata: target key → gjson path into the output.
	SetMetadata map[string]string `json:"setMetadata"`
}

// metadataFrom is the object SetMetadata makes from a node's output (nil
// when it sets nothing). A path the output lacks leaves its key as it is.
func (m *Movement) metadataFrom(output json.RawMessage) (json.RawMessage, error) {
	if len(m.SetMetadata) == 0 {
		return nil, nil
	}
	vals := make(map[string]json.RawMessage, len(m.SetMetadata))
	for key, path := range m.SetMetadata {
		if r := gjson.GetBytes(output, path); r.Exists() {
			vals[key] = json.RawMessage(r.Raw)
		}
	}
	if len(vals) == 0 {
		return nil, nil
	}
	b, err := json.Marshal(vals)
	if err != nil {
		return nil, fmt.Errorf("error encoding setMetadata: %w", err)
	}
	return b, nil
}

// outcomeMovement reads a UX node's entityMovement.onOutcome[outcome].
func outcomeMovement(n *Node, outcome string) *Movement {
	var cfg struct {
		EntityMovement struct {
			OnOutcome map[string]*Movement `json:"onOutcome"`
		} `json:"entityMovement"`
	}
	if len(n.Config) == 0 || json.Unmarshal(n.Config, &cfg) != nil {
		return nil
	}
	if m := cfg.EntityMovement.OnOutcome[outcome]; m != nil && m.TargetSectionID != "" {
		return m
	}
	return nil
}

// movementOf reads a node's entityMovement for success or failure.
func movementOf(n *Node, success bool) *Movement {
	var cfg struct {
		EntityMovement struct {
			OnSuccess *Movement `json:"onSuccess"`
			OnFailure *Movement `json:"onFailure"`
		} `json:"entityMovement"`
	}
	if len(n.Config) == 0 || json.Unmarshal(n.Config, &cfg) != nil {
		return nil
	}
	m := cfg.EntityMovement.OnFailure
	if success {
		m = cfg.EntityMovement.OnSuccess
	}
	if m == nil || m.TargetSectionID == "" {
		return nil
	}
	return m
}

// applyMovement moves the run's entity per the node's entityMovement (and
// writes its setMetadata from the node's output), in this transaction.
func (t *txn) applyMovement(n *Node, st *NodeState, success bool) error {
	key := st.Key
	if t.run.EntityID == nil {
		return nil
	}
	m := movementOf(n, success)
	if t.outcome != "" && n.Caps.WaitsForPerson {
		if om := outcomeMovement(n, t.outcome); om != nil {
			m = om
		}
	}
	if m == nil {
		return nil
	}
	mv := EntityMove{Kind: JourneyMoved, ToSection: m.TargetSectionID, NodeKey: key,
		CompleteAs: m.CompleteAs, SetType: m.SetEntityType}
	if success {
		meta, err := m.metadataFrom(st.Output)
		if err != nil {
			return fmt.Errorf("error setting metadata from node %s: %w", key, err)
		}
		mv.Metadata = meta
	}
	if n.Caps.WaitsForPerson {
		mv.Actor, mv.Comment = t.actor, t.comment
	}
	return t.moveEntity(mv)
}

// moveEntity moves the run's entity and records the journey and run events.
func (t *txn) moveEntity(m EntityMove) error {
	m.ID, m.EntityID, m.RunID = t.e.cfg.NewID(), *t.run.EntityID, t.run.ID
	moved, err := t.w.MoveEntity(m)
	if err != nil {
		return fmt.Errorf("error moving entity %s: %w", m.EntityID, err)
	}
	p := map[string]any{"entity_id": m.EntityID, "board_id": moved.BoardID, "kind": m.Kind, "entity_seq": moved.Seq}
	if m.ToSection != "" {
		p["to_section_id"] = m.ToSection
	}
	if m.CompleteAs != "" {
		p["complete_as"] = m.CompleteAs
	}
	if m.SetType != "" {
		p["entity_type"] = m.SetType
	}
	if m.Comment != "" {
		p["comment"] = m.Comment
	}
	if len(m.Metadata) > 0 {
		p["metadata"] = m.Metadata
	}
	t.event(EventEntityMoved, m.NodeKey, p)
	return nil
}
