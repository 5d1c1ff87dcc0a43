package app_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/stitchd/stitchd/engine"
	"github.com/stitchd/stitchd/store/storetest"
)

// TestDeliveryMarks: successful deliveries reported at once from many
// goroutines are all marked (group-committed into few statements); a row a
// worker's callback holds locked at that moment is skipped rather than
// waited for; a row no longer being sent is left alone.
func TestDeliveryMarks(t *testing.T) {
	t.Parallel()
	const graph = `{"nodes":[{"id":"a","type":"Worker","data":{"webhookUrl":"http://worker.invalid/a"}}],"edges":[]}`
	ctx := context.Background()
	st, _ := storetest.IsolatedDB(t)
	eng := engineOn(t, st)
	flow, err := st.CreateFlow(ctx, uuid.NewString(), "marks", nil, compiledVersion(t, graph))
	require.NoError(t, err)
	const runs = 40
	for range runs + 2 {
		_, _, err := eng.StartRun(ctx, engine.StartRunParams{FlowID: flow.ID, VersionID: flow.VersionID})
		require.NoError(t, err)
	}
	claimed, err := st.ClaimDue(ctx, 100, time.Minute)
	require.NoError(t, err)
	require.Len(t, claimed, runs+2)
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
	for _, c := range claimed[:runs] {
		require.Equal(t, "delivered", status(c.ID))
	}

	// A row locked by another transaction (a callback marking it) is
	// skipped at once, not waited for.
	locked := claimed[runs]
	tx := st.Gorm().Begin()
	require.NoError(t, tx.Exec(`SELECT 1 FROM dispatches WHERE id = ? FOR UPDATE`, locked.ID).Error)
	mctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	require.NoError(t, eng.RecordDelivery(mctx, outcome(locked)), "the mark does not wait for the lock")
	cancel()
	require.NoError(t, tx.Rollback().Error)
	require.Equal(t, "sending", status(locked.ID))

	// A row retired meanwhile stays retired.
	gone := claimed[runs+1]
	require.NoError(t, st.Gorm().Exec(`UPDATE dispatches SET status = 'cancelled' WHERE id = ?`, gone.ID).Error)
	require.NoError(t, eng.RecordDelivery(ctx, outcome(gone)))
	require.Equal(t, "cancelled", status(gone.ID))
}

// TestRenewLeases: a claim's lease is renewed only while the row is still
// that claim's: not after another claim took it over (tries moved on), nor
// after it was delivered.
func TestRenewLeases(t *testing.T) {
	t.Parallel()
	const graph = `{"nodes":[{"id":"a","type":"Worker","data":{"webhookUrl":"http://worker.invalid/a"}}],"edges":[]}`
	ctx := context.Background()
	st, _ := storetest.IsolatedDB(t)
	eng := engineOn(t, st)
	flow, err := st.CreateFlow(ctx, uuid.NewString(), "leases", nil, compiledVersion(t, graph))
	require.NoError(t, err)
	for range 3 {
		_, _, err := eng.StartRun(ctx, engine.StartRunParams{FlowID: flow.ID, VersionID: flow.VersionID})
		require.NoError(t, err)
	}
	claimed, err := st.ClaimDue(ctx, 10, time.Second)
	require.NoError(t, err)
	require.Len(t, claimed, 3)
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
