package engine

import "github.com/stitchd/stitchd/engine/enginetype"

// The values at the engine's seams live in package enginetype, a leaf
// the writer, the commit service and the store share; these aliases keep
// them engine's names.

type (
	// Actor is enginetype.Actor.
	Actor = enginetype.Actor
	// Assignees is enginetype.Assignees.
	Assignees = enginetype.Assignees
	// BulkComplete is enginetype.BulkComplete.
	BulkComplete = enginetype.BulkComplete
	// BulkStart is enginetype.BulkStart.
	BulkStart = enginetype.BulkStart
	// CallbackParams is enginetype.CallbackParams.
	CallbackParams = enginetype.CallbackParams
	// CallerAnswer is enginetype.CallerAnswer.
	CallerAnswer = enginetype.CallerAnswer
	// CancelledNode is enginetype.CancelledNode.
	CancelledNode = enginetype.CancelledNode
	// Claim is enginetype.Claim.
	Claim = enginetype.Claim
	// ClaimedDispatch is enginetype.ClaimedDispatch.
	ClaimedDispatch = enginetype.ClaimedDispatch
	// Compensation is enginetype.Compensation.
	Compensation = enginetype.Compensation
	// CompensationStep is enginetype.CompensationStep.
	CompensationStep = enginetype.CompensationStep
	// Delivered is enginetype.Delivered.
	Delivered = enginetype.Delivered
	// Dispatch is enginetype.Dispatch.
	Dispatch = enginetype.Dispatch
	// DispatchUpdate is enginetype.DispatchUpdate.
	DispatchUpdate = enginetype.DispatchUpdate
	// DueNode is enginetype.DueNode.
	DueNode = enginetype.DueNode
	// EntityMove is enginetype.EntityMove.
	EntityMove = enginetype.EntityMove
	// EntityMoved is enginetype.EntityMoved.
	EntityMoved = enginetype.EntityMoved
	// EntityUpsert is enginetype.EntityUpsert.
	EntityUpsert = enginetype.EntityUpsert
	// Event is enginetype.Event.
	Event = enginetype.Event
	// EventWait is enginetype.EventWait.
	EventWait = enginetype.EventWait
	// HTTPRequest is enginetype.HTTPRequest.
	HTTPRequest = enginetype.HTTPRequest
	// ItemFailure is enginetype.ItemFailure.
	ItemFailure = enginetype.ItemFailure
	// LimitError is enginetype.LimitError.
	LimitError = enginetype.LimitError
	// NewEvent is enginetype.NewEvent.
	NewEvent = enginetype.NewEvent
	// NodeState is enginetype.NodeState.
	NodeState = enginetype.NodeState
	// NodeTransition is enginetype.NodeTransition.
	NodeTransition = enginetype.NodeTransition
	// NodeType is enginetype.NodeType.
	NodeType = enginetype.NodeType
	// Notification is enginetype.Notification.
	Notification = enginetype.Notification
	// Pending is enginetype.Pending.
	Pending = enginetype.Pending
	// QueuedTransitionError is enginetype.QueuedTransitionError.
	QueuedTransitionError = enginetype.QueuedTransitionError
	// ReadyCheck is enginetype.ReadyCheck.
	ReadyCheck = enginetype.ReadyCheck
	// ResetNode is enginetype.ResetNode.
	ResetNode = enginetype.ResetNode
	// Run is enginetype.Run.
	Run = enginetype.Run
	// RunSave is enginetype.RunSave.
	RunSave = enginetype.RunSave
	// RunStatus is enginetype.RunStatus.
	RunStatus = enginetype.RunStatus
	// SecretUse is enginetype.SecretUse.
	SecretUse = enginetype.SecretUse
	// Status is enginetype.Status.
	Status = enginetype.Status
	// TakenEvent is enginetype.TakenEvent.
	TakenEvent = enginetype.TakenEvent
	// TransactionTrace is enginetype.TransactionTrace.
	TransactionTrace = enginetype.TransactionTrace
	// TransitionError is enginetype.TransitionError.
	TransitionError = enginetype.TransitionError
	// TreeCount is enginetype.TreeCount.
	TreeCount = enginetype.TreeCount
	// Tx is enginetype.Tx.
	Tx = enginetype.Tx
	// TxReads is enginetype.TxReads.
	TxReads = enginetype.TxReads
	// TxWrites is enginetype.TxWrites.
	TxWrites = enginetype.TxWrites
	// UXDecision is enginetype.UXDecision.
	UXDecision = enginetype.UXDecision
	// UntakenCountDown is enginetype.UntakenCountDown.
	UntakenCountDown = enginetype.UntakenCountDown
	// Vote is enginetype.Vote.
	Vote = enginetype.Vote
	// Wake is enginetype.Wake.
	Wake = enginetype.Wake
)

const (
	// NodeTypeCollector is enginetype.NodeTypeCollector.
	NodeTypeCollector = enginetype.NodeTypeCollector
	// NodeTypeCondition is enginetype.NodeTypeCondition.
	NodeTypeCondition = enginetype.NodeTypeCondition
	// NodeTypeEvent is enginetype.NodeTypeEvent.
	NodeTypeEvent = enginetype.NodeTypeEvent
	// NodeTypeHTTP is enginetype.NodeTypeHTTP.
	NodeTypeHTTP = enginetype.NodeTypeHTTP
	// NodeTypeSplitter is enginetype.NodeTypeSplitter.
	NodeTypeSplitter = enginetype.NodeTypeSplitter
	// NodeTypeSubFlow is enginetype.NodeTypeSubFlow.
	NodeTypeSubFlow = enginetype.NodeTypeSubFlow
	// NodeTypeTransform is enginetype.NodeTypeTransform.
	NodeTypeTransform = enginetype.NodeTypeTransform
	// NodeTypeUX is enginetype.NodeTypeUX.
	NodeTypeUX = enginetype.NodeTypeUX
	// NodeTypeWait is enginetype.NodeTypeWait.
	NodeTypeWait = enginetype.NodeTypeWait
	// NodeTypeWorker is enginetype.NodeTypeWorker.
	NodeTypeWorker = enginetype.NodeTypeWorker
	// RunCancelled is enginetype.RunCancelled.
	RunCancelled = enginetype.RunCancelled
	// RunCompleted is enginetype.RunCompleted.
	RunCompleted = enginetype.RunCompleted
	// RunFailed is enginetype.RunFailed.
	RunFailed = enginetype.RunFailed
	// RunPaused is enginetype.RunPaused.
	RunPaused = enginetype.RunPaused
	// RunQueued is enginetype.RunQueued.
	RunQueued = enginetype.RunQueued
	// RunRunning is enginetype.RunRunning.
	RunRunning = enginetype.RunRunning
	// StatusCancelled is enginetype.StatusCancelled.
	StatusCancelled = enginetype.StatusCancelled
	// StatusCompleted is enginetype.StatusCompleted.
	StatusCompleted = enginetype.StatusCompleted
	// StatusFailed is enginetype.StatusFailed.
	StatusFailed = enginetype.StatusFailed
	// StatusPending is enginetype.StatusPending.
	StatusPending = enginetype.StatusPending
	// StatusRunning is enginetype.StatusRunning.
	StatusRunning = enginetype.StatusRunning
	// StatusSkipped is enginetype.StatusSkipped.
	StatusSkipped = enginetype.StatusSkipped
	// StatusSleeping is enginetype.StatusSleeping.
	StatusSleeping = enginetype.StatusSleeping
	// StatusWaitingForEvent is enginetype.StatusWaitingForEvent.
	StatusWaitingForEvent = enginetype.StatusWaitingForEvent
	// StatusWaitingForUser is enginetype.StatusWaitingForUser.
	StatusWaitingForUser = enginetype.StatusWaitingForUser
)

var (
	// ErrConflict is enginetype.ErrConflict.
	ErrConflict = enginetype.ErrConflict
	// ErrForbidden is enginetype.ErrForbidden.
	ErrForbidden = enginetype.ErrForbidden
	// ErrInvalidRequest is enginetype.ErrInvalidRequest.
	ErrInvalidRequest = enginetype.ErrInvalidRequest
	// ErrInvalidTransition is enginetype.ErrInvalidTransition.
	ErrInvalidTransition = enginetype.ErrInvalidTransition
	// ErrLimited is enginetype.ErrLimited.
	ErrLimited = enginetype.ErrLimited
	// ErrNotFound is enginetype.ErrNotFound.
	ErrNotFound = enginetype.ErrNotFound
	// ErrSecret is enginetype.ErrSecret.
	ErrSecret = enginetype.ErrSecret
	// ErrUnavailable is enginetype.ErrUnavailable.
	ErrUnavailable = enginetype.ErrUnavailable
)

// AllowedFrom is enginetype.AllowedFrom.
func AllowedFrom(dest Status) []Status { return enginetype.AllowedFrom(dest) }

// CanTransition is enginetype.CanTransition.
func CanTransition(from Status, to Status) bool { return enginetype.CanTransition(from, to) }

// EscapeURLValue is enginetype.EscapeURLValue.
func EscapeURLValue(before string, value string) string {
	return enginetype.EscapeURLValue(before, value)
}

// InURLPath is enginetype.InURLPath.
func InURLPath(before string) bool { return enginetype.InURLPath(before) }

// InstanceKey is enginetype.InstanceKey.
func InstanceKey(id string, idx []int) string { return enginetype.InstanceKey(id, idx) }

// IsTransitionError is enginetype.IsTransitionError.
func IsTransitionError(err error) (*TransitionError, bool) { return enginetype.IsTransitionError(err) }

// JSONInner is enginetype.JSONInner.
func JSONInner(s string, htmlEscape bool) string { return enginetype.JSONInner(s, htmlEscape) }

// NewSecretUse is enginetype.NewSecretUse.
func NewSecretUse() (*SecretUse, error) { return enginetype.NewSecretUse() }

// ValidatePath is enginetype.ValidatePath.
func ValidatePath(from []Status, steps []Status) ([]Status, error) {
	return enginetype.ValidatePath(from, steps)
}
