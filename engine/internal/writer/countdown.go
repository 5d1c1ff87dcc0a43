package writer

import (
	"fmt"
	"slices"

	"github.com/stitchd/stitchd/engine/enginetype"
)

// Count-downs the writer queues. A completion's compare-and-set can carry
// the count-down of the node's successors in the same round trip
// (lockAndTransition): the writer queues it, keeps it once the rules have
// checked what it assumed, and answers the walk's count-down from it.

// CountDown is a count-down of node Key's successors in run RunID,
// queued with Key's completion (QueueCountDown), assuming the run is on
// flow version Version and Key is an instance of node NodeID.
type CountDown struct {
	RunID, Key, Version, NodeID string
	got                         func() (map[string]enginetype.Pending, error)
}

// QueueCountDown queues c's count-down of keys by one and returns it, not
// yet kept: until KeepCountDown, CountDown does not answer from it (and
// the transaction that queued it must not commit without keeping it or
// failing).
func (w *Writer) QueueCountDown(c CountDown, keys []string) *CountDown {
	c.got = w.AddPendingLater(c.RunID, keys, -1)
	return &c
}

// AssumeCountDown keeps the count-down of c's node's one successor join
// for the walk with the answer the rules know (its last parent, with
// untaken edges not taken): an assumption the database checks. The check
// travels with the join's first fire, the compare-and-set that moves it
// out of pending (NodeTransition.Ready): the same row, one statement
// instead of two. Should no such transition come, it is queued on its own
// (TxWrites.CountDownToReadyLater) when the operation ends (AssumedReady).
func (w *Writer) AssumeCountDown(c CountDown, join string, untaken int) error {
	if w.ready != nil {
		return fmt.Errorf("join %s assumed ready while join %s's check is queued", join, w.ready.key)
	}
	w.writes++
	w.assumed = true
	w.ready = &readyJoin{runID: c.RunID, key: join, untaken: untaken}
	answer := map[string]enginetype.Pending{join: {Remaining: 0, Untaken: untaken, Status: enginetype.StatusPending}}
	c.got = func() (map[string]enginetype.Pending, error) { return answer, nil }
	w.KeepCountDown(&c)
	return nil
}

// readyJoin is a join assumed ready (AssumeCountDown) whose check is not
// yet queued.
type readyJoin struct {
	runID, key string
	untaken    int
}

// carryReady puts the check of an assumed-ready join on t when t is the
// join's first fire out of pending (which sets pending_parents to 0, as
// the check alone would); it reports whether it did. Any other write of
// the join's row queues the check alone first (readyBefore).
func (w *Writer) carryReady(t *enginetype.NodeTransition) bool {
	r := w.ready
	if r == nil || r.runID != t.RunID || r.key != t.Key {
		return false
	}
	if t.From != enginetype.StatusPending || !t.ClearPending {
		return false
	}
	t.Ready = &enginetype.ReadyCheck{Untaken: r.untaken}
	w.ready = nil
	return true
}

// readyBefore queues the check of an assumed-ready join alone before a
// write of run runID's rows that may change the join's (all of the run's
// when keys is nil), so that the check sees the row the assumption was
// made on.
func (w *Writer) readyBefore(runID string, keys []string) error {
	r := w.ready
	if r == nil || r.runID != runID || (keys != nil && !slices.Contains(keys, r.key)) {
		return nil
	}
	return w.AssumedReady()
}

// AssumedReady queues the check of an assumed-ready join that no
// transition carried (AssumeCountDown); it is called once the rules are
// done.
func (w *Writer) AssumedReady() error {
	r := w.ready
	if r == nil {
		return nil
	}
	w.ready = nil
	if err := w.tx.CountDownToReadyLater(w.ctx, r.runID, r.key, r.untaken); err != nil {
		return fmt.Errorf("error counting down %s: %w", r.key, err)
	}
	return nil
}

// KeepCountDown keeps c for the walk's CountDown of its node.
func (w *Writer) KeepCountDown(c *CountDown) { w.countedDown = append(w.countedDown, c) }

// CountedDown reports whether key's successors in run runID were counted
// down with its completion, kept and not yet taken.
func (w *Writer) CountedDown(runID, key string) bool { return w.keptAt(runID, key) >= 0 }

func (w *Writer) keptAt(runID, key string) int {
	return slices.IndexFunc(w.countedDown, func(c *CountDown) bool { return c.RunID == runID && c.Key == key })
}

// CountDown counts the pending parents of node key's successors keys down
// by one and returns what remains of them: the answer of the count-down
// queued with key's completion when one was kept, else one UPDATE …
// RETURNING (nothing for no keys).
func (w *Writer) CountDown(runID, key string, keys []string) (map[string]enginetype.Pending, error) {
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
func (w *Writer) Unwalked() error {
	if len(w.countedDown) == 0 {
		return nil
	}
	return fmt.Errorf("successors of %s were counted down but not walked", w.countedDown[0].Key)
}
