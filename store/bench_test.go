package store_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/google/uuid"

	"github.com/stitchd/stitchd/engine"
	"github.com/stitchd/stitchd/store/storetest"
)

// BenchmarkCallbackTransaction measures the store side of one worker
// completion: lock the run, compare-and-set the node, count down its
// successor, append two events and save the run — one committed
// transaction per op.
func BenchmarkCallbackTransaction(b *testing.B) {
	st, _ := storetest.IsolatedDB(b)
	ctx := context.Background()
	f, err := st.CreateFlow(ctx, "", uuid.NewString(), "bench", nil, benchVersion(b))
	if err != nil {
		b.Fatal(err)
	}
	run := &engine.Run{ID: uuid.NewString(), FlowID: f.ID, FlowVersionID: f.VersionID, Status: engine.RunRunning,
		Input: json.RawMessage(`{}`), TerminalsLeft: 1}
	n := b.N
	nodes := make([]engine.NodeState, 0, n+1)
	for i := 0; i < n; i++ {
		nodes = append(nodes, engine.NodeState{Key: fmt.Sprintf("w_%d", i), NodeID: "w", Type: engine.NodeTypeWorker, Index: []int{i}})
	}
	nodes = append(nodes, engine.NodeState{Key: "c", NodeID: "c", Type: engine.NodeTypeCollector, Index: []int{}, PendingParents: n + 1})
	if err := st.InTx(ctx, func(ctx context.Context, tx engine.Tx) error {
		if err := tx.InsertRun(ctx, run); err != nil {
			return err
		}
		return tx.InsertNodes(ctx, run.ID, nodes)
	}); err != nil {
		b.Fatal(err)
	}
	out := json.RawMessage(`{"score":7}`)
	b.ResetTimer()
	for i := 0; i < n; i++ {
		key := fmt.Sprintf("w_%d", i)
		err := st.InTx(ctx, func(ctx context.Context, tx engine.Tx) error {
			r, err := tx.LockRun(ctx, run.ID)
			if err != nil {
				return err
			}
			if _, err := tx.Transition(ctx, &engine.NodeTransition{RunID: run.ID, Key: key, From: engine.StatusPending,
				Steps: []engine.Status{engine.StatusRunning, engine.StatusCompleted}, NewAttempt: true, Output: out}); err != nil {
				return err
			}
			if _, err := tx.AddPending(ctx, run.ID, []string{"c"}, -1); err != nil {
				return err
			}
			if err := tx.AppendEvents(ctx, run.ID, r.EventSeq+1, []engine.NewEvent{{Type: "node.status", Key: key}, {Type: "node.status", Key: key}}); err != nil {
				return err
			}
			r.EventSeq += 2
			return tx.SaveRun(ctx, r)
		})
		if err != nil {
			b.Fatal(err)
		}
	}
}

func benchVersion(b *testing.B) storeNewVersion {
	b.Helper()
	g := `{"nodes":[{"id":"s","type":"Splitter","data":{"arrayPath":"xs"}},{"id":"w","type":"Worker","data":{"webhookUrl":"http://127.0.0.1:1/w"}},` +
		`{"id":"c","type":"Collector"}],"edges":[{"id":"e1","source":"s","target":"w"},{"id":"e2","source":"w","target":"c"}]}`
	return compileVersionTB(b, g)
}
