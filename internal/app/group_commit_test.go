package app_test

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/stitchd/stitchd/engine"
	"github.com/stitchd/stitchd/store"
	"github.com/stitchd/stitchd/store/storetest"
)

// groupSpy is the store, recording the runs each committed transaction
// saved and, once armed, failing the first save that follows another
// run's save in the same transaction (a member of a shared transaction
// failing after its writes).
type groupSpy struct {
	*store.Store
	mu      sync.Mutex
	commits [][]string
	armed   bool
	failed  bool
}

type groupSpyTx struct {
	engine.Tx
	spy   *groupSpy
	saved *[]string
}

func (s *groupSpy) InTx(ctx context.Context, fn func(ctx context.Context, tx engine.Tx) error) error {
	var saved []string
	err := s.Store.InTx(ctx, func(ctx context.Context, tx engine.Tx) error {
		return fn(ctx, &groupSpyTx{Tx: tx, spy: s, saved: &saved})
	})
	if err == nil && len(saved) > 0 {
		s.mu.Lock()
		s.commits = append(s.commits, saved)
		s.mu.Unlock()
	}
	return err
}

func (t *groupSpyTx) SaveRunWithEvents(ctx context.Context, rs engine.RunSave) error {
	t.spy.mu.Lock()
	fail := t.spy.armed && !t.spy.failed && len(*t.saved) > 0
	t.spy.failed = t.spy.failed || fail
	t.spy.mu.Unlock()
	if fail {
		return errors.New("injected failure after the run's writes")
	}
	*t.saved = append(*t.saved, rs.Run.ID)
	return t.Tx.SaveRunWithEvents(ctx, rs)
}

// TestCrossRunGroupCommit: callbacks of many runs at once, with one group
// transaction allowed, share transactions; every run completes its chain
// exactly once; a group whose member fails after writing (an injected
// error, repeated callbacks) is rolled back and its members applied again,
// so one failure loses no other run's step and a repeat is answered as one.
func TestCrossRunGroupCommit(t *testing.T) {
	t.Parallel()
	const graph = `{"nodes":[{"id":"a","type":"Worker","data":{"webhookUrl":"http://worker.invalid/a"}},
		{"id":"b","type":"Worker","data":{"webhookUrl":"http://worker.invalid/b"}}],"edges":[{"id":"e1","source":"a","target":"b"}]}`
	ctx := context.Background()
	st, _ := storetest.IsolatedDB(t)
	spy := &groupSpy{Store: st}
	eng := engineOn(t, spy, func(c *engine.Config) { c.GroupTransactions = 1 })
	const runs = 40
	ids := startRuns(t, st, eng, graph, runs)
	spy.mu.Lock()
	spy.commits, spy.armed = nil, true
	spy.mu.Unlock()
	for _, key := range []string{"a", "b"} {
		var wg sync.WaitGroup
		errs := make(chan error, 2*runs)
		for _, id := range ids {
			keys := []string{key}
			if key == "b" {
				// A repeat of a's callback too: rejected by its own
				// compare-and-set after its count-down went out, it leaves
				// its group; the others are applied together again.
				keys = append(keys, "a")
			}
			for _, k := range keys {
				wg.Add(1)
				go func() {
					defer wg.Done()
					errs <- eng.HandleCallback(ctx, engine.CallbackParams{RunID: id, Key: k, Attempt: 1,
						Status: engine.StatusCompleted, Output: json.RawMessage(`{"k":"` + k + `"}`)})
				}()
			}
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			require.NoError(t, err)
		}
	}
	for _, id := range ids {
		r, nodes, err := st.GetRun(ctx, id, true)
		require.NoError(t, err)
		require.Equal(t, engine.RunCompleted, r.Status, "run %s", id)
		for _, n := range nodes {
			require.Equal(t, 1, n.Attempt, "node %s of run %s", n.Key, id)
		}
		var completed int
		require.NoError(t, st.Gorm().Raw(`SELECT count(*) FROM run_events WHERE run_id = ? AND type = 'node.status'
			AND payload->>'status' = 'completed'`, id).Row().Scan(&completed))
		require.Equal(t, 2, completed, "each node completed once in run %s", id)
	}
	spy.mu.Lock()
	defer spy.mu.Unlock()
	require.True(t, spy.failed, "the injected failure happened")
	shared, saves := 0, 0
	for _, c := range spy.commits {
		saves += len(c)
		if len(c) > 1 {
			shared++
		}
	}
	require.Equal(t, 2*runs, saves, "every step committed once")
	require.Positive(t, shared, "some transactions were shared by several runs")
	require.Less(t, len(spy.commits), 2*runs)
}

// startRuns stores graph as a new flow and starts n runs of it with eng,
// returning their ids.
func startRuns(t *testing.T, st *store.Store, eng *engine.Engine, graph string, n int) []string {
	t.Helper()
	ctx := context.Background()
	flow, err := st.CreateFlow(ctx, "", uuid.NewString(), "runs", nil, compiledVersion(t, graph))
	require.NoError(t, err)
	ids := make([]string, n)
	for i := range ids {
		r, _, err := eng.StartRun(ctx, engine.StartRunParams{FlowID: flow.ID, VersionID: flow.VersionID})
		require.NoError(t, err)
		ids[i] = r.ID
	}
	return ids
}

// TestHungUpCallerNotApplied: an operation whose caller hung up before
// its batch began is not applied (the caller was answered with its
// context's error, and a worker retries), and its retry is.
func TestHungUpCallerNotApplied(t *testing.T) {
	t.Parallel()
	const graph = `{"nodes":[{"id":"a","type":"Worker","data":{"webhookUrl":"http://worker.invalid/a"}}],"edges":[]}`
	st, _ := storetest.IsolatedDB(t)
	eng := engineOn(t, st)
	id := startRuns(t, st, eng, graph, 1)[0]
	gone, cancel := context.WithCancel(context.Background())
	cancel()
	cb := engine.CallbackParams{RunID: id, Key: "a", Attempt: 1, Status: engine.StatusCompleted, Output: json.RawMessage(`{}`)}
	require.ErrorIs(t, eng.HandleCallback(gone, cb), context.Canceled)
	// Stop returns once every submitted operation was answered and the
	// committer's goroutines ended: nothing of the callback is pending.
	eng.Stop()
	_, nodes, err := st.GetRun(context.Background(), id, true)
	require.NoError(t, err)
	require.Len(t, nodes, 1)
	require.Equal(t, engine.StatusRunning, nodes[0].Status, "the hung-up caller's callback was not applied")

	require.NoError(t, eng.Start(context.Background()))
	require.NoError(t, eng.HandleCallback(context.Background(), cb))
	r, _, err := st.GetRun(context.Background(), id, true)
	require.NoError(t, err)
	require.Equal(t, engine.RunCompleted, r.Status, "its retry was")
}

// TestGivenUpOperationOtherThanACallbackApplied: only a worker's callback
// is left out when its caller gave up; any other operation submitted is
// applied (at shutdown the dispatcher's context ends while its record of
// a request already sent may wait in a queue: losing it would send the
// request again). Here a person's decision, submitted with a context
// already ended.
func TestGivenUpOperationOtherThanACallbackApplied(t *testing.T) {
	t.Parallel()
	const graph = `{"nodes":[{"id":"ask","type":"UX","data":{}}],"edges":[]}`
	st, _ := storetest.IsolatedDB(t)
	eng := engineOn(t, st)
	id := startRuns(t, st, eng, graph, 1)[0]
	gone, cancel := context.WithCancel(context.Background())
	cancel()
	// Answered with the context's error or nil, whichever comes first: the
	// caller cannot tell, and the operation is applied either way.
	err := eng.CompleteUX(gone, engine.CompleteUXParams{RunID: id, Key: "ask", Outcome: "approve", By: "ada@example.com"})
	if err != nil {
		require.ErrorIs(t, err, context.Canceled)
	}
	eng.Stop()
	r, _, err := st.GetRun(context.Background(), id, true)
	require.NoError(t, err)
	require.Equal(t, engine.RunCompleted, r.Status, "the decision was applied")
}
