package engine

import (
	"fmt"
	"slices"
)

// Count-downs the writer queues. A completion's compare-and-set can carry
// the count-down of the node's successors in the same round trip
// (lockAndTransition): the writer queues it, keeps it once the rules have
// checked what it assumed, and answers the walk's count-down from it.

// countDown is a count-down of node key's successors in run runID,
// queued with key's completion (writer.QueueCountDown), assuming the run
// is on flow version version and key is an instance of node nodeID.
type countDown struct {
	runID, key, version, nodeID string
	got                         func() (map[string]Pending, error)
}

// QueueCountDown queues c's count-down of keys by one and returns it, not
// yet kept: until KeepCountDown, CountDown does not answer from it (and
// the transaction that queued it must not commit without keeping it or
// failing).
func (w *writer) QueueCountDown(c countDown, keys []string) *countDown {
	c.got = w.AddPendingLater(c.runID, keys, -1)
	return &c
}

// AssumeCountDown queues the count-down of c's node's one successor join,
// whose answer the rules know (TxWrites.CountDownToReadyLater: its last
// parent, with untaken edges not taken), and keeps it for the walk with
// that answer: an assumption the database checks.
func (w *writer) AssumeCountDown(c countDown, join string, untaken int) error {
	if err := w.wrote(w.tx.CountDownToReadyLater(w.ctx, c.runID, join, untaken)); err != nil {
		return err
	}
	w.assumed = true
	answer := map[string]Pending{join: {Remaining: 0, Untaken: untaken, Status: StatusPending}}
	c.got = func() (map[string]Pending, error) { return answer, nil }
	w.KeepCountDown(&c)
	return nil
}

// KeepCountDown keeps c for the walk's CountDown of its node.
func (w *writer) KeepCountDown(c *countDown) { w.countedDown = append(w.countedDown, c) }

// CountedDown reports whether key's successors in run runID were counted
// down with its completion, kept and not yet taken.
func (w *writer) CountedDown(runID, key string) bool { return w.keptAt(runID, key) >= 0 }

func (w *writer) keptAt(runID, key string) int {
	return slices.IndexFunc(w.countedDown, func(c *countDown) bool { return c.runID == runID && c.key == key })
}

// CountDown counts the pending parents of node key's successors keys down
// by one and returns what remains of them: the answer of the count-down
// queued with key's completion when one was kept, else one UPDATE …
// RETURNING (nothing for no keys).
func (w *writer) CountDown(runID, key string, keys []string) (map[string]Pending, error) {
	if i := w.keptAt(runID, key); i >= 0 {
		c := w.countedDown[i]
		w.countedDown = slices.Delete(w.countedDown, i, i+1)
		return c.got()
	}
	if len(keys) == 0 {
		return nil, nil
	}
	return w.AddPending(runID, keys, -1)
}

// Unwalked is an error when a kept count-down was not taken: the
// successors were counted down, and no walk decided what they do.
func (w *writer) Unwalked() error {
	if len(w.countedDown) == 0 {
		return nil
	}
	return fmt.Errorf("successors of %s were counted down but not walked", w.countedDown[0].key)
}
