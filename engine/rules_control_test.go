package engine_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/tidwall/gjson"

	"github.com/stitchd/stitchd/engine"
)

// dispatchStatuses returns the status of the run's outbox rows by key#attempt.
func (r *rig) dispatchStatuses(runID string) map[string]string {
	r.t.Helper()
	rows, err := r.st.Gorm().Raw(`SELECT key || '#' || attempt, status FROM dispatches WHERE run_id = ?`, runID).Rows()
	require.NoError(r.t, err)
	defer rows.Close()
	out := map[string]string{}
	for rows.Next() {
		var k, s string
		require.NoError(r.t, rows.Scan(&k, &s))
		out[k] = s
	}
	require.NoError(r.t, rows.Err())
	return out
}

const (
	worker        = `"type":"Worker","data":{"webhookUrl":"http://worker.invalid/x","retry":{"maxAttempts":1}}`
	retriedWorker = `"type":"Worker","data":{"webhookUrl":"http://worker.invalid/x","retry":{"maxAttempts":2,"initialDelayMs":1000,"maxDelayMs":1000}}`
	// twoWorkers is a → b, both workers without automatic retries.
	twoWorkers = `{"nodes":[{"id":"a",` + worker + `},{"id":"b",` + worker + `}],"edges":[{"id":"e1","source":"a","target":"b"}]}`
)

// TestRuleRunStatus: docs/state_machine.md, "Run states" — a run fails
// when a node failed and no node is running or waiting (not before), and
// completes when every terminal node completed or was skipped; a retry
// moves a failed run back to running.
func TestRuleRunStatus(t *testing.T) {
	t.Parallel()
	const parallel = `{"nodes":[{"id":"a",` + worker + `},{"id":"b",` + worker + `}],"edges":[]}`
	cases := []struct {
		name  string
		steps []struct {
			key    string
			status engine.Status
		}
		runs []engine.RunStatus // after each step
	}{
		{"a failure waits for the other branch", []struct {
			key    string
			status engine.Status
		}{{"a", engine.StatusFailed}, {"b", engine.StatusCompleted}}, []engine.RunStatus{engine.RunRunning, engine.RunFailed}},
		{"a failure last", []struct {
			key    string
			status engine.Status
		}{{"b", engine.StatusCompleted}, {"a", engine.StatusFailed}}, []engine.RunStatus{engine.RunRunning, engine.RunFailed}},
		{"both complete", []struct {
			key    string
			status engine.Status
		}{{"b", engine.StatusCompleted}, {"a", engine.StatusCompleted}}, []engine.RunStatus{engine.RunRunning, engine.RunCompleted}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := newRig(t)
			run := r.start(parallel, `{}`)
			require.Equal(t, []string{"a#1", "b#1"}, r.outbox(run.ID))
			for i, s := range tc.steps {
				require.NoError(t, r.callback(run.ID, s.key, 1, s.status, fmt.Sprintf(`{"%s":1}`, s.key)))
				got, _ := r.nodes(run.ID)
				require.Equal(t, tc.runs[i], got.Status, "after %s %s", s.key, s.status)
			}
			got, _ := r.nodes(run.ID)
			want := `{"a":{"a":1},"b":{"b":1}}`
			if got.Status == engine.RunFailed {
				require.Equal(t, 1, got.FailedNodes)
				require.NoError(t, r.eng.RetryNode(context.Background(), run.ID, "a"))
				r.wantStatuses(run.ID, engine.RunRunning, map[string]engine.Status{"a": engine.StatusRunning})
				require.NoError(t, r.callback(run.ID, "a", 2, engine.StatusCompleted, `{"a":2}`))
				got, _ = r.wantStatuses(run.ID, engine.RunCompleted, map[string]engine.Status{"a": engine.StatusCompleted})
				want = `{"a":{"a":2},"b":{"b":1}}`
			}
			require.JSONEq(t, want, string(got.Output))
		})
	}
}

// TestRuleHeartbeatAfterTheClaim: docs/state_machine.md, Node states — the
// sweeper fails an overdue attempt only while its deadline is the one the
// sweeper's claim set: a heartbeat answered between the claim and the
// expiry (a failover can hold them apart) keeps the attempt, whose
// result is then taken.
func TestRuleHeartbeatAfterTheClaim(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	const retried = `{"nodes":[{"id":"a",` + retriedWorker + `}],"edges":[]}`
	r := newRig(t)
	run := r.start(retried, `{}`)
	r.advanceDue(run.ID, 24*time.Hour)
	claimed := r.overdue(run.ID)
	require.Len(t, claimed, 1)
	require.NoError(t, r.callback(run.ID, "a", 1, engine.StatusRunning, ""), "the heartbeat is answered")
	expired, err := r.eng.Expire(ctx, claimed[0])
	require.NoError(t, err)
	require.False(t, expired, "the attempt is left alone")
	_, ns := r.wantStatuses(run.ID, engine.RunRunning, map[string]engine.Status{"a": engine.StatusRunning})
	require.Equal(t, 1, ns["a"].Attempt, "the attempt the heartbeat kept")
	require.Equal(t, []string{"a#1"}, r.outbox(run.ID))
	require.Empty(t, r.overdue(run.ID), "its deadline is the heartbeat's")
	require.NoError(t, r.callback(run.ID, "a", 1, engine.StatusCompleted, `{"v":1}`), "its result is taken")
	r.wantStatuses(run.ID, engine.RunCompleted, map[string]engine.Status{"a": engine.StatusCompleted})
}

// TestRuleRetry: docs/state_machine.md, Node states — failed → running is
// a new attempt (a new outbox row) whether automatic (retry policy; a
// worker past its deadline, Engine.Expire) or manual (RetryNode, which
// revives a failed run); a retry of a node that is not failed is refused;
// a late callback for the old attempt is a conflict; a worker's NoRetry
// failure is not retried automatically.
func TestRuleRetry(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	const retried = `{"nodes":[{"id":"a",` + retriedWorker + `}],"edges":[]}`
	cases := []struct {
		name    string
		graph   string
		fail    func(r *rig, runID string) error
		run     engine.RunStatus
		node    engine.Status
		attempt int
		outbox  []string
	}{
		{"an automatic retry after a failure", retried,
			func(r *rig, id string) error { return r.callback(id, "a", 1, engine.StatusFailed, "") },
			engine.RunRunning, engine.StatusRunning, 2, []string{"a#1", "a#2"}},
		{"an automatic retry after the deadline", retried,
			func(r *rig, id string) error { return r.expire(id) },
			engine.RunRunning, engine.StatusRunning, 2, []string{"a#1", "a#2"}},
		{"no automatic retry when the worker says so", retried,
			func(r *rig, id string) error {
				return r.eng.HandleCallback(ctx, engine.CallbackParams{RunID: id, Key: "a", Attempt: 1, Status: engine.StatusFailed,
					Error: "bad", NoRetry: true})
			},
			engine.RunFailed, engine.StatusFailed, 1, []string{"a#1"}},
		{"no retry policy left", `{"nodes":[{"id":"a",` + worker + `}],"edges":[]}`,
			func(r *rig, id string) error { return r.callback(id, "a", 1, engine.StatusFailed, "") },
			engine.RunFailed, engine.StatusFailed, 1, []string{"a#1"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := newRig(t)
			run := r.start(tc.graph, `{"x":1}`)
			require.NoError(t, tc.fail(r, run.ID))
			_, ns := r.wantStatuses(run.ID, tc.run, map[string]engine.Status{"a": tc.node})
			require.Equal(t, tc.attempt, ns["a"].Attempt)
			require.Equal(t, tc.outbox, r.outbox(run.ID))
			if tc.node == engine.StatusFailed {
				require.NoError(t, r.eng.RetryNode(ctx, run.ID, "a"), "a manual retry")
				_, ns = r.wantStatuses(run.ID, engine.RunRunning, map[string]engine.Status{"a": engine.StatusRunning})
				require.Equal(t, tc.attempt+1, ns["a"].Attempt)
				require.JSONEq(t, `{"x":1}`, string(ns["a"].Input), "with the input it had")
				require.Len(t, r.outbox(run.ID), len(tc.outbox)+1)
			}
			var trErr *engine.TransitionError
			require.ErrorAs(t, r.eng.RetryNode(ctx, run.ID, "a"), &trErr, "a running node is not retried")
			err := r.callback(run.ID, "a", 1, engine.StatusCompleted, `{}`)
			require.Error(t, err, "the old attempt's callback")
			_, ns = r.nodes(run.ID)
			require.Equal(t, engine.StatusRunning, ns["a"].Status)
		})
	}
}

// TestRuleCancel: docs/state_machine.md, Node states and Run states —
// cancelling a running (or failed, or paused) run cancels every node
// pending, running, waiting or failed — not a completed one, nor a failure
// a failure edge handled — and its undelivered dispatches; then a
// callback changes nothing and a second cancel is a conflict.
func TestRuleCancel(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	cases := []struct {
		name  string
		graph string
		setup func(r *rig, runID string)
		nodes map[string]engine.Status
	}{
		{"a running run", twoWorkers, func(*rig, string) {},
			map[string]engine.Status{"a": engine.StatusCancelled, "b": engine.StatusCancelled}},
		{"after a completion", twoWorkers, func(r *rig, id string) {
			require.NoError(r.t, r.callback(id, "a", 1, engine.StatusCompleted, `{}`))
		}, map[string]engine.Status{"a": engine.StatusCompleted, "b": engine.StatusCancelled}},
		{"a failed run", `{"nodes":[{"id":"a",` + worker + `},{"id":"b",` + worker + `}],"edges":[]}`, func(r *rig, id string) {
			require.NoError(r.t, r.callback(id, "a", 1, engine.StatusFailed, ""))
		}, map[string]engine.Status{"a": engine.StatusCancelled, "b": engine.StatusCancelled}},
		{"a paused run", twoWorkers, func(r *rig, id string) {
			_, err := r.eng.PauseRun(ctx, id)
			require.NoError(r.t, err)
		}, map[string]engine.Status{"a": engine.StatusCancelled, "b": engine.StatusCancelled}},
		{"a person's step", `{"nodes":[{"id":"ask","type":"UX","data":{}},{"id":"b",` + worker + `}],
			"edges":[{"id":"e1","source":"ask","target":"b"}]}`, func(*rig, string) {},
			map[string]engine.Status{"ask": engine.StatusCancelled, "b": engine.StatusCancelled}},
		{"a handled failure stays", `{"nodes":[{"id":"a",` + worker + `},{"id":"h",` + worker + `}],
			"edges":[{"id":"e1","source":"a","target":"h","data":{"on":"failure"}}]}`, func(r *rig, id string) {
			require.NoError(r.t, r.callback(id, "a", 1, engine.StatusFailed, ""))
		}, map[string]engine.Status{"a": engine.StatusFailed, "h": engine.StatusCancelled}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := newRig(t)
			run := r.start(tc.graph, `{}`)
			tc.setup(r, run.ID)
			got, err := r.eng.CancelRun(ctx, run.ID)
			require.NoError(t, err)
			require.Equal(t, engine.RunCancelled, got.Status)
			r.wantStatuses(run.ID, engine.RunCancelled, tc.nodes)
			for k, s := range r.dispatchStatuses(run.ID) {
				require.NotContains(t, []string{"pending", "held", "sending"}, s, "dispatch %s is not left to deliver", k)
			}
			require.Len(t, r.eventsOf(run.ID, engine.EventRunCancelled), 1)
			for key, st := range tc.nodes {
				if st == engine.StatusCancelled && strings.HasPrefix(key, "a") {
					require.Error(t, r.callback(run.ID, key, 1, engine.StatusCompleted, `{}`), "a callback after the cancel")
				}
			}
			r.wantStatuses(run.ID, engine.RunCancelled, tc.nodes)
			_, err = r.eng.CancelRun(ctx, run.ID)
			require.ErrorIs(t, err, engine.ErrConflict)
			require.ErrorIs(t, r.eng.RetryNode(ctx, run.ID, "a"), engine.ErrConflict, "nothing is retried in a cancelled run")
		})
	}
	t.Run("a completed run is not cancelled", func(t *testing.T) {
		t.Parallel()
		r := newRig(t)
		run := r.start(`{"nodes":[{"id":"x","type":"Condition","data":{}}],"edges":[]}`, `{}`)
		_, err := r.eng.CancelRun(ctx, run.ID)
		require.ErrorIs(t, err, engine.ErrConflict)
		r.wantStatuses(run.ID, engine.RunCompleted, map[string]engine.Status{"x": engine.StatusCompleted})
	})
}

// TestRulePause: docs/state_machine.md, Run states ("A paused run fires
// nothing new") — while paused a completion counts its successors down
// without firing or skipping them and undelivered dispatches are held;
// the resume releases them and settles what became ready (fire, or skip
// when no inbound edge was taken); automatic retries are not held back.
func TestRulePause(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pause := func(r *rig, id string) {
		got, err := r.eng.PauseRun(ctx, id)
		require.NoError(r.t, err)
		require.Equal(r.t, engine.RunPaused, got.Status)
	}
	resume := func(r *rig, id string) {
		got, err := r.eng.ResumeRun(ctx, id)
		require.NoError(r.t, err)
		require.Equal(r.t, engine.RunRunning, got.Status)
	}
	t.Run("holds new starts until the resume", func(t *testing.T) {
		t.Parallel()
		r := newRig(t)
		run := r.start(twoWorkers, `{}`)
		pause(r, run.ID)
		require.Equal(t, map[string]string{"a#1": "held"}, r.dispatchStatuses(run.ID), "the undelivered dispatch is held")
		_, err := r.eng.PauseRun(ctx, run.ID)
		require.ErrorIs(t, err, engine.ErrConflict, "already paused")

		require.NoError(t, r.callback(run.ID, "a", 1, engine.StatusCompleted, `{"v":1}`), "work in flight goes on")
		_, ns := r.wantStatuses(run.ID, engine.RunPaused, map[string]engine.Status{"a": engine.StatusCompleted, "b": engine.StatusPending})
		require.Zero(t, ns["b"].PendingParents, "counted down, not fired")
		require.Equal(t, []string{"a#1"}, r.outbox(run.ID))

		resume(r, run.ID)
		_, ns = r.wantStatuses(run.ID, engine.RunRunning, map[string]engine.Status{"a": engine.StatusCompleted, "b": engine.StatusRunning})
		require.JSONEq(t, `{"v":1}`, string(ns["b"].Input))
		require.Equal(t, map[string]string{"a#1": "pending", "b#1": "pending"}, r.dispatchStatuses(run.ID), "released")
		_, err = r.eng.ResumeRun(ctx, run.ID)
		require.ErrorIs(t, err, engine.ErrConflict, "not paused")
	})
	t.Run("a branch not taken is skipped on resume", func(t *testing.T) {
		t.Parallel()
		r := newRig(t)
		run := r.start(`{"nodes":[{"id":"a",`+worker+`},{"id":"b",`+worker+`},{"id":"c","type":"Condition","data":{}}],
			"edges":[{"id":"e1","source":"a","target":"b","data":{"condition":"output.go"}},
				{"id":"e2","source":"a","target":"c","data":{"default":true}}]}`, `{}`)
		pause(r, run.ID)
		require.NoError(t, r.callback(run.ID, "a", 1, engine.StatusCompleted, `{"go":true}`))
		r.wantStatuses(run.ID, engine.RunPaused, map[string]engine.Status{"b": engine.StatusPending, "c": engine.StatusPending})
		resume(r, run.ID)
		r.wantStatuses(run.ID, engine.RunRunning, map[string]engine.Status{"b": engine.StatusRunning, "c": engine.StatusSkipped})
	})
	t.Run("an automatic retry is not held back", func(t *testing.T) {
		t.Parallel()
		r := newRig(t)
		run := r.start(`{"nodes":[{"id":"a",`+retriedWorker+`}],"edges":[]}`, `{}`)
		pause(r, run.ID)
		require.NoError(t, r.callback(run.ID, "a", 1, engine.StatusFailed, ""))
		_, ns := r.wantStatuses(run.ID, engine.RunPaused, map[string]engine.Status{"a": engine.StatusRunning})
		require.Equal(t, 2, ns["a"].Attempt)
		require.Equal(t, []string{"a#1", "a#2"}, r.outbox(run.ID))
	})
	t.Run("a paused run completes on its resume", func(t *testing.T) {
		t.Parallel()
		r := newRig(t)
		run := r.start(`{"nodes":[{"id":"a",`+worker+`}],"edges":[]}`, `{}`)
		pause(r, run.ID)
		require.NoError(t, r.callback(run.ID, "a", 1, engine.StatusCompleted, `{"v":2}`))
		got, _ := r.wantStatuses(run.ID, engine.RunPaused, map[string]engine.Status{"a": engine.StatusCompleted})
		require.Zero(t, got.TerminalsLeft, "its last terminal completed, the run stays paused")
		resumed, err := r.eng.ResumeRun(ctx, run.ID)
		require.NoError(t, err)
		require.Equal(t, engine.RunCompleted, resumed.Status, "settled in the resuming transaction")
		got, _ = r.wantStatuses(run.ID, engine.RunCompleted, map[string]engine.Status{"a": engine.StatusCompleted})
		require.JSONEq(t, `{"v":2}`, string(got.Output))
	})
}

// TestRuleSkipAndRerun: docs/state_machine.md, Rerun (and control.go's
// SkipNode) — an operator completes a failed node by hand, which walks on
// and revives the run; a rerun sets a node and everything downstream back
// to pending and fires the node again as attempt n+1, refused while a
// node downstream is running.
func TestRuleSkipAndRerun(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	t.Run("skip a failed node by hand", func(t *testing.T) {
		t.Parallel()
		r := newRig(t)
		run := r.start(twoWorkers, `{}`)
		require.NoError(t, r.callback(run.ID, "a", 1, engine.StatusFailed, ""))
		r.wantStatuses(run.ID, engine.RunFailed, map[string]engine.Status{"a": engine.StatusFailed})
		require.NoError(t, r.eng.SkipNode(ctx, engine.SkipNodeParams{RunID: run.ID, Key: "a", Output: json.RawMessage(`{"by":"hand"}`), By: "ops"}))
		_, ns := r.wantStatuses(run.ID, engine.RunRunning, map[string]engine.Status{"a": engine.StatusCompleted, "b": engine.StatusRunning})
		require.JSONEq(t, `{"by":"hand"}`, string(ns["b"].Input))
		require.Len(t, r.eventsOf(run.ID, engine.EventNodeSkippedByHand), 1)
	})
	t.Run("rerun a node and what follows", func(t *testing.T) {
		t.Parallel()
		r := newRig(t)
		run := r.start(twoWorkers, `{"x":1}`)
		require.NoError(t, r.callback(run.ID, "a", 1, engine.StatusCompleted, `{"v":1}`))
		err := r.eng.RerunNode(ctx, engine.RerunParams{RunID: run.ID, Key: "a"})
		require.ErrorIs(t, err, engine.ErrConflict, "b downstream is running")
		require.NoError(t, r.callback(run.ID, "b", 1, engine.StatusCompleted, `{"w":1}`))
		r.wantStatuses(run.ID, engine.RunCompleted, map[string]engine.Status{"a": engine.StatusCompleted, "b": engine.StatusCompleted})

		require.NoError(t, r.eng.RerunNode(ctx, engine.RerunParams{RunID: run.ID, Key: "a", Input: json.RawMessage(`{"x":2}`)}))
		_, ns := r.wantStatuses(run.ID, engine.RunRunning, map[string]engine.Status{"a": engine.StatusRunning, "b": engine.StatusPending})
		require.Equal(t, 2, ns["a"].Attempt)
		require.Equal(t, 1, ns["b"].Attempt, "keeps its attempt until it fires")
		require.JSONEq(t, `{"x":2}`, string(ns["a"].Input))
		require.NoError(t, r.callback(run.ID, "a", 2, engine.StatusCompleted, `{"v":2}`))
		_, ns = r.wantStatuses(run.ID, engine.RunRunning, map[string]engine.Status{"b": engine.StatusRunning})
		require.Equal(t, 2, ns["b"].Attempt)
		require.Equal(t, []string{"a#1", "a#2", "b#1", "b#2"}, r.outbox(run.ID))
	})
}

// TestRuleRunDeadline: docs/state_machine.md, Time ("A run with a
// deadline") — past it (store.OverdueRuns, then
// Engine.FailRunPastDeadline) the run's running and waiting nodes fail
// ("the run's deadline passed"), failure edges are not taken, and the run
// fails with "deadline"; a retry revives it.
func TestRuleRunDeadline(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	r := newRig(t)
	flowID, versionID := r.flow("", `{"nodes":[{"id":"a",`+worker+`},{"id":"ask","type":"UX","data":{}},{"id":"h",`+worker+`}],
		"edges":[{"id":"e1","source":"a","target":"h","data":{"on":"failure"}}]}`)
	run, _, err := r.eng.StartRun(ctx, engine.StartRunParams{FlowID: flowID, VersionID: versionID, Input: json.RawMessage(`{}`), DeadlineSeconds: 60})
	require.NoError(t, err)
	overdue := func() bool {
		ids, err := r.st.OverdueRuns(ctx, 500)
		require.NoError(t, err)
		for _, id := range ids {
			if id == run.ID {
				return true
			}
		}
		return false
	}
	require.False(t, overdue())
	require.NoError(t, r.st.Gorm().Exec(`UPDATE runs SET deadline_at = deadline_at - interval '61 seconds' WHERE id = ?`, run.ID).Error)
	require.True(t, overdue())
	require.NoError(t, r.eng.FailRunPastDeadline(ctx, run.ID))
	got, ns := r.wantStatuses(run.ID, engine.RunFailed,
		map[string]engine.Status{"a": engine.StatusFailed, "ask": engine.StatusFailed, "h": engine.StatusPending})
	require.Equal(t, "deadline", *got.Error)
	require.Equal(t, "the run's deadline passed", *ns["a"].Error)
	require.Nil(t, ns["a"].Taken, "the failure edge is not taken")

	require.NoError(t, r.eng.RetryNode(ctx, run.ID, "a"))
	r.wantStatuses(run.ID, engine.RunRunning, map[string]engine.Status{"a": engine.StatusRunning})
}

// TestRuleBoundedTransactions: docs/state_machine.md, "Bounded
// transactions" — a transaction fires at most MaxFirings nodes; the next
// stays pending with its input and a wake_at of now (counted active: the
// run neither completes nor fails), and the sweeper's claim (DueTimers,
// deferred) fires it in a later transaction (Engine.Wake), with the same
// bound; a paused run's waiting fires wait for its resume.
func TestRuleBoundedTransactions(t *testing.T) {
	t.Parallel()
	const chain = `{"nodes":[{"id":"n1","type":"Transform","data":{"expression":"{\"n\": input.n + 1}"}},
		{"id":"n2","type":"Transform","data":{"expression":"{\"n\": input.n + 1}"}},
		{"id":"n3","type":"Transform","data":{"expression":"{\"n\": input.n + 1}"}},
		{"id":"n4","type":"Transform","data":{"expression":"{\"n\": input.n + 1}"}},
		{"id":"n5","type":"Transform","data":{"expression":"{\"n\": input.n + 1}"}}],
		"edges":[{"id":"e1","source":"n1","target":"n2"},{"id":"e2","source":"n2","target":"n3"},
			{"id":"e3","source":"n3","target":"n4"},{"id":"e4","source":"n4","target":"n5"}]}`
	bounded := func(c *engine.Config) { c.MaxFirings = 2 }
	const (
		C = engine.StatusCompleted
		P = engine.StatusPending
	)
	t.Run("the rest fires in later transactions", func(t *testing.T) {
		t.Parallel()
		r := newRig(t, bounded)
		run := r.start(chain, `{"n":0}`)
		got, ns := r.wantStatuses(run.ID, engine.RunRunning, map[string]engine.Status{"n1": C, "n2": C, "n3": P, "n4": P})
		require.JSONEq(t, `{"n":2}`, string(ns["n3"].Input), "kept with the input it would have fired with")
		require.NotNil(t, ns["n3"].WakeAt)
		require.Equal(t, 1, got.ActiveNodes, "a waiting fire counts as active")
		require.Equal(t, []engine.DueNode{{Key: "n3", Attempt: 0, Deferred: true}}, r.sweepTimers(run.ID))
		r.wantStatuses(run.ID, engine.RunRunning, map[string]engine.Status{"n3": C, "n4": C, "n5": P})
		require.Len(t, r.sweepTimers(run.ID), 1)
		got, _ = r.wantStatuses(run.ID, engine.RunCompleted, map[string]engine.Status{"n5": C})
		require.JSONEq(t, `{"n":5}`, string(got.Output))
	})
	t.Run("a paused run's waiting fires wait for its resume", func(t *testing.T) {
		t.Parallel()
		ctx := context.Background()
		r := newRig(t, bounded)
		run := r.start(chain, `{"n":0}`)
		_, err := r.eng.PauseRun(ctx, run.ID)
		require.NoError(t, err)
		due := r.dueTimers(run.ID)
		require.Equal(t, []engine.DueNode{{Key: "n3", Attempt: 0, Deferred: true}}, due)
		require.NoError(t, r.eng.Wake(ctx, run.ID, due), "the sweeper's claim while paused")
		r.wantStatuses(run.ID, engine.RunPaused, map[string]engine.Status{"n2": C, "n3": P})
		require.Empty(t, r.dueTimers(run.ID), "claimed: 30 s ahead")
		_, err = r.eng.ResumeRun(ctx, run.ID)
		require.NoError(t, err)
		r.wantStatuses(run.ID, engine.RunRunning, map[string]engine.Status{"n3": P})
		require.Len(t, r.sweepTimers(run.ID), 1, "due at once after the resume")
		require.Len(t, r.sweepTimers(run.ID), 1)
		r.wantStatuses(run.ID, engine.RunCompleted, map[string]engine.Status{"n3": C, "n5": C})
	})

	// A fan-out's sub-flow starts are bounded by the rows the transaction
	// made (MaxRows), not by its firings; those past it start in later
	// transactions, collected as the fan-out collects them, and the run
	// ends as it would have.
	fanOut := func(r *rig) *engine.Run {
		childID, _ := r.flow("", workerChild)
		return r.subflowFanOut(childID, `{"xs":[0,1,2,3,4,5]}`)
	}
	started := func(r *rig, runID string) (n int) {
		_, ns := r.nodes(runID)
		for i := range 6 {
			if ns["sub_"+strconv.Itoa(i)].ChildRunID != nil {
				n++
			}
		}
		return n
	}
	t.Run("a fan-out's sub-flow starts count rows, not firings", func(t *testing.T) {
		t.Parallel()
		r := newRig(t, bounded)
		run := fanOut(r)
		require.Equal(t, 6, started(r, run.ID), "six starts past a bound of two firings")
		require.Empty(t, r.dueTimers(run.ID))
	})
	t.Run("past the rows, the starts follow in later transactions", func(t *testing.T) {
		t.Parallel()
		r := newRig(t, func(c *engine.Config) { c.MaxRows = 4 })
		run := fanOut(r)
		require.Zero(t, started(r, run.ID), "the fan-out's own rows reached the bound")
		require.Len(t, r.sweepTimers(run.ID), 6)
		first := started(r, run.ID)
		require.True(t, first > 0 && first < 6, "%d started in the first later transaction", first)
		for range 6 { // each later transaction starts one at least
			if len(r.sweepTimers(run.ID)) == 0 {
				break
			}
		}
		require.Equal(t, 6, started(r, run.ID))
		for i := range 6 {
			child := r.childRun(run.ID, "sub_"+strconv.Itoa(i))
			require.NoError(t, r.callback(child.ID, "w", 1, C, `{"i":`+strconv.Itoa(i)+`}`))
		}
		got, _ := r.wantStatuses(run.ID, engine.RunCompleted, map[string]engine.Status{"c": C})
		require.JSONEq(t, `[{"i":0},{"i":1},{"i":2},{"i":3},{"i":4},{"i":5}]`, string(got.Output))
	})
	t.Run("what a later start sets off keeps the bounds", func(t *testing.T) {
		t.Parallel()
		r := newRig(t, func(c *engine.Config) { c.MaxRows, c.MaxFirings = 4, 2 })
		childID, _ := r.flow("", `{"nodes":[{"id":"t","type":"Transform","data":{"expression":"input"}}],"edges":[]}`)
		tr := func(id string) string {
			return `{"id":"` + id + `","type":"Transform","data":{"expression":"{\"n\": (input.n ?? 0) + 1}"}}`
		}
		flowID, versionID := r.linkedFlow(`{"nodes":[
			{"id":"s","type":"Splitter","data":{"arrayPath":"xs"}},
			{"id":"sub","type":"SubFlow","data":{"flow":"` + childID + `"}},` + tr("t1") + `,` + tr("t2") + `,` + tr("t3") + `,` + tr("t4") + `,
			{"id":"c","type":"Collector","data":{}}],
			"edges":[{"id":"e1","source":"s","target":"sub"},{"id":"e2","source":"sub","target":"t1"},{"id":"e3","source":"t1","target":"t2"},
				{"id":"e4","source":"t2","target":"t3"},{"id":"e5","source":"t3","target":"t4"},{"id":"e6","source":"t4","target":"c"}]}`)
		run := r.startIn(flowID, versionID, `{"xs":[{"n":0}]}`)
		require.Equal(t, []engine.DueNode{{Key: "sub_0", Deferred: true}}, r.sweepTimers(run.ID))
		// The child ended at once and its node walked on: two firings,
		// then the third waits.
		r.wantStatuses(run.ID, engine.RunRunning, map[string]engine.Status{"sub_0": C, "t1_0": C, "t2_0": C, "t3_0": P})
		require.Equal(t, []engine.DueNode{{Key: "t3_0", Deferred: true}}, r.sweepTimers(run.ID))
		for range 2 {
			r.sweepTimers(run.ID)
		}
		got, _ := r.wantStatuses(run.ID, engine.RunCompleted, map[string]engine.Status{"c": C})
		require.JSONEq(t, `[{"n":4}]`, string(got.Output))
	})
	t.Run("a rerun run's later starts keep its rows' attempts", func(t *testing.T) {
		t.Parallel()
		ctx := context.Background()
		r := newRig(t, func(c *engine.Config) { c.MaxRows = 3 })
		tr := func(id string) string { return `{"id":"` + id + `","type":"Transform","data":{"expression":"input"}}` }
		// sf1's child holds three rows, its worker waiting: its start
		// reaches the bound, and sf2's waits for the sweep.
		big, _ := r.flow("", `{"nodes":[{"id":"w",`+worker+`},`+tr("t2")+`,`+tr("t3")+`],
			"edges":[{"id":"e1","source":"w","target":"t2"},{"id":"e2","source":"t2","target":"t3"}]}`)
		small, _ := r.flow("", `{"nodes":[`+tr("t")+`],"edges":[]}`)
		flowID, versionID := r.linkedFlow(`{"nodes":[
			{"id":"s","type":"Splitter","data":{"arrayPath":"xs"}},` + tr("a") + `,
			{"id":"sf1","type":"SubFlow","data":{"flow":"` + big + `"}},{"id":"sf2","type":"SubFlow","data":{"flow":"` + small + `"}},` +
			tr("y1") + `,` + tr("y2") + `,{"id":"c","type":"Collector","data":{}}],
			"edges":[{"id":"e1","source":"s","target":"a"},{"id":"e2","source":"a","target":"sf1"},{"id":"e3","source":"a","target":"sf2"},
				{"id":"e4","source":"sf1","target":"y1"},{"id":"e5","source":"sf2","target":"y2"},
				{"id":"e6","source":"y1","target":"c"},{"id":"e7","source":"y2","target":"c"}]}`)
		run := r.startIn(flowID, versionID, `{"xs":[{"n":1}]}`)
		finish := func(attempt int) {
			for range 10 {
				if len(r.sweepTimers(run.ID)) == 0 {
					break
				}
			}
			child := r.childRun(run.ID, "sf1_0")
			require.NoError(t, r.callback(child.ID, "w", 1, C, `{"n":1}`))
			_, ns := r.wantStatuses(run.ID, engine.RunCompleted, map[string]engine.Status{"y2_0": C})
			require.Equal(t, attempt, ns["y2_0"].Attempt)
		}
		finish(1)
		// The rerun starts sf1's new child, whose rows reach the bound:
		// sf2's start waits, and its child, ending at once, walks y2_0
		// (its row at attempt 1) on in the sweep's collection of starts.
		require.NoError(t, r.eng.RerunNode(ctx, engine.RerunParams{RunID: run.ID, Key: "a_0"}))
		require.Equal(t, []engine.DueNode{{Key: "sf2_0", Attempt: 1, Deferred: true}}, r.dueTimers(run.ID))
		r.advanceDue(run.ID, time.Minute)
		finish(2)
		var attempts []int
		for _, ev := range r.eventsOf(run.ID, engine.EventNodeStatus) {
			if ev.Key == "y2_0" && gjson.GetBytes(ev.Payload, "status").String() == "completed" {
				attempts = append(attempts, int(gjson.GetBytes(ev.Payload, "attempt").Int()))
			}
		}
		require.Equal(t, []int{1, 2}, attempts, "each completion's event names its attempt")
	})
	t.Run("what a fan-out's own instances set off keeps the bounds", func(t *testing.T) {
		t.Parallel()
		r := newRig(t, bounded)
		tr := func(id string) string {
			return `{"id":"` + id + `","type":"Transform","data":{"expression":"{\"n\": input.n + 1}"}}`
		}
		flowID, versionID := r.linkedFlow(`{"nodes":[
			{"id":"s","type":"Splitter","data":{"arrayPath":"xs"}},` + tr("t1") + `,` + tr("t2") + `,` + tr("t3") + `,` + tr("t4") + `,
			{"id":"c","type":"Collector","data":{}}],
			"edges":[{"id":"e1","source":"s","target":"t1"},{"id":"e2","source":"t1","target":"t2"},
				{"id":"e3","source":"t2","target":"t3"},{"id":"e4","source":"t3","target":"t4"},{"id":"e5","source":"t4","target":"c"}]}`)
		run := r.startIn(flowID, versionID, `{"xs":[{"n":0},{"n":10},{"n":20}]}`)
		// The instances fire at once, the fan-out's own; the first walks
		// on for the second firing (the Splitter was the first), then
		// everything waits.
		r.wantStatuses(run.ID, engine.RunRunning, map[string]engine.Status{"t1_0": C, "t1_1": C, "t1_2": C,
			"t2_0": C, "t3_0": P, "t2_1": P, "t2_2": P})
		require.ElementsMatch(t, []engine.DueNode{{Key: "t2_1", Deferred: true}, {Key: "t2_2", Deferred: true},
			{Key: "t3_0", Deferred: true}}, r.sweepTimers(run.ID))
		sweeps := 1
		for len(r.sweepTimers(run.ID)) > 0 {
			sweeps++
			require.Less(t, sweeps, 10)
		}
		require.GreaterOrEqual(t, sweeps, 4, "eight fires left, two a transaction")
		got, _ := r.wantStatuses(run.ID, engine.RunCompleted, map[string]engine.Status{"c": C})
		require.JSONEq(t, `[{"n":4},{"n":14},{"n":24}]`, string(got.Output))
	})
}
