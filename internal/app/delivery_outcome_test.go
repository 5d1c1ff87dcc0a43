package app_test

import (
	"context"
	"encoding/json"
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

type fixedClock struct{ t time.Time }

func (c fixedClock) Now() time.Time { return c.t }

// engineOn returns an engine on st with no dispatcher: outbox rows are
// written pending and the test claims them with the dispatcher's query.
func engineOn(t testing.TB, st engine.Store, opts ...func(*engine.Config)) *engine.Engine {
	t.Helper()
	ring, err := callbacks.NewKeyring(callbacks.Key{ID: "k1", Secret: []byte("0123456789abcdef0123456789abcdef")})
	require.NoError(t, err)
	clock := fixedClock{time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	cfg := engine.Config{Store: st, Clock: clock, Minter: &callbacks.Minter{Keys: ring, BaseURL: "http://stitchd.invalid", Clock: clock}}
	for _, o := range opts {
		o(&cfg)
	}
	return testkit.Engine(t, cfg)
}

// compiledVersion compiles a visual graph into a version to store.
func compiledVersion(t testing.TB, graph string) store.NewVersion { return testkit.Version(t, graph) }

// TestStaleDeliveryOutcomeChangesNothing: a delivery try reported failed
// after the worker's callback proved the delivery (the worker accepted, its
// 202 was lost, and it called back at once), or after the row's lease ended
// and another claim took it over, must neither undo the delivery nor fail
// the node. Found by the chaos soak: the outcome overwrote a delivered row
// back to pending, the row was then retired, and with a heartbeat instead
// of a result the node failed with "dispatch failed" while its worker was
// working on it.
func TestStaleDeliveryOutcomeChangesNothing(t *testing.T) {
	t.Parallel()
	const graph = `{"nodes":[{"id":"a","type":"Worker","data":{"webhookUrl":"http://worker.invalid/a","retry":{"maxAttempts":3}}}],"edges":[]}`
	cases := []struct {
		name string
		// between claiming the row and reporting its failed try
		meanwhile func(t *testing.T, ctx context.Context, st *store.Store, eng *engine.Engine, run string)
		giveUp    bool
		node      engine.Status
		row       string
	}{
		{"result arrived, try retried", func(t *testing.T, ctx context.Context, _ *store.Store, eng *engine.Engine, run string) {
			require.NoError(t, eng.HandleCallback(ctx, engine.CallbackParams{RunID: run, Key: "a", Attempt: 1,
				Status: engine.StatusCompleted, Output: json.RawMessage(`{"ok":true}`)}))
		}, false, engine.StatusCompleted, "delivered"},
		{"heartbeat arrived, try gave up", func(t *testing.T, ctx context.Context, _ *store.Store, eng *engine.Engine, run string) {
			require.NoError(t, eng.HandleCallback(ctx, engine.CallbackParams{RunID: run, Key: "a", Attempt: 1, Status: engine.StatusRunning}))
		}, true, engine.StatusRunning, "delivered"},
		{"lease ended, another claim took the row", func(t *testing.T, ctx context.Context, st *store.Store, _ *engine.Engine, run string) {
			require.NoError(t, st.Gorm().WithContext(ctx).Exec(`UPDATE dispatches SET locked_until = now() - interval '1 second',
				next_attempt_at = now() - interval '1 second' WHERE run_id = ?`, run).Error)
			claimed, err := st.ClaimDue(ctx, 100, time.Minute)
			require.NoError(t, err)
			require.Len(t, claimed, 1)
			require.Equal(t, 2, claimed[0].Tries)
		}, true, engine.StatusRunning, "sending"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			st := storetest.TestTx(t)
			eng := engineOn(t, st)
			flow, err := st.CreateFlow(ctx, "", uuid.NewString(), "stale outcome", nil, compiledVersion(t, graph))
			require.NoError(t, err)
			run, _, err := eng.StartRun(ctx, engine.StartRunParams{FlowID: flow.ID, VersionID: flow.VersionID})
			require.NoError(t, err)
			claimed, err := st.ClaimDue(ctx, 100, time.Minute)
			require.NoError(t, err)
			var c engine.ClaimedDispatch
			for _, d := range claimed {
				if d.RunID == run.ID {
					c = d
				}
			}
			require.Equal(t, 1, c.Tries, "the first claim of the row")

			tc.meanwhile(t, ctx, st, eng, run.ID)
			o := engine.DeliveryOutcome{DispatchID: c.ID, RunID: run.ID, Key: "a", Attempt: 1, Try: c.Tries,
				StatusCode: 500, Error: "worker answered 500"}
			if !tc.giveUp {
				o.RetryInMs = 1000
			}
			require.NoError(t, eng.RecordDelivery(ctx, o))

			_, nodes, err := st.GetRun(ctx, run.ID, true)
			require.NoError(t, err)
			require.Equal(t, tc.node, nodes[0].Status)
			var status string
			var failedTries int64
			require.NoError(t, st.Gorm().WithContext(ctx).Raw(`SELECT status FROM dispatches WHERE id = ?`, c.ID).Row().Scan(&status))
			require.Equal(t, tc.row, status)
			require.NoError(t, st.Gorm().WithContext(ctx).Raw(`SELECT count(*) FROM run_events WHERE run_id = ?
				AND type = 'dispatch.attempt' AND payload->>'delivered' = 'false'`, run.ID).Row().Scan(&failedTries))
			require.Zero(t, failedTries, "a stale outcome is not logged as a failed try")
		})
	}
}
