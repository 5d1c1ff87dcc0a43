package engine

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestCommitInfoOfSpilledEvents: events written before the commit are
// counted by kind (failures listed all the same), those kept until the
// commit are listed, and the run's start and finish come from either.
func TestCommitInfoOfSpilledEvents(t *testing.T) {
	t.Parallel()
	g := &ExecutionGraph{Nodes: map[string]*Node{
		"src": {ID: "src", Type: NodeTypeWorker}, "s": {ID: "s", Type: NodeTypeSplitter},
		"w": {ID: "w", Type: NodeTypeWorker}, "u": {ID: "u", Type: NodeTypeUX},
	}}
	ev := func(key, node string, to Status) NewEvent {
		var msg *string
		if to == StatusFailed {
			m := "boom"
			msg = &m
		}
		return NewEvent{Type: EventNodeStatus, Key: key, Payload: &nodeStatus{Status: to, Attempt: 1, NodeID: node, Error: msg}}
	}
	tx := &txn{run: &Run{ID: "r"}, graph: g}
	// Written before the commit: the transaction's own first (listed), then the fan-out's.
	for i, e := range []NewEvent{{Type: EventRunStarted}, ev("src", "src", StatusCompleted),
		ev("w_0", "w", StatusRunning), ev("w_1", "w", StatusRunning), ev("u_0", "u", StatusRunning),
		ev("w_2", "w", StatusFailed), ev("w_3", "w", StatusRunning)} {
		tx.spilled.note(e, g, i >= 2)
	}
	tx.spilledEvents = 7
	tx.events = []NewEvent{ev("w_4", "w", StatusRunning), ev("s", "s", StatusCompleted), {Type: EventRunFailed}}

	ci := tx.commitInfo()
	require.Equal(t, "r", ci.RunID)
	require.True(t, ci.RunStarted)
	require.Equal(t, RunFailed, ci.RunFinished)
	require.Equal(t, []TransitionCount{
		{Type: NodeTypeWorker, To: StatusRunning, Count: 3},
		{Type: NodeTypeUX, To: StatusRunning, Count: 1},
	}, ci.Counted)
	require.Equal(t, []TransitionInfo{
		{Key: "src", NodeID: "src", Type: NodeTypeWorker, To: StatusCompleted, Attempt: 1},
		{Key: "w_2", NodeID: "w", Type: NodeTypeWorker, To: StatusFailed, Attempt: 1, Error: "boom"},
		{Key: "w_4", NodeID: "w", Type: NodeTypeWorker, To: StatusRunning, Attempt: 1},
		{Key: "s", NodeID: "s", Type: NodeTypeSplitter, To: StatusCompleted, Attempt: 1},
	}, ci.Transitions)
}
