package engine

import (
	"time"
)

// Event types.
const (
	EventRunStarted       = "run.started"
	EventRunCompleted     = "run.completed"
	EventRunFailed        = "run.failed"
	EventRunCancelled     = "run.cancelled"
	EventRunResumed       = "run.resumed"
	EventNodeStatus       = "node.status"
	EventNodeHeartbeat    = "node.heartbeat"
	EventDispatchAttempt  = "dispatch.attempt"
	EventEntityMoved      = "entity.moved"
	EventItemsSpawned     = "node.fanout"
	EventCallbackRejected = "callback.rejected"
	// EventFailureHandled: a failed node's failure edges took its failure
	// on (it does not fail the run).
	EventFailureHandled = "node.failure_handled"
	// EventApprovalTimedOut: nobody answered a UX node before its deadline.
	EventApprovalTimedOut = "approval.timed_out"
	// EventLoopIteration: a loop's back edge started a new iteration.
	EventLoopIteration = "loop.iteration"
	// EventRunPaused and EventRunResumedByHand: an operator paused or
	// resumed the run.
	EventRunPaused        = "run.paused"
	EventRunResumedByHand = "run.unpaused"
	// EventNodeSkippedByHand: an operator completed a node by hand.
	EventNodeSkippedByHand = "node.completed_by_hand"
	// EventReceived: an Event node's event arrived (or had arrived).
	EventReceived = "node.event_received"
	// EventChildStarted: a SubFlow node started its child run.
	EventChildStarted = "node.child_started"
	// EventChildFinished: a SubFlow node's child run finished (completed,
	// failed or cancelled).
	EventChildFinished = "node.child_finished"
	// EventNodeLog: a node's handler logged a message (FireContext.Log).
	EventNodeLog = "node.log"
)

// Clock tells the time. The engine core never calls time.Now itself.
type Clock interface{ Now() time.Time }

// SystemClock is the wall clock.
type SystemClock struct{}

// Now returns the current time.
func (SystemClock) Now() time.Time { return time.Now() }
