package engine

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
)

// EventRunVariables is the event of a completed node that set run variables (setVariables).
const EventRunVariables = "run.variables"

// runVars loads the run's variables when an expression reads some (nil
// otherwise). Not kept between expressions: a transaction that set some
// reads them back.
func (t *txn) runVars(names []string) (map[string]any, error) {
	if len(names) == 0 {
		return nil, nil
	}
	raw, err := t.tx.RunVariables(t.ctx, t.run.ID)
	if err != nil {
		return nil, err
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, fmt.Errorf("error decoding the variables of run %s: %w", t.run.ID, err)
	}
	return m, nil
}

// setVariables evaluates node n's setVariables once it completed (st) and
// merges them into the run's variables, with a run.variables event. An
// expression that cannot be evaluated sets null, and the event says why:
// the node is done, and its completion is not undone for a variable.
func (t *txn) setVariables(n *Node, st *NodeState, sets map[string]string) error {
	env := ConditionEnv{Run: RunEnv{ID: t.run.ID}}
	var err error
	if env.Output, err = decodeJSON(st.Output); err != nil {
		return err
	}
	if env.Input, err = decodeJSON(st.Input); err != nil {
		return err
	}
	vals := make(map[string]json.RawMessage, len(sets)) // each encoded once, checked
	var failed map[string]string
	for _, name := range slices.Sorted(maps.Keys(sets)) {
		v, err := t.e.sets.get(sets[name])
		if err == nil {
			err = t.completeVarEnv(&env, v.Refs, st.Key, st.Index)
		}
		var out any
		if err == nil {
			out, err = v.evalCompleted(env)
		}
		// A value that cannot be stored (NaN, a NUL character) sets null
		// as a failed expression does: it would fail the transaction.
		var msg string
		var b []byte
		if err != nil {
			msg = ExprMessage(err)
		} else if b, err = json.Marshal(out); err != nil {
			msg = "its value is not JSON: " + err.Error()
		} else {
			msg = unstorable("its value", b)
		}
		if msg != "" {
			if failed == nil {
				failed = map[string]string{}
			}
			failed[name] = msg
			b = []byte("null")
		}
		vals[name] = b
	}
	b, err := json.Marshal(vals)
	if err != nil {
		return fmt.Errorf("error encoding the variables node %s set: %w", st.Key, err)
	}
	if err := t.w.SetRunVariables(t.run.ID, b); err != nil {
		return err
	}
	p := map[string]any{"node_id": n.ID, "set": json.RawMessage(b)}
	if failed != nil {
		p["errors"] = failed
	}
	t.event(EventRunVariables, st.Key, p)
	return nil
}

// completeVarEnv loads what a variable's expression reads beyond the
// node's input and output.
func (t *txn) completeVarEnv(env *ConditionEnv, refs Refs, key string, idx []int) error {
	if refs.UsesRun && env.Run.Input == nil {
		in, err := t.runInput()
		if err != nil {
			return err
		}
		if env.Run.Input, err = decodeJSON(in); err != nil {
			return err
		}
	}
	if refs.UsesEntity && env.Entity == nil && t.run.EntityID != nil {
		ent, err := t.tx.EntityOf(t.ctx, *t.run.EntityID)
		if err != nil {
			return err
		}
		env.Entity = ent
	}
	var err error
	if env.Steps, err = t.stepsOf(refs.Steps, idx); err != nil {
		return err
	}
	if env.Vars, err = t.runVars(refs.Vars); err != nil {
		return err
	}
	if refs.UsesItem {
		env.Item = itemOf(key, idx)
	}
	return nil
}
