package engine_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/stitchd/stitchd/engine"
	"github.com/stitchd/stitchd/handlers"
	"github.com/stitchd/stitchd/internal/testkit"
	"github.com/stitchd/stitchd/store"
	"github.com/stitchd/stitchd/store/storetest"
)

// The engine's rules, tested beside them: an engine on the Inline
// committer (one operation, one transaction) over a test transaction of
// the package database (storetest.TestTx), rolled back when the test ends.
// Each operation is one call; what it wrote is read back at once.

func TestMain(m *testing.M) { storetest.Main(m) }

type rig struct {
	t   *testing.T
	st  *store.Store
	eng *engine.Engine
}

func newRig(t *testing.T, opts ...func(*engine.Config)) *rig {
	t.Helper()
	st := storetest.TestTx(t)
	cfg := engine.Config{Store: st, Clock: &testkit.Clock{}, Committer: engine.CommitInline}
	for _, o := range opts {
		o(&cfg)
	}
	return &rig{t: t, st: st, eng: testkit.Engine(t, cfg)}
}

// start creates a flow of graph and starts a run of it with input.
func (r *rig) start(graph, input string) *engine.Run {
	r.t.Helper()
	ctx := context.Background()
	flow, err := r.st.CreateFlow(ctx, "", uuid.NewString(), "rules", nil, testkit.Version(r.t, graph))
	require.NoError(r.t, err)
	run, created, err := r.eng.StartRun(ctx, engine.StartRunParams{FlowID: flow.ID, VersionID: flow.VersionID, Input: json.RawMessage(input)})
	require.NoError(r.t, err)
	require.True(r.t, created)
	return run
}

// nodes returns the run and its nodes by key.
func (r *rig) nodes(runID string) (*engine.Run, map[string]engine.NodeState) {
	r.t.Helper()
	run, ns, err := r.st.GetRun(context.Background(), runID, true)
	require.NoError(r.t, err)
	byKey := make(map[string]engine.NodeState, len(ns))
	for _, n := range ns {
		byKey[n.Key] = n
	}
	return run, byKey
}

// outbox returns the keys (key#attempt) the run's outbox rows were written for.
func (r *rig) outbox(runID string) []string {
	r.t.Helper()
	var keys []string
	require.NoError(r.t, r.st.Gorm().Raw(`SELECT key || '#' || attempt FROM dispatches WHERE run_id = ? ORDER BY key, attempt`, runID).
		Scan(&keys).Error)
	return keys
}

func (r *rig) callback(runID, key string, attempt int, status engine.Status, output string) error {
	r.t.Helper()
	return r.eng.HandleCallback(context.Background(), engine.CallbackParams{RunID: runID, Key: key, Attempt: attempt,
		Status: status, Output: json.RawMessage(output), Error: "boom"})
}

const chain = `{"nodes":[
	{"id":"a","type":"Worker","data":{"webhookUrl":"http://worker.invalid/a"}},
	{"id":"b","type":"Worker","data":{"webhookUrl":"http://worker.invalid/b"}}],
	"edges":[{"id":"e1","source":"a","target":"b"}]}`

// TestChainStepByStep: a completion fires its successor in the same
// transaction; a repeated callback changes nothing; a stale or conflicting
// one is refused; the last completion settles the run.
func TestChainStepByStep(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	run := r.start(chain, `{"lead":"ada"}`)
	_, ns := r.nodes(run.ID)
	require.Equal(t, engine.StatusRunning, ns["a"].Status)
	require.Equal(t, engine.StatusPending, ns["b"].Status)
	require.Equal(t, []string{"a#1"}, r.outbox(run.ID), "the entry node's outbox row commits with the run")

	require.NoError(t, r.callback(run.ID, "a", 1, engine.StatusCompleted, `{"score":7}`))
	_, ns = r.nodes(run.ID)
	require.Equal(t, engine.StatusCompleted, ns["a"].Status)
	require.Equal(t, engine.StatusRunning, ns["b"].Status, "readiness decided in the completing transaction")
	require.JSONEq(t, `{"score":7}`, string(ns["b"].Input))
	require.Equal(t, []string{"a#1", "b#1"}, r.outbox(run.ID))

	require.NoError(t, r.callback(run.ID, "a", 1, engine.StatusCompleted, `{"score":7}`), "a repeated callback is answered as the first")
	require.ErrorIs(t, r.callback(run.ID, "a", 1, engine.StatusCompleted, `{"score":8}`), engine.ErrConflict, "a different result")
	require.ErrorIs(t, r.callback(run.ID, "b", 2, engine.StatusCompleted, `{}`), engine.ErrConflict, "another attempt")
	require.Equal(t, []string{"a#1", "b#1"}, r.outbox(run.ID), "refused callbacks wrote nothing")

	require.NoError(t, r.callback(run.ID, "b", 1, engine.StatusCompleted, `{"done":true}`))
	got, _ := r.nodes(run.ID)
	require.Equal(t, engine.RunCompleted, got.Status)
	require.JSONEq(t, `{"done":true}`, string(got.Output))
}

// TestFailureRetriesThenFailsTheRun: a failed attempt with retries left is
// dispatched again (a new outbox row, delayed); the last one fails the node
// and the run.
func TestFailureRetriesThenFailsTheRun(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	graph := `{"nodes":[{"id":"a","type":"Worker","data":{"webhookUrl":"http://worker.invalid/a",
		"retry":{"maxAttempts":2,"initialDelayMs":1000,"maxDelayMs":1000}}}],"edges":[]}`
	run := r.start(graph, `{}`)
	require.NoError(t, r.callback(run.ID, "a", 1, engine.StatusFailed, ""))
	_, ns := r.nodes(run.ID)
	require.Equal(t, engine.StatusRunning, ns["a"].Status)
	require.Equal(t, 2, ns["a"].Attempt)
	require.Equal(t, []string{"a#1", "a#2"}, r.outbox(run.ID))

	require.NoError(t, r.callback(run.ID, "a", 2, engine.StatusFailed, ""))
	got, ns := r.nodes(run.ID)
	require.Equal(t, engine.StatusFailed, ns["a"].Status)
	require.Equal(t, engine.RunFailed, got.Status)
}

// TestFanOutCollectsInOrder: a Splitter's items run as indexed paths; the
// Collector fires once, when the last arrives, with outputs in item order
// whatever the order of completion.
func TestFanOutCollectsInOrder(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	graph := `{"nodes":[{"id":"split","type":"Splitter","data":{"arrayPath":"items"}},
		{"id":"score","type":"Worker","data":{"webhookUrl":"http://worker.invalid/score"}},
		{"id":"merge","type":"Collector","data":{}}],
		"edges":[{"id":"e1","source":"split","target":"score"},{"id":"e2","source":"score","target":"merge"}]}`
	run := r.start(graph, `{"items":["x","y","z"]}`)
	require.Equal(t, []string{"score_0#1", "score_1#1", "score_2#1"}, r.outbox(run.ID))
	for _, i := range []int{2, 0} {
		require.NoError(t, r.callback(run.ID, fmt.Sprintf("score_%d", i), 1, engine.StatusCompleted, fmt.Sprintf(`{"i":%d}`, i)))
		_, ns := r.nodes(run.ID)
		require.Equal(t, engine.StatusPending, ns["merge"].Status, "not before the last item")
	}
	require.NoError(t, r.callback(run.ID, "score_1", 1, engine.StatusCompleted, `{"i":1}`))
	got, ns := r.nodes(run.ID)
	require.Equal(t, engine.StatusCompleted, ns["merge"].Status)
	require.JSONEq(t, `[{"i":0},{"i":1},{"i":2}]`, string(ns["merge"].Output))
	require.Equal(t, engine.RunCompleted, got.Status)
}

// TestClaimedRowsComeBackAsValues: the outbox rows a commit claimed for
// this process are handed on after it as values (Claims), no more than
// the room the dispatcher gave before the transaction; the rest are
// written unclaimed, for pollers.
func TestClaimedRowsComeBackAsValues(t *testing.T) {
	t.Parallel()
	claims := engine.NewClaims()
	claims.SetRoom(2)
	r := newRig(t, func(c *engine.Config) { c.Claims, c.ClaimLease = claims, time.Minute })
	graph := `{"nodes":[{"id":"split","type":"Splitter","data":{"arrayPath":"items"}},
		{"id":"score","type":"Worker","data":{"webhookUrl":"http://worker.invalid/score"}},
		{"id":"merge","type":"Collector","data":{}}],
		"edges":[{"id":"e1","source":"split","target":"score"},{"id":"e2","source":"score","target":"merge"}]}`
	run := r.start(graph, `{"items":[1,2,3]}`)
	require.Zero(t, claims.Room(), "the rows waiting for the dispatcher count against its room")
	got := claims.Take()
	require.Len(t, got, 2, "claimed within the room")
	for _, c := range got {
		require.Equal(t, run.ID, c.RunID)
		require.Equal(t, 1, c.Attempt)
		require.Contains(t, string(c.Payload), "http://stitchd.invalid/cb/"+run.ID+"/"+c.Key+"/1")
	}
	var claimed, unclaimed int
	require.NoError(t, r.st.Gorm().Raw(`SELECT count(*) FILTER (WHERE locked_until IS NOT NULL), count(*) FILTER (WHERE locked_until IS NULL)
		FROM dispatches WHERE run_id = ?`, run.ID).Row().Scan(&claimed, &unclaimed))
	require.Equal(t, 2, claimed)
	require.Equal(t, 1, unclaimed)
	require.Empty(t, claims.Take(), "taken once")
}

// TestStoppedEngineRefuses: before Start and after Stop an operation is
// refused with ErrUnavailable and writes nothing; Start and Stop are
// idempotent.
func TestStoppedEngineRefuses(t *testing.T) {
	t.Parallel()
	st := storetest.TestTx(t)
	eng, err := engine.New(engine.Config{Store: st, Types: handlers.Types(handlers.Options{}), Minter: testkit.Minter{},
		NewID: uuid.NewString, Committer: engine.CommitInline, Logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, err)
	ctx := context.Background()
	flow, err := st.CreateFlow(ctx, "", uuid.NewString(), "stopped", nil, testkit.Version(t, chain))
	require.NoError(t, err)
	params := engine.StartRunParams{FlowID: flow.ID, VersionID: flow.VersionID, Input: json.RawMessage(`{}`)}
	_, _, err = eng.StartRun(ctx, params)
	require.ErrorIs(t, err, engine.ErrUnavailable, "not started")

	require.NoError(t, eng.Start(ctx))
	require.NoError(t, eng.Start(ctx))
	run, _, err := eng.StartRun(ctx, params)
	require.NoError(t, err)
	eng.Stop()
	eng.Stop()
	err = eng.HandleCallback(ctx, engine.CallbackParams{RunID: run.ID, Key: "a", Attempt: 1, Status: engine.StatusCompleted, Output: json.RawMessage(`{}`)})
	require.ErrorIs(t, err, engine.ErrUnavailable, "stopped")
	_, ns, err := st.GetRun(ctx, run.ID, true)
	require.NoError(t, err)
	for _, n := range ns {
		if n.Key == "a" {
			require.Equal(t, engine.StatusRunning, n.Status, "the refused callback wrote nothing")
		}
	}
	_, err = engine.New(engine.Config{Store: st, Types: handlers.Types(handlers.Options{}), Minter: testkit.Minter{},
		NewID: uuid.NewString, Committer: "batched"})
	require.ErrorContains(t, err, `unknown committer "batched"`)
}

// TestStartStopWhileSubmitting: operations submitted from many goroutines
// while the engine is started and stopped over and over are each either
// committed or refused with ErrUnavailable — none hangs, none is lost,
// and a refused one wrote nothing. Grouped committer, its own database.
func TestStartStopWhileSubmitting(t *testing.T) {
	t.Parallel()
	st, _ := storetest.IsolatedDB(t)
	eng, err := engine.New(engine.Config{Store: st, Types: handlers.Types(handlers.Options{}), Minter: testkit.Minter{},
		NewID: uuid.NewString, Logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, err)
	ctx := context.Background()
	flow, err := st.CreateFlow(ctx, "", uuid.NewString(), "storm", nil,
		testkit.Version(t, `{"nodes":[{"id":"x","type":"Condition","data":{}}],"edges":[]}`))
	require.NoError(t, err)
	require.NoError(t, eng.Start(ctx))

	const submitters, each = 16, 40
	var committed, refused atomic.Int64
	var wg sync.WaitGroup
	for range submitters {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range each {
				_, _, err := eng.StartRun(ctx, engine.StartRunParams{FlowID: flow.ID, VersionID: flow.VersionID, Input: json.RawMessage(`{}`)})
				switch {
				case err == nil:
					committed.Add(1)
				case errors.Is(err, engine.ErrUnavailable):
					refused.Add(1)
				default:
					t.Errorf("unexpected error: %v", err)
					return
				}
			}
		}()
	}
	stormDone := make(chan struct{})
	go func() {
		defer close(stormDone)
		for i := range 200 {
			if i%2 == 0 {
				eng.Stop()
			} else {
				assert.NoError(t, eng.Start(ctx))
			}
		}
		assert.NoError(t, eng.Start(ctx))
	}()
	wg.Wait()
	<-stormDone
	eng.Stop()
	require.Equal(t, int64(submitters*each), committed.Load()+refused.Load())
	require.Positive(t, committed.Load())
	var runs int64
	require.NoError(t, st.Gorm().Raw(`SELECT count(*) FROM runs WHERE status = 'completed'`).Row().Scan(&runs))
	require.Equal(t, committed.Load(), runs, "every committed operation is in the database, no refused one is")
	require.Zero(t, eng.Waiting())
}

// TestStopRefusesWhatAnOperationUnderWaySubmits: an operation still under
// way when Stop begins (here its commit hook is running) that submits
// another has it refused with ErrUnavailable, and Stop returns once the
// first is answered — rather than the two waiting for each other.
func TestStopRefusesWhatAnOperationUnderWaySubmits(t *testing.T) {
	t.Parallel()
	st := storetest.TestTx(t)
	ctx := context.Background()
	flow, err := st.CreateFlow(ctx, "", uuid.NewString(), "nested", nil,
		testkit.Version(t, `{"nodes":[{"id":"x","type":"Condition","data":{}}],"edges":[]}`))
	require.NoError(t, err)
	params := engine.StartRunParams{FlowID: flow.ID, VersionID: flow.VersionID, Input: json.RawMessage(`{}`)}
	var eng *engine.Engine
	var first atomic.Bool
	inHook := make(chan struct{})
	nested := make(chan error, 1)
	eng = testkit.Engine(t, engine.Config{Store: st, Committer: engine.CommitInline, OnCommit: func(engine.CommitInfo) {
		if !first.CompareAndSwap(false, true) {
			return
		}
		close(inHook)
		// Submitted again until Stop has closed the gate.
		for {
			_, _, err := eng.StartRun(ctx, params)
			if err != nil {
				nested <- err
				return
			}
		}
	}})
	outer := make(chan error, 1)
	go func() { _, _, err := eng.StartRun(ctx, params); outer <- err }()
	<-inHook
	stopped := make(chan struct{})
	go func() { eng.Stop(); close(stopped) }()
	select {
	case <-stopped:
	case <-time.After(30 * time.Second):
		t.Fatal("Stop waits for an operation that waits for Stop")
	}
	require.ErrorIs(t, <-nested, engine.ErrUnavailable)
	require.NoError(t, <-outer, "the operation under way was answered")
}

// TestLogOncePerInstance: a Log node in a fan-out writes one node.log a
// fired instance, before the instance's completion, though the first
// fires of a fan-out's instances are tried before their rows exist and
// fire again; a Log of the chain logs its message with its input.
func TestLogOncePerInstance(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	graph := `{"nodes":[{"id":"split","type":"Splitter","data":{"arrayPath":"items"}},
		{"id":"note","type":"Log","data":{"message":"item"}},
		{"id":"merge","type":"Collector","data":{}},
		{"id":"done","type":"log","data":{"message":"all in"}}],
		"edges":[{"id":"e1","source":"split","target":"note"},{"id":"e2","source":"note","target":"merge"},
			{"id":"e3","source":"merge","target":"done"}]}`
	run := r.start(graph, `{"items":["x","y","z"]}`)
	got, ns := r.nodes(run.ID)
	require.Equal(t, engine.RunCompleted, got.Status)
	require.JSONEq(t, `["x","y","z"]`, string(ns["merge"].Output))
	evs, err := r.st.RunEvents(context.Background(), run.ID, 0, 1000)
	require.NoError(t, err)
	logs := map[string]string{}
	completedAfterLog := 0
	for i, ev := range evs {
		if ev.Type != engine.EventNodeLog {
			continue
		}
		_, dup := logs[ev.Key]
		require.False(t, dup, "one node.log for %s", ev.Key)
		logs[ev.Key] = string(ev.Payload)
		for j, other := range evs {
			if other.Type == engine.EventNodeStatus && other.Key == ev.Key && strings.Contains(string(other.Payload), `"completed"`) {
				require.Greater(t, j, i, "%s completed before its log", ev.Key)
				completedAfterLog++
			}
		}
	}
	require.Len(t, logs, 4, "%v", logs)
	require.JSONEq(t, `{"node_id":"note","message":"item","data":"y"}`, logs["note_1"])
	require.JSONEq(t, `{"node_id":"done","message":"all in","data":{"merge":["x","y","z"]}}`, logs["done"])
	require.Equal(t, 4, completedAfterLog, "each log comes before its node's completion")
}

// TestStepsAndItemInExpressions: an expression reads an earlier step's
// output though the step between replaced the payload (steps.<id>), in a
// Transform and in an edge condition; inside a fan-out, the same item's
// instance of a step of the region, and the item itself.
func TestStepsAndItemInExpressions(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	graph := `{"nodes":[
		{"id":"req","type":"Transform","data":{"expression":"{\"amount\": run.input.amount, \"items\": [\"a\",\"b\",\"c\"]}"}},
		{"id":"check","type":"Transform","data":{"expression":"{\"status\": 200}"}},
		{"id":"big","type":"Transform","data":{"expression":"{\"double\": steps.req.output.amount * 2, \"status\": input.status, \"checked\": steps.check.input.amount}"}},
		{"id":"small","type":"Transform","data":{"expression":"\"small\""}},
		{"id":"split","type":"Splitter","data":{"arrayPath":"items"}},
		{"id":"tag","type":"Transform","data":{"expression":"{\"v\": upper(input)}"}},
		{"id":"mark","type":"Transform","data":{"expression":"steps.tag.output.v + \"#\" + string(item.index) + \"/\" + item.key + \"/\" + string(steps.req.output.amount)"}},
		{"id":"merge","type":"Collector","data":{}}],
		"edges":[{"id":"e1","source":"req","target":"check"},
			{"id":"big-edge","source":"check","target":"big","data":{"condition":"steps.req.output.amount > 1000"}},
			{"id":"small-edge","source":"check","target":"small","data":{"default":true}},
			{"id":"e4","source":"req","target":"split","data":{"mapping":{"items":"items"}}},
			{"id":"e5","source":"split","target":"tag"},{"id":"e6","source":"tag","target":"mark"},{"id":"e7","source":"mark","target":"merge"}]}`
	run := r.start(graph, `{"amount":1500}`)
	got, ns := r.nodes(run.ID)
	require.Equal(t, engine.RunCompleted, got.Status, "%+v", ns)
	require.Equal(t, engine.StatusSkipped, ns["small"].Status)
	require.JSONEq(t, `{"double":3000,"status":200,"checked":1500}`, string(ns["big"].Output))
	require.JSONEq(t, `["A#0/mark_0/1500","B#1/mark_1/1500","C#2/mark_2/1500"]`, string(ns["merge"].Output))

	small := r.start(graph, `{"amount":10}`)
	_, ns = r.nodes(small.ID)
	require.Equal(t, engine.StatusSkipped, ns["big"].Status, "the condition read steps.req: 10 is not above 1000")
	require.Equal(t, engine.StatusCompleted, ns["small"].Status)
}

// TestRunVariables: a node's setVariables are evaluated when it completes
// (over its output, input, the run and earlier steps), kept on the run,
// recorded in a run.variables event, and read by any later expression —
// a Transform's and an edge condition's — as vars.<name>; the node's own
// edge conditions, decided before it completes, see them as they were. An expression
// that fails sets null, and the event says why.
func TestRunVariables(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	graph := `{"nodes":[
		{"id":"order","type":"Transform","data":{"expression":"{\"amount\": run.input.amount}",
			"setVariables":{"total":"output.amount * 2","buyer":"run.input.name","broken":"output.amount / output.none"}}},
		{"id":"noise","type":"Transform","data":{"expression":"\"replaced\""}},
		{"id":"later","type":"Transform","data":{"expression":"{\"total\": vars.total + 1, \"buyer\": vars.buyer, \"input\": input}",
			"setVariables":{"total":"vars.total + output.total"}}},
		{"id":"vip","type":"Condition","data":{}}],
		"edges":[{"id":"e1","source":"order","target":"noise"},{"id":"e2","source":"noise","target":"later"},
			{"id":"e3","source":"later","target":"vip","data":{"condition":"vars.total == 3000"}}]}`
	run := r.start(graph, `{"amount":1500,"name":"ada"}`)
	got, ns := r.nodes(run.ID)
	require.Equal(t, engine.RunCompleted, got.Status)
	require.JSONEq(t, `{"total":3001,"buyer":"ada","input":{"noise":"replaced"}}`, string(ns["later"].Output))
	require.Equal(t, engine.StatusCompleted, ns["vip"].Status, "a node's own edges see the variables before it sets them")
	vars, err := r.st.RunVariables(context.Background(), run.ID)
	require.NoError(t, err)
	require.JSONEq(t, `{"total":6001,"buyer":"ada","broken":null}`, string(vars))
	evs, err := r.st.RunEvents(context.Background(), run.ID, 0, 1000)
	require.NoError(t, err)
	var sets []string
	for _, ev := range evs {
		if ev.Type == engine.EventRunVariables {
			sets = append(sets, ev.Key+" "+string(ev.Payload))
		}
	}
	require.Len(t, sets, 2)
	require.Contains(t, sets[0], `"errors": {"broken":`)
	require.Contains(t, sets[1], `"set": {"total": 6001}`)
}

// TestLogBeforeABigFanOut: a Log step whose completion fires a Splitter
// big enough to write its events before the commit (whole chunks of
// items: the transaction's events so far are gone from memory when the
// Log's action returns) still logs once, and does not panic (it did: its
// lines were put back where the written events had been).
func TestLogBeforeABigFanOut(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	graph := `{"nodes":[{"id":"note","type":"Log","data":{"message":"fanning out"}},
		{"id":"split","type":"Splitter","data":{"arrayPath":"items"}},
		{"id":"w","type":"Worker","data":{"webhookUrl":"http://worker.invalid/w"}},
		{"id":"merge","type":"Collector","data":{}}],
		"edges":[{"id":"e0","source":"note","target":"split"},{"id":"e1","source":"split","target":"w"},{"id":"e2","source":"w","target":"merge"}]}`
	items := make([]int, 4000) // two whole chunks: the fan-out writes every event it made before the commit
	in, err := json.Marshal(map[string]any{"items": items})
	require.NoError(t, err)
	run := r.start(graph, string(in))
	got, ns := r.nodes(run.ID)
	require.Equal(t, engine.RunRunning, got.Status)
	require.Equal(t, engine.StatusCompleted, ns["note"].Status)
	require.Equal(t, engine.StatusRunning, ns["w_3999"].Status)
	evs, err := r.st.RunEvents(context.Background(), run.ID, 0, 100000)
	require.NoError(t, err)
	logs := 0
	for _, ev := range evs {
		if ev.Type == engine.EventNodeLog {
			logs++
		}
	}
	require.Equal(t, 1, logs)
}
