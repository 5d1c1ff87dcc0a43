package store_test

import (
	"context"
	"encoding/json"
	"slices"
	"strconv"
	"testing"
	"time"

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
				if name == "pipe" { // (the other querier's store is one transaction)
					// Locked: another transaction cannot take one of them.
					other := st.Gorm().Exec(`SELECT 1 FROM runs WHERE id = ? FOR UPDATE NOWAIT`, runs[1].ID).Error
					require.ErrorContains(t, other, "could not obtain lock")
				}
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

// TestSavesHeldTogether: consecutive run saves that mark deliveries go as
// one statement, with what each would have written alone — each run's
// dispatch marked delivered, its events numbered from its FirstSeq with a
// dispatch.attempt event after DeliveredAt (none for a delivery already
// logged), its row saved (a run that fails keeps its error, one that
// stays running no finish) — and the Runs given the rows' times and
// sequences.
func TestSavesHeldTogether(t *testing.T) {
	t.Parallel()
	for name, st := range queriers(t) {
		t.Run(name, func(t *testing.T) {
			f := createFlow(t, st)
			runs := []*engine.Run{newRun(f), newRun(f), newRun(f), newRun(f)}
			dispatches := make([]string, len(runs))
			inTx(t, st, func(ctx context.Context, tx engine.Tx) error {
				for i, r := range runs {
					require.NoError(t, tx.InsertRun(ctx, r))
					dispatches[i] = startWorker(ctx, t, tx, r.ID)
					r.ActiveNodes, r.EventSeq = 1, 2
					require.NoError(t, tx.SaveRunWithEvents(ctx, engine.RunSave{Run: r, FirstSeq: 1,
						Events: []engine.NewEvent{{Type: "run.started"}, {Type: "node.status", Key: "w"}}}))
				}
				return nil
			})
			db := st.Gorm()
			// Run 3's delivery was logged already (by a failed try's
			// transaction, say): no second dispatch.attempt event.
			require.NoError(t, db.Exec(`UPDATE dispatches SET delivery_logged = true WHERE id = ?`, dispatches[3]).Error)

			msg := "worker said no"
			inTx(t, st, func(ctx context.Context, tx engine.Tx) error {
				for i, r := range runs {
					r.ActiveNodes = 0
					switch i {
					case 1:
						r.Status, r.FailedNodes, r.Error = engine.RunFailed, 1, &msg
					case 2: // still running
						r.ActiveNodes = 1
					default:
						r.Status, r.TerminalsLeft, r.Output = engine.RunCompleted, 0, json.RawMessage(`{"i":`+strconv.Itoa(i)+`}`)
					}
					first := r.EventSeq + 1
					r.EventSeq += 2
					require.NoError(t, tx.SaveRunWithEvents(ctx, engine.RunSave{Run: r, FirstSeq: first, DeliveredAt: 1,
						DeliveredKeys: []string{"w"}, DeliveredAttempts: []int{1},
						Events: []engine.NewEvent{{Type: "node.status", Key: "w", Payload: map[string]any{"i": i}}, {Type: "run.status"}}}))
					// What the engine does to its Run after the save is
					// not what is saved.
					r.ActiveNodes = 99
				}
				return nil
			})
			for i, r := range runs {
				var row struct {
					Status                                  string
					ActiveNodes, FailedNodes, TerminalsLeft int
					EventSeq                                int64
					UpdatedAt                               time.Time
					FinishedAt                              *time.Time
					Output, Error                           *string
				}
				require.NoError(t, db.Raw(`SELECT status, active_nodes, failed_nodes, terminals_left, event_seq, updated_at,
					finished_at, output::text, error FROM runs WHERE id = ?`, r.ID).Scan(&row).Error)
				wantSeq := int64(5)
				if i == 3 {
					wantSeq = 4
				}
				require.Equal(t, wantSeq, row.EventSeq, "run %d", i)
				require.Equal(t, wantSeq, r.EventSeq, "run %d: the Run carries the row's sequence", i)
				require.True(t, row.UpdatedAt.Equal(r.UpdatedAt), "run %d: the Run carries the row's updated_at", i)
				require.Equal(t, []int{0, 0, 1, 0}[i], row.ActiveNodes, "run %d: saved as it was when saved", i)
				switch i {
				case 1:
					require.Equal(t, "failed", row.Status)
					require.Equal(t, msg, *row.Error)
					require.Equal(t, 1, row.FailedNodes)
				case 2:
					require.Equal(t, "running", row.Status)
					require.Nil(t, row.FinishedAt)
					require.Nil(t, r.FinishedAt)
				default:
					require.Equal(t, "completed", row.Status)
					require.JSONEq(t, `{"i":`+strconv.Itoa(i)+`}`, *row.Output)
					require.Nil(t, row.Error)
				}
				if i != 2 {
					require.NotNil(t, row.FinishedAt, "run %d", i)
					require.True(t, row.FinishedAt.Equal(*r.FinishedAt), "run %d: the Run carries finished_at", i)
				}
				var events []struct {
					Seq     int64
					Type    string
					Key     *string
					Payload string
				}
				require.NoError(t, db.Raw(`SELECT seq, type, key, payload::text FROM run_events WHERE run_id = ? ORDER BY id`,
					r.ID).Scan(&events).Error)
				types := make([]string, len(events))
				for j, e := range events {
					require.EqualValues(t, j+1, e.Seq, "run %d: events numbered in id order", i)
					types[j] = e.Type
				}
				if i == 3 {
					require.Equal(t, []string{"run.started", "node.status", "node.status", "run.status"}, types)
					continue
				}
				require.Equal(t, []string{"run.started", "node.status", "node.status", "dispatch.attempt", "run.status"}, types, "run %d", i)
				require.JSONEq(t, `{"i":`+strconv.Itoa(i)+`}`, events[2].Payload)
				require.JSONEq(t, `{"dispatch_id":"`+dispatches[i]+`","attempt":1,"try":0,"delivered":true}`, events[3].Payload)
				var status string
				var logged bool
				require.NoError(t, db.Raw(`SELECT status, delivery_logged FROM dispatches WHERE id = ?`, dispatches[i]).Row().Scan(&status, &logged))
				require.Equal(t, "delivered", status)
				require.True(t, logged)
			}
		})
	}
}

// TestHeldSaveOfARunStartedInTheTransaction: a save that marks deliveries
// of a run inserted in the same transaction (both held back) writes the
// run first.
func TestHeldSaveOfARunStartedInTheTransaction(t *testing.T) {
	t.Parallel()
	for name, st := range queriers(t) {
		t.Run(name, func(t *testing.T) {
			f := createFlow(t, st)
			r := newRun(f)
			inTx(t, st, func(ctx context.Context, tx engine.Tx) error {
				require.NoError(t, tx.InsertRun(ctx, r))
				startWorker(ctx, t, tx, r.ID)
				r.Status, r.TerminalsLeft, r.EventSeq = engine.RunCompleted, 0, 1
				return tx.SaveRunWithEvents(ctx, engine.RunSave{Run: r, FirstSeq: 1, DeliveredAt: 0,
					DeliveredKeys: []string{"w"}, DeliveredAttempts: []int{1}, Events: []engine.NewEvent{{Type: "run.status"}}})
			})
			var row struct {
				Status   string
				EventSeq int64
			}
			require.NoError(t, st.Gorm().Raw(`SELECT status, event_seq FROM runs WHERE id = ?`, r.ID).Scan(&row).Error)
			require.Equal(t, "completed", row.Status)
			require.EqualValues(t, 2, row.EventSeq, "its event and its delivery's")
			require.EqualValues(t, 2, r.EventSeq)
		})
	}
}

// startWorker creates run runID's node "w" running its first attempt, with
// its outbox row, and returns the row's id.
func startWorker(ctx context.Context, t *testing.T, tx engine.Tx, runID string) string {
	t.Helper()
	require.NoError(t, tx.InsertStartedNodes(ctx, runID, []engine.NodeState{static("w", engine.NodeTypeWorker, 0)},
		[]engine.BulkStart{{Key: "w", Input: json.RawMessage(`{}`), Status: engine.StatusRunning}}))
	id := uuid.NewString()
	require.NoError(t, tx.InsertDispatches(ctx, []*engine.Dispatch{{ID: id, RunID: runID, Key: "w",
		Attempt: 1, URL: "http://127.0.0.1:1/", Payload: []byte(`{}`), MaxTries: 1}}))
	return id
}
