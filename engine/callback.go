package engine

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
)

// A worker's callback beyond its completion or failure: a heartbeat
// extends the node's deadline, and a repeated identical callback changes
// nothing.

func (t *txn) heartbeat(key string, attempt int) error {
	cur, err := t.runningAttempt(key, attempt)
	if err != nil {
		return err
	}
	secs := 0
	if to, ok := t.e.handlers[cur.Type].(Timeouter); ok {
		secs = to.TimeoutSeconds(t.graph.Nodes[cur.NodeID])
	}
	if secs > 0 {
		if _, err := t.w.ExtendDeadline(t.run.ID, key, attempt, secs); err != nil {
			return err
		}
	}
	t.event(EventNodeHeartbeat, key, map[string]any{"attempt": attempt})
	return nil
}

// runningAttempt reads node key of the transaction's run (locked), a
// conflict unless it is running attempt.
func (t *txn) runningAttempt(key string, attempt int) (*NodeState, error) {
	cur, err := t.tx.Node(t.ctx, t.run.ID, key)
	if err != nil {
		return nil, err
	}
	if cur.Status != StatusRunning || cur.Attempt != attempt {
		return nil, fmt.Errorf("%w: %v", ErrConflict, &TransitionError{Key: key, Want: StatusRunning, Current: cur})
	}
	return cur, nil
}

// duplicateOr turns a failed compare-and-set on a callback into errNoChange
// for an identical repeat, or a conflict.
func (t *txn) duplicateOr(err error, p CallbackParams) error {
	te, ok := IsTransitionError(err)
	if !ok {
		return err
	}
	if c := te.Current; c != nil && c.Attempt == p.Attempt && c.Status == p.Status {
		switch p.Status {
		case StatusCompleted:
			if jsonEqual(c.Output, orNull(p.Output)) {
				return errNoChange
			}
		case StatusFailed:
			if c.Error != nil && (*c.Error == p.Error || (p.Error == "" && *c.Error == "worker reported failure")) {
				return errNoChange
			}
		default: // a worker reports only completed or failed
		}
	}
	return fmt.Errorf("%w: %v", ErrConflict, te)
}

// jsonEqual compares two JSON documents semantically (key order and
// whitespace aside; numbers compared as written, so 1E700 works).
func jsonEqual(a, b json.RawMessage) bool {
	decode := func(raw json.RawMessage) (any, bool) {
		d := json.NewDecoder(bytes.NewReader(raw))
		d.UseNumber()
		var v any
		return v, d.Decode(&v) == nil
	}
	x, ok1 := decode(a)
	y, ok2 := decode(b)
	return ok1 && ok2 && reflect.DeepEqual(x, y)
}
