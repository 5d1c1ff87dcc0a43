package engine

import "github.com/stitchd/stitchd/engine/enginetype"

// The values at the engine's seams live in package enginetype, a leaf
// the writer and the store share; these aliases keep them engine's names.

type (
	Actor                 = enginetype.Actor
	Assignees             = enginetype.Assignees
	BulkComplete          = enginetype.BulkComplete
	BulkStart             = enginetype.BulkStart
	CallerAnswer          = enginetype.CallerAnswer
	CancelledNode         = enginetype.CancelledNode
	Claim                 = enginetype.Claim
	ClaimedDispatch       = enginetype.ClaimedDispatch
	Compensation          = enginetype.Compensation
	CompensationStep      = enginetype.CompensationStep
	Delivered             = enginetype.Delivered
	Dispatch              = enginetype.Dispatch
	DispatchUpdate        = enginetype.DispatchUpdate
	DueNode               = enginetype.DueNode
	EntityMove            = enginetype.EntityMove
	EntityMoved           = enginetype.EntityMoved
	EntityUpsert          = enginetype.EntityUpsert
	Event                 = enginetype.Event
	EventWait             = enginetype.EventWait
	HTTPRequest           = enginetype.HTTPRequest
	ItemFailure           = enginetype.ItemFailure
	LimitError            = enginetype.LimitError
	NewEvent              = enginetype.NewEvent
	NodeState             = enginetype.NodeState
	NodeTransition        = enginetype.NodeTransition
	NodeType              = enginetype.NodeType
	Notification          = enginetype.Notification
	Pending               = enginetype.Pending
	QueuedTransitionError = enginetype.QueuedTransitionError
	ReadyCheck            = enginetype.ReadyCheck
	ResetNode             = enginetype.ResetNode
	Run                   = enginetype.Run
	RunSave               = enginetype.RunSave
	RunStatus             = enginetype.RunStatus
	SecretUse             = enginetype.SecretUse
	Status                = enginetype.Status
	TakenEvent            = enginetype.TakenEvent
	TransitionError       = enginetype.TransitionError
	Tx                    = enginetype.Tx
	TxReads               = enginetype.TxReads
	TxWrites              = enginetype.TxWrites
	UXDecision            = enginetype.UXDecision
	UntakenCountDown      = enginetype.UntakenCountDown
	Vote                  = enginetype.Vote
	Wake                  = enginetype.Wake
)

const (
	NodeTypeCollector     = enginetype.NodeTypeCollector
	NodeTypeCondition     = enginetype.NodeTypeCondition
	NodeTypeEvent         = enginetype.NodeTypeEvent
	NodeTypeHTTP          = enginetype.NodeTypeHTTP
	NodeTypeSplitter      = enginetype.NodeTypeSplitter
	NodeTypeSubFlow       = enginetype.NodeTypeSubFlow
	NodeTypeTransform     = enginetype.NodeTypeTransform
	NodeTypeUX            = enginetype.NodeTypeUX
	NodeTypeWait          = enginetype.NodeTypeWait
	NodeTypeWorker        = enginetype.NodeTypeWorker
	RunCancelled          = enginetype.RunCancelled
	RunCompleted          = enginetype.RunCompleted
	RunFailed             = enginetype.RunFailed
	RunPaused             = enginetype.RunPaused
	RunQueued             = enginetype.RunQueued
	RunRunning            = enginetype.RunRunning
	StatusCancelled       = enginetype.StatusCancelled
	StatusCompleted       = enginetype.StatusCompleted
	StatusFailed          = enginetype.StatusFailed
	StatusPending         = enginetype.StatusPending
	StatusRunning         = enginetype.StatusRunning
	StatusSkipped         = enginetype.StatusSkipped
	StatusSleeping        = enginetype.StatusSleeping
	StatusWaitingForEvent = enginetype.StatusWaitingForEvent
	StatusWaitingForUser  = enginetype.StatusWaitingForUser
)

var (
	ErrConflict          = enginetype.ErrConflict
	ErrForbidden         = enginetype.ErrForbidden
	ErrInvalidRequest    = enginetype.ErrInvalidRequest
	ErrInvalidTransition = enginetype.ErrInvalidTransition
	ErrLimited           = enginetype.ErrLimited
	ErrNotFound          = enginetype.ErrNotFound
	ErrSecret            = enginetype.ErrSecret
	ErrUnavailable       = enginetype.ErrUnavailable
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
