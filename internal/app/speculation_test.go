package app_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/stitchd/stitchd/engine"
	"github.com/stitchd/stitchd/store"
	"github.com/stitchd/stitchd/store/storetest"
)

// saveSpy is the store, counting the committed run saves that were
// relative (a speculated chain step, committed in one round trip).
type saveSpy struct {
	*store.Store
	mu       sync.Mutex
	relative map[string]int // run id → committed relative saves
}

type saveSpyTx struct {
	engine.Tx
	saved *[]string // runs saved relative in this transaction
}

func (s *saveSpy) InTx(ctx context.Context, fn func(ctx context.Context, tx engine.Tx) error) error {
	var saved []string
	err := s.Store.InTx(ctx, func(ctx context.Context, tx engine.Tx) error {
		return fn(ctx, &saveSpyTx{Tx: tx, saved: &saved})
	})
	if err == nil {
		s.mu.Lock()
		for _, id := range saved {
			s.relative[id]++
		}
		s.mu.Unlock()
	}
	return err
}

func (t *saveSpyTx) SaveRunWithEvents(ctx context.Context, rs engine.RunSave) error {
	if rs.Relative {
		*t.saved = append(*t.saved, rs.Run.ID)
	}
	return t.Tx.SaveRunWithEvents(ctx, rs)
}

func (s *saveSpy) relativeSaves(runID string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.relative[runID]
}

// runRecord is what a run left in the database, without ids and times.
type runRecord struct {
	Status, Error                          string
	Active, Failed, TerminalsLeft, LastSeq int64
	Output                                 string
	Events                                 []string
	Nodes                                  []string
}

func recordOf(t *testing.T, st *store.Store, runID string) runRecord {
	t.Helper()
	ctx := context.Background()
	var r runRecord
	require.NoError(t, st.Gorm().Raw(`SELECT status, coalesce(error, ''), active_nodes, failed_nodes, terminals_left, event_seq,
		coalesce(output::text, '') FROM runs WHERE id = ?`, runID).Row().
		Scan(&r.Status, &r.Error, &r.Active, &r.Failed, &r.TerminalsLeft, &r.LastSeq, &r.Output))
	evs, err := st.RunEvents(ctx, runID, 0, 1000)
	require.NoError(t, err)
	for i, e := range evs {
		require.Equal(t, int64(i+1), e.Seq, "event sequence of run %s has no gap", runID)
		var p map[string]any
		require.NoError(t, json.Unmarshal(e.Payload, &p))
		delete(p, "dispatch_id")
		delete(p, "flow_version_id")
		b, err := json.Marshal(p)
		require.NoError(t, err)
		r.Events = append(r.Events, fmt.Sprintf("%d %s %s %s", e.Seq, e.Type, e.Key, b))
	}
	require.Equal(t, int64(len(evs)), r.LastSeq, "the run's event_seq counts its events")
	_, nodes, err := st.GetRun(ctx, runID, true)
	require.NoError(t, err)
	for _, n := range nodes {
		r.Nodes = append(r.Nodes, fmt.Sprintf("%s %s attempt=%d pending=%d in=%s out=%s", n.Key, n.Status, n.Attempt,
			n.PendingParents, n.Input, n.Output))
	}
	var deliveries []string
	require.NoError(t, st.Gorm().Raw(`SELECT key || ' ' || attempt || ' ' || status || ' ' || delivery_logged FROM dispatches
		WHERE run_id = ? ORDER BY key, attempt`, runID).Pluck("x", &deliveries).Error)
	r.Nodes = append(r.Nodes, deliveries...)
	return r
}

// TestSpeculatedChainStep: a chain step whose outcome the process can
// foresee (it knows the run's graph; a Worker completing, a single Worker
// or UX node after it) is applied without reading the run, in one round
// trip, and leaves exactly what the step applied statement by statement
// leaves: the same node states, outbox rows, events (numbered without a
// gap after the row's sequence) and run counters. A repeated, conflicting
// or stale callback of such a step, and one for a cancelled run, fail
// what was assumed in the database and get the usual answers, changing
// nothing.
func TestSpeculatedChainStep(t *testing.T) {
	t.Parallel()
	const graph = `{"nodes":[{"id":"a","type":"Worker","data":{"webhookUrl":"http://worker.invalid/a"}},
		{"id":"b","type":"Worker","data":{"webhookUrl":"http://worker.invalid/b"}},
		{"id":"c","type":"UX","data":{}}],
		"edges":[{"id":"e1","source":"a","target":"b"},{"id":"e2","source":"b","target":"c","data":{"mapping":{"got":"v"}}}]}`
	ctx := context.Background()
	st, _ := storetest.IsolatedDB(t)
	spy := &saveSpy{Store: st, relative: map[string]int{}}
	eng := engineOn(t, spy)
	flow, err := st.CreateFlow(ctx, "", uuid.NewString(), "speculation", nil, compiledVersion(t, graph))
	require.NoError(t, err)
	start := func() string {
		r, _, err := eng.StartRun(ctx, engine.StartRunParams{FlowID: flow.ID, VersionID: flow.VersionID,
			Input: json.RawMessage(`{"in":1}`)})
		require.NoError(t, err)
		return r.ID
	}
	complete := func(e *engine.Engine, runID, key string, attempt int, out string) error {
		return e.HandleCallback(ctx, engine.CallbackParams{RunID: runID, Key: key, Attempt: attempt,
			Status: engine.StatusCompleted, Output: json.RawMessage(out)})
	}

	// Speculated: this engine started the run, so it knows its version.
	fast := start()
	require.NoError(t, complete(eng, fast, "a", 1, `{"v":1}`))
	require.NoError(t, complete(eng, fast, "b", 1, `{"v":2}`))
	require.Equal(t, 2, spy.relativeSaves(fast), "both steps were speculated")

	// Read statement by statement: a fresh engine for each step knows no
	// run's version, so it cannot speculate.
	slow := start()
	require.NoError(t, complete(engineOn(t, spy), slow, "a", 1, `{"v":1}`))
	require.NoError(t, complete(engineOn(t, spy), slow, "b", 1, `{"v":2}`))
	require.Zero(t, spy.relativeSaves(slow))

	want := recordOf(t, st, slow)
	require.Equal(t, want, recordOf(t, st, fast))
	require.Equal(t, "running", want.Status)
	require.Contains(t, want.Nodes, `c waiting_for_user attempt=1 pending=0 in={"got": 2} out=`)

	// Repeats of b's callback on the speculating engine: the identical one
	// is answered as the first was, a conflicting or stale one is
	// refused; none changes anything.
	require.NoError(t, complete(eng, fast, "b", 1, `{"v":2}`))
	require.ErrorIs(t, complete(eng, fast, "b", 1, `{"v":3}`), engine.ErrConflict)
	require.ErrorIs(t, complete(eng, fast, "b", 2, `{"v":2}`), engine.ErrConflict)
	require.Equal(t, want, recordOf(t, st, fast))
	require.Equal(t, 2, spy.relativeSaves(fast), "no repeat was committed")

	// The speculated step takes the run's lock (its compare-and-set does,
	// with no statement of its own): it waits for a transaction holding it.
	locked := start()
	holder := st.Gorm().Begin()
	require.NoError(t, holder.Error)
	require.NoError(t, holder.Exec(`SELECT 1 FROM runs WHERE id = ? FOR UPDATE`, locked).Error)
	done := make(chan error, 1)
	go func() { done <- complete(eng, locked, "a", 1, `{"v":1}`) }()
	require.Eventually(t, func() bool {
		var waiting int
		require.NoError(t, st.Gorm().Raw(`SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()
			AND wait_event_type = 'Lock' AND query LIKE '%FOR UPDATE%'`).Row().Scan(&waiting))
		return waiting == 1
	}, 10*time.Second, 5*time.Millisecond, "the step waits for the run's lock")
	select {
	case err := <-done:
		t.Fatalf("the step finished while its run was locked: %v", err)
	default:
	}
	require.NoError(t, holder.Rollback().Error)
	require.NoError(t, <-done)
	require.Equal(t, 1, spy.relativeSaves(locked))

	// An output that repeats a key is not speculated on: Postgres keeps
	// the last value, and the successors' inputs must be made from that.
	dup := start()
	require.NoError(t, complete(eng, dup, "a", 1, `{"v":1,"v":2}`))
	require.NoError(t, complete(eng, dup, "b", 1, `{"v":3,"w":{"x":1,"x":2},"v":4}`))
	require.Zero(t, spy.relativeSaves(dup))
	got := recordOf(t, st, dup)
	require.Contains(t, got.Nodes, `b completed attempt=1 pending=0 in={"v": 2} out={"v": 4, "w": {"x": 2}}`)
	require.Contains(t, got.Nodes, `c waiting_for_user attempt=1 pending=0 in={"got": 4} out=`)

	// What was assumed is checked by the database: a run that is not
	// running (failed, here set by hand while its node still runs) or
	// that is not on the version the process remembers is not stepped
	// speculatively; the ordinary path applies the callback.
	notRunning := start()
	require.NoError(t, st.Gorm().Exec(`UPDATE runs SET status = 'failed' WHERE id = ?`, notRunning).Error)
	require.NoError(t, complete(eng, notRunning, "a", 1, `{"v":1}`))
	require.Zero(t, spy.relativeSaves(notRunning))
	require.Equal(t, "running", recordOf(t, st, notRunning).Status, "the ordinary path resumed the run")
	other, err := st.CreateFlow(ctx, "", uuid.NewString(), "speculation, again", nil, compiledVersion(t, graph))
	require.NoError(t, err)
	moved := start()
	require.NoError(t, st.Gorm().Exec(`UPDATE runs SET flow_version_id = ? WHERE id = ?`, other.VersionID, moved).Error)
	require.NoError(t, complete(eng, moved, "a", 1, `{"v":1}`))
	require.Zero(t, spy.relativeSaves(moved))
	require.Contains(t, recordOf(t, st, moved).Nodes, `b running attempt=1 pending=0 in={"v": 1} out=`)

	// A step with more successors than a speculated step fires (8) is
	// applied the ordinary way.
	nodes := []string{`{"id":"a","type":"Worker","data":{"webhookUrl":"http://worker.invalid/a"}}`}
	var edges []string
	for i := range 9 {
		nodes = append(nodes, fmt.Sprintf(`{"id":"b%d","type":"Worker","data":{"webhookUrl":"http://worker.invalid/b"}}`, i))
		edges = append(edges, fmt.Sprintf(`{"id":"e%d","source":"a","target":"b%d"}`, i, i))
	}
	wide, err := st.CreateFlow(ctx, "", uuid.NewString(), "wide", nil, compiledVersion(t,
		`{"nodes":[`+strings.Join(nodes, ",")+`],"edges":[`+strings.Join(edges, ",")+`]}`))
	require.NoError(t, err)
	wr, _, err := eng.StartRun(ctx, engine.StartRunParams{FlowID: wide.ID, VersionID: wide.VersionID})
	require.NoError(t, err)
	require.NoError(t, complete(eng, wr.ID, "a", 1, `{"v":1}`))
	require.Zero(t, spy.relativeSaves(wr.ID))
	var running int
	require.NoError(t, st.Gorm().Raw(`SELECT count(*) FROM node_states WHERE run_id = ? AND status = 'running'`, wr.ID).
		Row().Scan(&running))
	require.Equal(t, 9, running)

	// A cancelled run: the speculated compare-and-set finds a cancelled
	// node and the callback is refused.
	cancelled := start()
	_, err = eng.CancelRun(ctx, cancelled)
	require.NoError(t, err)
	before := recordOf(t, st, cancelled)
	require.Error(t, complete(eng, cancelled, "a", 1, `{"v":1}`))
	require.Equal(t, before, recordOf(t, st, cancelled))
	require.Zero(t, spy.relativeSaves(cancelled))
}

// txCounter is the store, counting the transactions begun.
type txCounter struct {
	*store.Store
	mu sync.Mutex
	n  int
}

func (s *txCounter) InTx(ctx context.Context, fn func(ctx context.Context, tx engine.Tx) error) error {
	s.mu.Lock()
	s.n++
	s.mu.Unlock()
	return s.Store.InTx(ctx, fn)
}

func (s *txCounter) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.n
}

// TestSpeculatedRepeatInGroup: a repeated callback of a speculated step in
// a transaction shared with other runs' steps fails that transaction in
// the database, at COMMIT; the repeat's batch is then applied alone,
// unspeculated, and the others again together — not every member alone.
func TestSpeculatedRepeatInGroup(t *testing.T) {
	t.Parallel()
	const graph = `{"nodes":[{"id":"a","type":"Worker","data":{"webhookUrl":"http://worker.invalid/a"}},
		{"id":"b","type":"Worker","data":{"webhookUrl":"http://worker.invalid/b"}},
		{"id":"c","type":"Worker","data":{"webhookUrl":"http://worker.invalid/c"}}],
		"edges":[{"id":"e1","source":"a","target":"b"},{"id":"e2","source":"b","target":"c"}]}`
	ctx := context.Background()
	st, _ := storetest.IsolatedDB(t)
	counter := &txCounter{Store: st}
	// One shared transaction at a time: the steps queue and go together.
	eng := engineOn(t, counter, func(c *engine.Config) { c.GroupTransactions = 1 })
	const runs = 16
	ids := startRuns(t, st, eng, graph, runs)
	callback := func(id, key string) error {
		return eng.HandleCallback(ctx, engine.CallbackParams{RunID: id, Key: key, Attempt: 1,
			Status: engine.StatusCompleted, Output: json.RawMessage(`{"k":"` + key + `"}`)})
	}
	for _, id := range ids {
		require.NoError(t, callback(id, "a"))
	}
	// A slow first step holds the one group slot while the others queue.
	blocker := ids[0]
	holder := st.Gorm().Begin()
	require.NoError(t, holder.Exec(`SELECT 1 FROM runs WHERE id = ? FOR UPDATE`, blocker).Error)
	errs := make(chan error, runs+1)
	go func() { errs <- callback(blocker, "b") }()
	require.Eventually(t, func() bool {
		var waiting int
		require.NoError(t, st.Gorm().Raw(`SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()
			AND wait_event_type = 'Lock'`).Row().Scan(&waiting))
		return waiting == 1
	}, 10*time.Second, 5*time.Millisecond)
	// Steps of runs 1–14 and an identical repeat of run 15's first step
	// queue behind it: 15 batches for one shared transaction.
	var wg sync.WaitGroup
	for i, id := range ids[1:] {
		key := "b"
		if i == runs-2 {
			key = "a"
		}
		wg.Add(1)
		go func() { defer wg.Done(); errs <- callback(id, key) }()
	}
	require.Eventually(t, func() bool { return eng.Waiting() == runs-1 }, 10*time.Second, time.Millisecond,
		"the batches wait for the group slot")
	before := counter.count()
	require.NoError(t, holder.Rollback().Error)
	wg.Wait()
	require.NoError(t, <-errs) // the blocker's
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	// The 15 share one transaction, which the repeat fails at COMMIT; the
	// repeat is then applied alone and unspeculated, the 14 steps again
	// together: 3 transactions, not 1 + 15 alone + the repeat again.
	require.Equal(t, 3, counter.count()-before, "transactions after the slot was freed")
	for i, id := range ids {
		want := map[string]engine.Status{"a": engine.StatusCompleted, "b": engine.StatusCompleted, "c": engine.StatusRunning}
		if i == runs-1 {
			want = map[string]engine.Status{"a": engine.StatusCompleted, "b": engine.StatusRunning, "c": engine.StatusPending}
		}
		_, nodes, err := st.GetRun(ctx, id, true)
		require.NoError(t, err)
		for _, n := range nodes {
			require.Equal(t, want[n.Key], n.Status, "node %s of run %d", n.Key, i)
			require.Equal(t, min(1, n.Attempt), n.Attempt)
		}
	}
}
