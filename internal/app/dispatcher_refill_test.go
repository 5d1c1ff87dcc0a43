package app_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stitchd/stitchd/callbacks"
	"github.com/stitchd/stitchd/engine"
	"github.com/stitchd/stitchd/internal/testkit"
	"github.com/stitchd/stitchd/store"
	"github.com/stitchd/stitchd/store/storetest"
)

// TestRefillClaimsHalfAQueue: once the dispatcher's queue falls to half,
// it claims at least half a queue of waiting rows at a time (the queue here
// is below the 1,000-row cap of a claim). Deliveries go
// on while a claim runs (the spy makes sure at least one does); a poller
// that then claimed again for the few rows delivered meanwhile made claims
// of 112 rows on average out of a 1,024-row queue in a 100,000-item
// fan-out, each paying a statement's fixed cost.
func TestRefillClaimsHalfAQueue(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st, _ := storetest.IsolatedDB(t)
	eng := engineOn(t, st)
	const runs, queue = 300, 40
	graph, hits := acceptingWorker(t, 0)
	startRuns(t, st, eng, graph, runs)

	spy := &claimSpy{Store: st, hits: hits.Answered}
	d := callbacks.NewDispatcher(callbacks.DispatcherConfig{Store: spy, Recorder: eng, Secret: []byte("0123456789abcdef"),
		Workers: 2, QueueSize: queue, QueueMax: queue, PollInterval: time.Hour, Lease: time.Minute})
	dctx, cancel := context.WithCancel(ctx)
	require.NoError(t, d.Start(dctx))
	defer d.Stop()
	defer cancel()
	// The poll interval is an hour: only refills claim. The first queue
	// is handed over as a commit hands over the rows it claimed.
	first, err := st.ClaimDue(ctx, queue, time.Minute)
	require.NoError(t, err)
	require.Len(t, first, queue)
	d.Wake(first)

	require.Eventually(t, func() bool { return hits.Answered() >= runs }, 30*time.Second, 10*time.Millisecond,
		"every row delivered")
	spy.mu.Lock()
	defer spy.mu.Unlock()
	require.NotEmpty(t, spy.limits)
	for i, l := range spy.limits {
		require.GreaterOrEqual(t, l, queue/2, "claim %d of %v asked for fewer rows than half the queue", i, spy.limits)
	}
	require.LessOrEqual(t, len(spy.limits), 2*(runs-queue)/(queue/2), "claims: %v", spy.limits)
}

// claimSpy is the store, recording the limit of each claim and returning
// only once a delivery was made while the claim ran (or after a second).
type claimSpy struct {
	*store.Store
	hits   func() int64
	mu     sync.Mutex
	limits []int
}

func (s *claimSpy) ClaimDue(ctx context.Context, limit int, lease time.Duration) ([]engine.ClaimedDispatch, error) {
	before := s.hits()
	s.mu.Lock()
	s.limits = append(s.limits, limit)
	s.mu.Unlock()
	rows, err := s.Store.ClaimDue(ctx, limit, lease)
	testkit.Poll(time.Second, func() bool { return s.hits() != before || ctx.Err() != nil })
	return rows, err
}

// TestQueueFollowsThePaceOfDeliveries: after 16 deliveries the
// dispatcher's queue takes what its workers deliver in a quarter lease at
// the pace of recent deliveries, between QueueSize and QueueMax and within
// QueueBytes of payloads, so a commit can insert that many rows already
// claimed.
func TestQueueFollowsThePaceOfDeliveries(t *testing.T) {
	t.Parallel()
	const floor, runs, workers = 8, 20, 4
	cases := []struct {
		name        string
		workerTakes time.Duration
		max         int
		bytesRows   int // QueueBytes, in payloads of this test's rows (0: the default)
		least, most int
		// byPace: the queue is what the workers deliver in a quarter
		// lease at the pace the dispatcher measured (real time, so the
		// figure moves with the machine's load; the formula does not).
		byPace bool
	}{
		// 4 workers × 15 s / a few ms a row: far past the ceiling.
		{name: "quick deliveries grow it to QueueMax", max: 64, least: 64, most: 64},
		// QueueBytes holds 24 of these payloads.
		{name: "QueueBytes bounds it", max: 64, bytesRows: 24, least: 24, most: 24},
		// 4 workers × 15 s / 150 ms or more a row: 400 rows at most, and
		// four times what one worker would take (100 at most).
		{name: "slow deliveries keep it small", workerTakes: 150 * time.Millisecond, max: 16384,
			byPace: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			st, _ := storetest.IsolatedDB(t)
			eng := engineOn(t, st)
			graph, hits := acceptingWorker(t, tc.workerTakes)
			startRuns(t, st, eng, graph, runs)
			var least, most int
			require.NoError(t, st.Gorm().Raw(`SELECT min(octet_length(payload::text)), max(octet_length(payload::text)) FROM dispatches`).
				Row().Scan(&least, &most))
			require.Equal(t, least, most, "every payload of the test is as long (so the average is exact)")

			d := callbacks.NewDispatcher(callbacks.DispatcherConfig{Store: st, Recorder: eng,
				Secret: []byte("0123456789abcdef"), Workers: workers, QueueSize: floor, QueueMax: tc.max,
				QueueBytes: tc.bytesRows * least, PollInterval: 10 * time.Millisecond, Lease: time.Minute})
			require.Equal(t, floor, d.Room(), "before any delivery the queue is QueueSize")
			dctx, cancel := context.WithCancel(ctx)
			require.NoError(t, d.Start(dctx))
			defer d.Stop()
			defer cancel()
			require.Eventually(t, func() bool { return hits.Answered() >= runs }, 30*time.Second, 10*time.Millisecond,
				"every row delivered")
			// The last delivery is recorded after the worker answered.
			require.Eventually(t, func() bool {
				var left int64
				require.NoError(t, st.Gorm().Raw(`SELECT count(*) FROM dispatches WHERE status <> 'delivered'`).Row().Scan(&left))
				return left == 0
			}, 10*time.Second, 10*time.Millisecond)
			room := d.Room()
			if tc.byPace {
				pace := d.Pace()
				require.GreaterOrEqual(t, pace, tc.workerTakes, "a delivery takes at least what the worker takes")
				lease := time.Minute
				require.Equal(t, int(int64(workers)*int64(lease/4)/int64(pace)), room,
					"the queue holds what %d workers deliver in a quarter lease at %v a row", workers, pace)
				require.LessOrEqual(t, room, int(int64(workers)*int64(lease/4)/int64(tc.workerTakes)))
				t.Logf("pace %v a row: room %d", pace, room)
				return
			}
			require.GreaterOrEqual(t, room, tc.least)
			require.LessOrEqual(t, room, tc.most)
		})
	}
}

// acceptingWorker serves a worker that takes the given time to answer 202
// to each dispatch (a slow worker: real time), and returns a one-Worker
// graph that dispatches to it, and it (Answered counts the dispatches it
// answered).
func acceptingWorker(t *testing.T, takes time.Duration) (string, *testkit.Worker) {
	t.Helper()
	worker := testkit.NewWorker(t, testkit.WorkerOptions{Delay: takes})
	return `{"nodes":[{"id":"a","type":"Worker","data":{"webhookUrl":"` + worker.URL + `/a"}}],"edges":[]}`, worker
}
