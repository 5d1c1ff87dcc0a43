package store_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/stitchd/stitchd/handlers"
	"io"
	"net"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/require"

	"github.com/stitchd/stitchd/compiler"
	"github.com/stitchd/stitchd/engine"
	"github.com/stitchd/stitchd/store"
	"github.com/stitchd/stitchd/store/storetest"
)

func TestMain(m *testing.M) { storetest.Main(m) }

// graphA is a valid two-node flow; graphAReordered is the same document
// with its keys in another order and other whitespace; graphAMoved moves a
// node on the canvas.
const (
	graphA = `{"nodes":[{"id":"fetch","type":"Worker","position":{"x":0,"y":0},"data":{"webhookUrl":"http://worker.local/fetch"}},` +
		`{"id":"approve","type":"UX","position":{"x":200,"y":0},"data":{"label":"Approve","prompt":"Ship it?"}}],` +
		`"edges":[{"id":"e1","source":"fetch","target":"approve"}]}`
	graphAReordered = `{
	  "edges": [{"target": "approve", "source": "fetch", "id": "e1"}],
	  "nodes": [
	    {"data": {"webhookUrl": "http://worker.local/fetch"}, "position": {"y": 0, "x": 0}, "type": "Worker", "id": "fetch"},
	    {"type": "UX", "id": "approve", "data": {"prompt": "Ship it?", "label": "Approve"}, "position": {"y": 0, "x": 200}}
	  ]
	}`
	graphAMoved = `{"nodes":[{"id":"fetch","type":"Worker","position":{"x":40,"y":10},"data":{"webhookUrl":"http://worker.local/fetch"}},` +
		`{"id":"approve","type":"UX","position":{"x":200,"y":0},"data":{"label":"Approve","prompt":"Ship it?"}}],` +
		`"edges":[{"id":"e1","source":"fetch","target":"approve"}]}`
)

// compileVersion compiles a visual graph the way the API does and returns
// the version to store.
func compileVersion(t *testing.T, graph, message string) store.NewVersion {
	t.Helper()
	return compileVersionMsg(t, graph, message)
}

// storeNewVersion is store.NewVersion (for the benchmark file).
type storeNewVersion = store.NewVersion

func compileVersionTB(t testing.TB, graph string) store.NewVersion {
	return compileVersionMsg(t, graph, "bench")
}

func compileVersionMsg(t testing.TB, graph, message string) store.NewVersion {
	t.Helper()
	v, err := compiler.ParseVisual([]byte(graph))
	require.NoError(t, err)
	g, err := compiler.Compile(v, handlers.Types(handlers.Options{}))
	require.NoError(t, err)
	exec, err := json.Marshal(g)
	require.NoError(t, err)
	canon, err := compiler.Canonical([]byte(graph))
	require.NoError(t, err)
	sum := sha256.Sum256(canon)
	return store.NewVersion{ID: uuid.NewString(), Graph: canon, Execution: exec, Hash: hex.EncodeToString(sum[:]), Message: message}
}

func createFlow(t *testing.T, st *store.Store) *store.Flow {
	t.Helper()
	f, err := st.CreateFlow(context.Background(), "", uuid.NewString(), "flow", nil, compileVersion(t, graphA, "v1"))
	require.NoError(t, err)
	return f
}

func TestFlowVersions(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := storetest.TestTx(t)

	id := uuid.NewString()
	v1 := compileVersion(t, graphA, "first")
	f, err := st.CreateFlow(ctx, "", id, "Leads", nil, v1)
	require.NoError(t, err)
	require.Equal(t, id, f.ID)
	require.Equal(t, "Leads", f.Name)
	require.Nil(t, f.BoardID)
	require.Equal(t, v1.ID, f.VersionID)
	require.Equal(t, 1, f.VersionNumber)
	require.Equal(t, v1.Hash, f.GraphHash)
	require.JSONEq(t, graphA, string(f.Graph))
	require.JSONEq(t, string(v1.Execution), string(f.Execution))
	require.False(t, f.CreatedAt.IsZero())
	require.Equal(t, "UTC", f.CreatedAt.Location().String())

	got, err := st.GetFlow(ctx, id)
	require.NoError(t, err)
	require.Equal(t, f, got)

	// The same graph (keys reordered, other whitespace): no new version.
	same := compileVersion(t, graphAReordered, "same")
	require.Equal(t, v1.Hash, same.Hash, "canonical form must not depend on key order")
	f, created, err := st.UpdateFlow(ctx, id, store.UpdateFlowParams{Version: &same})
	require.NoError(t, err)
	require.False(t, created)
	require.Equal(t, 1, f.VersionNumber)
	require.Equal(t, v1.ID, f.VersionID)

	// A different graph: version 2.
	v2 := compileVersion(t, graphAMoved, "moved")
	require.NotEqual(t, v1.Hash, v2.Hash)
	f, created, err = st.UpdateFlow(ctx, id, store.UpdateFlowParams{Version: &v2})
	require.NoError(t, err)
	require.True(t, created)
	require.Equal(t, 2, f.VersionNumber)
	require.Equal(t, v2.ID, f.VersionID)
	require.JSONEq(t, graphAMoved, string(f.Graph))

	// Name only.
	name := "Renamed"
	f, created, err = st.UpdateFlow(ctx, id, store.UpdateFlowParams{Name: &name})
	require.NoError(t, err)
	require.False(t, created)
	require.Equal(t, "Renamed", f.Name)
	require.Equal(t, 2, f.VersionNumber)
	require.Equal(t, v2.ID, f.VersionID)

	// Board: set, then clear.
	boardID := uuid.NewString()
	require.NoError(t, st.Gorm().Exec(`INSERT INTO boards (id, name) VALUES (?, 'b')`, boardID).Error)
	f, created, err = st.UpdateFlow(ctx, id, store.UpdateFlowParams{BoardID: &boardID})
	require.NoError(t, err)
	require.False(t, created)
	require.NotNil(t, f.BoardID)
	require.Equal(t, boardID, *f.BoardID)
	f, _, err = st.UpdateFlow(ctx, id, store.UpdateFlowParams{ClearBoard: true})
	require.NoError(t, err)
	require.Nil(t, f.BoardID)
	require.Equal(t, "Renamed", f.Name, "clearing the board keeps the name")

	vs, err := st.ListVersions(ctx, id)
	require.NoError(t, err)
	require.Len(t, vs, 2)
	require.Equal(t, []int{2, 1}, []int{vs[0].Number, vs[1].Number}, "newest first")
	require.Equal(t, []string{v2.ID, v1.ID}, []string{vs[0].ID, vs[1].ID})
	require.Equal(t, []string{"moved", "first"}, []string{vs[0].Message, vs[1].Message})
	require.Equal(t, id, vs[0].FlowID)

	gv, err := st.GetVersion(ctx, id, 1)
	require.NoError(t, err)
	require.Equal(t, v1.ID, gv.ID)
	require.Equal(t, 1, gv.Number)
	require.Equal(t, "first", gv.Message)
	require.JSONEq(t, graphA, string(gv.Graph))
	require.JSONEq(t, string(v1.Execution), string(gv.Execution))
	_, err = st.GetVersion(ctx, id, 3)
	require.ErrorIs(t, err, engine.ErrNotFound)

	eg, err := st.ExecutionGraph(ctx, v2.ID)
	require.NoError(t, err)
	require.Equal(t, []string{"fetch"}, eg.EntryNodes)
	require.Equal(t, []string{"approve"}, eg.TerminalNodes)
	require.Equal(t, engine.NodeTypeWorker, eg.Nodes["fetch"].Type)
	require.Equal(t, engine.NodeTypeUX, eg.Nodes["approve"].Type)

	flows, err := st.ListFlows(ctx, "")
	require.NoError(t, err)
	require.Contains(t, flowIDs(flows), id)

	require.NoError(t, st.DeleteFlow(ctx, id))
	_, err = st.GetFlow(ctx, id)
	require.ErrorIs(t, err, engine.ErrNotFound)
	require.ErrorIs(t, st.DeleteFlow(ctx, id), engine.ErrNotFound, "deleting twice")
	_, _, err = st.UpdateFlow(ctx, id, store.UpdateFlowParams{Name: &name})
	require.ErrorIs(t, err, engine.ErrNotFound)
	_, err = st.ListVersions(ctx, id)
	require.ErrorIs(t, err, engine.ErrNotFound)
	_, err = st.GetVersion(ctx, id, 1)
	require.ErrorIs(t, err, engine.ErrNotFound)
	flows, err = st.ListFlows(ctx, "")
	require.NoError(t, err)
	require.NotContains(t, flowIDs(flows), id)
}

func flowIDs(fs []store.Flow) []string {
	out := make([]string, len(fs))
	for i, f := range fs {
		out[i] = f.ID
	}
	return out
}

func TestInterpretError(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		do   func(ctx context.Context, t *testing.T, st *store.Store) error
		want error
	}{
		{"malformed uuid GetFlow", func(ctx context.Context, _ *testing.T, st *store.Store) error {
			_, err := st.GetFlow(ctx, "not-a-uuid")
			return err
		}, engine.ErrNotFound},
		{"unknown uuid GetFlow", func(ctx context.Context, _ *testing.T, st *store.Store) error {
			_, err := st.GetFlow(ctx, uuid.NewString())
			return err
		}, engine.ErrNotFound},
		{"malformed uuid GetVersion", func(ctx context.Context, _ *testing.T, st *store.Store) error {
			_, err := st.GetVersion(ctx, "zzz", 1)
			return err
		}, engine.ErrNotFound},
		{"malformed uuid GetRun", func(ctx context.Context, _ *testing.T, st *store.Store) error {
			_, _, err := st.GetRun(ctx, "1234", true)
			return err
		}, engine.ErrNotFound},
		{"malformed uuid DeleteFlow", func(ctx context.Context, _ *testing.T, st *store.Store) error {
			return st.DeleteFlow(ctx, "nope")
		}, engine.ErrNotFound},
		{"unknown flow UpdateFlow", func(ctx context.Context, _ *testing.T, st *store.Store) error {
			n := "x"
			_, _, err := st.UpdateFlow(ctx, uuid.NewString(), store.UpdateFlowParams{Name: &n})
			return err
		}, engine.ErrNotFound},
		{"unique violation", func(ctx context.Context, t *testing.T, st *store.Store) error {
			f := createFlow(t, st)
			_, err := st.CreateFlow(ctx, "", f.ID, "again", nil, compileVersion(t, graphA, ""))
			return err
		}, engine.ErrConflict},
		{"foreign key violation (unknown board)", func(ctx context.Context, t *testing.T, st *store.Store) error {
			b := uuid.NewString()
			_, err := st.CreateFlow(ctx, "", uuid.NewString(), "f", &b, compileVersion(t, graphA, ""))
			return err
		}, engine.ErrInvalidRequest},
		{"foreign key violation (run of unknown flow)", func(ctx context.Context, _ *testing.T, st *store.Store) error {
			return st.InTx(ctx, func(ctx context.Context, tx engine.Tx) error {
				return tx.InsertRun(ctx, &engine.Run{ID: uuid.NewString(), FlowID: uuid.NewString(),
					FlowVersionID: uuid.NewString(), Status: engine.RunRunning, Input: json.RawMessage(`{}`)})
			})
		}, engine.ErrInvalidRequest},
		{"connection refused", func(ctx context.Context, t *testing.T, _ *store.Store) error {
			l, err := (&net.ListenConfig{}).Listen(ctx, "tcp", "127.0.0.1:0")
			require.NoError(t, err)
			addr := l.Addr().String()
			require.NoError(t, l.Close())
			down, err := store.Open(ctx, "postgres://postgres@"+addr+"/x?sslmode=disable&connect_timeout=5", store.Options{})
			require.NoError(t, err)
			defer down.Close()
			_, err = down.GetFlow(ctx, uuid.NewString())
			return err
		}, engine.ErrUnavailable},
		{"connection rejected by the server (database does not exist)", func(ctx context.Context, t *testing.T, _ *store.Store) error {
			u, err := url.Parse(storetest.ServerURL(t))
			require.NoError(t, err)
			u.Path = "/stitchd_no_such_database_" + strings.ReplaceAll(uuid.NewString(), "-", "")
			down, err := store.Open(ctx, u.String(), store.Options{})
			require.NoError(t, err)
			defer down.Close()
			_, err = down.GetFlow(ctx, uuid.NewString())
			return err
		}, engine.ErrUnavailable},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			err := tt.do(context.Background(), t, storetest.TestTx(t))
			require.Error(t, err)
			require.ErrorIs(t, err, tt.want)
			for _, other := range []error{engine.ErrNotFound, engine.ErrConflict, engine.ErrInvalidRequest, engine.ErrUnavailable} {
				if other != tt.want {
					require.NotErrorIs(t, err, other)
				}
			}
		})
	}
}

// inTx runs fn in st.InTx and fails the test on error.
func inTx(t *testing.T, st *store.Store, fn func(ctx context.Context, tx engine.Tx) error) {
	t.Helper()
	require.NoError(t, st.InTx(context.Background(), fn))
}

func newRun(f *store.Flow) *engine.Run {
	return &engine.Run{ID: uuid.NewString(), FlowID: f.ID, FlowVersionID: f.VersionID, Status: engine.RunRunning,
		Input: json.RawMessage(`{"a":1}`), TerminalsLeft: 1}
}

func static(key string, typ engine.NodeType, pending int) engine.NodeState {
	return engine.NodeState{Key: key, NodeID: key, Type: typ, Index: []int{}, PendingParents: pending}
}

func TestTxRunAndNodes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := storetest.TestTx(t)
	f := createFlow(t, st)
	run := newRun(f)

	inTx(t, st, func(ctx context.Context, tx engine.Tx) error {
		require.NoError(t, tx.InsertRun(ctx, run))
		return tx.InsertNodes(ctx, run.ID, []engine.NodeState{
			static("a", engine.NodeTypeWorker, 0),
			static("b", engine.NodeTypeUX, 2),
			static("c", engine.NodeTypeUX, 1),
		})
	})
	require.False(t, run.CreatedAt.IsZero())

	inTx(t, st, func(ctx context.Context, tx engine.Tx) error {
		r, err := tx.LockRun(ctx, run.ID)
		require.NoError(t, err)
		require.Equal(t, engine.RunRunning, r.Status)
		require.Equal(t, f.ID, r.FlowID)
		require.Equal(t, f.VersionID, r.FlowVersionID)
		require.Nil(t, r.Input, "LockRun leaves the input out")
		require.Nil(t, r.Trigger, "LockRun leaves the trigger out")
		in, err := tx.RunInput(ctx, run.ID)
		require.NoError(t, err)
		require.JSONEq(t, `{"a":1}`, string(in))
		require.Equal(t, 1, r.TerminalsLeft)
		require.Zero(t, r.EventSeq)
		require.Nil(t, r.FinishedAt)

		n, err := tx.Node(ctx, run.ID, "b")
		require.NoError(t, err)
		require.Equal(t, engine.StatusPending, n.Status)
		require.Equal(t, engine.NodeTypeUX, n.Type)
		require.Equal(t, []int{}, n.Index)
		require.Equal(t, 2, n.PendingParents)
		require.Zero(t, n.Attempt)
		_, err = tx.Node(ctx, run.ID, "nope")
		require.ErrorIs(t, err, engine.ErrNotFound)
		return nil
	})

	// Compare-and-set transitions, each in its own transaction, in order.
	steps := []struct {
		name string
		tr   engine.NodeTransition
		// wantStatus is the row's status after a successful CAS; when
		// wantErr is set the CAS must fail with a *TransitionError whose
		// Current has curStatus (nil Current when curStatus is "").
		wantStatus engine.Status
		wantErr    error
		curStatus  engine.Status
		check      func(t *testing.T, n *engine.NodeState)
	}{
		{name: "pending to running", tr: engine.NodeTransition{Key: "a", From: engine.StatusPending,
			Steps: []engine.Status{engine.StatusRunning}, NewAttempt: true, Input: json.RawMessage(`{"x":1}`), DeadlineSeconds: 60},
			wantStatus: engine.StatusRunning, check: func(t *testing.T, n *engine.NodeState) {
				require.Equal(t, 1, n.Attempt)
				require.JSONEq(t, `{"x":1}`, string(n.Input))
				require.NotNil(t, n.StartedAt)
				require.NotNil(t, n.Deadline)
				require.Nil(t, n.FinishedAt)
			}},
		{name: "second CAS from pending", tr: engine.NodeTransition{Key: "a", From: engine.StatusPending,
			Steps: []engine.Status{engine.StatusRunning}, NewAttempt: true},
			wantErr: engine.ErrInvalidTransition, curStatus: engine.StatusRunning},
		{name: "attempt mismatch", tr: engine.NodeTransition{Key: "a", From: engine.StatusRunning,
			Steps: []engine.Status{engine.StatusCompleted}, Attempt: 2, Output: json.RawMessage(`1`)},
			wantErr: engine.ErrInvalidTransition, curStatus: engine.StatusRunning},
		{name: "running to completed with the right attempt", tr: engine.NodeTransition{Key: "a", From: engine.StatusRunning,
			Steps: []engine.Status{engine.StatusCompleted}, Attempt: 1, Output: json.RawMessage(`{"ok":true}`)},
			wantStatus: engine.StatusCompleted, check: func(t *testing.T, n *engine.NodeState) {
				require.Equal(t, 1, n.Attempt, "no new attempt")
				require.JSONEq(t, `{"ok":true}`, string(n.Output))
				require.JSONEq(t, `{"x":1}`, string(n.Input), "input kept")
				require.NotNil(t, n.FinishedAt)
				require.Nil(t, n.Deadline)
				require.Nil(t, n.Error)
			}},
		{name: "completed is final", tr: engine.NodeTransition{Key: "a", From: engine.StatusRunning,
			Steps: []engine.Status{engine.StatusFailed}},
			wantErr: engine.ErrInvalidTransition, curStatus: engine.StatusCompleted},
		{name: "missing node", tr: engine.NodeTransition{Key: "ghost", From: engine.StatusPending,
			Steps: []engine.Status{engine.StatusRunning}},
			wantErr: engine.ErrNotFound},
	}
	for _, s := range steps {
		tr := s.tr
		tr.RunID = run.ID
		var got *engine.NodeState
		err := st.InTx(ctx, func(ctx context.Context, tx engine.Tx) error {
			var err error
			got, err = tx.Transition(ctx, &tr)
			return err
		})
		if s.wantErr == nil {
			require.NoError(t, err, s.name)
			require.Equal(t, s.wantStatus, got.Status, s.name)
			require.Equal(t, "a", got.Key, s.name)
			require.Equal(t, run.ID, got.RunID, s.name)
			if s.check != nil {
				s.check(t, got)
			}
			continue
		}
		require.Error(t, err, s.name)
		require.ErrorIs(t, err, s.wantErr, s.name)
		te, ok := engine.IsTransitionError(err)
		require.True(t, ok, "%s: want *engine.TransitionError, got %T: %v", s.name, err, err)
		require.Equal(t, tr.Key, te.Key, s.name)
		require.Equal(t, tr.From, te.Want, s.name) //nolint:testifylint // te.Want is the actual value: the error's name for the status it wanted
		if s.curStatus == "" {
			require.Nil(t, te.Current, s.name)
		} else {
			require.NotNil(t, te.Current, s.name)
			require.Equal(t, s.curStatus, te.Current.Status, s.name)
			require.Equal(t, 1, te.Current.Attempt, s.name)
		}
	}

	// AddPending returns the decremented counts of the rows it changed.
	inTx(t, st, func(ctx context.Context, tx engine.Tx) error {
		p, err := tx.AddPending(ctx, run.ID, []string{"b", "c", "ghost"}, -1)
		require.NoError(t, err)
		require.Equal(t, map[string]engine.Pending{
			"b": {Remaining: 1, Status: engine.StatusPending},
			"c": {Remaining: 0, Status: engine.StatusPending},
		}, p)
		p, err = tx.AddPending(ctx, run.ID, []string{"b"}, -1)
		require.NoError(t, err)
		require.Equal(t, map[string]engine.Pending{"b": {Remaining: 0, Status: engine.StatusPending}}, p)
		require.NoError(t, tx.SetPending(ctx, run.ID, "b", 5))
		n, err := tx.Node(ctx, run.ID, "b")
		require.NoError(t, err)
		require.Equal(t, 5, n.PendingParents)

		out, err := tx.Outputs(ctx, run.ID, []string{"a", "b"})
		require.NoError(t, err)
		require.Len(t, out, 2)
		require.JSONEq(t, `{"ok":true}`, string(out["a"]))
		require.Empty(t, out["b"], "a node without output")
		return nil
	})

	// SaveRun writes status and output and stamps finished_at (read back
	// into the run by the time the transaction commits: the statement is
	// queued).
	var saved *engine.Run
	inTx(t, st, func(ctx context.Context, tx engine.Tx) error {
		r, err := tx.LockRun(ctx, run.ID)
		require.NoError(t, err)
		r.Status, r.Output, r.TerminalsLeft, r.EventSeq = engine.RunCompleted, json.RawMessage(`{"done":1}`), 0, 7
		require.NoError(t, tx.SaveRun(ctx, r))
		saved = r
		return nil
	})
	require.NotNil(t, saved.FinishedAt)
	r, nodes, err := st.GetRun(ctx, run.ID, true)
	require.NoError(t, err)
	require.Equal(t, engine.RunCompleted, r.Status)
	require.JSONEq(t, `{"done":1}`, string(r.Output))
	require.EqualValues(t, 7, r.EventSeq)
	require.NotNil(t, r.FinishedAt)
	require.Len(t, nodes, 3)
}

func TestTxRollback(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := storetest.TestTx(t)
	f := createFlow(t, st)
	run := newRun(f)
	boom := errors.New("boom")
	err := st.InTx(ctx, func(ctx context.Context, tx engine.Tx) error {
		require.NoError(t, tx.InsertRun(ctx, run))
		return boom
	})
	require.ErrorIs(t, err, boom)
	_, _, err = st.GetRun(ctx, run.ID, false)
	require.ErrorIs(t, err, engine.ErrNotFound, "the failed transaction's run must be rolled back")
}

func TestTxIdempotencyKey(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := storetest.TestTx(t)
	f := createFlow(t, st)
	key := "order-42"
	run := newRun(f)
	run.IdempotencyKey = &key
	inTx(t, st, func(ctx context.Context, tx engine.Tx) error { return tx.InsertRun(ctx, run) })

	inTx(t, st, func(ctx context.Context, tx engine.Tx) error {
		got, err := tx.RunByIdempotencyKey(ctx, f.ID, key)
		require.NoError(t, err)
		require.Equal(t, run.ID, got.ID)
		require.NotNil(t, got.IdempotencyKey)
		require.Equal(t, key, *got.IdempotencyKey)
		_, err = tx.RunByIdempotencyKey(ctx, f.ID, "other")
		require.ErrorIs(t, err, engine.ErrNotFound)
		return nil
	})

	dup := newRun(f)
	dup.IdempotencyKey = &key
	err := st.InTx(ctx, func(ctx context.Context, tx engine.Tx) error { return tx.InsertRun(ctx, dup) })
	require.ErrorIs(t, err, engine.ErrConflict)
}

func TestTxAppendEvents(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := storetest.TestTx(t)
	f := createFlow(t, st)
	run := newRun(f)
	inTx(t, st, func(ctx context.Context, tx engine.Tx) error {
		require.NoError(t, tx.InsertRun(ctx, run))
		return tx.AppendEvents(ctx, run.ID, 1, []engine.NewEvent{
			{Type: engine.EventRunStarted},
			{Type: engine.EventNodeStatus, Key: "a", Payload: map[string]any{"status": "running"}},
			{Type: engine.EventNodeStatus, Key: "a", Payload: map[string]any{"status": "completed"}},
		})
	})
	inTx(t, st, func(ctx context.Context, tx engine.Tx) error {
		return tx.AppendEvents(ctx, run.ID, 4, []engine.NewEvent{{Type: engine.EventRunCompleted}})
	})

	evs, err := st.RunEvents(ctx, run.ID, 0, 100)
	require.NoError(t, err)
	require.Len(t, evs, 4)
	for i, e := range evs {
		require.EqualValues(t, i+1, e.Seq)
		require.Equal(t, run.ID, e.RunID)
	}
	require.Equal(t, []string{engine.EventRunStarted, engine.EventNodeStatus, engine.EventNodeStatus, engine.EventRunCompleted},
		[]string{evs[0].Type, evs[1].Type, evs[2].Type, evs[3].Type})
	require.Empty(t, evs[0].Key)
	require.Equal(t, "a", evs[1].Key)
	require.JSONEq(t, `{}`, string(evs[0].Payload), "a nil payload is stored as {}")
	require.JSONEq(t, `{"status":"completed"}`, string(evs[2].Payload))
	require.Less(t, evs[0].ID, evs[3].ID)

	after, err := st.RunEvents(ctx, run.ID, 2, 100)
	require.NoError(t, err)
	require.Len(t, after, 2)
	require.EqualValues(t, 3, after[0].Seq)
	require.EqualValues(t, 4, after[1].Seq)

	// A sequence number used twice is a conflict and adds nothing.
	err = st.InTx(ctx, func(ctx context.Context, tx engine.Tx) error {
		return tx.AppendEvents(ctx, run.ID, 2, []engine.NewEvent{{Type: "dup"}})
	})
	require.ErrorIs(t, err, engine.ErrConflict)
	evs, err = st.RunEvents(ctx, run.ID, 0, 100)
	require.NoError(t, err)
	require.Len(t, evs, 4)
}

func TestTxItemStates(t *testing.T) {
	t.Parallel()
	st := storetest.TestTx(t)
	f := createFlow(t, st)
	run := newRun(f)
	item := func(key, nodeID string, idx ...int) engine.NodeState {
		return engine.NodeState{Key: key, NodeID: nodeID, Type: engine.NodeTypeWorker, Index: idx}
	}
	inTx(t, st, func(ctx context.Context, tx engine.Tx) error {
		require.NoError(t, tx.InsertRun(ctx, run))
		// Inserted out of order, with keys whose text order differs from
		// their index order.
		return tx.InsertNodes(ctx, run.ID, []engine.NodeState{
			item("s_10", "s", 10), item("s_2", "s", 2), item("s_1", "s", 1),
			item("s_1_0", "s", 1, 0), item("s_1_1", "s", 1, 1), item("t_1", "t", 1),
			static("s", engine.NodeTypeWorker, 0),
		})
	})

	keysOf := func(ns []engine.NodeState) []string {
		out := make([]string, len(ns))
		for i, n := range ns {
			out[i] = n.Key
		}
		return out
	}
	tests := []struct {
		name    string
		nodeIDs []string
		prefix  []int
		want    []string
	}{
		{"top level ordered by index", []string{"s"}, nil, []string{"s_1", "s_2", "s_10"}},
		{"two nodes ordered by index then node", []string{"s", "t"}, nil, []string{"s_1", "t_1", "s_2", "s_10"}},
		{"nested under item 1", []string{"s"}, []int{1}, []string{"s_1_0", "s_1_1"}},
		{"nested under item 2 (none)", []string{"s"}, []int{2}, []string{}},
		{"unknown node", []string{"u"}, nil, []string{}},
	}
	for _, tt := range tests {
		inTx(t, st, func(ctx context.Context, tx engine.Tx) error {
			got, err := tx.ItemStates(ctx, run.ID, tt.nodeIDs, tt.prefix)
			require.NoError(t, err, tt.name)
			require.Equal(t, tt.want, keysOf(got), tt.name)
			for _, n := range got {
				require.Len(t, n.Index, len(tt.prefix)+1, tt.name)
			}
			return nil
		})
	}
	inTx(t, st, func(ctx context.Context, tx engine.Tx) error {
		got, err := tx.ItemStates(ctx, run.ID, []string{"s"}, nil)
		require.NoError(t, err)
		require.Equal(t, [][]int{{1}, {2}, {10}}, [][]int{got[0].Index, got[1].Index, got[2].Index})
		return nil
	})
}

func TestTxCancelNodes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := storetest.TestTx(t)
	f := createFlow(t, st)
	run := newRun(f)
	move := func(tx engine.Tx, key string, from engine.Status, to ...engine.Status) {
		for _, s := range to {
			_, err := tx.Transition(ctx, &engine.NodeTransition{RunID: run.ID, Key: key, From: from, Steps: []engine.Status{s}})
			require.NoError(t, err)
			from = s
		}
	}
	inTx(t, st, func(ctx context.Context, tx engine.Tx) error {
		require.NoError(t, tx.InsertRun(ctx, run))
		require.NoError(t, tx.InsertNodes(ctx, run.ID, []engine.NodeState{
			static("p", engine.NodeTypeWorker, 1), static("r", engine.NodeTypeWorker, 0),
			static("w", engine.NodeTypeUX, 0), static("x", engine.NodeTypeWorker, 0), static("done", engine.NodeTypeWorker, 0),
		}))
		move(tx, "r", engine.StatusPending, engine.StatusRunning)
		move(tx, "w", engine.StatusPending, engine.StatusRunning, engine.StatusWaitingForUser)
		move(tx, "x", engine.StatusPending, engine.StatusRunning, engine.StatusFailed)
		move(tx, "done", engine.StatusPending, engine.StatusRunning, engine.StatusCompleted)
		return tx.InsertDispatch(ctx, &engine.Dispatch{ID: uuid.NewString(), RunID: run.ID, Key: "r", Attempt: 1,
			URL: "http://worker.local/r", Payload: json.RawMessage(`{}`)})
	})
	inTx(t, st, func(ctx context.Context, tx engine.Tx) error {
		nodes, err := tx.CancelNodes(ctx, run.ID)
		require.NoError(t, err)
		require.ElementsMatch(t, []engine.CancelledNode{{Key: "p", NodeID: "p", Was: engine.StatusPending},
			{Key: "r", NodeID: "r", Was: engine.StatusRunning}, {Key: "w", NodeID: "w", Was: engine.StatusWaitingForUser},
			{Key: "x", NodeID: "x", Was: engine.StatusFailed}}, nodes, "each with the status it had")
		return nil
	})
	_, nodes, err := st.GetRun(ctx, run.ID, true)
	require.NoError(t, err)
	status := map[string]engine.Status{}
	for _, n := range nodes {
		status[n.Key] = n.Status
	}
	require.Equal(t, map[string]engine.Status{"p": engine.StatusCancelled, "r": engine.StatusCancelled,
		"w": engine.StatusCancelled, "x": engine.StatusCancelled, "done": engine.StatusCompleted}, status)
	var pending int
	require.NoError(t, st.Gorm().Raw(`SELECT count(*) FROM dispatches WHERE run_id = ? AND status = 'pending'`, run.ID).Row().Scan(&pending))
	require.Zero(t, pending, "undelivered dispatches are cancelled")
}

func TestListRunsPagination(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	// In one transaction every run has the same created_at (now() is the
	// transaction's start), so paging must break ties on id.
	st := storetest.TestTx(t)
	f := createFlow(t, st)
	other := createFlow(t, st)
	want := map[string]bool{}
	inTx(t, st, func(ctx context.Context, tx engine.Tx) error {
		for i := 0; i < 5; i++ {
			r := newRun(f)
			want[r.ID] = true
			require.NoError(t, tx.InsertRun(ctx, r))
		}
		return tx.InsertRun(ctx, newRun(other))
	})

	seen := map[string]bool{}
	cursor := ""
	var pages []int
	for {
		runs, next, err := st.ListRuns(ctx, store.RunFilter{FlowID: f.ID, Limit: 2, Cursor: cursor})
		require.NoError(t, err)
		pages = append(pages, len(runs))
		for _, r := range runs {
			require.Equal(t, f.ID, r.FlowID)
			require.False(t, seen[r.ID], "run %s listed twice", r.ID)
			seen[r.ID] = true
		}
		if next == "" {
			break
		}
		require.Less(t, len(pages), 10, "pagination does not end")
		cursor = next
	}
	require.Equal(t, []int{2, 2, 1}, pages)
	require.Equal(t, want, seen)

	runs, _, err := st.ListRuns(ctx, store.RunFilter{FlowID: f.ID, Status: string(engine.RunCompleted)})
	require.NoError(t, err)
	require.Empty(t, runs)

	_, _, err = st.ListRuns(ctx, store.RunFilter{Cursor: "!!not-a-cursor"})
	require.ErrorIs(t, err, engine.ErrInvalidRequest)
}

// TestUpdateFlowConcurrent saves several different graphs of one flow at
// once (two editors pressing save): every update must succeed and get its
// own version number.
func TestUpdateFlowConcurrent(t *testing.T) {
	t.Parallel()
	const n = 5
	ctx := context.Background()
	st, _ := storetest.IsolatedDB(t)
	f := createFlow(t, st)
	versions := make([]store.NewVersion, n)
	for i := range versions {
		g := strings.Replace(graphA, `"position":{"x":0,"y":0}`, fmt.Sprintf(`"position":{"x":%d,"y":0}`, i+1), 1)
		require.NotEqual(t, graphA, g)
		versions[i] = compileVersion(t, g, fmt.Sprintf("edit %d", i))
	}
	errs := make([]error, n)
	numbers := make([]int, n)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range versions {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			got, created, err := st.UpdateFlow(ctx, f.ID, store.UpdateFlowParams{Version: &versions[i]})
			errs[i] = err
			if err == nil && created {
				numbers[i] = got.VersionNumber
			}
		}()
	}
	close(start)
	wg.Wait()
	seen := map[int]bool{}
	for i, err := range errs {
		require.NoError(t, err, "update %d", i)
		require.NotZero(t, numbers[i], "update %d created no version", i)
		seen[numbers[i]] = true
	}
	require.Len(t, seen, n, "distinct version numbers: %v", numbers)
	vs, err := st.ListVersions(ctx, f.ID)
	require.NoError(t, err)
	require.Len(t, vs, n+1)
	for i, v := range vs {
		require.Equal(t, n+1-i, v.Number)
	}
}

// TestBulkWritesAcrossChunks writes more rows than one bulk statement
// carries (the store splits them) and checks every row arrived once, in
// order: node states, their start, outbox rows and events with consecutive
// sequence numbers.
func TestBulkWritesAcrossChunks(t *testing.T) {
	t.Parallel()
	const n = 4500 // more than two chunks
	st := storetest.TestTx(t)
	f := createFlow(t, st)
	run := newRun(f)
	inTx(t, st, func(ctx context.Context, tx engine.Tx) error {
		require.NoError(t, tx.InsertRun(ctx, run))
		nodes := make([]engine.NodeState, n)
		starts := make([]engine.BulkStart, n)
		ds := make([]*engine.Dispatch, n)
		evs := make([]engine.NewEvent, n)
		for i := range n {
			k := fmt.Sprintf("score_%d", i)
			nodes[i] = engine.NodeState{Key: k, NodeID: "score", Type: engine.NodeTypeWorker, Index: []int{i}}
			starts[i] = engine.BulkStart{Key: k, Input: json.RawMessage(fmt.Sprintf(`{"i":%d}`, i)), Status: engine.StatusRunning}
			ds[i] = &engine.Dispatch{ID: uuid.NewString(), RunID: run.ID, Key: k, Attempt: 1, URL: "http://w.invalid",
				Payload: json.RawMessage(`{}`), MaxTries: 1}
			evs[i] = engine.NewEvent{Type: engine.EventNodeStatus, Key: k, Payload: map[string]any{"i": i}}
		}
		require.NoError(t, tx.InsertNodes(ctx, run.ID, nodes))
		started, err := tx.BulkStart(ctx, run.ID, starts)
		require.NoError(t, err)
		require.Equal(t, n, started)
		require.NoError(t, tx.InsertDispatches(ctx, ds))
		require.NoError(t, tx.AppendEvents(ctx, run.ID, 1, evs))
		return nil
	})
	db := st.Gorm()
	var nodes, running, dispatches int
	require.NoError(t, db.Raw(`SELECT count(*), count(*) FILTER (WHERE status = 'running' AND (input->>'i')::int = idx[1])
		FROM node_states WHERE run_id = ?`, run.ID).Row().Scan(&nodes, &running))
	require.Equal(t, n, nodes)
	require.Equal(t, n, running)
	require.NoError(t, db.Raw(`SELECT count(DISTINCT key) FROM dispatches WHERE run_id = ?`, run.ID).Row().Scan(&dispatches))
	require.Equal(t, n, dispatches)
	var events, minSeq, maxSeq, inOrder int
	require.NoError(t, db.Raw(`SELECT count(*), min(seq), max(seq), count(*) FILTER (WHERE (payload->>'i')::int = seq - 1)
		FROM run_events WHERE run_id = ?`, run.ID).Row().Scan(&events, &minSeq, &maxSeq, &inOrder))
	require.Equal(t, []int{n, 1, n, n}, []int{events, minSeq, maxSeq, inOrder})
}

// TestSaveRunWithEvents: events and the run row in one statement, and the
// two-statement path for more events than one chunk.
func TestSaveRunWithEvents(t *testing.T) {
	t.Parallel()
	for _, n := range []int{0, 3, 2500} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			t.Parallel()
			st := storetest.TestTx(t)
			f := createFlow(t, st)
			run := newRun(f)
			evs := make([]engine.NewEvent, n)
			var saved *engine.Run
			for i := range evs {
				evs[i] = engine.NewEvent{Type: engine.EventNodeStatus, Key: fmt.Sprintf("k%d", i), Payload: map[string]any{"i": i}}
			}
			inTx(t, st, func(ctx context.Context, tx engine.Tx) error {
				require.NoError(t, tx.InsertRun(ctx, run))
				r, err := tx.LockRun(ctx, run.ID)
				require.NoError(t, err)
				r.EventSeq, r.ActiveNodes = int64(n), 7
				require.NoError(t, tx.SaveRunWithEvents(ctx, engine.RunSave{Run: r, FirstSeq: 1, Events: evs}))
				saved = r
				return nil
			})
			require.False(t, saved.UpdatedAt.IsZero())
			var seq, active, events, inOrder int
			require.NoError(t, st.Gorm().Raw(`SELECT event_seq, active_nodes FROM runs WHERE id = ?`, run.ID).Row().Scan(&seq, &active))
			require.Equal(t, []int{n, 7}, []int{seq, active})
			require.NoError(t, st.Gorm().Raw(`SELECT count(*), count(*) FILTER (WHERE (payload->>'i')::int = seq - 1 AND key = 'k' || (seq - 1))
				FROM run_events WHERE run_id = ?`, run.ID).Row().Scan(&events, &inOrder))
			require.Equal(t, []int{n, n}, []int{events, inOrder})
		})
	}
}

// TestDeletingRunsDeletesTheirRows: node states, outbox rows and events
// have no foreign keys to runs (migration 00003); deleting runs deletes
// their rows all the same, and no other run's.
func TestDeletingRunsDeletesTheirRows(t *testing.T) {
	t.Parallel()
	st := storetest.Store(t)
	f := createFlow(t, st)
	gone, kept := newRun(f), newRun(f)
	for _, r := range []*engine.Run{gone, kept} {
		inTx(t, st, func(ctx context.Context, tx engine.Tx) error {
			require.NoError(t, tx.InsertRun(ctx, r))
			require.NoError(t, tx.InsertNodes(ctx, r.ID, []engine.NodeState{{Key: "a", NodeID: "a",
				Type: engine.NodeTypeWorker, Index: []int{}, Status: engine.StatusPending}}))
			require.NoError(t, tx.InsertDispatch(ctx, &engine.Dispatch{ID: uuid.NewString(), RunID: r.ID, Key: "a",
				Attempt: 1, URL: "http://127.0.0.1:1/", Payload: []byte(`{}`), MaxTries: 1}))
			r.EventSeq = 1
			return tx.SaveRunWithEvents(ctx, engine.RunSave{Run: r, FirstSeq: 1,
				Events: []engine.NewEvent{{Type: engine.EventRunStarted}}})
		})
	}
	count := func(runID string) int {
		var n int
		require.NoError(t, st.Gorm().Raw(`SELECT (SELECT count(*) FROM node_states WHERE run_id = ?)
			+ (SELECT count(*) FROM dispatches WHERE run_id = ?) + (SELECT count(*) FROM run_events WHERE run_id = ?)`,
			runID, runID, runID).Row().Scan(&n))
		return n
	}
	require.Equal(t, 3, count(gone.ID))
	require.NoError(t, st.Gorm().Exec(`DELETE FROM runs WHERE id = ?`, gone.ID).Error)
	require.Zero(t, count(gone.ID))
	require.Equal(t, 3, count(kept.ID))
}

// TestClaimDueRetiresEndedAttempts: a claim returns the due rows whose
// attempt is still running, marked as being sent (first try, leased), and
// retires (cancels) the due rows whose attempt ended meanwhile, without
// returning them; rows not yet due stay as they are.
func TestClaimDueRetiresEndedAttempts(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st, _ := storetest.IsolatedDB(t)
	f := createFlow(t, st)
	r := newRun(f)
	ids := map[string]string{"live": uuid.NewString(), "ended": uuid.NewString(), "later": uuid.NewString()}
	inTx(t, st, func(ctx context.Context, tx engine.Tx) error {
		require.NoError(t, tx.InsertRun(ctx, r))
		var nodes []engine.NodeState
		for key := range ids {
			nodes = append(nodes, engine.NodeState{Key: key, NodeID: key, Type: engine.NodeTypeWorker, Index: []int{}, Status: engine.StatusPending})
		}
		require.NoError(t, tx.InsertNodes(ctx, r.ID, nodes))
		for key, id := range ids {
			d := &engine.Dispatch{ID: id, RunID: r.ID, Key: key, Attempt: 1, URL: "http://127.0.0.1:1/" + key,
				Payload: []byte(`{"k":"` + key + `"}`), MaxTries: 3}
			if key == "later" {
				d.DelayMs = 60_000
			}
			require.NoError(t, tx.InsertDispatch(ctx, d))
		}
		return nil
	})

	// The nodes as the engine leaves them: two attempts running, one over.
	require.NoError(t, st.Gorm().Exec(`UPDATE node_states SET attempt = 1,
		status = CASE WHEN key = 'ended' THEN 'completed' ELSE 'running' END WHERE run_id = ?`, r.ID).Error)
	got, err := st.ClaimDue(ctx, 10, time.Minute)
	require.NoError(t, err)
	require.Len(t, got, 1)
	require.Equal(t, ids["live"], got[0].ID)
	require.Equal(t, "live", got[0].Key)
	require.Equal(t, 1, got[0].Tries)
	require.Equal(t, 3, got[0].MaxTries)
	require.JSONEq(t, `{"k":"live"}`, string(got[0].Payload))

	type row struct {
		Status string
		Tries  int
		Leased bool
	}
	state := func(id string) row {
		var r row
		require.NoError(t, st.Gorm().Raw(`SELECT status, tries, coalesce(locked_until > now() + interval '50 seconds', false)
			FROM dispatches WHERE id = ?`, id).Row().Scan(&r.Status, &r.Tries, &r.Leased))
		return r
	}
	require.Equal(t, row{Status: "sending", Tries: 1, Leased: true}, state(ids["live"]))
	require.Equal(t, row{Status: "cancelled", Tries: 0}, state(ids["ended"]))
	require.Equal(t, row{Status: "pending", Tries: 0}, state(ids["later"]))

	reclaimed, err := st.ClaimDue(ctx, 10, time.Minute)
	require.NoError(t, err)
	require.Empty(t, reclaimed, "a leased row is not claimed reclaimed before its lease ends")
}

// TestInterpretConnectionLoss: errors of a connection lost without the
// server's word — a crash or kill of Postgres quits its backends without
// the FATAL a shutdown sends, and pgx reports an unexpected EOF, often
// wrapped in its own errors (the outage test's crash saw "error
// preprocessing batch (prepare): unexpected EOF") — are the database
// being unavailable (503), not an internal error (500).
func TestInterpretConnectionLoss(t *testing.T) {
	t.Parallel()
	for _, err := range []error{
		fmt.Errorf("error preprocessing batch (prepare): %w", io.ErrUnexpectedEOF),
		fmt.Errorf("error reading: %w", io.EOF),
		fmt.Errorf("error in a queued statement: %w", pgconn.ErrConnClosed),
	} {
		got := store.InterpretError(err)
		require.ErrorIs(t, got, engine.ErrUnavailable, "%v", err)
		require.ErrorIs(t, got, err, "the cause is kept")
	}
	require.NotErrorIs(t, store.InterpretError(errors.New("some other failure")), engine.ErrUnavailable)
}

// A server that refuses a write as read-only — a standby a connection
// reached, or a primary demoted under it during a failover — means the
// database is unavailable (503, tried again), and the connection is
// dropped: the next write dials again (with target_session_attrs=read-write
// it would find the new primary). Here the one connection of the pool is
// made read-only; without dropping it, every later write through it failed.
func TestReadOnlyServerIsUnavailableAndDropped(t *testing.T) {
	t.Parallel()
	_, u := storetest.IsolatedDB(t)
	ctx := context.Background()
	writes := map[string]func(st *store.Store) error{
		"gorm": func(st *store.Store) error {
			_, err := st.CreateBoard(ctx, "", uuid.NewString(), "read-only", nil)
			return err
		},
		"pipe": func(st *store.Store) error {
			return st.InTx(ctx, func(ctx context.Context, tx engine.Tx) error {
				return tx.SetRunVersion(ctx, uuid.NewString(), uuid.NewString())
			})
		},
	}
	for name, write := range writes {
		st, err := store.Open(ctx, u, store.Options{MaxOpenConns: 1})
		require.NoError(t, err)
		defer st.Close()
		db, err := st.SQLDB()
		require.NoError(t, err)
		_, err = db.ExecContext(ctx, `SET SESSION default_transaction_read_only = on`)
		require.NoError(t, err)
		err = write(st)
		require.ErrorIs(t, err, engine.ErrUnavailable, "%s: %v", name, err)
		require.NoError(t, write(st), "%s: the read-only connection was dropped, the next one takes writes", name)
	}
}

// TestMarkRequestSent: the try of a request that went out is recorded
// while its claim holds the row, and a claim after the lease ran out
// sees it (SentTries) — a row claimed and dropped unsent comes back with
// none, to be sent; a claim taken over cannot record a send.
func TestMarkRequestSent(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st, _ := storetest.IsolatedDB(t)
	f := createFlow(t, st)
	r := newRun(f)
	id := uuid.NewString()
	inTx(t, st, func(ctx context.Context, tx engine.Tx) error {
		require.NoError(t, tx.InsertRun(ctx, r))
		require.NoError(t, tx.InsertNodes(ctx, r.ID, []engine.NodeState{{Key: "h", NodeID: "h", Type: engine.NodeTypeHTTP,
			Index: []int{}, Status: engine.StatusPending}}))
		return tx.InsertDispatch(ctx, &engine.Dispatch{ID: id, RunID: r.ID, Key: "h", Attempt: 1, URL: "http://127.0.0.1:1/x",
			Payload: []byte(`{}`), MaxTries: 1, Request: &engine.HTTPRequest{Method: "POST"}})
	})
	require.NoError(t, st.Gorm().Exec(`UPDATE node_states SET attempt = 1, status = 'running' WHERE run_id = ?`, r.ID).Error)
	claim := func() engine.ClaimedDispatch {
		t.Helper()
		got, err := st.ClaimDue(ctx, 10, time.Minute)
		require.NoError(t, err)
		require.Len(t, got, 1)
		return got[0]
	}
	first := claim()
	require.Equal(t, 0, first.SentTries)
	storetest.AdvanceDueTimes(t, st, 2*time.Minute) // the lease runs out, unsent
	second := claim()
	require.Equal(t, 2, second.Tries)
	require.Equal(t, 0, second.SentTries, "dropped unsent: to be sent")
	sent, err := st.MarkRequestSent(ctx, first.ID, first.Tries)
	require.NoError(t, err)
	require.False(t, sent, "the first claim was taken over")
	sent, err = st.MarkRequestSent(ctx, second.ID, second.Tries)
	require.NoError(t, err)
	require.True(t, sent)
	storetest.AdvanceDueTimes(t, st, 2*time.Minute)
	third := claim()
	require.Equal(t, 2, third.SentTries, "sent by the second claim: its outcome is unknown")
}

// TestAddTreeNodesNeverWaits: a run tree's count is kept on its root's
// run_trees row, but no transaction waits for that row. While one
// transaction of the tree holds it (a child fanning out, which then
// locks its parent), another (the parent starting more children) counts
// beside it and does not block — they would deadlock otherwise; the next
// holder folds that count in, and the bound holds on the total. Each count
// says what room its transaction has left, and what a transaction then
// adds within it (GrowTreeLater) goes where its count went.
func TestAddTreeNodesNeverWaits(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st, _ := storetest.IsolatedDB(t)
	f := createFlow(t, st)
	root, child := newRun(f), newRun(f)
	child.ParentRunID = &root.ID
	key := "s"
	child.ParentKey = &key
	inTx(t, st, func(ctx context.Context, tx engine.Tx) error {
		require.NoError(t, tx.InsertRun(ctx, root))
		c, err := tx.AddTreeNodes(ctx, root.ID, 10, 100)
		require.NoError(t, err)
		require.Equal(t, engine.TreeCount{Added: true, Root: root.ID, Held: true, Room: 90}, c)
		return tx.InsertRun(ctx, child)
	})
	held, release := make(chan struct{}), make(chan struct{})
	done := make(chan error, 1)
	go func() {
		done <- st.InTx(ctx, func(ctx context.Context, tx engine.Tx) error {
			c, err := tx.AddTreeNodes(ctx, child.ID, 20, 100) // holds the row: 30
			if err != nil || c != (engine.TreeCount{Added: true, Root: root.ID, Held: true, Room: 70}) {
				return fmt.Errorf("child's count: %+v %w", c, err)
			}
			close(held)
			<-release
			return nil
		})
	}()
	<-held
	// The root's transaction, meanwhile: counts beside the held row, and
	// refuses what the committed count and its own would pass.
	wctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	inTx(t, st, func(_ context.Context, tx engine.Tx) error {
		c, err := tx.AddTreeNodes(wctx, root.ID, 50, 100) // 10 committed + 50
		require.NoError(t, err, "it did not wait")
		require.Equal(t, engine.TreeCount{Added: true, Root: root.ID}, c, "beside the row, not holding it")
		c, err = tx.AddTreeNodes(wctx, root.ID, 50, 100) // 60 + 50 > 100, its own delta seen
		require.NoError(t, err)
		require.Equal(t, engine.TreeCount{Root: root.ID}, c)
		return nil
	})
	close(release)
	require.NoError(t, <-done)
	// The next holder folds the delta in: 10 + 20 + 50 = 80.
	inTx(t, st, func(ctx context.Context, tx engine.Tx) error {
		c, err := tx.AddTreeNodes(ctx, child.ID, 21, 100)
		require.NoError(t, err)
		require.Equal(t, engine.TreeCount{Root: root.ID, Held: true, Room: 20}, c, "80 + 21 passes 100")
		c, err = tx.AddTreeNodes(ctx, child.ID, 15, 100)
		require.NoError(t, err)
		require.Equal(t, engine.TreeCount{Added: true, Root: root.ID, Held: true, Room: 5}, c)
		// What the transaction then decides within that room, on the row
		// it holds.
		return tx.GrowTreeLater(ctx, c, 5)
	})
	var nodes, deltas int64
	require.NoError(t, st.Gorm().Raw(`SELECT nodes, (SELECT count(*) FROM run_tree_deltas) FROM run_trees WHERE root_run_id = ?`, root.ID).
		Row().Scan(&nodes, &deltas))
	require.Equal(t, int64(100), nodes)
	require.Equal(t, int64(0), deltas)

	// Not holding the row, what a transaction decides within its room
	// goes beside it, and the next holder folds it in.
	inTx(t, st, func(ctx context.Context, tx engine.Tx) error {
		return tx.GrowTreeLater(ctx, engine.TreeCount{Added: true, Root: root.ID}, 7)
	})
	inTx(t, st, func(ctx context.Context, tx engine.Tx) error {
		c, err := tx.AddTreeNodes(ctx, root.ID, 1, 200)
		require.NoError(t, err)
		require.Equal(t, engine.TreeCount{Added: true, Root: root.ID, Held: true, Room: 92}, c, "100 + 7 + 1 of 200")
		return nil
	})
}
