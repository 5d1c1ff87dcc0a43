package store_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/stitchd/stitchd/engine"
	"github.com/stitchd/stitchd/store"
	"github.com/stitchd/stitchd/store/storetest"
)

// queriers are the two ways a Store runs an engine transaction: pipelined
// on a pool connection, and statement by statement in a test transaction.
func queriers(t *testing.T) map[string]*store.Store {
	return map[string]*store.Store{"pipe": storetest.Store(t), "savepoint": storetest.TestTx(t)}
}

// TestSaveRunLogsDeliveries: the dispatches callbacks proved delivered are marked delivered and
// logged once, between the events before DeliveredAt and the rest, and the
// run's event sequence counts them — in one statement (a pair, a few,
// many: planned for its parameters) and in steps (more than a chunk of
// 2,000), over both queriers.
func TestSaveRunLogsDeliveries(t *testing.T) {
	t.Parallel()
	for name, st := range queriers(t) {
		for _, n := range []int{1, 3, 40, 2001} {
			t.Run(fmt.Sprintf("%s/%d", name, n), func(t *testing.T) {
				ctx := context.Background()
				f := createFlow(t, st)
				run := newRun(f)
				keys := make([]string, n)
				attempts := make([]int, n)
				inTx(t, st, func(ctx context.Context, tx engine.Tx) error {
					require.NoError(t, tx.InsertRun(ctx, run))
					for i := range keys {
						keys[i], attempts[i] = fmt.Sprintf("k%04d", i), 1
						require.NoError(t, tx.InsertDispatch(ctx, &engine.Dispatch{ID: uuid.NewString(), RunID: run.ID,
							Key: keys[i], Attempt: 1, URL: "http://127.0.0.1:1/", Payload: []byte(`{}`), MaxTries: 1,
							ClaimSeconds: 30})) // being sent: its first try
					}
					return nil
				})
				save := func(events ...string) *engine.Run {
					var saved *engine.Run
					inTx(t, st, func(ctx context.Context, tx engine.Tx) error {
						r, err := tx.LockRun(ctx, run.ID)
						require.NoError(t, err)
						evs := make([]engine.NewEvent, len(events))
						for i, e := range events {
							evs[i] = engine.NewEvent{Type: e, Key: "x"}
						}
						first := r.EventSeq + 1
						r.EventSeq += int64(len(evs))
						require.NoError(t, tx.SaveRunWithEvents(ctx, engine.RunSave{Run: r, FirstSeq: first, Events: evs,
							DeliveredKeys: keys, DeliveredAttempts: attempts, DeliveredAt: 1}))
						saved = r
						return nil
					})
					return saved
				}
				r := save(engine.EventNodeStatus, engine.EventRunCompleted)
				require.EqualValues(t, n+2, r.EventSeq, "the deliveries are counted")
				// Delivered again: marked already, nothing more is logged.
				r = save(engine.EventNodeHeartbeat)
				require.EqualValues(t, n+3, r.EventSeq)

				rows, err := st.Gorm().WithContext(ctx).Raw(`SELECT seq, type, coalesce(key, ''), coalesce(payload->>'try', '')
					FROM run_events WHERE run_id = ? ORDER BY seq`, run.ID).Rows()
				require.NoError(t, err)
				defer rows.Close()
				var got []string
				for rows.Next() {
					var seq int
					var typ, key, try string
					require.NoError(t, rows.Scan(&seq, &typ, &key, &try))
					got = append(got, fmt.Sprintf("%d %s %s %s", seq, typ, key, try))
				}
				want := []string{"1 node.status x "}
				for i, k := range keys {
					want = append(want, fmt.Sprintf("%d dispatch.attempt %s 1", i+2, k))
				}
				want = append(want, fmt.Sprintf("%d run.completed x ", n+2), fmt.Sprintf("%d node.heartbeat x ", n+3))
				require.Equal(t, want, got)
				var delivered int
				require.NoError(t, st.Gorm().Raw(`SELECT count(*) FROM dispatches WHERE run_id = ? AND status = 'delivered'
					AND delivery_logged`, run.ID).Row().Scan(&delivered))
				require.Equal(t, n, delivered)
			})
		}
	}
}

// TestQueuedFailureFailsTheTransaction: a queued write that fails (here a
// start whose node is not pending) fails the statement that carried it,
// every later one and the commit, even when the caller ignores the first
// error — and nothing of the transaction is kept, over both queriers.
func TestQueuedFailureFailsTheTransaction(t *testing.T) {
	t.Parallel()
	for name, st := range queriers(t) {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			f := createFlow(t, st)
			run := newRun(f)
			inTx(t, st, func(ctx context.Context, tx engine.Tx) error {
				require.NoError(t, tx.InsertRun(ctx, run))
				return tx.InsertNodes(ctx, run.ID, []engine.NodeState{static("a", engine.NodeTypeWorker, 0)})
			})
			err := st.InTx(ctx, func(ctx context.Context, tx engine.Tx) error {
				_, err := tx.LockRun(ctx, run.ID)
				require.NoError(t, err)
				require.NoError(t, tx.SetPending(ctx, run.ID, "a", 5))
				// Queued: a is pending, not failed.
				require.NoError(t, tx.TransitionLater(ctx, &engine.NodeTransition{RunID: run.ID, Key: "a",
					From: engine.StatusFailed, Steps: []engine.Status{engine.StatusRunning}, NewAttempt: true}))
				_, err = tx.Node(ctx, run.ID, "a")
				require.ErrorIs(t, err, engine.ErrConflict, "the statement carrying the queue reports its failure")
				_, err = tx.Node(ctx, run.ID, "a")
				require.ErrorIs(t, err, engine.ErrConflict, "and so does every later one")
				return nil // the caller ignores it: the commit must not
			})
			require.ErrorIs(t, err, engine.ErrConflict)
			var pending int
			require.NoError(t, st.Gorm().Raw(`SELECT pending_parents FROM node_states WHERE run_id = ? AND key = 'a'`,
				run.ID).Row().Scan(&pending))
			require.Zero(t, pending, "the queued SetPending before the failure was not kept")

			// The same start queued last, to travel with COMMIT: the
			// database itself fails it, so the COMMIT sent with it does
			// not commit what came before.
			err = st.InTx(ctx, func(ctx context.Context, tx engine.Tx) error {
				_, err := tx.LockRun(ctx, run.ID)
				require.NoError(t, err)
				require.NoError(t, tx.SetPending(ctx, run.ID, "a", 7))
				return tx.TransitionLater(ctx, &engine.NodeTransition{RunID: run.ID, Key: "a",
					From: engine.StatusFailed, Steps: []engine.Status{engine.StatusRunning}, NewAttempt: true})
			})
			require.ErrorIs(t, err, engine.ErrConflict)
			require.NoError(t, st.Gorm().Raw(`SELECT pending_parents FROM node_states WHERE run_id = ? AND key = 'a'`,
				run.ID).Row().Scan(&pending))
			require.Zero(t, pending, "the queued SetPending sent with the failed start and COMMIT was not kept")

			// The connection is fine afterwards.
			inTx(t, st, func(ctx context.Context, tx engine.Tx) error {
				return tx.TransitionLater(ctx, &engine.NodeTransition{RunID: run.ID, Key: "a",
					From: engine.StatusPending, Steps: []engine.Status{engine.StatusRunning}, NewAttempt: true})
			})
			var status string
			require.NoError(t, st.Gorm().Raw(`SELECT status FROM node_states WHERE run_id = ? AND key = 'a'`,
				run.ID).Row().Scan(&status))
			require.Equal(t, "running", status)
		})
	}
}

// TestPipeRollsBackOnError: an error from the engine's function rolls back
// what was sent and what was queued; an error-free function that sent
// nothing costs no transaction.
func TestPipeRollsBackOnError(t *testing.T) {
	t.Parallel()
	st := storetest.Store(t)
	ctx := context.Background()
	f := createFlow(t, st)
	run := newRun(f)
	boom := errors.New("boom")
	err := st.InTx(ctx, func(ctx context.Context, tx engine.Tx) error {
		require.NoError(t, tx.InsertRun(ctx, run))
		_, err := tx.LockRun(ctx, run.ID) // sends the queued insert
		require.NoError(t, err)
		require.NoError(t, tx.InsertNodes(ctx, run.ID, []engine.NodeState{static("a", engine.NodeTypeWorker, 0)}))
		return boom
	})
	require.ErrorIs(t, err, boom)
	_, _, err = st.GetRun(ctx, run.ID, true)
	require.ErrorIs(t, err, engine.ErrNotFound)
	require.NoError(t, st.InTx(ctx, func(context.Context, engine.Tx) error { return nil }))
}

// TestAddPendingLater: the queued count-down answers, once the next
// statement was answered, what AddPending answers — keys it did not find
// are absent — over both queriers.
func TestAddPendingLater(t *testing.T) {
	t.Parallel()
	for name, st := range queriers(t) {
		t.Run(name, func(t *testing.T) {
			f := createFlow(t, st)
			run := newRun(f)
			inTx(t, st, func(ctx context.Context, tx engine.Tx) error {
				require.NoError(t, tx.InsertRun(ctx, run))
				return tx.InsertNodes(ctx, run.ID, []engine.NodeState{
					{Key: "b", NodeID: "b", Type: engine.NodeTypeWorker, Index: []int{}, Status: engine.StatusPending, PendingParents: 1},
					{Key: "c_0", NodeID: "c", Type: engine.NodeTypeWorker, Index: []int{0}, Status: engine.StatusPending, PendingParents: 2},
				})
			})
			inTx(t, st, func(ctx context.Context, tx engine.Tx) error {
				got := tx.AddPendingLater(ctx, run.ID, []string{"b", "c_0", "missing"}, -1)
				p, err := got()
				require.NoError(t, err)
				require.Nil(t, p, "no answer before the next statement")
				_, err = tx.Node(ctx, run.ID, "b")
				require.NoError(t, err)
				p, err = got()
				require.NoError(t, err)
				require.Equal(t, map[string]engine.Pending{
					"b":   {Remaining: 0, Status: engine.StatusPending},
					"c_0": {Remaining: 1, Status: engine.StatusPending},
				}, p)
				none := tx.AddPendingLater(ctx, run.ID, []string{"missing"}, -1)
				_, err = tx.Node(ctx, run.ID, "c_0")
				require.NoError(t, err)
				p, err = none()
				require.NoError(t, err)
				require.Empty(t, p)
				return nil
			})
			inTx(t, st, func(ctx context.Context, tx engine.Tx) error {
				c, err := tx.Node(ctx, run.ID, "c_0")
				require.NoError(t, err)
				require.Equal(t, 1, c.PendingParents, "committed")
				return nil
			})
		})
	}
}

// TestCountDownUntakenLater: the queued count-down of edges not taken
// counts each key down by n and its untaken edges up by n, committed with
// the transaction; a key it would leave with no parents, or not pending,
// fails the transaction in the database — traveling with COMMIT too —
// and nothing of it is kept, over both queriers.
func TestCountDownUntakenLater(t *testing.T) {
	t.Parallel()
	for name, st := range queriers(t) {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			f := createFlow(t, st)
			run := newRun(f)
			inTx(t, st, func(ctx context.Context, tx engine.Tx) error {
				require.NoError(t, tx.InsertRun(ctx, run))
				return tx.InsertNodes(ctx, run.ID, []engine.NodeState{
					{Key: "j", NodeID: "j", Type: engine.NodeTypeWorker, Index: []int{}, Status: engine.StatusPending, PendingParents: 4},
					{Key: "k", NodeID: "k", Type: engine.NodeTypeWorker, Index: []int{}, Status: engine.StatusPending, PendingParents: 3},
					{Key: "x", NodeID: "x", Type: engine.NodeTypeWorker, Index: []int{}, Status: engine.StatusPending, PendingParents: 4},
				})
			})
			counts := func() map[string][2]int {
				rows, err := st.Gorm().Raw(`SELECT key, pending_parents, untaken_parents FROM node_states WHERE run_id = ?`, run.ID).Rows()
				require.NoError(t, err)
				defer rows.Close()
				out := map[string][2]int{}
				for rows.Next() {
					var k string
					var p, u int
					require.NoError(t, rows.Scan(&k, &p, &u))
					out[k] = [2]int{p, u}
				}
				return out
			}
			require.NoError(t, st.Gorm().Exec(`UPDATE node_states SET status = 'skipped' WHERE run_id = ? AND key = 'x'`, run.ID).Error)
			inTx(t, st, func(ctx context.Context, tx engine.Tx) error {
				return tx.CountDownUntakenLater(ctx, run.ID, []string{"j", "k"}, 2)
			})
			require.Equal(t, map[string][2]int{"j": {2, 2}, "k": {1, 2}, "x": {4, 0}}, counts())

			for name, keys := range map[string][]string{"to no parents left": {"j", "k"}, "not pending": {"j", "x"}} {
				err := st.InTx(ctx, func(ctx context.Context, tx engine.Tx) error {
					require.NoError(t, tx.SetPending(ctx, run.ID, "j", 9))
					return tx.CountDownUntakenLater(ctx, run.ID, keys, 1) // travels with COMMIT
				})
				var qe *engine.QueuedTransitionError
				require.ErrorAs(t, err, &qe, name)
				require.Equal(t, run.ID, qe.RunID, name)
				require.ErrorIs(t, err, engine.ErrConflict, name)
				require.Equal(t, map[string][2]int{"j": {2, 2}, "k": {1, 2}, "x": {4, 0}}, counts(), "%s: nothing kept", name)
			}
		})
	}
}

// TestSkipLater: the queued skip of a switch's branches not taken moves
// them all to skipped, and the count-downs it carries count their
// successors down as CountDownUntakenLater does; a branch not pending, or
// a carried count-down whose assumption fails (any of several), fails the
// transaction in the database, and nothing of it is kept.
func TestSkipLater(t *testing.T) {
	t.Parallel()
	for name, st := range queriers(t) {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			f := createFlow(t, st)
			nodes := func(pending map[string]int) []engine.NodeState {
				var out []engine.NodeState
				for _, k := range []string{"b0", "b1", "b2", "j", "k", "m"} {
					out = append(out, engine.NodeState{Key: k, NodeID: k, Type: engine.NodeTypeWorker, Index: []int{},
						Status: engine.StatusPending, PendingParents: pending[k]})
				}
				return out
			}
			state := func(runID string) map[string]string {
				rows, err := st.Gorm().Raw(`SELECT key, status, pending_parents, untaken_parents FROM node_states WHERE run_id = ?`, runID).Rows()
				require.NoError(t, err)
				defer rows.Close()
				out := map[string]string{}
				for rows.Next() {
					var k, s string
					var p, u int
					require.NoError(t, rows.Scan(&k, &s, &p, &u))
					out[k] = fmt.Sprintf("%s %d/%d", s, p, u)
				}
				return out
			}
			skip := func(ctx context.Context, tx engine.Tx, runID string, keys []string) error {
				return tx.SkipLater(ctx, runID, keys, []engine.UntakenCountDown{{Keys: []string{"j", "k"}, N: 2}, {Keys: []string{"m"}, N: 1}})
			}
			// fresh is a new run whose nodes have pending parents left.
			fresh := func(pending map[string]int) *engine.Run {
				run := newRun(f)
				inTx(t, st, func(ctx context.Context, tx engine.Tx) error {
					require.NoError(t, tx.InsertRun(ctx, run))
					return tx.InsertNodes(ctx, run.ID, nodes(pending))
				})
				return run
			}
			start := map[string]int{"b0": 1, "b1": 1, "b2": 1, "j": 3, "k": 4, "m": 2}
			run := fresh(start)
			inTx(t, st, func(ctx context.Context, tx engine.Tx) error { return skip(ctx, tx, run.ID, []string{"b0", "b1"}) })
			require.Equal(t, map[string]string{"b0": "skipped 1/0", "b1": "skipped 1/0", "b2": "pending 1/0",
				"j": "pending 1/2", "k": "pending 2/2", "m": "pending 1/1"}, state(run.ID))
			require.NoError(t, st.InTx(ctx, func(ctx context.Context, tx engine.Tx) error {
				return tx.SkipLater(ctx, run.ID, []string{"b2"}, nil)
			}))
			require.Equal(t, "skipped 1/0", state(run.ID)["b2"], "nothing carried")

			for name, pending := range map[string]map[string]int{
				"a count-down to no parents left":         {"b0": 1, "b1": 1, "b2": 1, "j": 3, "k": 4, "m": 1},
				"the other count-down to no parents left": {"b0": 1, "b1": 1, "b2": 1, "j": 2, "k": 4, "m": 2},
			} {
				run := fresh(pending)
				before := state(run.ID)
				err := st.InTx(ctx, func(ctx context.Context, tx engine.Tx) error { return skip(ctx, tx, run.ID, []string{"b0", "b1"}) })
				var qe *engine.QueuedTransitionError
				require.ErrorAs(t, err, &qe, name)
				require.ErrorIs(t, err, engine.ErrConflict, name)
				require.Equal(t, before, state(run.ID), "%s: nothing kept", name)
			}
			run = fresh(start)
			require.NoError(t, st.Gorm().Exec(`UPDATE node_states SET status = 'running' WHERE run_id = ? AND key = 'b1'`, run.ID).Error)
			before := state(run.ID)
			err := st.InTx(ctx, func(ctx context.Context, tx engine.Tx) error { return skip(ctx, tx, run.ID, []string{"b0", "b1"}) })
			var qe *engine.QueuedTransitionError
			require.ErrorAs(t, err, &qe, "a branch not pending")
			require.Equal(t, before, state(run.ID), "a branch not pending: nothing kept")
		})
	}
}

// pendingRun inserts a run of flow f with n pending Worker nodes, keys
// k0000 on, and returns it with its nodes.
func pendingRun(t *testing.T, st *store.Store, f *store.Flow, n int) (*engine.Run, []engine.NodeState) {
	t.Helper()
	run := newRun(f)
	nodes := make([]engine.NodeState, n)
	for i := range nodes {
		nodes[i] = static(fmt.Sprintf("k%04d", i), engine.NodeTypeWorker, 0)
	}
	inTx(t, st, func(ctx context.Context, tx engine.Tx) error {
		require.NoError(t, tx.InsertRun(ctx, run))
		return tx.InsertNodes(ctx, run.ID, nodes)
	})
	return run, nodes
}

// TestDeferNode: consecutive fires of one run left for later share one
// queued statement (a fan-out past its transaction's bounds defers
// thousands), sent once it carries 2,000; each row keeps its input — a
// key deferred twice its last — and is due now; another statement or
// another run's fire starts a new one; a row not pending fails the
// transaction in the database, and nothing of it is kept.
func TestDeferNode(t *testing.T) {
	t.Parallel()
	for name, st := range queriers(t) {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			f := createFlow(t, st)
			fresh := func(n int) *engine.Run {
				run, _ := pendingRun(t, st, f, n)
				return run
			}
			deferred := func(runID string) map[string]string {
				rows, err := st.Gorm().Raw(`SELECT key, coalesce(input::text, '') FROM node_states
					WHERE run_id = ? AND status = 'pending' AND wake_at <= now()`, runID).Rows()
				require.NoError(t, err)
				defer rows.Close()
				out := map[string]string{}
				for rows.Next() {
					var k, in string
					require.NoError(t, rows.Scan(&k, &in))
					out[k] = in
				}
				return out
			}

			a, b := fresh(3), fresh(1)
			inTx(t, st, func(ctx context.Context, tx engine.Tx) error {
				require.NoError(t, tx.DeferNode(ctx, a.ID, "k0000", json.RawMessage(`{"i": 0}`)))
				require.NoError(t, tx.DeferNode(ctx, a.ID, "k0001", nil))
				require.NoError(t, tx.DeferNode(ctx, a.ID, "k0000", json.RawMessage(`{"i": 2}`)))
				require.Equal(t, 1, store.Queued(tx), "one run's fires in one statement")
				require.NoError(t, tx.DeferNode(ctx, b.ID, "k0000", json.RawMessage(`{"b": 1}`)))
				require.Equal(t, 2, store.Queued(tx), "another run's in another")
				require.NoError(t, tx.DeferNode(ctx, a.ID, "k0002", json.RawMessage(`[3]`)))
				require.Equal(t, 3, store.Queued(tx), "a statement between: a new one")
				return nil
			})
			require.Equal(t, map[string]string{"k0000": `{"i": 2}`, "k0001": "null", "k0002": "[3]"}, deferred(a.ID))
			require.Equal(t, map[string]string{"k0000": `{"b": 1}`}, deferred(b.ID))

			big := fresh(2001)
			inTx(t, st, func(ctx context.Context, tx engine.Tx) error {
				for i := range 2001 {
					require.NoError(t, tx.DeferNode(ctx, big.ID, fmt.Sprintf("k%04d", i), json.RawMessage(strconv.Itoa(i))))
					if i == 1998 {
						require.Equal(t, 1, store.Queued(tx), "1,999 fires held in one statement")
					}
				}
				require.Equal(t, 1, store.Queued(tx), "the first 2,000 sent, the last held")
				return nil
			})
			got := deferred(big.ID)
			require.Len(t, got, 2001)
			require.Equal(t, "1999", got["k1999"])
			require.Equal(t, "2000", got["k2000"])

			for what, prepare := range map[string]string{
				"running": `UPDATE node_states SET status = 'running' WHERE run_id = ? AND key = 'k0001'`,
				"missing": `DELETE FROM node_states WHERE run_id = ? AND key = 'k0001'`,
			} {
				run := fresh(3)
				require.NoError(t, st.Gorm().Exec(prepare, run.ID).Error)
				err := st.InTx(ctx, func(ctx context.Context, tx engine.Tx) error {
					for _, k := range []string{"k0000", "k0001", "k0002"} {
						require.NoError(t, tx.DeferNode(ctx, run.ID, k, nil))
					}
					return nil
				})
				var qe *engine.QueuedTransitionError
				require.ErrorAs(t, err, &qe, what)
				require.ErrorIs(t, err, engine.ErrConflict, what)
				require.Equal(t, run.ID, qe.RunID, what)
				require.Empty(t, deferred(run.ID), "%s: nothing kept", what)
			}
		})
	}
}

// TestTransitionLaterSendsAThousand: a transaction's queued moves are sent
// once 1,000 wait (a fan-out's synchronous instances queue one each, with
// their inputs and outputs), and all are applied.
func TestTransitionLaterSendsAThousand(t *testing.T) {
	t.Parallel()
	for name, st := range queriers(t) {
		t.Run(name, func(t *testing.T) {
			run, nodes := pendingRun(t, st, createFlow(t, st), 1001)
			inTx(t, st, func(ctx context.Context, tx engine.Tx) error {
				for i, n := range nodes {
					require.NoError(t, tx.TransitionLater(ctx, &engine.NodeTransition{RunID: run.ID, Key: n.Key,
						From: engine.StatusPending, Steps: []engine.Status{engine.StatusSkipped}}))
					switch i {
					case 998:
						require.Equal(t, 999, store.Queued(tx))
					case 999:
						require.Zero(t, store.Queued(tx), "the thousandth sends them")
					}
				}
				require.Equal(t, 1, store.Queued(tx))
				return nil
			})
			var skipped int
			require.NoError(t, st.Gorm().Raw(`SELECT count(*) FROM node_states WHERE run_id = ? AND status = 'skipped'`,
				run.ID).Row().Scan(&skipped))
			require.Equal(t, 1001, skipped)
		})
	}
}

// TestCountDownToReadyLater: the queued count-down of a join's last
// parent leaves it with none, committed with the transaction, whether
// queued on its own or carried by the join's move out of pending
// (NodeTransition.Ready, which also starts it); a join with other edges
// not taken than assumed, with more parents left, not pending, or in a
// run rerun fails the transaction in the database, and nothing of it is
// kept.
func TestCountDownToReadyLater(t *testing.T) {
	t.Parallel()
	st := storetest.Store(t)
	ctx := context.Background()
	f := createFlow(t, st)
	forms := map[string]func(ctx context.Context, tx engine.Tx, runID string) error{
		"alone": func(ctx context.Context, tx engine.Tx, runID string) error {
			return tx.CountDownToReadyLater(ctx, runID, "j", 2)
		},
		"carried by the join's move": func(ctx context.Context, tx engine.Tx, runID string) error {
			return tx.TransitionLater(ctx, &engine.NodeTransition{RunID: runID, Key: "j", From: engine.StatusPending,
				Steps: []engine.Status{engine.StatusRunning}, NewAttempt: true, ClearPending: true,
				Ready: &engine.ReadyCheck{Untaken: 2}})
		},
	}
	for name, form := range forms {
		run := newRun(f)
		inTx(t, st, func(ctx context.Context, tx engine.Tx) error {
			require.NoError(t, tx.InsertRun(ctx, run))
			return tx.InsertNodes(ctx, run.ID, []engine.NodeState{
				{Key: "j", NodeID: "j", Type: engine.NodeTypeWorker, Index: []int{}, Status: engine.StatusPending, PendingParents: 3},
			})
		})
		set := func(q string) {
			t.Helper()
			require.NoError(t, st.Gorm().Exec(q, run.ID).Error)
		}
		row := func() (pending int, status string) {
			require.NoError(t, st.Gorm().Raw(`SELECT pending_parents, status FROM node_states WHERE run_id = ? AND key = 'j'`,
				run.ID).Row().Scan(&pending, &status))
			return pending, status
		}
		for _, c := range []struct{ name, setup string }{
			{"other edges not taken", `UPDATE node_states SET pending_parents = 1, untaken_parents = 1 WHERE run_id = ?`},
			{"parents left", `UPDATE node_states SET pending_parents = 2, untaken_parents = 2 WHERE run_id = ?`},
			{"not pending", `UPDATE node_states SET pending_parents = 1, untaken_parents = 2, status = 'skipped' WHERE run_id = ?`},
			{"rerun", `UPDATE runs SET reran = true WHERE id = ?`},
		} {
			set(`UPDATE node_states SET pending_parents = 1, untaken_parents = 2, status = 'pending' WHERE run_id = ?`)
			set(`UPDATE runs SET reran = false WHERE id = ?`)
			set(c.setup)
			beforePending, beforeStatus := row()
			err := st.InTx(ctx, func(ctx context.Context, tx engine.Tx) error { return form(ctx, tx, run.ID) })
			var qe *engine.QueuedTransitionError
			require.ErrorAs(t, err, &qe, "%s: %s", name, c.name)
			p, s := row()
			require.Equal(t, beforePending, p, "%s: %s: nothing kept", name, c.name)
			require.Equal(t, beforeStatus, s, "%s: %s: nothing kept", name, c.name)
		}
		set(`UPDATE node_states SET pending_parents = 1, untaken_parents = 2, status = 'pending' WHERE run_id = ?`)
		set(`UPDATE runs SET reran = false WHERE id = ?`)
		inTx(t, st, func(ctx context.Context, tx engine.Tx) error { return form(ctx, tx, run.ID) })
		p, s := row()
		require.Zero(t, p, name)
		if name == "alone" {
			require.Equal(t, string(engine.StatusPending), s, name)
		} else {
			require.Equal(t, string(engine.StatusRunning), s, name)
		}
	}
}

// TestInsertStartedNodes: rows with a start are created started (attempt
// 1, input, started now, deadline from now when asked), the others
// pending, over both queriers and across statement chunks.
func TestInsertStartedNodes(t *testing.T) {
	t.Parallel()
	for name, st := range queriers(t) {
		t.Run(name, func(t *testing.T) {
			f := createFlow(t, st)
			run := newRun(f)
			const n = 2100 // two chunks
			nodes := make([]engine.NodeState, n)
			starts := make([]engine.BulkStart, n)
			for i := range nodes {
				k := fmt.Sprintf("w_%d", i)
				nodes[i] = engine.NodeState{Key: k, NodeID: "w", Type: engine.NodeTypeWorker, Index: []int{i},
					Status: engine.StatusPending, PendingParents: 1}
				switch i % 3 {
				case 0:
					starts[i] = engine.BulkStart{Key: k, Input: []byte(fmt.Sprintf(`{"i":%d}`, i)),
						Status: engine.StatusRunning, DeadlineSeconds: 60}
				case 1:
					starts[i] = engine.BulkStart{Key: k, Status: engine.StatusWaitingForUser}
				}
			}
			inTx(t, st, func(ctx context.Context, tx engine.Tx) error {
				require.NoError(t, tx.InsertRun(ctx, run))
				require.Error(t, tx.InsertStartedNodes(ctx, run.ID, nodes, starts[:1]), "one start per node")
				return tx.InsertStartedNodes(ctx, run.ID, nodes, starts)
			})
			for _, i := range []int{0, 1, 2, 2097, 2098, 2099} {
				inTx(t, st, func(ctx context.Context, tx engine.Tx) error {
					got, err := tx.Node(ctx, run.ID, nodes[i].Key)
					require.NoError(t, err)
					require.Equal(t, []int{i}, got.Index)
					switch i % 3 {
					case 0:
						require.Equal(t, engine.StatusRunning, got.Status)
						require.Equal(t, 1, got.Attempt)
						require.JSONEq(t, fmt.Sprintf(`{"i":%d}`, i), string(got.Input))
						require.NotNil(t, got.StartedAt)
						require.NotNil(t, got.Deadline)
						require.InDelta(t, 60, got.Deadline.Sub(*got.StartedAt).Seconds(), 1)
					case 1:
						require.Equal(t, engine.StatusWaitingForUser, got.Status)
						require.Equal(t, 1, got.Attempt)
						require.JSONEq(t, `null`, string(got.Input))
						require.NotNil(t, got.StartedAt)
						require.Nil(t, got.Deadline)
					default:
						require.Equal(t, engine.StatusPending, got.Status)
						require.Zero(t, got.Attempt)
						require.Nil(t, got.StartedAt)
						require.Equal(t, 1, got.PendingParents)
					}
					return nil
				})
			}
		})
	}
}

// TestItemOutputs: a Collector's array is the outputs of the instances
// under one prefix, in item order (10 after 9), null where an instance
// has none, and nothing of other prefixes or nodes.
func TestItemOutputs(t *testing.T) {
	t.Parallel()
	for name, st := range queriers(t) {
		t.Run(name, func(t *testing.T) {
			f := createFlow(t, st)
			run := newRun(f)
			var nodes []engine.NodeState
			for _, outer := range []int{0, 1} {
				for _, i := range []int{10, 2, 9, 0, 1} {
					nodes = append(nodes, engine.NodeState{Key: fmt.Sprintf("w_%d_%d", outer, i), NodeID: "w",
						Type: engine.NodeTypeWorker, Index: []int{outer, i}, Status: engine.StatusPending})
				}
			}
			nodes = append(nodes, engine.NodeState{Key: "v_1_3", NodeID: "v", Type: engine.NodeTypeWorker,
				Index: []int{1, 3}, Status: engine.StatusPending})
			inTx(t, st, func(ctx context.Context, tx engine.Tx) error {
				require.NoError(t, tx.InsertRun(ctx, run))
				return tx.InsertNodes(ctx, run.ID, nodes)
			})
			require.NoError(t, st.Gorm().Exec(`UPDATE node_states SET output = jsonb_build_object('i', idx[2], 'o', idx[1]),
				status = 'completed' WHERE run_id = ? AND key <> 'w_1_9'`, run.ID).Error)
			// Branches: an item that took its edge to c counts; one whose
			// edge went elsewhere, or that was skipped, is null.
			require.NoError(t, st.Gorm().Exec(`UPDATE node_states SET taken = CASE key WHEN 'w_1_1' THEN '{c}'::text[] ELSE '{other}' END
				WHERE run_id = ? AND key IN ('w_1_1', 'w_1_2')`, run.ID).Error)
			require.NoError(t, st.Gorm().Exec(`UPDATE node_states SET status = 'skipped', output = NULL
				WHERE run_id = ? AND key = 'w_0_0'`, run.ID).Error)
			inTx(t, st, func(ctx context.Context, tx engine.Tx) error {
				got, err := tx.ItemOutputs(ctx, run.ID, "w", "c", []int{1})
				require.NoError(t, err)
				require.JSONEq(t, `[{"i":0,"o":1},{"i":1,"o":1},null,null,{"i":10,"o":1}]`, string(got))
				got, err = tx.ItemOutputs(ctx, run.ID, "w", "c", []int{0})
				require.NoError(t, err)
				require.JSONEq(t, `[null,{"i":1,"o":0},{"i":2,"o":0},{"i":9,"o":0},{"i":10,"o":0}]`, string(got))
				got, err = tx.ItemOutputs(ctx, run.ID, "missing", "c", []int{0})
				require.NoError(t, err)
				require.JSONEq(t, `[]`, string(got))
				return nil
			})
		})
	}
}

// TestCustomPlannedStatements: in the pipeline, a statement asking for a
// custom plan (planFor) is run with plan_cache_mode = force_custom_plan,
// queued or at once, and every other statement of the transaction with
// the server's setting; over both queriers its answer is read and its
// failure fails the transaction.
func TestCustomPlannedStatements(t *testing.T) {
	t.Parallel()
	const mode = `SELECT current_setting('plan_cache_mode') || ':' || $1::text`
	for name, st := range queriers(t) {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			var queued, before, custom, after string
			require.NoError(t, store.InTxQuerier(ctx, st, func(ctx context.Context, q store.Querier) error {
				q.Later(mode, func(row interface{ Scan(...any) error }) error { return row.Scan(&queued) },
					store.CustomPlan("queued")...)
				if err := q.Row(ctx, mode, "before").Scan(&before); err != nil {
					return err
				}
				if err := q.Row(ctx, mode, store.CustomPlan("custom")...).Scan(&custom); err != nil {
					return err
				}
				return q.Row(ctx, mode, "after").Scan(&after)
			}))
			if name == "pipe" {
				require.Equal(t, "force_custom_plan:queued", queued)
				require.Equal(t, "auto:before", before, "the setting is restored after a queued custom-planned statement")
				require.Equal(t, "force_custom_plan:custom", custom)
				require.Equal(t, "auto:after", after)
			} else {
				// Statement by statement, pgx runs it as an unnamed
				// statement, planned for its parameters whatever the
				// setting.
				require.Equal(t, []string{"auto:queued", "auto:before", "auto:custom", "auto:after"},
					[]string{queued, before, custom, after})
			}

			err := store.InTxQuerier(ctx, st, func(ctx context.Context, q store.Querier) error {
				q.Later(`SELECT 1 / ($1::int - 1)`, func(row interface{ Scan(...any) error }) error {
					var n int
					return row.Scan(&n)
				}, store.CustomPlan(1)...)
				return q.Exec(ctx, `SELECT 1`)
			})
			require.ErrorContains(t, err, "division by zero")
		})
	}
}

// TestBulkComplete: running nodes of the given attempts are completed with
// their outputs (the first of repeated keys), others are left alone, and
// the moved rows come back without their inputs — over both queriers.
func TestBulkComplete(t *testing.T) {
	t.Parallel()
	for name, st := range queriers(t) {
		t.Run(name, func(t *testing.T) {
			f := createFlow(t, st)
			run := newRun(f)
			const n = 40 // a custom-planned statement
			nodes := make([]engine.NodeState, n)
			starts := make([]engine.BulkStart, n)
			cs := make([]engine.BulkComplete, 0, n+1)
			for i := range nodes {
				k := fmt.Sprintf("w_%d", i)
				nodes[i] = engine.NodeState{Key: k, NodeID: "w", Type: engine.NodeTypeWorker, Index: []int{i},
					Status: engine.StatusPending}
				starts[i] = engine.BulkStart{Key: k, Input: []byte(fmt.Sprintf(`{"in":%d}`, i)), Status: engine.StatusRunning}
				attempt := 1
				if i == 7 {
					attempt = 2 // stale
				}
				cs = append(cs, engine.BulkComplete{Key: k, Attempt: attempt, Output: []byte(fmt.Sprintf(`{"out":%d}`, i))})
			}
			cs = append(cs, engine.BulkComplete{Key: "w_3", Attempt: 1, Output: []byte(`{"out":"again"}`)})
			inTx(t, st, func(ctx context.Context, tx engine.Tx) error {
				require.NoError(t, tx.InsertRun(ctx, run))
				return tx.InsertStartedNodes(ctx, run.ID, nodes, starts)
			})
			inTx(t, st, func(ctx context.Context, tx engine.Tx) error {
				done, err := tx.BulkComplete(ctx, run.ID, cs)
				require.NoError(t, err)
				require.Len(t, done, n-1)
				for _, d := range done {
					require.NotEqual(t, "w_7", d.Key)
					require.Equal(t, engine.StatusCompleted, d.Status)
					require.Equal(t, 1, d.Attempt)
					require.Equal(t, "w", d.NodeID)
					require.JSONEq(t, fmt.Sprintf(`{"out":%s}`, strings.TrimPrefix(d.Key, "w_")), string(d.Output))
					require.Nil(t, d.Input, "inputs are not read back")
					require.NotNil(t, d.FinishedAt)
				}
				stale, err := tx.Node(ctx, run.ID, "w_7")
				require.NoError(t, err)
				require.Equal(t, engine.StatusRunning, stale.Status)
				kept, err := tx.Node(ctx, run.ID, "w_3")
				require.NoError(t, err)
				require.JSONEq(t, `{"in":3}`, string(kept.Input), "the input stays")
				require.JSONEq(t, `{"out":3}`, string(kept.Output), "the first of repeated callbacks")
				return nil
			})
		})
	}
}

// TestLockRunLaterMissingRun: a queued lock of a run that does not exist
// reports ErrNotFound to its caller and fails nothing else of the
// transaction (in a group commit, the later statements are other runs'),
// over both queriers.
func TestLockRunLaterMissingRun(t *testing.T) {
	t.Parallel()
	for name, st := range queriers(t) {
		t.Run(name, func(t *testing.T) {
			f := createFlow(t, st)
			run := newRun(f)
			inTx(t, st, func(ctx context.Context, tx engine.Tx) error { return tx.InsertRun(ctx, run) })
			inTx(t, st, func(ctx context.Context, tx engine.Tx) error {
				missing := tx.LockRunLater(ctx, uuid.NewString())
				r, err := tx.LockRun(ctx, run.ID)
				require.NoError(t, err, "the statement after the missing lock")
				require.Equal(t, run.ID, r.ID)
				gone, err := missing()
				require.ErrorIs(t, err, engine.ErrNotFound)
				require.Nil(t, gone)
				return nil
			})
		})
	}
}
