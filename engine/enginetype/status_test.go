package enginetype

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestStateMachine(t *testing.T) {
	t.Parallel()
	all := []Status{StatusPending, StatusRunning, StatusCompleted, StatusFailed, StatusWaitingForUser, StatusCancelled}
	allowed := map[[2]Status]bool{
		{StatusPending, StatusRunning}:          true,
		{StatusRunning, StatusCompleted}:        true,
		{StatusRunning, StatusFailed}:           true,
		{StatusRunning, StatusWaitingForUser}:   true,
		{StatusFailed, StatusRunning}:           true,
		{StatusWaitingForUser, StatusRunning}:   true,
		{StatusPending, StatusCancelled}:        true,
		{StatusRunning, StatusCancelled}:        true,
		{StatusFailed, StatusCancelled}:         true,
		{StatusWaitingForUser, StatusCancelled}: true,
	}
	for _, from := range all {
		for _, to := range all {
			require.Equal(t, allowed[[2]Status{from, to}], CanTransition(from, to), "%s → %s", from, to)
		}
	}
	for _, to := range all {
		require.False(t, CanTransition(StatusCompleted, to), "completed is terminal")
		require.False(t, CanTransition(StatusCancelled, to), "cancelled is terminal")
	}
}

func TestValidatePath(t *testing.T) {
	t.Parallel()
	tests := []struct {
		from  Status
		steps []Status
		ok    bool
	}{
		{StatusPending, []Status{StatusRunning, StatusCompleted}, true},
		{StatusPending, []Status{StatusRunning, StatusWaitingForUser}, true},
		{StatusWaitingForUser, []Status{StatusRunning, StatusFailed}, true},
		{StatusFailed, []Status{StatusRunning}, true},
		{StatusPending, []Status{StatusCompleted}, false},
		{StatusFailed, []Status{StatusCompleted}, false},
		{StatusCompleted, []Status{StatusRunning}, false},
		{StatusPending, []Status{StatusRunning, StatusPending}, false},
		{StatusPending, nil, false},
	}
	for _, tt := range tests {
		_, err := ValidatePath([]Status{tt.from}, tt.steps)
		if tt.ok {
			require.NoError(t, err, "%s → %v", tt.from, tt.steps)
		} else {
			require.Error(t, err, "%s → %v", tt.from, tt.steps)
		}
	}
	_, err := ValidatePath([]Status{StatusCompleted}, []Status{StatusRunning})
	require.ErrorIs(t, err, ErrInvalidTransition)
}

func TestInstanceKey(t *testing.T) {
	t.Parallel()
	require.Equal(t, "score", InstanceKey("score", nil))
	require.Equal(t, "score", InstanceKey("score", []int{}))
	require.Equal(t, "score_2", InstanceKey("score", []int{2}))
	require.Equal(t, "step_2_10_0", InstanceKey("step_2", []int{10, 0}))
}
