package enginetype

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// Tx is the set of operations the engine performs inside a transaction.
// Every method that changes a node's status is a compare-and-set.
//
// Writes whose results the engine does not read at once (SaveRun,
// SaveRunWithEvents, InsertNodes, SetPending, InsertDispatch(es),
// AppendEvents, the journey rows of entity moves) may be queued and sent
// with the next statement that must be answered, or with COMMIT: their
// errors then surface from that later call or from the commit (and fail
// the transaction), and the fields they fill in (a run's UpdatedAt and
// FinishedAt) are set once the transaction has committed.
type Tx interface {
	TxReads
	TxWrites
}

// TxReads are a transaction's reads (locks among them): what the engine's
// rules call on the Tx directly.
type TxReads interface {
	// LockRun loads a run and locks its row until the transaction ends.
	// Every transaction touching a run's nodes locks the run first, which
	// orders concurrent transitions of one run and avoids deadlocks. The
	// run's Input and Trigger are not loaded (RunInput): a fan-out's input
	// can be megabytes, and every transaction of the run locks it.
	LockRun(ctx context.Context, runID string) (*Run, error)
	// LockRunLater queues LockRun, to travel with the next statement
	// (see above); the returned function gives its result once that
	// statement was answered (nil and no error if it never was: the
	// statement carrying it failed first).
	LockRunLater(ctx context.Context, runID string) func() (*Run, error)
	// LockRuns is LockRun for many runs with one statement, locking them
	// in id order; a run that does not exist is left out.
	LockRuns(ctx context.Context, ids []string) ([]*Run, error)
	// RunInput loads a run's input.
	RunInput(ctx context.Context, runID string) (json.RawMessage, error)
	// RunInputLater queues RunInput, to travel with the next statement;
	// the returned function gives its result once that statement was
	// answered (nil and no error if it never was).
	RunInputLater(ctx context.Context, runID string) func() (json.RawMessage, error)
	// RunByIdempotencyKey finds a run of flowID started with key.
	RunByIdempotencyKey(ctx context.Context, flowID, key string) (*Run, error)
	// Node loads one node state.
	Node(ctx context.Context, runID, key string) (*NodeState, error)
	// NodeStates loads the given node states (missing keys are left out).
	NodeStates(ctx context.Context, runID string, keys []string) (map[string]*NodeState, error)
	// ReadyNodes returns the run's current pending nodes with no pending
	// parents, and its failed Collectors (not handled) whose items all
	// arrived: those a paused run left unfired.
	ReadyNodes(ctx context.Context, runID string) ([]NodeState, error)
	// HasDeferred reports whether the run has fires left for a later
	// transaction (DeferNode) that have not fired yet.
	HasDeferred(ctx context.Context, runID string) (bool, error)
	// EntityOf loads the run's entity as a condition sees it.
	EntityOf(ctx context.Context, entityID string) (map[string]any, error)
	// RunVariables loads the run's variables (an object).
	RunVariables(ctx context.Context, runID string) (json.RawMessage, error)
	// Outputs loads the outputs of the given keys.
	Outputs(ctx context.Context, runID string, keys []string) (map[string]json.RawMessage, error)
	// ItemStates loads every instance of the given nodes whose index starts
	// with prefix and is one longer, ordered by index.
	ItemStates(ctx context.Context, runID string, nodeIDs []string, prefix []int) ([]NodeState, error)
	// ItemOutputs returns, as one JSON array in index order, the outputs
	// (null where none) of the instances of nodeID whose index is prefix
	// plus one item index: a Collector's output when that node is its only
	// upstream, built without loading the instances.
	ItemOutputs(ctx context.Context, runID, nodeID, target string, prefix []int) (json.RawMessage, error)
	// ItemTally counts the items of a fan-out (prefix plus one item index)
	// among the instances of nodeIDs, and those with a failed instance
	// whose failure no failure edge took on.
	ItemTally(ctx context.Context, runID string, nodeIDs []string, prefix []int) (items, failed int, err error)
	// ItemFailures lists the failed items of a fan-out, in index order:
	// for each, its first failed instance (by finish time) among nodeIDs.
	ItemFailures(ctx context.Context, runID string, nodeIDs []string, prefix []int) ([]ItemFailure, error)
	// ItemAt returns element i of the array output of node key (a
	// Splitter's item), null when there is none.
	ItemAt(ctx context.Context, runID, key string, i int) (json.RawMessage, error)
	// FirstFailure returns the error of some failed node of the run whose
	// failure was not handled (by a failure edge).
	FirstFailure(ctx context.Context, runID string) (string, error)
	// RunCompensation loads the run's compensation (nil when none began).
	RunCompensation(ctx context.Context, runID string) (*Compensation, error)
	// CompletionOrder returns, for each of keys that completed, the
	// sequence number of its last node.status completed event.
	CompletionOrder(ctx context.Context, runID string, keys []string) (map[string]int64, error)
	// LockEntityRuns takes, for the rest of the transaction, the lock that
	// orders starting and ending runs of flowID for entityID (entity
	// concurrency).
	LockEntityRuns(ctx context.Context, flowID, entityID string) error
	// ActiveEntityRun returns the oldest run of flowID for entityID that is
	// running, paused or queued ("" when none).
	ActiveEntityRun(ctx context.Context, flowID, entityID string) (string, error)
	// NextQueuedRun returns the oldest queued run of flowID for entityID
	// when no run of it for the entity but ending is running or paused (""
	// otherwise).
	NextQueuedRun(ctx context.Context, flowID, entityID, ending string) (string, error)
	// ChildRuns lists the runs SubFlow nodes of run runID started that are
	// in one of statuses.
	ChildRuns(ctx context.Context, runID string, statuses ...RunStatus) ([]string, error)
	// StartedNodeIDs lists the nodes of the run with an instance that is
	// not pending.
	StartedNodeIDs(ctx context.Context, runID string) ([]string, error)
	// Assignment returns whom UX node key of run runID is assigned to
	// (nil: anyone).
	Assignment(ctx context.Context, runID, key string) (*Assignees, error)
	// Claim returns the claim of waiting UX node key's current attempt
	// (nil: none; a claim of another attempt, or of a node no longer
	// waiting, is none).
	Claim(ctx context.Context, runID, key string) (*Claim, error)
	// EscalationStep returns which escalation of UX node key falls due
	// next (0: the first).
	EscalationStep(ctx context.Context, runID, key string) (int, error)
}

// TxWrites are a transaction's writes: the engine's rules make them
// through its writer (engine/internal/writer), which counts them.
type TxWrites interface {
	// SaveRunWithEvents ends an engine transaction's writes: it marks the
	// dispatches of RunSave.DeliveredKeys delivered, appends the events
	// (with a dispatch.attempt event for each delivery not logged yet) and
	// saves the run — in one statement when it can.
	SaveRunWithEvents(ctx context.Context, s RunSave) error
	// AdmitRun counts a start of a run of flowID against its workspace's
	// limits, held until the transaction ends; a start past one fails the
	// transaction with a *LimitError (may be queued: see above).
	AdmitRun(ctx context.Context, flowID string)
	// InsertRun creates a run row (ErrConflict on a repeated idempotency key).
	InsertRun(ctx context.Context, run *Run) error
	// SaveRun writes the run's status, output, error, counters and event
	// sequence.
	SaveRun(ctx context.Context, run *Run) error
	// InsertNodes creates node-state rows in one statement.
	InsertNodes(ctx context.Context, runID string, nodes []NodeState) error
	// InsertStartedNodes is InsertNodes where starts[i], when its Status
	// is set, creates nodes[i] already started (attempt 1, its input,
	// started now, its deadline from now): a fan-out's instances fired in
	// the transaction that creates them.
	InsertStartedNodes(ctx context.Context, runID string, nodes []NodeState, starts []BulkStart) error
	// Transition applies t as one compare-and-set UPDATE and returns the
	// updated row. When the row is not in one of t.From (or the attempt does
	// not match) it returns a *TransitionError holding the current row.
	Transition(ctx context.Context, t *NodeTransition) (*NodeState, error)
	// TransitionLater applies t like Transition, but may be queued (see
	// above): the engine uses it where it knows the row's status and
	// attempt under the run's lock, or assumes them (txn.speculate), and
	// needs nothing back. A row not in t.From (or, when t.Attempt > 0, at
	// another attempt) fails the transaction in the database — whatever
	// travels with it, COMMIT included, is not applied — with a
	// *QueuedTransitionError.
	TransitionLater(ctx context.Context, t *NodeTransition) error
	// SkipLater moves the pending nodes keys to skipped, like
	// TransitionLater (queued; a row not pending fails the transaction),
	// with one statement for all of them — and for the count-downs then
	// carries, each as CountDownUntakenLater would queue it.
	SkipLater(ctx context.Context, runID string, keys []string, then []UntakenCountDown) error
	// ArchiveIteration renames the rows of keys to <key>@<iteration> (the
	// history of a loop iteration that ended) and returns their attempts.
	ArchiveIteration(ctx context.Context, runID string, keys []string) (map[string]int, error)
	// InsertIteration creates the pending rows of a loop's next iteration
	// (with their Attempt and Iteration).
	InsertIteration(ctx context.Context, runID string, nodes []NodeState) error
	// HoldDispatches holds (hold) the run's undelivered dispatches and
	// its pulled tasks waiting in their queues, or releases them to be
	// delivered (polled) now; it returns how many of both.
	// Releasing also makes the fires left for a later transaction due at
	// once.
	HoldDispatches(ctx context.Context, runID string, hold bool) (int, error)
	// TakeEvent locks the events of (name, key) for the transaction (an
	// event posted meanwhile waits, and then finds the node waiting) and
	// consumes the oldest unexpired event of it no node took, if any.
	// Only events of run runID's workspace are taken.
	TakeEvent(ctx context.Context, runID string, w EventWait) (*TakenEvent, error)
	// EventDelivered removes the delivery of event eventID to node key of
	// run runID (it happened, or the node no longer waits).
	EventDelivered(ctx context.Context, eventID, runID, key string) error
	// FailActiveNodes fails every running or waiting node of the run with
	// msg and cancels its undelivered dispatches; it returns the keys.
	FailActiveNodes(ctx context.Context, runID, msg string) ([]string, error)
	// WakeNodes moves the given sleeping nodes (at their attempts) to
	// completed with their input as output, in one statement, and returns
	// those it moved.
	WakeNodes(ctx context.Context, runID string, due []DueNode) ([]NodeState, error)
	// DeferNode keeps pending node key of run runID with the input it is
	// to fire with and a wake_at of now: the sweeper fires it in a later
	// transaction (MaxFirings). It may be queued, consecutive ones of a
	// run in one statement: a row not pending fails the transaction in
	// the database (QueuedTransitionError).
	DeferNode(ctx context.Context, runID, key string, input json.RawMessage) error
	// AddTreeNodes adds n node instances to the count of run runID's run
	// tree (its root run and every sub-flow run under it) unless the
	// count would pass limit; it reports whether it added them, and what
	// the transaction may add to the tree after them (TreeCount).
	AddTreeNodes(ctx context.Context, runID string, n, limit int) (TreeCount, error)
	// GrowTreeLater queues n more node instances on the count of c's tree,
	// where AddTreeNodes put its own (c.Held: on the count's row; else
	// beside it): more instances the transaction decided with c.Room.
	GrowTreeLater(ctx context.Context, c TreeCount, n int64) error
	// RedeferNodes makes the given fires left for later (still pending)
	// due again at once.
	RedeferNodes(ctx context.Context, runID string, keys []string) error
	// SetTaken records the edges a failed node's failure edges took and
	// the failure it handed on as its output (a handled failure).
	SetTaken(ctx context.Context, runID, key string, taken []string, output json.RawMessage) error
	// SetRunVariables merges vars (an object) into the run's variables.
	SetRunVariables(ctx context.Context, runID string, vars json.RawMessage) error
	// AddPending adds delta to pending_parents of each key and returns the
	// new values with each row's status (UPDATE … RETURNING).
	AddPending(ctx context.Context, runID string, keys []string, delta int) (map[string]Pending, error)
	// AddPendingUntaken is AddPending where the edges counted for the keys
	// in untaken (a subset of keys) were decided not taken: it also adds
	// -delta to their count of those (Pending.Untaken), which is reset
	// wherever pending_parents is.
	AddPendingUntaken(ctx context.Context, runID string, keys, untaken []string, delta int) (map[string]Pending, error)
	// AddPendingLater queues AddPending, to travel with the next statement
	// (see above); the returned function gives its result once that
	// statement was answered.
	AddPendingLater(ctx context.Context, runID string, keys []string, delta int) func() (map[string]Pending, error)
	// CountDownUntakenLater queues the count-down by n of the pending
	// parents of keys, all n of each decided not taken (Untaken grows by
	// n), when the rules know its answer: each stays pending with parents
	// left. Like SkipLater, a key not pending, or counted down to no
	// parents left, fails the transaction in the database
	// (QueuedTransitionError).
	CountDownUntakenLater(ctx context.Context, runID string, keys []string, n int) error
	// CountDownToReadyLater queues the count-down of join key's last
	// pending parent, when the rules know its answer: it is pending with
	// one parent left and untaken of its inbound edges decided not taken,
	// in a run never rerun. Anything else fails the transaction in the
	// database (QueuedTransitionError).
	CountDownToReadyLater(ctx context.Context, runID, key string, untaken int) error
	// ResetUntaken sets untaken_parents of the run's pending rows to 0
	// (the run moved to another version).
	ResetUntaken(ctx context.Context, runID string) error
	// SetPending sets pending_parents of one key.
	SetPending(ctx context.Context, runID, key string, n int) error
	// BulkStart moves many pending nodes to running or waiting_for_user as
	// their first attempt in one statement (compare-and-set on pending) and
	// returns how many it moved.
	BulkStart(ctx context.Context, runID string, starts []BulkStart) (int, error)
	// BulkComplete moves running nodes to completed (compare-and-set on
	// status running and the attempt) in one statement and returns the rows
	// it moved, without their inputs (nil).
	BulkComplete(ctx context.Context, runID string, cs []BulkComplete) ([]NodeState, error)
	// CompleteAcrossRuns is BulkComplete over nodes of different runs
	// (BulkComplete.RunID), each run locked already.
	CompleteAcrossRuns(ctx context.Context, cs []BulkComplete) ([]NodeState, error)
	// InsertDispatches writes many outbox rows in one statement.
	InsertDispatches(ctx context.Context, ds []*Dispatch) error
	// InsertDispatch writes an outbox row.
	InsertDispatch(ctx context.Context, d *Dispatch) error
	// UpdateDispatches records delivery tries on outbox rows, in one
	// statement, and returns how many rows it changed: only a row still
	// claimed by the try (sending, with the try's count) takes its outcome.
	UpdateDispatches(ctx context.Context, us []DispatchUpdate) (int, error)
	// ExtendDeadline moves a running node's deadline to now()+seconds
	// (database time) if it is running attempt.
	ExtendDeadline(ctx context.Context, runID, key string, attempt, seconds int) (bool, error)
	// CancelNodes moves every non-terminal node of the run (a failure
	// handled by a failure edge is final) to cancelled and
	// cancels its undelivered dispatches; it returns the nodes it changed.
	CancelNodes(ctx context.Context, runID string) ([]CancelledNode, error)
	// CancelBranches moves the current instances (no loop history) of
	// nodeIDs whose index starts with prefix from pending to skipped, and
	// from running, waiting, sleeping or failed (not handled) to
	// cancelled, and cancels their undelivered dispatches; it returns the
	// nodes it changed (a join's first arrival, join.go).
	CancelBranches(ctx context.Context, runID string, nodeIDs []string, prefix []int) ([]CancelledNode, error)
	// SetRunCompensation saves the run's compensation.
	SetRunCompensation(ctx context.Context, runID string, c *Compensation) error
	// SetRunResponse records the answer a Respond node gave the run's
	// caller, unless one was recorded before; it reports whether it
	// recorded this one.
	SetRunResponse(ctx context.Context, runID string, a *CallerAnswer) (bool, error)
	// DeletePendingNodes removes the pending instances of nodes.
	DeletePendingNodes(ctx context.Context, runID string, nodeIDs []string) error
	// SetRunVersion moves the run to another flow version.
	SetRunVersion(ctx context.Context, runID, versionID string) error
	// ResetNodes sets node states back to pending (a rerun), each waiting
	// for PendingParents upstream nodes, keeping their attempt and input.
	ResetNodes(ctx context.Context, runID string, nodes []ResetNode) error
	// DeleteInstances removes the instances of nodes whose index starts
	// with idx (a region fanned out anew) and returns how many of them had
	// failed unhandled; ErrConflict when one is still running or waiting.
	DeleteInstances(ctx context.Context, runID string, nodeIDs []string, idx []int) (int, error)
	// InsertNotifications writes notifications to the webhook's outbox.
	InsertNotifications(ctx context.Context, ns []Notification) error
	// SetRemindAt sets when a waiting UX node is next reminded about:
	// seconds from now (database time).
	SetRemindAt(ctx context.Context, runID, key string, seconds int) error
	// UpsertEntity creates an entity or updates the one with the same email
	// on the board, returning its id.
	UpsertEntity(ctx context.Context, id string, e EntityUpsert) (string, error)
	// MoveEntity moves an entity (when ToSection is set), keeps its current
	// run and node, and, for a move with a Kind, counts the move and
	// records a journey event; it returns the entity's board id and move
	// count, under the entity's row lock.
	MoveEntity(ctx context.Context, m EntityMove) (EntityMoved, error)
	// AppendEvents inserts events with sequence numbers firstSeq, firstSeq+1, …
	// and notifies listeners once the transaction commits.
	AppendEvents(ctx context.Context, runID string, firstSeq int64, events []NewEvent) error
	// AddDecision records a person's vote at a UX node's attempt unless
	// they voted at that attempt already (added false, nothing written),
	// and returns every vote of the attempt, oldest first.
	AddDecision(ctx context.Context, d UXDecision) (all []Vote, added bool, err error)
	// SetClaim sets the claim of UX node key at attempt (nil clears it).
	SetClaim(ctx context.Context, runID, key string, attempt int, c *Claim) error
	// Reassign replaces whom UX node key, waiting at attempt, is assigned
	// to, and clears its claim.
	Reassign(ctx context.Context, runID, key string, attempt int, a *Assignees) error
	// SetEscalation records that escalation step of UX node key falls due
	// in seconds (0: none does).
	SetEscalation(ctx context.Context, runID, key string, step, seconds int) error
}

// NodeTransition is one compare-and-set on a node state.
type NodeTransition struct {
	RunID string
	Key   string
	// From is the status the row must be in.
	From Status
	// Steps is the path taken (e.g. running, completed); the row ends in the
	// last one. Each step is checked against the state machine.
	Steps []Status
	// Attempt, when > 0, must match the row's attempt.
	Attempt int
	// NewAttempt increments the attempt counter (a new try of the node).
	NewAttempt bool
	// Input, Output set those columns when non-nil.
	Input  json.RawMessage
	Output json.RawMessage
	// Error sets the error column (nil clears it).
	Error *string
	// DeadlineSeconds sets deadline = now() + seconds when > 0, clears it
	// otherwise.
	DeadlineSeconds int
	// ClearPending sets pending_parents to 0: the node's first fire, once
	// every upstream node completed (a node with one upstream node is
	// fired without counting its parent down).
	ClearPending bool
	// NodeID and RunVersion, when set, are what a transition made without
	// reading its run assumed (txn.speculate): the row must be of node
	// NodeID, and its run running on flow version RunVersion; the
	// transition then also locks the run's row, before the node's.
	NodeID     string
	RunVersion string
	// Taken, when non-nil, records the targets of the edges the node took
	// (a node with branches: EdgeRule).
	Taken []string
	// Wake, for a transition that ends sleeping, is when the node wakes.
	Wake *Wake
	// Event, for a transition that ends waiting_for_event, is what it
	// waits for.
	Event *EventWait
	// ChildRunID, when set, records the child run a SubFlow node started.
	ChildRunID *string
	// RemindSeconds, for a transition that ends waiting_for_user, is when
	// the node is first reminded about (0: never).
	RemindSeconds int
	// Assign, for a transition that ends waiting_for_user, is whom the
	// node is assigned to (nil: anyone).
	Assign *Assignees
	// EscalateSeconds, for a transition that ends waiting_for_user, is
	// when the node's first escalation falls due (0: never).
	EscalateSeconds int
	// Ready, when set, is what a join's first fire assumed about its
	// parents (writer.AssumeCountDown), checked as CountDownToReadyLater
	// checks it: the row's last parent is left and Ready.Untaken of its
	// edges were not taken, in a run never rerun. Only TransitionLater
	// carries it.
	Ready *ReadyCheck
}

// UntakenCountDown is a count-down by N of the pending parents of Keys,
// all N of each decided not taken, whose answer the rules know
// (CountDownUntakenLater).
type UntakenCountDown struct {
	Keys []string
	N    int
}

// ReadyCheck is the assumed readiness of a join (NodeTransition.Ready).
type ReadyCheck struct {
	Untaken int
}

// EventWait is the event an Event node waits for.
type EventWait struct {
	Name, Key string
}

// TakenEvent is an event a wait took from those kept for it.
type TakenEvent struct {
	ID      string
	Payload json.RawMessage
}

// Wake is when a sleeping node wakes: at At, else SleepSeconds after the
// database's now().
type Wake struct {
	At           *time.Time
	SleepSeconds float64
}

// Final is the status the transition ends in.
func (t *NodeTransition) Final() Status { return t.Steps[len(t.Steps)-1] }

// QueuedTransitionError reports a queued compare-and-set
// (Tx.TransitionLater, SkipLater) that moved no row, or a queued
// count-down whose assumed answer did not hold (CountDownUntakenLater,
// CountDownToReadyLater; Key lists its keys), which failed its
// transaction; it
// wraps ErrConflict. It names the run, so that a transaction shared by
// several runs' batches knows whose it was.
type QueuedTransitionError struct {
	RunID, Key string
	From, To   Status
	Attempt    int
}

func (e *QueuedTransitionError) Error() string {
	return fmt.Sprintf("%s: node %s of run %s was not %s (attempt %d) when moved to %s", ErrConflict, e.Key, e.RunID,
		e.From, e.Attempt, e.To)
}

func (e *QueuedTransitionError) Unwrap() error { return ErrConflict }

// TransitionError reports a compare-and-set that matched no row.
type TransitionError struct {
	Key     string
	Want    Status
	Current *NodeState // nil when the node does not exist
}

func (e *TransitionError) Error() string {
	if e.Current == nil {
		return fmt.Sprintf("node %s does not exist", e.Key)
	}
	return fmt.Sprintf("node %s is %s (attempt %d), expected %s", e.Key, e.Current.Status, e.Current.Attempt, e.Want)
}

func (e *TransitionError) Unwrap() error {
	if e.Current == nil {
		return ErrNotFound
	}
	return ErrInvalidTransition
}

// Dispatch is one outbox row: deliver Payload to URL for (run, key, attempt).
type Dispatch struct {
	ID    string
	RunID string
	// Workspace is the run's (its graph's; "": the store finds it).
	Workspace string
	Key       string
	Attempt   int
	URL       string
	Payload   json.RawMessage
	MaxTries  int
	// DelayMs postpones the first delivery (retry backoff).
	DelayMs int64
	// ClaimSeconds, when > 0 (and DelayMs is 0), writes the row already
	// claimed by this process for that long.
	ClaimSeconds float64
	// Request is set for a request/response delivery (DispatchHTTP);
	// Payload is then its body.
	Request *HTTPRequest
	// Queue, when set, makes the row a pulled task (DispatchTask) written
	// to that queue, leased for LeaseSeconds by the worker that polls it;
	// never claimed by a dispatcher.
	Queue        string
	LeaseSeconds int
}

// HTTPRequest is what a request/response outbox row sends besides its URL
// and body.
type HTTPRequest struct {
	Method    string            `json:"method"`
	Headers   map[string]string `json:"headers,omitempty"`
	TimeoutMs int64             `json:"timeoutMs,omitempty"`
	// Secrets names the secrets whose placeholders the URL, headers and
	// body hold, filled in as the request is sent (no value is stored).
	Secrets *SecretUse `json:"secrets,omitempty"`
	// Credential names the credential the request carries (an HTTP
	// step's data.credential), applied as it is sent (no value is stored).
	Credential string `json:"credential,omitempty"`
	// Code marks a script run by the dispatcher (DispatchCode): the body
	// is {"source", "env"}, nothing is sent over the network.
	Code bool `json:"code,omitempty"`
	// Email marks a message the dispatcher sends over SMTP
	// (DispatchEmail) with Credential: the body is the message.
	Email bool `json:"email,omitempty"`
}

// IsTransitionError reports whether err is a *TransitionError and returns it.
func IsTransitionError(err error) (*TransitionError, bool) {
	var te *TransitionError
	ok := errors.As(err, &te)
	return te, ok
}

// Pending is a node's remaining upstream count after AddPending.
type Pending struct {
	Remaining int
	// Untaken counts the inbound edges decided not taken (AddPendingUntaken),
	// never more than were: some paths count an edge not taken as a plain
	// count-down.
	Untaken int
	Status  Status
}

// DispatchUpdate records the outcome of one delivery try on an outbox row.
type DispatchUpdate struct {
	ID string
	// Tries identifies the claim that made the try (the row's tries count
	// when it was claimed).
	Tries int
	// Status is delivered, pending (another try after RetryInMs) or failed.
	Status    string
	RetryInMs int64
	LastError string
}

// ClaimedDispatch is an outbox row claimed for delivery.
type ClaimedDispatch struct {
	ID    string
	RunID string
	// Workspace is the run's: the dispatcher takes workspaces in turns.
	Workspace string
	Key       string
	Attempt   int
	URL       string
	Payload   json.RawMessage
	Tries     int // including this one
	MaxTries  int
	// SentTries is the last try of a request/response delivery that was
	// sent (0: none was), for a row claimed again.
	SentTries int
	// Request is set for a request/response delivery (DispatchHTTP);
	// Payload is then its body.
	Request *HTTPRequest
	// LeasedAt is a time, on the claiming process's clock, at or before
	// the start of the row's lease: the lease ends no earlier than
	// LeasedAt plus the lease's length, so the holder renews in time.
	// The time the claim came back would be late by the claim's
	// statement, or by the rest of the transaction and its commit for a
	// row written already claimed.
	LeasedAt time.Time
}

// BulkStart is one node of Tx.BulkStart.
type BulkStart struct {
	Key             string
	Input           json.RawMessage
	Status          Status // running or waiting_for_user
	DeadlineSeconds int
	// ChildRunID is the sub-flow run a SubFlow instance started.
	ChildRunID string
}

// BulkComplete is one node of Tx.BulkComplete.
type BulkComplete struct {
	// RunID is the node's run (Tx.CompleteAcrossRuns only).
	RunID   string
	Key     string
	Attempt int
	Output  json.RawMessage
}

// CancelledNode is a node CancelNodes cancelled: its key, node id, the
// status it had and its attempt.
type CancelledNode struct {
	Key, NodeID string
	Was         Status
	Attempt     int
	// Deferred: a pending node whose fire was left for a later
	// transaction (Tx.DeferNode), counted among the run's active nodes.
	Deferred bool
}

// RunSave is what Tx.SaveRunWithEvents writes.
type RunSave struct {
	// Run's EventSeq counts Events; the deliveries logged add to it.
	Run *Run
	// FirstSeq numbers the first event.
	FirstSeq int64
	Events   []NewEvent
	// DeliveredKeys and DeliveredAttempts are (key, attempt) pairs a
	// worker called back for: their dispatches arrived. Their outbox rows
	// are marked delivered, and each delivery not yet in the run's events gets a
	// dispatch.attempt event (delivered: true), ordered by key and
	// attempt, between Events[:DeliveredAt] and Events[DeliveredAt:].
	DeliveredKeys     []string
	DeliveredAttempts []int
	DeliveredAt       int
	// Relative saves a run whose row the transaction never read (a
	// speculated chain step): Run's ActiveNodes, FailedNodes and
	// TerminalsLeft are changes to add to the row's, its status, output
	// and error are left as they are, and the events are numbered after
	// the row's event_seq (FirstSeq is ignored). Only with delivered pairs,
	// up to a chunk of events.
	Relative bool
}

// Delivered is an outbox row whose successful delivery is to be logged.
type Delivered struct {
	ID      string
	Key     string
	Attempt int
	Tries   int
}

// TreeCount is what AddTreeNodes decided about a run tree's count.
type TreeCount struct {
	// Added: the node instances were counted.
	Added bool
	// Root is the tree's root run.
	Root string
	// Held: the transaction holds the count's row, so no other changes it
	// until the transaction ends; else the transaction decided on what
	// was committed and its count went beside the row.
	Held bool
	// Room is, when Held, how many more node instances the tree may take
	// as of the ask (but for what other transactions count beside the row
	// later, which the row's next ask folds in): what the holder adds
	// within it may be queued with GrowTreeLater without asking again. A
	// transaction that does not hold the row asks each time (0).
	Room int64
}
