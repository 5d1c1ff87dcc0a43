package engine

import (
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
	// One read for every step the expression names.
	keyOf := make(map[string]string, len(ids))
	keys := make([]string, 0, len(ids))
	for _, id := range ids {
		if n := t.graph.Nodes[id]; n != nil { // else refused at save: a graph that predates the check
			keyOf[id] = InstanceKey(id, idx[:min(n.Depth, len(idx))])
			keys = append(keys, keyOf[id])
		}
	}
	states, err := t.tx.NodeStates(t.ctx, t.run.ID, keys)
	if err != nil {
		return nil, fmt.Errorf("error loading the steps an expression reads: %w", err)
	}
	m := make(map[string]StepEnv, len(ids))
	for _, id := range ids {
		var s StepEnv
		if st := states[keyOf[id]]; st != nil {
			if s.Output, err = decodeJSON(st.Output); err != nil {
				return nil, err
			}
			if s.Input, err = decodeJSON(st.Input); err != nil {
				return nil, err
			}
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
