package testkit

import (
	"sync/atomic"
	"time"
)

// Clock is the wall clock moved forward by a test: Now is time.Now plus
// everything Advance added. It satisfies engine.Clock, so a process
// given it (app.Config.Clock) runs on real time — its tickers, its
// requests — and jumps ahead when the test says (tokens, leases and
// sessions it times with its clock expire without a sleep).
type Clock struct{ offset atomic.Int64 }

// Now is the clock's time.
func (c *Clock) Now() time.Time { return time.Now().Add(time.Duration(c.offset.Load())) }

// Advance moves the clock forward by d.
func (c *Clock) Advance(d time.Duration) { c.offset.Add(int64(d)) }
