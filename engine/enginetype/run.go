package enginetype

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Sentinel errors. The store maps database errors onto these in one place;
// the web layer maps them onto HTTP statuses.
var (
	ErrNotFound          = errors.New("not found")
	ErrInvalidTransition = errors.New("invalid transition")
	ErrConflict          = errors.New("conflict")
	ErrInvalidRequest    = errors.New("invalid request")
	ErrUnavailable       = errors.New("database unavailable")
	// ErrForbidden: the caller may not do this (a decision at a UX node
	// not assigned to them, or refused by separation of duties).
	ErrForbidden = errors.New("forbidden")
)

// ErrLimited marks a start refused by its workspace's limits (LimitError).
var ErrLimited = errors.New("limited")

// LimitError refuses a run's start past a limit of its workspace
// (max_running_runs, max_starts_per_second): another try after RetryAfter
// may succeed.
type LimitError struct {
	Workspace, Limit string
	RetryAfter       time.Duration
}

func (e *LimitError) Error() string {
	return fmt.Sprintf("workspace %s is at its %s: try again in %s", e.Workspace, e.Limit, e.RetryAfter.Round(time.Millisecond))
}

// Unwrap makes a LimitError an ErrLimited.
func (e *LimitError) Unwrap() error { return ErrLimited }

// Run is one execution of a flow version.
type Run struct {
	ID             string          `json:"id"`
	FlowID         string          `json:"flow_id"`
	FlowVersionID  string          `json:"flow_version_id"`
	EntityID       *string         `json:"entity_id"`
	Status         RunStatus       `json:"status"`
	Trigger        json.RawMessage `json:"trigger,omitempty"`
	Input          json.RawMessage `json:"input"`
	Output         json.RawMessage `json:"output"`
	Error          *string         `json:"error"`
	IdempotencyKey *string         `json:"-"`
	ActiveNodes    int             `json:"-"`
	FailedNodes    int             `json:"-"`
	TerminalsLeft  int             `json:"-"`
	EventSeq       int64           `json:"-"`
	CreatedAt      time.Time       `json:"created_at"`
	UpdatedAt      time.Time       `json:"updated_at"`
	FinishedAt     *time.Time      `json:"finished_at"`
	// DeadlineAt is when the run fails with the reason "deadline" if it
	// has not finished (none when nil).
	DeadlineAt *time.Time `json:"deadline_at,omitempty"`
	// DeadlineSeconds sets DeadlineAt when the run is inserted.
	DeadlineSeconds int `json:"-"`
	// ParentRunID, ParentKey and ParentAttempt name the SubFlow node
	// instance (and its attempt) that started this run, when one did.
	ParentRunID   *string `json:"parent_run_id,omitempty"`
	ParentKey     *string `json:"parent_key,omitempty"`
	ParentAttempt int     `json:"parent_attempt,omitempty"`
	// Reran: nodes of the run were re-run by hand (RerunNode), so a
	// pending row may carry earlier attempts.
	Reran bool `json:"-"`
	// StartedBy is who started the run through the API (a user's email;
	// "" for a trigger, a schedule, the admin token). A sub-flow run
	// inherits its parent's.
	StartedBy string `json:"started_by,omitempty"`
	// Compensation is the run's compensation, once it began (read by
	// the API, not by an engine transaction's lock).
	Compensation *Compensation `json:"compensation,omitempty"`
}

// NodeState is one node instance of a run: the node itself for a static
// node, or one parallel instance (key "<id>_<i>", nested "<id>_<i>_<j>").
type NodeState struct {
	RunID          string          `json:"-"`
	Key            string          `json:"key"`
	NodeID         string          `json:"node_id"`
	Type           NodeType        `json:"type"`
	Index          []int           `json:"index"`
	Status         Status          `json:"status"`
	Input          json.RawMessage `json:"input"`
	Output         json.RawMessage `json:"output"`
	Error          *string         `json:"error"`
	Attempt        int             `json:"attempt"`
	PendingParents int             `json:"-"`
	// Taken lists the targets of the edges the node took, for a node with
	// branches once it decided them (nil otherwise; see DecidedEdges).
	Taken    []string   `json:"taken"`
	Deadline *time.Time `json:"deadline,omitempty"`
	// Iteration is the loop iteration the row belongs to (0: the first
	// pass; its key then has no @ suffix).
	Iteration int `json:"iteration"`
	// EventName and EventKey are what an Event node waits (or waited) for.
	EventName *string `json:"event_name,omitempty"`
	EventKey  *string `json:"event_key,omitempty"`
	// WakeAt is when a sleeping Wait node wakes (database time).
	WakeAt *time.Time `json:"wake_at,omitempty"`
	// ChildRunID is the run a SubFlow node started (its latest attempt's).
	ChildRunID *string    `json:"child_run_id,omitempty"`
	StartedAt  *time.Time `json:"started_at"`
	FinishedAt *time.Time `json:"finished_at"`
	UpdatedAt  time.Time  `json:"updated_at"`
}

// Event is one entry of a run's append-only audit log.
type Event struct {
	ID        int64           `json:"id"`
	RunID     string          `json:"run_id"`
	Seq       int64           `json:"seq"`
	Type      string          `json:"type"`
	Key       string          `json:"key,omitempty"`
	Payload   json.RawMessage `json:"payload"`
	CreatedAt time.Time       `json:"created_at"`
}

// NewEvent is an event to append inside a transaction; the store assigns
// its sequence number from the locked run row.
type NewEvent struct {
	Type    string
	Key     string
	Payload any
}

// InstanceKey returns the node-state key of node id at index path idx:
// "score" for a static node, "score_2" or "score_2_0" for parallel ones.
func InstanceKey(id string, idx []int) string {
	if len(idx) == 0 {
		return id
	}
	var b strings.Builder
	b.Grow(len(id) + 4*len(idx))
	b.WriteString(id)
	for _, i := range idx {
		b.WriteByte('_')
		b.WriteString(strconv.Itoa(i))
	}
	return b.String()
}
