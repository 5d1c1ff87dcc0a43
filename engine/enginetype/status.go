package enginetype

import "fmt"

// Status is a node state's status.
type Status string

// RunStatus is a run's status.
type RunStatus string

// AllowedFrom returns the statuses a node may move to dest from. It is the
// state machine, written as data (sources → destination):
//
//	pending          → running
//	running          → completed | failed | waiting_for_user
//	failed           → running            (retry)
//	waiting_for_user → running            (resume)
//	pending          → skipped            (no inbound edge taken)
//	running          → sleeping           (a Wait node)
//	sleeping         → running            (woken when due)
//	running          → waiting_for_event  (an Event node)
//	waiting_for_event → running           (its event arrived, or it timed out)
//	any non-completed, non-cancelled → cancelled (run cancellation)
//
// completed, skipped and cancelled are terminal.
func AllowedFrom(dest Status) []Status {
	switch dest {
	case StatusRunning:
		return []Status{StatusPending, StatusFailed, StatusWaitingForUser, StatusSleeping, StatusWaitingForEvent}
	case StatusCompleted, StatusFailed, StatusWaitingForUser, StatusSleeping, StatusWaitingForEvent:
		return []Status{StatusRunning}
	case StatusSkipped:
		return []Status{StatusPending}
	case StatusCancelled:
		return []Status{StatusPending, StatusRunning, StatusFailed, StatusWaitingForUser, StatusSleeping, StatusWaitingForEvent}
	default:
		return nil
	}
}

// CanTransition reports whether from → to is allowed.
func CanTransition(from, to Status) bool {
	for _, s := range AllowedFrom(to) {
		if s == from {
			return true
		}
	}
	return false
}

// ValidatePath checks that from → steps[0] → steps[1] … is allowed and
// returns the statuses the first step may start from, intersected with from.
func ValidatePath(from []Status, steps []Status) ([]Status, error) {
	if len(steps) == 0 {
		return nil, fmt.Errorf("transition has no steps")
	}
	var ok []Status
	for _, f := range from {
		if CanTransition(f, steps[0]) {
			ok = append(ok, f)
		}
	}
	if len(ok) == 0 {
		return nil, fmt.Errorf("%w: %v → %s", ErrInvalidTransition, from, steps[0])
	}
	for i := 1; i < len(steps); i++ {
		if !CanTransition(steps[i-1], steps[i]) {
			return nil, fmt.Errorf("%w: %s → %s", ErrInvalidTransition, steps[i-1], steps[i])
		}
	}
	return ok, nil
}

// Active reports whether a node in this status can still make progress on
// its own (a worker is working, a person may answer, a timer will fire).
func (s Status) Active() bool {
	return s == StatusRunning || s == StatusWaitingForUser || s == StatusSleeping || s == StatusWaitingForEvent
}

// Finished reports whether the run status is final.
func (s RunStatus) Finished() bool { return s != RunRunning && s != RunPaused && s != RunQueued }

// Node statuses.
const (
	StatusPending        Status = "pending"
	StatusRunning        Status = "running"
	StatusCompleted      Status = "completed"
	StatusFailed         Status = "failed"
	StatusWaitingForUser Status = "waiting_for_user"
	StatusCancelled      Status = "cancelled"
	// StatusSkipped: every inbound edge was decided and none was taken
	// (dead-path elimination); terminal.
	StatusSkipped Status = "skipped"
	// StatusSleeping: a Wait node waits for its wake_at (database time).
	StatusSleeping Status = "sleeping"
	// StatusWaitingForEvent: an Event node waits for an event with its name
	// and key (POST /api/v1/events).
	StatusWaitingForEvent Status = "waiting_for_event"
)

// Run statuses.
const (
	RunRunning   RunStatus = "running"
	RunCompleted RunStatus = "completed"
	RunFailed    RunStatus = "failed"
	RunCancelled RunStatus = "cancelled"
	// RunPaused: an operator paused the run; nothing new fires until it
	// resumes.
	RunPaused RunStatus = "paused"
	// RunQueued: the run waits for its entity's active run of the flow to
	// end (settings.entityConcurrency queue); nothing of it has fired.
	RunQueued RunStatus = "queued"
)
