package store_test

import (
	"context"
	"encoding/json"
	"slices"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/stitchd/stitchd/engine"
)

// TestLocksAndCompletesAcrossRuns: LockRuns locks runs with one statement
// and returns them in id order, leaving out a run that does not exist;
// CompleteAcrossRuns completes running nodes of several runs at the given
// attempts, each row with its run, and leaves the others (another
// attempt, a node not running, a repeat of the same node) as they were.
func TestLocksAndCompletesAcrossRuns(t *testing.T) {
	t.Parallel()
	for name, st := range queriers(t) {
		t.Run(name, func(t *testing.T) {
			f := createFlow(t, st)
			runs := []*engine.Run{newRun(f), newRun(f), newRun(f)}
			inTx(t, st, func(ctx context.Context, tx engine.Tx) error {
				for _, r := range runs {
					require.NoError(t, tx.InsertRun(ctx, r))
					require.NoError(t, tx.InsertStartedNodes(ctx, r.ID,
						[]engine.NodeState{static("w", engine.NodeTypeWorker, 0), static("v", engine.NodeTypeWorker, 0)},
						[]engine.BulkStart{{Key: "w", Input: json.RawMessage(`{}`), Status: engine.StatusRunning}, {}}))
				}
				return nil
			})
			ids := []string{runs[2].ID, uuid.NewString(), runs[0].ID, runs[1].ID}
			want := []string{runs[0].ID, runs[1].ID, runs[2].ID}
			slices.Sort(want)
			var locked []*engine.Run
			var done []engine.NodeState
			inTx(t, st, func(ctx context.Context, tx engine.Tx) error {
				var err error
				locked, err = tx.LockRuns(ctx, ids)
				require.NoError(t, err)
				done, err = tx.CompleteAcrossRuns(ctx, []engine.BulkComplete{
					{RunID: runs[0].ID, Key: "w", Attempt: 1, Output: json.RawMessage(`{"r":0}`)},
					{RunID: runs[0].ID, Key: "w", Attempt: 1, Output: json.RawMessage(`{"r":"again"}`)}, // a repeat
					{RunID: runs[1].ID, Key: "w", Attempt: 2, Output: json.RawMessage(`{"r":1}`)},       // another attempt
					{RunID: runs[2].ID, Key: "w", Attempt: 1, Output: json.RawMessage(`{"r":2}`)},
					{RunID: runs[2].ID, Key: "v", Attempt: 1, Output: json.RawMessage(`{"r":"v"}`)}, // pending
				})
				return err
			})
			got := make([]string, len(locked))
			for i, r := range locked {
				got[i] = r.ID
				require.Equal(t, engine.RunRunning, r.Status)
				require.Equal(t, f.VersionID, r.FlowVersionID)
			}
			require.Equal(t, want, got, "in id order, the missing run left out")

			require.Len(t, done, 2)
			byRun := map[string]engine.NodeState{}
			for _, st := range done {
				byRun[st.RunID] = st
			}
			for i, r := range []string{runs[0].ID, runs[2].ID} {
				st, ok := byRun[r]
				require.True(t, ok, "run %s's node completed", r)
				require.Equal(t, "w", st.Key)
				require.Equal(t, engine.StatusCompleted, st.Status)
				require.Equal(t, 1, st.Attempt)
				require.NotNil(t, st.FinishedAt)
				require.JSONEq(t, []string{`{"r":0}`, `{"r":2}`}[i], string(st.Output), "the first of repeated callbacks")
			}
			db := st.Gorm()
			var status string
			require.NoError(t, db.Raw(`SELECT status FROM node_states WHERE run_id = ? AND key = 'w'`, runs[1].ID).Row().Scan(&status))
			require.Equal(t, "running", status, "another attempt's callback changes nothing")
			require.NoError(t, db.Raw(`SELECT status FROM node_states WHERE run_id = ? AND key = 'v'`, runs[2].ID).Row().Scan(&status))
			require.Equal(t, "pending", status)
		})
	}
}
