// Package testsignal lets tests wait for something a service did instead
// of sleeping, after River's internal/testsignal: production code calls
// Signal at the point a test may want to wait for (a sweep finished, a
// schedule pass ran), and the call does nothing unless a test called Init
// first. It is the only way production code reaches a test hook.
package testsignal

import (
	"sync"
	"testing"
	"time"
)

// size is how many unread signals are kept; beyond it the oldest go, so a
// service signalling every poll never blocks on a test that reads none.
const size = 1000

// Signal is one kind of signal, carrying a T. Its zero value is inert:
// Signal does nothing until Init.
type Signal[T any] struct {
	mu sync.Mutex
	ch chan T
}

// Init makes the signal record (call it before the service starts).
func (s *Signal[T]) Init() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ch = make(chan T, size)
}

// Signal records v, if a test called Init; it never blocks.
func (s *Signal[T]) Signal(v T) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ch == nil {
		return
	}
	for {
		select {
		case s.ch <- v:
			return
		default:
		}
		select { // full: drop the oldest
		case <-s.ch:
		default:
		}
	}
}

func (s *Signal[T]) channel(tb testing.TB) chan T {
	tb.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ch == nil {
		tb.Fatal("testsignal: Init was not called")
	}
	return s.ch
}

// Drain forgets the signals recorded so far.
func (s *Signal[T]) Drain(tb testing.TB) {
	tb.Helper()
	ch := s.channel(tb)
	for {
		select {
		case <-ch:
		default:
			return
		}
	}
}

// Wait returns the next signal, failing the test after timeout.
func (s *Signal[T]) Wait(tb testing.TB, timeout time.Duration) T {
	tb.Helper()
	ch := s.channel(tb)
	select {
	case v := <-ch:
		return v
	case <-time.After(timeout):
		tb.Fatalf("testsignal: no signal within %s", timeout)
		var zero T
		return zero
	}
}
