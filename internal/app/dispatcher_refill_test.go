package app_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/stitchd/stitchd/callbacks"
	"github.com/stitchd/stitchd/engine"
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
	var hits atomic.Int64
	worker := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		hits.Add(1)
		w.WriteHeader(http.StatusAccepted)
	}))
	defer worker.Close()

	const runs, queue = 300, 40
	graph := `{"nodes":[{"id":"a","type":"Worker","data":{"webhookUrl":"` + worker.URL + `/a"}}],"edges":[]}`
	flow, err := st.CreateFlow(ctx, uuid.NewString(), "worker", nil, compiledVersion(t, graph))
	require.NoError(t, err)
	for range runs {
		_, _, err := eng.StartRun(ctx, engine.StartRunParams{FlowID: flow.ID, VersionID: flow.VersionID})
		require.NoError(t, err)
	}

	spy := &claimSpy{Store: st, hits: &hits}
	d := callbacks.NewDispatcher(callbacks.DispatcherConfig{Store: spy, Recorder: eng, Secret: []byte("0123456789abcdef"),
		Workers: 2, QueueSize: queue, PollInterval: time.Hour, Lease: time.Minute})
	dctx, cancel := context.WithCancel(ctx)
	d.Start(dctx)
	defer d.Stop()
	defer cancel()
	// The poll interval is an hour: only refills claim. The first queue
	// is handed over as a commit hands over the rows it claimed.
	first, err := st.ClaimDue(ctx, queue, time.Minute)
	require.NoError(t, err)
	require.Len(t, first, queue)
	d.Wake(first)

	require.Eventually(t, func() bool { return hits.Load() >= runs }, 30*time.Second, 10*time.Millisecond,
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
	hits   *atomic.Int64
	mu     sync.Mutex
	limits []int
}

func (s *claimSpy) ClaimDue(ctx context.Context, limit int, lease time.Duration) ([]engine.ClaimedDispatch, error) {
	before := s.hits.Load()
	s.mu.Lock()
	s.limits = append(s.limits, limit)
	s.mu.Unlock()
	rows, err := s.Store.ClaimDue(ctx, limit, lease)
	for end := time.Now().Add(time.Second); s.hits.Load() == before && time.Now().Before(end) && ctx.Err() == nil; {
		time.Sleep(time.Millisecond)
	}
	return rows, err
}
