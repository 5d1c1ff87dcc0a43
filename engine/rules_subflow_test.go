package engine_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/stitchd/stitchd/compiler"
	"github.com/stitchd/stitchd/engine"
	"github.com/stitchd/stitchd/handlers"
	"github.com/stitchd/stitchd/store"
)

// linkedFlow creates a flow of graph whose SubFlow nodes are pinned to the
// flows they name, as saving through the API does (compiler.LinkSubFlows
// over the store), and returns its id and version id.
func (r *rig) linkedFlow(graph string) (string, string) {
	r.t.Helper()
	ctx := context.Background()
	v, err := compiler.ParseVisual([]byte(graph))
	require.NoError(r.t, err)
	g, err := compiler.Compile(v, handlers.Types(handlers.Options{}))
	require.NoError(r.t, err)
	require.NoError(r.t, compiler.LinkSubFlows(ctx, v, g, "", r.st))
	exec, err := json.Marshal(g)
	require.NoError(r.t, err)
	canon, err := compiler.Canonical([]byte(graph))
	require.NoError(r.t, err)
	f, err := r.st.CreateFlow(ctx, "", uuid.NewString(), "parent-"+uuid.NewString(), nil,
		store.NewVersion{ID: uuid.NewString(), Graph: canon, Execution: exec, Hash: uuid.NewString()})
	require.NoError(r.t, err)
	return f.ID, f.VersionID
}

// subflowFanOut starts a run of a fan-out over input's xs whose every item
// is a sub-flow run of flow child, collected by c.
func (r *rig) subflowFanOut(child, input string) *engine.Run {
	r.t.Helper()
	flowID, versionID := r.linkedFlow(`{"nodes":[
		{"id":"s","type":"Splitter","data":{"arrayPath":"xs"}},
		{"id":"sub","type":"SubFlow","data":{"flow":"` + child + `"}},
		{"id":"c","type":"Collector","data":{}}],
		"edges":[{"id":"e1","source":"s","target":"sub"},{"id":"e2","source":"sub","target":"c"}]}`)
	return r.startIn(flowID, versionID, input)
}

// subflowParent is a SubFlow node running flow child → after, with a
// failure edge to handled when withFailureEdge.
func subflowParent(child string, withFailureEdge bool) string {
	g := `{"nodes":[{"id":"sub","type":"SubFlow","data":{"flow":"` + child + `"}},
		{"id":"after","type":"Transform","data":{"expression":"{\"from_child\": input}"}}`
	if withFailureEdge {
		g += `,{"id":"handled","type":"Transform","data":{"expression":"{\"why\": input.error}"}}`
	}
	g += `],"edges":[{"id":"e1","source":"sub","target":"after"}`
	if withFailureEdge {
		g += `,{"id":"e2","source":"sub","target":"handled","data":{"on":"failure"}}`
	}
	return g + `]}`
}

// childRun returns the child run the parent's node started.
func (r *rig) childRun(parentID, key string) *engine.Run {
	r.t.Helper()
	_, ns := r.nodes(parentID)
	require.NotNil(r.t, ns[key].ChildRunID, "node %s started no child", key)
	run, _ := r.nodes(*ns[key].ChildRunID)
	require.Equal(r.t, parentID, *run.ParentRunID)
	require.Equal(r.t, key, *run.ParentKey)
	require.Equal(r.t, ns[key].Attempt, run.ParentAttempt)
	return run
}

const workerChild = `{"nodes":[{"id":"w","type":"Worker","data":{"webhookUrl":"http://worker.invalid/x","retry":{"maxAttempts":1}}}],"edges":[]}`

// TestRuleSubFlow: docs/state_machine.md, "Sub-flows: a run inside a node"
// — a SubFlow node fires pending → running and starts its child run in
// the same transaction, with its input; a child that ends in that very
// transaction completes the node there; otherwise the child's final
// transaction completes the node with the child's output (and walks on),
// or fails it ("sub-flow run … failed"), which a failure edge may take.
func TestRuleSubFlow(t *testing.T) {
	t.Parallel()
	t.Run("a child that ends at once completes the node at once", func(t *testing.T) {
		t.Parallel()
		r := newRig(t)
		childID, _ := r.flow("", `{"nodes":[{"id":"double","type":"Transform","data":{"expression":"{\"twice\": input.n * 2}"}}],"edges":[]}`)
		flowID, versionID := r.linkedFlow(subflowParent(childID, false))
		run := r.startIn(flowID, versionID, `{"n":21}`)
		got, ns := r.wantStatuses(run.ID, engine.RunCompleted,
			map[string]engine.Status{"sub": engine.StatusCompleted, "after": engine.StatusCompleted})
		require.JSONEq(t, `{"twice":42}`, string(ns["sub"].Output), "the child's output")
		require.JSONEq(t, `{"from_child":{"twice":42}}`, string(got.Output))
		child := r.childRun(run.ID, "sub")
		require.Equal(t, engine.RunCompleted, child.Status)
		require.JSONEq(t, `{"n":21}`, string(child.Input), "the node's input is the child's")
		require.Len(t, r.eventsOf(run.ID, engine.EventChildStarted), 1)
	})
	cases := []struct {
		name        string
		failureEdge bool
		status      engine.Status // the child's worker's callback
		parent      engine.RunStatus
		nodes       map[string]engine.Status
		check       func(t *testing.T, r *rig, run, child *engine.Run, ns map[string]engine.NodeState)
	}{
		{"the child's completion completes the node", false, engine.StatusCompleted, engine.RunCompleted,
			map[string]engine.Status{"sub": engine.StatusCompleted, "after": engine.StatusCompleted},
			func(t *testing.T, r *rig, run, child *engine.Run, ns map[string]engine.NodeState) {
				require.Equal(t, engine.RunCompleted, child.Status)
				require.JSONEq(t, `{"ok":1}`, string(ns["sub"].Output))
				require.JSONEq(t, `{"from_child":{"ok":1}}`, string(run.Output))
				require.Len(t, r.eventsOf(run.ID, engine.EventChildFinished), 1)
			}},
		{"the child's failure fails the node and the run", false, engine.StatusFailed, engine.RunFailed,
			map[string]engine.Status{"sub": engine.StatusFailed, "after": engine.StatusPending},
			func(t *testing.T, _ *rig, _, child *engine.Run, ns map[string]engine.NodeState) {
				require.Equal(t, engine.RunFailed, child.Status)
				require.Contains(t, *ns["sub"].Error, "sub-flow run "+child.ID+" failed")
				require.Equal(t, 1, ns["sub"].Attempt, "no automatic retry")
			}},
		{"a failure edge takes the child's failure", true, engine.StatusFailed, engine.RunCompleted,
			map[string]engine.Status{"sub": engine.StatusFailed, "after": engine.StatusSkipped, "handled": engine.StatusCompleted},
			func(t *testing.T, _ *rig, _, child *engine.Run, ns map[string]engine.NodeState) {
				require.Equal(t, []string{"handled"}, ns["sub"].Taken)
				require.Contains(t, string(ns["handled"].Output), "sub-flow run "+child.ID+" failed")
			}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := newRig(t)
			childID, _ := r.flow("", workerChild)
			flowID, versionID := r.linkedFlow(subflowParent(childID, tc.failureEdge))
			run := r.startIn(flowID, versionID, `{"n":1}`)
			r.wantStatuses(run.ID, engine.RunRunning, map[string]engine.Status{"sub": engine.StatusRunning, "after": engine.StatusPending})
			child := r.childRun(run.ID, "sub")
			require.Equal(t, engine.RunRunning, child.Status)
			require.Equal(t, []string{"w#1"}, r.outbox(child.ID), "the child's entry node fired with the parent's transaction")
			require.Empty(t, r.outbox(run.ID))

			require.NoError(t, r.callback(child.ID, "w", 1, tc.status, `{"ok":1}`))
			got, ns := r.wantStatuses(run.ID, tc.parent, tc.nodes)
			child, _ = r.nodes(child.ID)
			tc.check(t, r, got, child, ns)
		})
	}
}

// TestRuleSubFlowRecovery: docs/state_machine.md, Sub-flows — a node its
// child's failure failed completes when that child completes after all
// (an operator retried the child's node: the parent resumes); retrying
// the node itself is a new attempt that starts a new child, and the old
// child's end then changes nothing.
func TestRuleSubFlowRecovery(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	start := func(t *testing.T) (*rig, *engine.Run, *engine.Run) {
		r := newRig(t)
		childID, _ := r.flow("", workerChild)
		flowID, versionID := r.linkedFlow(subflowParent(childID, false))
		run := r.startIn(flowID, versionID, `{}`)
		child := r.childRun(run.ID, "sub")
		require.NoError(t, r.callback(child.ID, "w", 1, engine.StatusFailed, ""))
		r.wantStatuses(run.ID, engine.RunFailed, map[string]engine.Status{"sub": engine.StatusFailed})
		return r, run, child
	}
	t.Run("the child retried and completed resumes the parent", func(t *testing.T) {
		t.Parallel()
		r, run, child := start(t)
		require.NoError(t, r.eng.RetryNode(ctx, child.ID, "w"))
		r.wantStatuses(child.ID, engine.RunRunning, map[string]engine.Status{"w": engine.StatusRunning})
		require.NoError(t, r.callback(child.ID, "w", 2, engine.StatusCompleted, `{"late":true}`))
		got, ns := r.wantStatuses(run.ID, engine.RunCompleted,
			map[string]engine.Status{"sub": engine.StatusCompleted, "after": engine.StatusCompleted})
		require.JSONEq(t, `{"late":true}`, string(ns["sub"].Output))
		require.Equal(t, 1, ns["sub"].Attempt, "the same attempt, failed → running → completed")
		require.Zero(t, got.FailedNodes)
	})
	t.Run("retrying the node starts a new child", func(t *testing.T) {
		t.Parallel()
		r, run, old := start(t)
		require.NoError(t, r.eng.RetryNode(ctx, run.ID, "sub"))
		_, ns := r.wantStatuses(run.ID, engine.RunRunning, map[string]engine.Status{"sub": engine.StatusRunning})
		require.Equal(t, 2, ns["sub"].Attempt)
		fresh := r.childRun(run.ID, "sub")
		require.NotEqual(t, old.ID, fresh.ID)
		require.Equal(t, 2, fresh.ParentAttempt)

		require.NoError(t, r.eng.RetryNode(ctx, old.ID, "w"))
		require.NoError(t, r.callback(old.ID, "w", 2, engine.StatusCompleted, `{"old":true}`))
		r.wantStatuses(old.ID, engine.RunCompleted, map[string]engine.Status{"w": engine.StatusCompleted})
		_, ns = r.wantStatuses(run.ID, engine.RunRunning, map[string]engine.Status{"sub": engine.StatusRunning, "after": engine.StatusPending})
		require.Equal(t, fresh.ID, *ns["sub"].ChildRunID, "the old child's end left the new attempt alone")

		require.NoError(t, r.callback(fresh.ID, "w", 1, engine.StatusCompleted, `{"new":true}`))
		_, ns = r.wantStatuses(run.ID, engine.RunCompleted, map[string]engine.Status{"sub": engine.StatusCompleted})
		require.JSONEq(t, `{"new":true}`, string(ns["sub"].Output))
	})
}

// TestRuleSubFlowControl: docs/state_machine.md, Sub-flows — cancelling,
// pausing or resuming a run does the same to its unfinished children.
func TestRuleSubFlowControl(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	cases := []struct {
		name   string
		op     func(r *rig, id string) error
		parent engine.RunStatus
		child  engine.RunStatus
		w      engine.Status
	}{
		{"cancel", func(r *rig, id string) error { _, err := r.eng.CancelRun(ctx, id); return err },
			engine.RunCancelled, engine.RunCancelled, engine.StatusCancelled},
		{"pause", func(r *rig, id string) error { _, err := r.eng.PauseRun(ctx, id); return err },
			engine.RunPaused, engine.RunPaused, engine.StatusRunning},
		{"pause then resume", func(r *rig, id string) error {
			if _, err := r.eng.PauseRun(ctx, id); err != nil {
				return err
			}
			_, err := r.eng.ResumeRun(ctx, id)
			return err
		}, engine.RunRunning, engine.RunRunning, engine.StatusRunning},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := newRig(t)
			childID, _ := r.flow("", workerChild)
			flowID, versionID := r.linkedFlow(subflowParent(childID, false))
			run := r.startIn(flowID, versionID, `{}`)
			child := r.childRun(run.ID, "sub")
			require.NoError(t, tc.op(r, run.ID))
			r.wantStatuses(run.ID, tc.parent, map[string]engine.Status{})
			r.wantStatuses(child.ID, tc.child, map[string]engine.Status{"w": tc.w})
		})
	}
}
