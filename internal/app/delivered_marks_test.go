package app_test

import (
	"context"
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/stitchd/stitchd/engine"
	"github.com/stitchd/stitchd/store"
	"github.com/stitchd/stitchd/store/storetest"
)

// TestDeliveryMarks: successful deliveries reported at once from many
// goroutines are all marked (group-committed into few statements) a
// moment later, or at FlushDeliveryMarks; a row a worker's callback holds
// locked at that moment is skipped rather than waited for; a row no longer
// being sent is left alone.
func TestDeliveryMarks(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st, _ := storetest.IsolatedDB(t)
	eng := engineOn(t, st)
	const runs = 40
	claimed := claimedWorkerRuns(t, st, eng, runs+2, time.Minute)
	status := func(id string) string {
		var s string
		require.NoError(t, st.Gorm().Raw(`SELECT status FROM dispatches WHERE id = ?`, id).Row().Scan(&s))
		return s
	}
	outcome := func(c engine.ClaimedDispatch) engine.DeliveryOutcome {
		return engine.DeliveryOutcome{DispatchID: c.ID, RunID: c.RunID, Key: c.Key, Attempt: c.Attempt, Try: c.Tries,
			Delivered: true, StatusCode: 202}
	}

	var wg sync.WaitGroup
	errs := make(chan error, runs)
	for _, c := range claimed[:runs] {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs <- eng.RecordDelivery(ctx, outcome(c))
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	// Written a moment later without being asked.
	for _, c := range claimed[:runs/2] {
		require.Eventually(t, func() bool { return status(c.ID) == "delivered" }, 5*time.Second, 5*time.Millisecond)
	}
	require.NoError(t, eng.FlushDeliveryMarks(ctx))
	for _, c := range claimed[:runs] {
		require.Equal(t, "delivered", status(c.ID))
	}

	// A row locked by another transaction (a callback marking it) is
	// skipped at once, not waited for.
	locked := claimed[runs]
	tx := st.Gorm().Begin()
	require.NoError(t, tx.Exec(`SELECT 1 FROM dispatches WHERE id = ? FOR UPDATE`, locked.ID).Error)
	mctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	require.NoError(t, eng.RecordDelivery(mctx, outcome(locked)))
	require.NoError(t, eng.FlushDeliveryMarks(mctx), "the mark does not wait for the lock")
	cancel()
	require.NoError(t, tx.Rollback().Error)
	require.Equal(t, "sending", status(locked.ID))

	// A row retired meanwhile stays retired.
	gone := claimed[runs+1]
	require.NoError(t, st.Gorm().Exec(`UPDATE dispatches SET status = 'cancelled' WHERE id = ?`, gone.ID).Error)
	require.NoError(t, eng.RecordDelivery(ctx, outcome(gone)))
	require.NoError(t, eng.FlushDeliveryMarks(ctx))
	require.Equal(t, "cancelled", status(gone.ID))
}

// TestRenewLeases: a claim's lease is renewed only while the row is still
// that claim's: not after another claim took it over (tries moved on), nor
// after it was delivered.
func TestRenewLeases(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st, _ := storetest.IsolatedDB(t)
	eng := engineOn(t, st)
	claimed := claimedWorkerRuns(t, st, eng, 3, time.Second)
	kept, stale, delivered := claimed[0], claimed[1], claimed[2]
	stale.Tries++ // as if another claim had taken the row over
	require.NoError(t, st.DispatchesDelivered(ctx, []string{delivered.ID}))

	ids, err := st.RenewLeases(ctx, []engine.ClaimedDispatch{kept, stale, delivered}, time.Hour)
	require.NoError(t, err)
	require.Equal(t, []string{kept.ID}, ids)
	var left float64
	require.NoError(t, st.Gorm().Raw(`SELECT extract(epoch FROM locked_until - now()) FROM dispatches WHERE id = ?`, kept.ID).
		Row().Scan(&left))
	require.Greater(t, left, 3000.0, "the lease now runs for an hour")
}

// claimedWorkerRuns starts n runs of a flow of one Worker node on eng and
// claims their dispatches for lease.
func claimedWorkerRuns(t *testing.T, st *store.Store, eng *engine.Engine, n int, lease time.Duration) []engine.ClaimedDispatch {
	t.Helper()
	const graph = `{"nodes":[{"id":"a","type":"Worker","data":{"webhookUrl":"http://worker.invalid/a"}}],"edges":[]}`
	ctx := context.Background()
	flow, err := st.CreateFlow(ctx, "", uuid.NewString(), "worker", nil, compiledVersion(t, graph))
	require.NoError(t, err)
	for range n {
		_, _, err := eng.StartRun(ctx, engine.StartRunParams{FlowID: flow.ID, VersionID: flow.VersionID})
		require.NoError(t, err)
	}
	claimed, err := st.ClaimDue(ctx, n+10, lease)
	require.NoError(t, err)
	require.Len(t, claimed, n)
	return claimed
}

// markSpy is the store, recording the dispatches DispatchesDelivered is
// asked to mark.
type markSpy struct {
	*store.Store
	mu  sync.Mutex
	ids []string
}

func (s *markSpy) DispatchesDelivered(ctx context.Context, ids []string) error {
	s.mu.Lock()
	s.ids = append(s.ids, ids...)
	s.mu.Unlock()
	return s.Store.DispatchesDelivered(ctx, ids)
}

// TestDeliveryMarkYieldsToCallback: a delivered mark still pending when the
// worker's callback commits is dropped — the callback's transaction marked
// the row — and never written; a mark whose callback has not come is.
func TestDeliveryMarkYieldsToCallback(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st, _ := storetest.IsolatedDB(t)
	spy := &markSpy{Store: st}
	eng := engineOn(t, spy, func(c *engine.Config) {
		c.MarkDelay = time.Hour // written only by FlushDeliveryMarks here
	})
	claimed := claimedWorkerRuns(t, st, eng, 2, time.Minute)
	answered, silent := claimed[0], claimed[1]
	for _, c := range claimed {
		require.NoError(t, eng.RecordDelivery(ctx, engine.DeliveryOutcome{DispatchID: c.ID, RunID: c.RunID, Key: c.Key,
			Attempt: c.Attempt, Try: c.Tries, Delivered: true, StatusCode: 202}))
	}
	require.NoError(t, eng.HandleCallback(ctx, engine.CallbackParams{RunID: answered.RunID, Key: "a", Attempt: 1,
		Status: engine.StatusCompleted, Output: json.RawMessage(`{}`)}))
	require.NoError(t, eng.FlushDeliveryMarks(ctx))
	require.Equal(t, []string{silent.ID}, spy.ids, "only the mark no callback made unnecessary is written")
	for _, c := range claimed {
		var s string
		require.NoError(t, st.Gorm().Raw(`SELECT status FROM dispatches WHERE id = ?`, c.ID).Row().Scan(&s))
		require.Equal(t, "delivered", s)
	}
}

// TestStopWritesPendingDeliveryMarks: a dispatch the worker accepted (202,
// no callback yet) is marked delivered by a graceful stop, though its mark
// was still waiting for a callback: the row is not delivered again when
// its lease ends.
func TestStopWritesPendingDeliveryMarks(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	flow := h.createFlow([]map[string]any{wnode(h, "a")}, nil)
	r := h.startRun(flow, map[string]any{})
	h.waitDispatch(r.ID, "a", 1)
	// The worker's 202 has been read and is being recorded (Stop waits for
	// the dispatcher's deliveries in flight).
	h.eventually(func() bool { return h.scrape()[`stitchd_dispatch_attempts_total{outcome="delivered"}`] == 1 },
		"the delivery counted")
	sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(t, h.app.Stop(sctx))
	st, err := store.Open(sctx, h.dbURL, store.Options{MaxOpenConns: 1})
	require.NoError(t, err)
	defer st.Close()
	var status string
	require.NoError(t, st.Gorm().Raw(`SELECT status FROM dispatches WHERE run_id = ? AND key = 'a'`, r.ID).Row().Scan(&status))
	require.Equal(t, "delivered", status)
}
