package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	isoduration "github.com/sosodev/duration"
)

// Time (docs/state_machine.md): a Wait node sleeps until its wake_at and a
// UX node with a timeout waits for a person until its deadline, both in
// database time. The sweeper finds the due ones (any process, FOR UPDATE
// SKIP LOCKED) and hands them here; the compare-and-set on the node's
// status and attempt makes each fire exactly once.

// Wake completes the sleeping nodes of run runID whose wake_at passed
// (sleeping → running → completed, each's output its input), in one
// transaction, and walks their edges. A node no longer sleeping that
// attempt (cancelled, woken already) is left alone.
func (e *Engine) Wake(ctx context.Context, runID string, due []DueNode) error {
	return e.submit(ctx, runID, func(t *txn) error {
		if err := t.load(runID); err != nil {
			return err
		}
		// The nodes without branches wake in one statement; those with
		// (or whose key names no node of the graph: a loop's) read their
		// row and decide their edges first, one by one.
		var plain, deciding, deferred []DueNode
		var keys []string
		for _, d := range due {
			if d.Deferred {
				deferred = append(deferred, d)
				keys = append(keys, d.Key)
				continue
			}
			if n, _, ok := t.graph.parseKey(d.Key); ok && !t.graph.hasBranches(n.ID) {
				plain = append(plain, d)
			} else {
				deciding = append(deciding, d)
				keys = append(keys, d.Key)
			}
		}
		states, err := t.tx.NodeStates(t.ctx, runID, keys)
		if err != nil {
			return fmt.Errorf("error loading the sleeping nodes of run %s: %w", runID, err)
		}
		if len(plain) > 0 {
			woken, err := t.w.WakeNodes(runID, plain)
			if err != nil {
				return fmt.Errorf("error waking %d nodes of run %s: %w", len(plain), runID, err)
			}
			for i := range woken {
				st := &woken[i]
				t.transitioned(&NodeTransition{From: StatusSleeping, Steps: []Status{StatusRunning, StatusCompleted}}, st)
				if err := t.completed(st); err != nil {
					return err
				}
			}
		}
		if err := t.fireDeferred(deferred, states); err != nil {
			return err
		}
		for _, d := range deciding {
			cur := states[d.Key]
			if cur == nil || cur.Status != StatusSleeping || cur.Attempt != d.Attempt {
				continue // woken already, cancelled, retried
			}
			n := t.graph.Nodes[cur.NodeID]
			if n == nil {
				return fmt.Errorf("node %s is not in the run's graph: %w", cur.NodeID, ErrNotFound)
			}
			err := t.completeWith(n, cur, "", &NodeTransition{Key: d.Key, From: StatusSleeping,
				Steps: []Status{StatusRunning, StatusCompleted}, Attempt: d.Attempt, Output: orNull(cur.Input)})
			if err != nil {
				return err
			}
		}
		return nil
	})
}

// fireDeferred fires the nodes a transaction left for a later one, with
// the input they were left with. A node no longer pending (cancelled,
// skipped, fired by a resume or a retry) is left alone, as are all while
// the run is paused: the sweeper comes back to them. A fan-out's sub-flow
// instances fire last, collected as the fan-out collects them: their
// starts go in one statement, and the child runs' rows in one statement a
// table (not five each).
func (t *txn) fireDeferred(due []DueNode, states map[string]*NodeState) error {
	if len(due) == 0 || t.run.Status != RunRunning {
		return nil
	}
	var starts, others []DueNode
	for _, d := range due {
		if cur := states[d.Key]; cur != nil {
			if n := t.graph.Nodes[cur.NodeID]; n != nil && byRows(n, cur.Index) {
				starts = append(starts, d)
				continue
			}
		}
		others = append(others, d)
	}
	// The others first: the starts are bounded by the rows alone, so each
	// kind moves on at every sweep.
	if err := t.fireDue(others, states); err != nil || len(starts) == 0 {
		return err
	}
	end := t.w.CollectBulk(t.run.ID, false)
	if err := t.fireDue(starts, states); err != nil {
		end()
		return err
	}
	return t.flushBulk(end())
}

// fireDue fires due, left for later, up to the transaction's bounds; the
// rest are due again at once.
func (t *txn) fireDue(due []DueNode, states map[string]*NodeState) error {
	for i, d := range due {
		cur := states[d.Key]
		if cur == nil || cur.Status != StatusPending || cur.Attempt != d.Attempt {
			continue
		}
		n := t.graph.Nodes[cur.NodeID]
		if n == nil {
			return fmt.Errorf("node %s is not in the run's graph: %w", cur.NodeID, ErrNotFound)
		}
		if t.atBound(n, cur.Index) {
			// This transaction did its most: the rest are due again at
			// once, for the next, in one statement.
			keys := make([]string, 0, len(due)-i)
			for _, r := range due[i:] {
				keys = append(keys, r.Key)
			}
			if err := t.w.RedeferNodes(t.run.ID, keys); err != nil {
				return fmt.Errorf("error leaving %d fires of run %s for later: %w", len(keys), t.run.ID, err)
			}
			t.deferred += len(keys)
			return nil
		}
		t.run.ActiveNodes-- // counted when it was left for later (fireDelayed)
		if err := t.fire(n, cur.Index, cur.Input, StatusPending, cur.Attempt); err != nil {
			return err
		}
	}
	return nil
}

// refuseWhileDeferred refuses an operation that resets or drops pending
// rows (a rerun, a migration) while fires the run left for a later
// transaction wait: they are counted among its active nodes until they
// fire. They fire within moments — or, in a paused run, after its resume.
func (t *txn) refuseWhileDeferred(what string) error {
	waiting, err := t.tx.HasDeferred(t.ctx, t.run.ID)
	if err != nil {
		return fmt.Errorf("error looking for the waiting fires of run %s: %w", t.run.ID, err)
	}
	if !waiting {
		return nil
	}
	if t.run.Status == RunPaused {
		return fmt.Errorf("%w: run %s has steps waiting to fire; resume it first, then it can be %s", ErrConflict, t.run.ID, what)
	}
	return fmt.Errorf("%w: run %s has steps waiting to fire (a long chain of steps in progress); try again in a moment", ErrConflict, t.run.ID)
}

// whileIn applies fn, in a transaction of run runID, to node key when it
// is still in status at attempt; a node that moved on meanwhile (answered,
// woken, cancelled) is left alone and nil returned.
func (e *Engine) whileIn(ctx context.Context, runID, key string, attempt int, status Status,
	fn func(t *txn, n *Node, cur *NodeState) error) error {
	err := e.submit(ctx, runID, func(t *txn) error {
		if err := t.load(runID); err != nil {
			return err
		}
		cur, err := t.tx.Node(t.ctx, runID, key)
		if err != nil {
			return err
		}
		if cur.Status != status || cur.Attempt != attempt {
			return errNoChange
		}
		n := t.graph.Nodes[cur.NodeID]
		if n == nil {
			return fmt.Errorf("node %s is not in the run's graph: %w", cur.NodeID, ErrNotFound)
		}
		return fn(t, n, cur)
	})
	if errorsIsConflict(err) {
		return nil
	}
	return err
}

// TimeOutApproval answers a UX node whose deadline passed while it waited
// for a person: with its onTimeout outcome (decision.by "timeout"), or by
// failing it when onTimeout is "fail" or absent. A node no longer waiting
// that attempt is left alone.
func (e *Engine) TimeOutApproval(ctx context.Context, runID, key string, attempt int) error {
	return e.whileIn(ctx, runID, key, attempt, StatusWaitingForUser, func(t *txn, n *Node, cur *NodeState) error {
		cfg := uxTimeout(n)
		msg := fmt.Sprintf("no answer within %d seconds", cfg.TimeoutSeconds)
		t.event(EventApprovalTimedOut, key, map[string]any{"attempt": attempt, "on_timeout": cfg.OnTimeout})
		t.notifyApproval(NotifyApprovalTimedOut, n, key, attempt, map[string]any{"on_timeout": cfg.OnTimeout})
		if cfg.OnTimeout == "" || cfg.OnTimeout == "fail" {
			return t.failWith(&NodeTransition{Key: key, From: StatusWaitingForUser, Steps: []Status{StatusRunning, StatusFailed},
				Attempt: attempt, Error: &msg})
		}
		return t.decideUX(n, cur, CompleteUXParams{RunID: runID, Key: key, Outcome: cfg.OnTimeout, Error: msg, By: "timeout", timedOut: true})
	})
}

// UXTimeout is a UX node's deadline: timeoutSeconds, then onTimeout (an
// outcome, or "fail").
type UXTimeout struct {
	TimeoutSeconds int    `json:"timeoutSeconds"`
	OnTimeout      string `json:"onTimeout"`
}

func uxTimeout(n *Node) UXTimeout {
	var cfg UXTimeout
	if len(n.Config) > 0 {
		_ = json.Unmarshal(n.Config, &cfg) // the compiler checked it
	}
	return cfg
}

func uxTimeoutSeconds(n *Node) int {
	if !n.Caps.WaitsForPerson {
		return 0
	}
	return max(uxTimeout(n).TimeoutSeconds, 0)
}

// ParseWaitDuration reads a Wait node's duration: a Go duration ("48h",
// "90m") or an ISO-8601 one ("P2D", "PT1H30M"; a day is 24 hours).
func ParseWaitDuration(s string) (time.Duration, error) {
	if d, err := time.ParseDuration(s); err == nil {
		return d, nil
	}
	iso, err := isoduration.Parse(s)
	if err != nil {
		return 0, fmt.Errorf("%q is neither a Go duration (48h, 90m) nor an ISO-8601 one (P2D, PT1H30M)", s)
	}
	return iso.ToTimeDuration(), nil
}

// ParseWaitTime reads a Wait node's until value: an RFC 3339 time, or a
// date and time without an offset (2006-01-02T15:04:05, 2006-01-02 15:04,
// 2006-01-02), read in loc.
func ParseWaitTime(s string, loc *time.Location) (time.Time, bool) {
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t, true
	}
	for _, layout := range []string{"2006-01-02T15:04:05", "2006-01-02T15:04", "2006-01-02 15:04:05", "2006-01-02 15:04", "2006-01-02"} {
		if t, err := time.ParseInLocation(layout, s, loc); err == nil {
			return t, true
		}
	}
	return time.Time{}, false
}
