package engine

import "sync"

// Claims carries the outbox rows commits claimed for this process (see
// Config.ClaimLease) to the dispatcher, as values: after a commit the
// engine puts its claimed rows here, and the dispatcher takes them when
// Ready says there are some. Neither calls the other — the engine is built
// without a dispatcher, and no transaction waits on one.
//
// It also carries the other way the dispatcher's room (SetRoom): how many
// more rows its queue takes. A transaction claims at most Room of the rows
// it writes, asked before it begins; the rest are written unclaimed and
// due, for pollers (of any process) to take in chunks, so a
// 100,000-item fan-out is not held by one process's leases.
type Claims struct {
	mu    sync.Mutex
	rows  []ClaimedDispatch
	room  int
	ready chan struct{}
}

// NewClaims returns an empty handoff with no room (nothing is claimed
// until the dispatcher says how much it takes).
func NewClaims() *Claims { return &Claims{ready: make(chan struct{}, 1)} }

// Room is how many more rows a transaction may claim now: the
// dispatcher's room less the rows waiting here for it.
func (c *Claims) Room() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return max(c.room-len(c.rows), 0)
}

// SetRoom records how many more rows the dispatcher's queue takes.
func (c *Claims) SetRoom(n int) {
	c.mu.Lock()
	c.room = n
	c.mu.Unlock()
}

// Ready receives when rows are waiting to be taken.
func (c *Claims) Ready() <-chan struct{} { return c.ready }

// Take returns the rows waiting, oldest first, and empties the handoff.
func (c *Claims) Take() []ClaimedDispatch {
	c.mu.Lock()
	defer c.mu.Unlock()
	rows := c.rows
	c.rows = nil
	return rows
}

// put adds the rows a commit claimed.
func (c *Claims) put(rows []ClaimedDispatch) {
	c.mu.Lock()
	c.rows = append(c.rows, rows...)
	c.mu.Unlock()
	select {
	case c.ready <- struct{}{}:
	default:
	}
}
