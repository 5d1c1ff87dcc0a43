package engine_test

import (
	"context"
	"encoding/json"
	"sort"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/stitchd/stitchd/engine"
	"github.com/stitchd/stitchd/internal/testkit"
)

// Helpers the TestRule… tests share, over the rig of rules_test.go: one
// rig a subtest (its own test transaction), read back after each
// operation.

// clockedRig is a rig whose engine's clock the test holds (to advance it).
func clockedRig(t *testing.T, opts ...func(*engine.Config)) (*rig, *testkit.Clock) {
	t.Helper()
	clk := &testkit.Clock{}
	opts = append([]func(*engine.Config){func(c *engine.Config) { c.Clock = clk }}, opts...)
	return newRig(t, opts...), clk
}

// wantStatuses asserts the run's status and its nodes' (every one named;
// others may exist).
func (r *rig) wantStatuses(runID string, run engine.RunStatus, nodes map[string]engine.Status) (*engine.Run, map[string]engine.NodeState) {
	r.t.Helper()
	got, ns := r.nodes(runID)
	have := make(map[string]engine.Status, len(nodes))
	for k := range nodes {
		if n, ok := ns[k]; ok {
			have[k] = n.Status
		} else {
			have[k] = "(no row)"
		}
	}
	require.Equal(r.t, nodes, have, "node statuses of run %s", runID)
	require.Equal(r.t, run, got.Status, "status of run %s (error %v)", runID, got.Error)
	return got, ns
}

// eventsOf returns the run's events of type typ, oldest first.
func (r *rig) eventsOf(runID, typ string) []engine.Event {
	r.t.Helper()
	evs, err := r.st.RunEvents(context.Background(), runID, 0, 10000)
	require.NoError(r.t, err)
	var out []engine.Event
	for _, ev := range evs {
		if ev.Type == typ {
			out = append(out, ev)
		}
	}
	return out
}

// decide answers UX node key of the run with outcome (an internal caller:
// no assignee check).
func (r *rig) decide(runID, key, outcome, answer string) error {
	r.t.Helper()
	p := engine.CompleteUXParams{RunID: runID, Key: key, Outcome: outcome, By: "rules@example.com"}
	if answer != "" {
		p.Output = json.RawMessage(answer)
	}
	return r.eng.CompleteUX(context.Background(), p)
}

// startIn starts a run of a flow already created.
func (r *rig) startIn(flowID, versionID, input string) *engine.Run {
	r.t.Helper()
	run, created, err := r.eng.StartRun(context.Background(), engine.StartRunParams{FlowID: flowID, VersionID: versionID,
		Input: json.RawMessage(input)})
	require.NoError(r.t, err)
	require.True(r.t, created)
	return run
}

// flow creates a flow of graph (compiled by testkit.Version) named name
// ("" for a unique one) and returns its id and version id.
func (r *rig) flow(name, graph string) (string, string) {
	r.t.Helper()
	if name == "" {
		name = "rules-" + uuid.NewString()
	}
	f, err := r.st.CreateFlow(context.Background(), "", uuid.NewString(), name, nil, testkit.Version(r.t, graph))
	require.NoError(r.t, err)
	return f.ID, f.VersionID
}

// keysOf returns the sorted keys of the node instances of the run.
func (r *rig) keysOf(runID string) []string {
	r.t.Helper()
	_, ns := r.nodes(runID)
	keys := make([]string, 0, len(ns))
	for k := range ns {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// advanceDue moves the run's due times (wake_at, deadlines) d earlier, as
// storetest.AdvanceDueTimes does for a whole database, but for this run's
// rows only (the package database is shared by parallel tests): what
// falls due within d is due now by the database's now().
func (r *rig) advanceDue(runID string, d time.Duration) {
	r.t.Helper()
	require.NoError(r.t, r.st.Gorm().Exec(`UPDATE node_states SET wake_at = wake_at - make_interval(secs => ?),
		deadline = deadline - make_interval(secs => ?), remind_at = remind_at - make_interval(secs => ?) WHERE run_id = ?`,
		d.Seconds(), d.Seconds(), d.Seconds(), runID).Error)
}

// dueTimers is what the sweeper's timer claim (store.DueTimers) finds due
// of the run, as the engine.DueNode the sweeper hands to Engine.Wake.
func (r *rig) dueTimers(runID string) []engine.DueNode {
	r.t.Helper()
	due, err := r.st.DueTimers(context.Background(), 500)
	require.NoError(r.t, err)
	var out []engine.DueNode
	for _, d := range due {
		if d.RunID == runID {
			out = append(out, engine.DueNode{Key: d.Key, Attempt: d.Attempt, Deferred: d.Deferred})
		}
	}
	return out
}

// sweepTimers applies what the sweeper would: the run's due timers, woken.
func (r *rig) sweepTimers(runID string) []engine.DueNode {
	r.t.Helper()
	due := r.dueTimers(runID)
	if len(due) > 0 {
		require.NoError(r.t, r.eng.Wake(context.Background(), runID, due))
	}
	return due
}

// overdue is what the sweeper's claim of overdue worker nodes
// (store.OverdueNodes) finds of the run, as the engine.ExpireParams the
// sweeper hands to Engine.Expire.
func (r *rig) overdue(runID string) []engine.ExpireParams {
	r.t.Helper()
	claimed, err := r.st.OverdueNodes(context.Background(), 500)
	require.NoError(r.t, err)
	var out []engine.ExpireParams
	for _, o := range claimed {
		if o.RunID == runID {
			out = append(out, engine.ExpireParams{RunID: o.RunID, Key: o.Key, Attempt: o.Attempt, Deadline: o.Deadline})
		}
	}
	return out
}

// expire applies what the sweeper would once the run's deadlines passed:
// its overdue worker nodes, claimed and expired.
func (r *rig) expire(runID string) error {
	r.t.Helper()
	r.advanceDue(runID, 24*time.Hour)
	claimed := r.overdue(runID)
	require.NotEmpty(r.t, claimed, "a worker node of the run is overdue")
	for _, p := range claimed {
		expired, err := r.eng.Expire(context.Background(), p)
		if err != nil {
			return err
		}
		require.True(r.t, expired, "%s's attempt %d expired", p.Key, p.Attempt)
	}
	return nil
}
