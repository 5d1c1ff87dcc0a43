package store_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/stitchd/stitchd/engine"
)

// TestRunsStartedTogether: runs inserted in one transaction, with their
// nodes, dispatches and saves, are written before the transaction's next
// statement (which sees them as saved) and at its end, as an INSERT and
// an UPDATE of each would have left them: counters, status, finish and
// deadline times from the transaction's clock, events in run and sequence
// order, each dispatch on its own run — over both queriers. A duplicate
// idempotency key among them fails the transaction with a conflict.
func TestRunsStartedTogether(t *testing.T) {
	t.Parallel()
	for name, st := range queriers(t) {
		t.Run(name, func(t *testing.T) {
			f := createFlow(t, st)
			runs := []*engine.Run{newRun(f), newRun(f), newRun(f)}
			runs[0].DeadlineSeconds = 60
			parent, key := runs[0].ID, "sub_0"
			runs[1].ParentRunID, runs[1].ParentKey, runs[1].ParentAttempt = &parent, &key, 2
			var seen *engine.Run
			inTx(t, st, func(ctx context.Context, tx engine.Tx) error {
				for i, r := range runs {
					require.NoError(t, tx.InsertRun(ctx, r))
					require.NoError(t, tx.InsertStartedNodes(ctx, r.ID, []engine.NodeState{static("w", engine.NodeTypeWorker, 0)},
						[]engine.BulkStart{{Key: "w", Input: json.RawMessage(fmt.Sprintf(`{"i":%d}`, i)), Status: engine.StatusRunning}}))
					require.NoError(t, tx.InsertDispatches(ctx, []*engine.Dispatch{{ID: uuid.NewString(), RunID: r.ID, Key: "w",
						Attempt: 1, URL: "http://127.0.0.1:1/", Payload: []byte(`{}`), MaxTries: 1}}))
					r.ActiveNodes, r.EventSeq = 1, 2
					if i == 2 { // a run that ended at once
						out, msg := json.RawMessage(`{"done":true}`), "none"
						r.Status, r.ActiveNodes, r.TerminalsLeft, r.Output, r.Error = engine.RunCompleted, 0, 0, out, &msg
					}
					require.NoError(t, tx.SaveRunWithEvents(ctx, engine.RunSave{Run: r, FirstSeq: 1,
						Events: []engine.NewEvent{{Type: "run.started"}, {Type: "node.status", Key: "w"}}}))
				}
				var err error
				seen, err = tx.LockRun(ctx, runs[2].ID) // a statement: the rows are written first
				return err
			})
			require.Equal(t, engine.RunCompleted, seen.Status)
			require.EqualValues(t, 2, seen.EventSeq)

			db := st.Gorm()
			for i, r := range runs {
				var row struct {
					Status                 string
					ActiveNodes, EventSeq  int
					CreatedAt, UpdatedAt   time.Time
					FinishedAt, DeadlineAt *time.Time
					ParentRunID, ParentKey *string
					ParentAttempt          *int
					Output                 *string
					Error                  *string
				}
				require.NoError(t, db.Raw(`SELECT status, active_nodes, event_seq, created_at, updated_at, finished_at, deadline_at,
					parent_run_id::text, parent_key, parent_attempt, output::text, error FROM runs WHERE id = ?`, r.ID).Scan(&row).Error)
				require.Equal(t, string(r.Status), row.Status, "run %d", i)
				require.Equal(t, r.ActiveNodes, row.ActiveNodes)
				require.Equal(t, 2, row.EventSeq)
				require.True(t, row.CreatedAt.Equal(r.CreatedAt), "run %d: the Run carries the row's created_at", i)
				require.True(t, row.UpdatedAt.Equal(r.UpdatedAt))
				if i == 0 {
					require.NotNil(t, row.DeadlineAt)
					require.Equal(t, 60*time.Second, row.DeadlineAt.Sub(row.CreatedAt))
					require.True(t, row.DeadlineAt.Equal(*r.DeadlineAt))
				} else {
					require.Nil(t, row.DeadlineAt)
				}
				if i == 1 {
					require.Equal(t, parent, *row.ParentRunID)
					require.Equal(t, key, *row.ParentKey)
					require.Equal(t, 2, *row.ParentAttempt)
				} else {
					require.Nil(t, row.ParentRunID)
					require.Nil(t, row.ParentAttempt)
				}
				if i == 2 {
					require.NotNil(t, row.FinishedAt)
					require.True(t, row.FinishedAt.Equal(*r.FinishedAt))
					require.JSONEq(t, `{"done":true}`, *row.Output)
					require.Equal(t, "none", *row.Error)
				} else {
					require.Nil(t, row.FinishedAt)
					require.Nil(t, row.Output)
					require.Nil(t, row.Error)
				}
				var node struct {
					Status  string
					Attempt int
					Input   string
				}
				require.NoError(t, db.Raw(`SELECT status, attempt, input::text FROM node_states WHERE run_id = ? AND key = 'w'`, r.ID).Scan(&node).Error)
				require.Equal(t, "running", node.Status)
				require.Equal(t, 1, node.Attempt)
				require.JSONEq(t, fmt.Sprintf(`{"i":%d}`, i), node.Input)
				var dispatches int
				require.NoError(t, db.Raw(`SELECT count(*) FROM dispatches WHERE run_id = ?`, r.ID).Scan(&dispatches).Error)
				require.Equal(t, 1, dispatches)
			}
			var order []string
			require.NoError(t, db.Raw(`SELECT run_id::text || ':' || seq FROM run_events WHERE run_id IN (?, ?, ?) ORDER BY id`,
				runs[0].ID, runs[1].ID, runs[2].ID).Scan(&order).Error)
			require.Equal(t, []string{runs[0].ID + ":1", runs[0].ID + ":2", runs[1].ID + ":1", runs[1].ID + ":2",
				runs[2].ID + ":1", runs[2].ID + ":2"}, order, "events take ids in run and sequence order")

			// Two runs with one idempotency key: the write of them fails.
			k := "same"
			a, b := newRun(f), newRun(f)
			a.IdempotencyKey, b.IdempotencyKey = &k, &k
			err := st.InTx(context.Background(), func(ctx context.Context, tx engine.Tx) error {
				require.NoError(t, tx.InsertRun(ctx, a))
				return tx.InsertRun(ctx, b)
			})
			require.ErrorIs(t, err, engine.ErrConflict)
		})
	}
}
