package engine

import (
	"errors"
	"fmt"
)

// stepsOf loads what an expression evaluated for instance key (at idx)
// reads of earlier steps: each named step's latest row, the instance at
// the same item for a step inside the same fan-out region (the compiler
// refuses a step inside a region the expression is not in). A step
// without a row yet (not reached, or its region not started) reads as
// nulls.
func (t *txn) stepsOf(ids []string, idx []int) (map[string]StepEnv, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	m := make(map[string]StepEnv, len(ids))
	for _, id := range ids {
		n := t.graph.Nodes[id]
		if n == nil {
			m[id] = StepEnv{} // refused at save: a graph that predates the check
			continue
		}
		key := InstanceKey(id, idx[:min(n.Depth, len(idx))])
		st, err := t.tx.Node(t.ctx, t.run.ID, key)
		if errors.Is(err, ErrNotFound) {
			m[id] = StepEnv{}
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("error loading step %s for an expression: %w", key, err)
		}
		var s StepEnv
		if s.Output, err = decodeJSON(st.Output); err != nil {
			return nil, err
		}
		if s.Input, err = decodeJSON(st.Input); err != nil {
			return nil, err
		}
		m[id] = s
	}
	return m, nil
}

// itemOf is the fan-out item of the instance key at idx (nil outside a
// region).
func itemOf(key string, idx []int) *ItemEnv {
	if len(idx) == 0 {
		return nil
	}
	return &ItemEnv{Index: idx[len(idx)-1], Key: key}
}
