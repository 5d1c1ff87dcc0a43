package app_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/stitchd/stitchd/callbacks"
	"github.com/stitchd/stitchd/engine"
	"github.com/stitchd/stitchd/internal/testkit"
	"github.com/stitchd/stitchd/store"
	"github.com/stitchd/stitchd/store/storetest"
)

// TestClaimedLeaseStartsAfterLeasedAt: the rows a commit writes already
// claimed reach the process with a LeasedAt no later than the start of
// their lease in the database, however long the transaction around them
// took. The commit's rows were once handed over stamped with the time of
// the hand-over, and their leases ran from the transaction's start: a
// slow commit (a large fan-out, a busy machine) ate into the lease the
// process believed it held, its renewal came late, and a poller claimed
// the rows again (TestSlowFanOutIsDeliveredOnce failed so in CI, a row
// claimed three times). Here every transaction reads before the engine's
// work starts and waits before and after it.
func TestClaimedLeaseStartsAfterLeasedAt(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st, _ := storetest.IsolatedDB(t)
	const lease = time.Minute
	claims := engine.NewClaims()
	claims.SetRoom(100)
	eng := engineOn(t, &slowCommits{Store: st, wait: 200 * time.Millisecond}, func(c *engine.Config) {
		c.Clock, c.Claims, c.ClaimLease = engine.SystemClock{}, claims, lease
	})

	graph := `{"nodes":[{"id":"split","type":"Splitter","data":{"arrayPath":"items"}},
		{"id":"score","type":"Worker","data":{"webhookUrl":"http://worker.invalid/score"}},
		{"id":"merge","type":"Collector","data":{}}],
		"edges":[{"id":"e1","source":"split","target":"score"},{"id":"e2","source":"score","target":"merge"}]}`
	flow, err := st.CreateFlow(ctx, "", uuid.NewString(), "fan-out", nil, compiledVersion(t, graph))
	require.NoError(t, err)
	_, _, err = eng.StartRun(ctx, engine.StartRunParams{FlowID: flow.ID, VersionID: flow.VersionID,
		Input: []byte(`{"items":[1,2,3,4,5]}`)})
	require.NoError(t, err)

	// The commit's claimed rows wait in the handoff, as values.
	require.Equal(t, 95, claims.Room(), "the rows waiting count against the room")
	got := claims.Take()
	require.Len(t, got, 5, "the fan-out's rows were claimed for the process")
	require.Empty(t, claims.Take())
	for _, c := range got {
		require.False(t, c.LeasedAt.IsZero(), "row %s has no LeasedAt", c.Key)
		var ends time.Time
		require.NoError(t, st.Gorm().Raw(`SELECT locked_until FROM dispatches WHERE id = ?`, c.ID).Row().Scan(&ends))
		require.False(t, ends.Before(c.LeasedAt.Add(lease)),
			"row %s: the lease ends at %s in the database, before LeasedAt %s plus the lease", c.Key, ends, c.LeasedAt)
	}
}

// TestWokenRowsAreRenewedByTheirLeasedAt: the dispatcher renews a woken row
// by when its lease started (LeasedAt), not by when it was handed over.
// The rows here are claimed with a lease that ends in a fifth of the
// dispatcher's, and handed over as leased four fifths of a lease ago: the
// same lease end. A poller running every 10 ms claims any row whose lease
// ends, so a renewal that came a quarter lease after the hand-over (or
// later) shows as a second claim. Renewed by LeasedAt, the rows are at the
// first renewal tick (an eighth of a lease, 1.25 s: 0.75 s before the end).
func TestWokenRowsAreRenewedByTheirLeasedAt(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st, _ := storetest.IsolatedDB(t)
	eng := engineOn(t, st)
	// The first delivery holds the only delivery worker until the test
	// ends (a worker that takes longer than the test).
	worker := testkit.NewWorker(t, testkit.WorkerOptions{Delay: time.Hour})

	const lease, rows = 10 * time.Second, 4
	graph := `{"nodes":[{"id":"a","type":"Worker","data":{"webhookUrl":"` + worker.URL + `/a"}}],"edges":[]}`
	startRuns(t, st, eng, graph, rows)
	leasedAt := time.Now().Add(-lease * 4 / 5)
	claimed, err := st.ClaimDue(ctx, rows, lease/5)
	require.NoError(t, err)
	require.Len(t, claimed, rows)
	for i := range claimed {
		claimed[i].LeasedAt = leasedAt
	}

	d := callbacks.NewDispatcher(callbacks.DispatcherConfig{Store: st, Recorder: eng, Secret: []byte("0123456789abcdef"),
		Workers: 1, QueueSize: 16, QueueMax: 16, PollInterval: 10 * time.Millisecond, Lease: lease})
	dctx, cancel := context.WithCancel(ctx)
	require.NoError(t, d.Start(dctx))
	defer d.Stop()
	defer cancel()
	var claimedEnd time.Time
	require.NoError(t, st.Gorm().Raw(`SELECT max(locked_until) FROM dispatches`).Row().Scan(&claimedEnd))
	d.Wake(claimed)

	// Until every row's lease ends after it did as claimed: renewed (or,
	// renewed too late, claimed again by the poller).
	var maxTries, n int
	var renewed bool
	testkit.Eventually(t, 30*time.Second, func() bool {
		require.NoError(t, st.Gorm().Raw(`SELECT count(*), max(tries), bool_and(locked_until > ?) FROM dispatches`, claimedEnd).
			Row().Scan(&n, &maxTries, &renewed))
		return renewed
	}, "every row's lease to end later than as claimed")
	require.Equal(t, rows, n)
	require.Equal(t, 1, maxTries, "no row was claimed again")
	require.NoError(t, st.Gorm().Raw(`SELECT bool_and(locked_until > ?) FROM dispatches`, claimedEnd.Add(lease/2)).
		Row().Scan(&renewed))
	require.True(t, renewed, "every row's lease was renewed, for a lease")
}

// slowCommits is the store, its transactions first reading (so they have
// begun in the database), then waiting before and after the engine's work.
type slowCommits struct {
	*store.Store
	wait time.Duration
}

func (s *slowCommits) InTx(ctx context.Context, fn func(ctx context.Context, tx engine.Tx) error) error {
	return s.Store.InTx(ctx, func(ctx context.Context, tx engine.Tx) error {
		if _, err := tx.FirstFailure(ctx, uuid.NewString()); err != nil {
			return err
		}
		// A slow transaction: real time passes in the database, whose
		// clock starts the leases.
		time.Sleep(s.wait)
		if err := fn(ctx, tx); err != nil {
			return err
		}
		time.Sleep(s.wait)
		return nil
	})
}

// TestDispatcherTakesClaimsAndTellsItsRoom: a running dispatcher tells the
// commits' handoff its room, takes the rows a commit claimed for the
// process and delivers them without a poll (its poll interval is an hour),
// and once stopped says it has no room, so commits claim nothing for it.
func TestDispatcherTakesClaimsAndTellsItsRoom(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st, _ := storetest.IsolatedDB(t)
	claims := engine.NewClaims()
	eng := engineOn(t, st, func(c *engine.Config) { c.Claims, c.ClaimLease = claims, time.Minute })
	worker := testkit.NewWorker(t, testkit.WorkerOptions{})
	d := callbacks.NewDispatcher(callbacks.DispatcherConfig{Store: st, Recorder: eng, Secret: []byte("0123456789abcdef"),
		Workers: 1, QueueSize: 16, QueueMax: 16, PollInterval: time.Hour, Lease: time.Minute, Claims: claims})
	require.Zero(t, claims.Room(), "no room before the dispatcher runs")
	require.NoError(t, d.Start(ctx))
	t.Cleanup(d.Stop)
	require.Equal(t, 16, claims.Room())

	graph := `{"nodes":[{"id":"a","type":"Worker","data":{"webhookUrl":"` + worker.URL + `/a"}}],"edges":[]}`
	ids := startRuns(t, st, eng, graph, 3)
	for _, id := range ids {
		worker.Wait(t, 10*time.Second, "the claimed row of run "+id, func(d testkit.Dispatch) bool { return d.Payload.RunID == id })
	}
	var unclaimed int
	require.NoError(t, st.Gorm().Raw(`SELECT count(*) FROM dispatches WHERE locked_until IS NULL`).Row().Scan(&unclaimed))
	require.Zero(t, unclaimed, "every row was claimed by its commit")

	d.Stop()
	require.Zero(t, claims.Room(), "a stopped dispatcher has no room")
	r := startRuns(t, st, eng, graph, 1)[0]
	require.NoError(t, st.Gorm().Raw(`SELECT count(*) FROM dispatches WHERE run_id = ? AND locked_until IS NULL`, r).Row().Scan(&unclaimed))
	require.Equal(t, 1, unclaimed, "nothing is claimed for a stopped dispatcher")
	require.Empty(t, claims.Take())
}
