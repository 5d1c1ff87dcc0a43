package testsignal

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestSignal(t *testing.T) {
	t.Parallel()
	var s Signal[int]
	s.Signal(1) // not initialised: nothing happens
	s.Init()
	for i := range size + 5 { // more than it keeps: the oldest go, nothing blocks
		s.Signal(i)
	}
	require.Equal(t, 5, s.Wait(t, time.Second))
	s.Drain(t)
	go s.Signal(42) // Wait takes a signal sent while it waits
	require.Equal(t, 42, s.Wait(t, 5*time.Second))
}
