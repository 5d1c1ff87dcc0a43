package engine_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/tidwall/gjson"

	"github.com/stitchd/stitchd/engine"
	"github.com/stitchd/stitchd/internal/testkit"
)

// TestRuleBranches: docs/state_machine.md, "Branches: decided edges and
// skipped nodes" — each edge rule (none, condition, default), the taken
// list, dead-path elimination down a chain and to a join, a skipped
// Splitter skipping its Collector, and a condition that cannot be
// evaluated. Synchronous nodes (Transform, Condition), so the start's
// transaction decides everything.
func TestRuleBranches(t *testing.T) {
	t.Parallel()
	const (
		S = engine.StatusSkipped
		C = engine.StatusCompleted
	)
	// src gives {"score": run.input.score}; hi and lo are two branches.
	const condGraph = `{"nodes":[
		{"id":"src","type":"Transform","data":{"expression":"{\"score\": run.input.score}"}},
		{"id":"hi","type":"Transform","data":{"expression":"\"high\""}},
		{"id":"lo","type":"Transform","data":{"expression":"\"low\""}}],
		"edges":[{"id":"e-hi","source":"src","target":"hi","data":{"condition":"output.score > 5"}},
			{"id":"e-lo","source":"src","target":"lo","data":{"condition":"output.score <= 1"}}]}`
	const defaultGraph = `{"nodes":[
		{"id":"src","type":"Transform","data":{"expression":"{\"score\": run.input.score}"}},
		{"id":"hi","type":"Transform","data":{"expression":"\"high\""}},
		{"id":"other","type":"Transform","data":{"expression":"\"other\""}}],
		"edges":[{"id":"e-hi","source":"src","target":"hi","data":{"condition":"output.score > 5"}},
			{"id":"e-def","source":"src","target":"other","data":{"default":true}}]}`
	// src → (cond) → a → join; src → (cond) → b → join; join → after.
	const joinGraph = `{"nodes":[
		{"id":"src","type":"Transform","data":{"expression":"{\"score\": run.input.score}"}},
		{"id":"a","type":"Transform","data":{"expression":"{\"from_a\": input.score}"}},
		{"id":"b","type":"Transform","data":{"expression":"{\"from_b\": input.score}"}},
		{"id":"join","type":"Transform","data":{"expression":"input"}},
		{"id":"after","type":"Transform","data":{"expression":"{\"after\": input}"}}],
		"edges":[{"id":"e-a","source":"src","target":"a","data":{"condition":"output.score > 5"}},
			{"id":"e-b","source":"src","target":"b","data":{"condition":"output.score > 8"}},
			{"id":"e-ja","source":"a","target":"join"},{"id":"e-jb","source":"b","target":"join"},
			{"id":"e-after","source":"join","target":"after"}]}`

	cases := []struct {
		name  string
		graph string
		input string
		check func(t *testing.T, r *rig, run *engine.Run)
	}{
		{"condition taken", condGraph, `{"score":7}`, func(t *testing.T, r *rig, run *engine.Run) {
			got, ns := r.wantStatuses(run.ID, engine.RunCompleted, map[string]engine.Status{"src": C, "hi": C, "lo": S})
			require.Equal(t, []string{"hi"}, ns["src"].Taken, "taken lists the targets of the edges taken")
			require.JSONEq(t, `"high"`, string(ns["hi"].Output))
			require.Nil(t, ns["lo"].Output, "a skipped node never fired")
			require.Equal(t, 0, ns["lo"].Attempt)
			require.JSONEq(t, `{"hi":"high"}`, string(got.Output), "two terminals: the output is keyed by those that completed")
		}},
		{"condition not taken", condGraph, `{"score":3}`, func(t *testing.T, r *rig, run *engine.Run) {
			got, ns := r.wantStatuses(run.ID, engine.RunCompleted, map[string]engine.Status{"src": C, "hi": S, "lo": S})
			require.Equal(t, []string{}, ns["src"].Taken, "decided, none taken (not nil: nil is a plain node's all)")
			require.JSONEq(t, `{}`, string(got.Output), "no terminal node completed")
		}},
		{"the other condition taken", condGraph, `{"score":1}`, func(t *testing.T, r *rig, run *engine.Run) {
			_, ns := r.wantStatuses(run.ID, engine.RunCompleted, map[string]engine.Status{"src": C, "hi": S, "lo": C})
			require.Equal(t, []string{"lo"}, ns["src"].Taken)
		}},
		{"default not taken when a condition holds", defaultGraph, `{"score":9}`, func(t *testing.T, r *rig, run *engine.Run) {
			_, ns := r.wantStatuses(run.ID, engine.RunCompleted, map[string]engine.Status{"src": C, "hi": C, "other": S})
			require.Equal(t, []string{"hi"}, ns["src"].Taken)
		}},
		{"default taken when no condition holds", defaultGraph, `{"score":2}`, func(t *testing.T, r *rig, run *engine.Run) {
			_, ns := r.wantStatuses(run.ID, engine.RunCompleted, map[string]engine.Status{"src": C, "hi": S, "other": C})
			require.Equal(t, []string{"other"}, ns["src"].Taken)
			require.JSONEq(t, `{"score":2}`, string(ns["other"].Input))
		}},
		{"a plain node takes every edge", `{"nodes":[
			{"id":"src","type":"Transform","data":{"expression":"{\"v\": 1}"}},
			{"id":"x","type":"Condition","data":{}},{"id":"y","type":"Condition","data":{}}],
			"edges":[{"id":"e1","source":"src","target":"x"},{"id":"e2","source":"src","target":"y"}]}`, `{}`,
			func(t *testing.T, r *rig, run *engine.Run) {
				got, ns := r.wantStatuses(run.ID, engine.RunCompleted, map[string]engine.Status{"src": C, "x": C, "y": C})
				require.Nil(t, ns["src"].Taken, "a plain node: null, all of them")
				require.JSONEq(t, `{"x":{"v":1},"y":{"v":1}}`, string(got.Output), "several terminals: keyed by id")
			}},
		{"dead path skips down a chain", `{"nodes":[
			{"id":"src","type":"Transform","data":{"expression":"{\"score\": run.input.score}"}},
			{"id":"a","type":"Transform","data":{"expression":"1"}},
			{"id":"b","type":"Transform","data":{"expression":"2"}},
			{"id":"c","type":"Transform","data":{"expression":"3"}}],
			"edges":[{"id":"e1","source":"src","target":"a","data":{"condition":"output.score > 5"}},
				{"id":"e2","source":"a","target":"b"},{"id":"e3","source":"b","target":"c"}]}`, `{"score":0}`,
			func(t *testing.T, r *rig, run *engine.Run) {
				r.wantStatuses(run.ID, engine.RunCompleted, map[string]engine.Status{"src": C, "a": S, "b": S, "c": S})
				var skipped []string
				for _, ev := range r.eventsOf(run.ID, engine.EventNodeStatus) {
					if strings.Contains(string(ev.Payload), `"skipped"`) {
						skipped = append(skipped, ev.Key)
					}
				}
				require.Equal(t, []string{"a", "b", "c"}, skipped, "each skip is a node.status event, in order downstream")
			}},
		{"join fires when one input is taken, with only its input", joinGraph, `{"score":7}`,
			func(t *testing.T, r *rig, run *engine.Run) {
				got, ns := r.wantStatuses(run.ID, engine.RunCompleted,
					map[string]engine.Status{"src": C, "a": C, "b": S, "join": C, "after": C})
				require.JSONEq(t, `{"from_a":7}`, string(ns["join"].Input), "the input merges only the edges taken")
				require.JSONEq(t, `{"after":{"from_a":7}}`, string(got.Output))
			}},
		{"join merges both inputs when both are taken", joinGraph, `{"score":9}`,
			func(t *testing.T, r *rig, run *engine.Run) {
				_, ns := r.wantStatuses(run.ID, engine.RunCompleted,
					map[string]engine.Status{"src": C, "a": C, "b": C, "join": C, "after": C})
				require.JSONEq(t, `{"from_a":9,"from_b":9}`, string(ns["join"].Input))
			}},
		{"join is skipped when no input is taken, and so is what follows", joinGraph, `{"score":1}`,
			func(t *testing.T, r *rig, run *engine.Run) {
				got, _ := r.wantStatuses(run.ID, engine.RunCompleted,
					map[string]engine.Status{"src": C, "a": S, "b": S, "join": S, "after": S})
				require.Zero(t, got.TerminalsLeft, "a skipped terminal counts as done")
			}},
		{"a skipped Splitter skips its Collector", `{"nodes":[
			{"id":"src","type":"Transform","data":{"expression":"{\"items\": [1,2], \"go\": run.input.go}"}},
			{"id":"split","type":"Splitter","data":{"arrayPath":"items"}},
			{"id":"each","type":"Transform","data":{"expression":"input"}},
			{"id":"merge","type":"Collector","data":{}}],
			"edges":[{"id":"e1","source":"src","target":"split","data":{"condition":"output.go"}},
				{"id":"e2","source":"split","target":"each"},{"id":"e3","source":"each","target":"merge"}]}`, `{"go":false}`,
			func(t *testing.T, r *rig, run *engine.Run) {
				r.wantStatuses(run.ID, engine.RunCompleted, map[string]engine.Status{"src": C, "split": S, "merge": S})
				require.Equal(t, []string{"merge", "split", "src"}, r.keysOf(run.ID), "its region never had instances")
			}},
		{"a condition that cannot be evaluated fails the source", `{"nodes":[
			{"id":"src","type":"Transform","data":{"expression":"{\"score\": \"high\"}"}},
			{"id":"hi","type":"Condition","data":{}}],
			"edges":[{"id":"e3","source":"src","target":"hi","data":{"condition":"output.score > 5"}}]}`, `{}`,
			func(t *testing.T, r *rig, run *engine.Run) {
				got, ns := r.wantStatuses(run.ID, engine.RunFailed, map[string]engine.Status{"src": engine.StatusFailed, "hi": engine.StatusPending})
				require.NotNil(t, ns["src"].Error)
				require.Contains(t, *ns["src"].Error, "the condition of edge e3 could not be evaluated")
				require.Equal(t, 1, got.FailedNodes)
			}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := newRig(t)
			tc.check(t, r, r.start(tc.graph, tc.input))
		})
	}
}

// TestRuleBranchOnWorker: a worker's completion decides its edges in its
// completing compare-and-set: the branch taken gets its outbox row, the
// other is skipped and never dispatched; a condition that cannot be
// evaluated fails the worker without an automatic retry.
func TestRuleBranchOnWorker(t *testing.T) {
	t.Parallel()
	const graph = `{"nodes":[
		{"id":"w","type":"Worker","data":{"webhookUrl":"http://worker.invalid/x",
			"retry":{"maxAttempts":3,"initialDelayMs":1000,"maxDelayMs":1000}}},
		{"id":"hi","type":"Worker","data":{"webhookUrl":"http://worker.invalid/x"}},
		{"id":"lo","type":"Worker","data":{"webhookUrl":"http://worker.invalid/x"}}],
		"edges":[{"id":"e-hi","source":"w","target":"hi","data":{"condition":"output.score > 5"}},
			{"id":"e-lo","source":"w","target":"lo","data":{"default":true}}]}`
	cases := []struct {
		name    string
		output  string
		run     engine.RunStatus
		nodes   map[string]engine.Status
		outbox  []string
		errWant string
	}{
		{"condition holds", `{"score":9}`, engine.RunRunning,
			map[string]engine.Status{"w": engine.StatusCompleted, "hi": engine.StatusRunning, "lo": engine.StatusSkipped},
			[]string{"hi#1", "w#1"}, ""},
		{"default", `{"score":1}`, engine.RunRunning,
			map[string]engine.Status{"w": engine.StatusCompleted, "hi": engine.StatusSkipped, "lo": engine.StatusRunning},
			[]string{"lo#1", "w#1"}, ""},
		{"condition cannot be evaluated: failed, not retried", `{"score":"nine"}`, engine.RunFailed,
			map[string]engine.Status{"w": engine.StatusFailed, "hi": engine.StatusPending, "lo": engine.StatusPending},
			[]string{"w#1"}, "the condition of edge e-hi could not be evaluated"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := newRig(t)
			run := r.start(graph, `{}`)
			require.Equal(t, []string{"w#1"}, r.outbox(run.ID))
			require.NoError(t, r.callback(run.ID, "w", 1, engine.StatusCompleted, tc.output))
			_, ns := r.wantStatuses(run.ID, tc.run, tc.nodes)
			require.Equal(t, tc.outbox, r.outbox(run.ID))
			require.Equal(t, 1, ns["w"].Attempt)
			if tc.errWant != "" {
				require.Contains(t, *ns["w"].Error, tc.errWant)
			}
		})
	}
}

// TestRuleFailureEdge: docs/state_machine.md, Branches — a failure edge
// takes a node's failure for good (retries used up) on: the node stays
// failed with the failure edges taken and {error, node, input} as output,
// the target fires with it, its other edges are not taken, the run does
// not fail, and the failure is final (no retry). A completion does not
// take it.
func TestRuleFailureEdge(t *testing.T) {
	t.Parallel()
	const graph = `{"nodes":[
		{"id":"w","type":"Worker","data":{"webhookUrl":"http://worker.invalid/x",
			"retry":{"maxAttempts":2,"initialDelayMs":1000,"maxDelayMs":1000}}},
		{"id":"next","type":"Transform","data":{"expression":"\"next\""}},
		{"id":"handler","type":"Transform","data":{"expression":"{\"handled\": input.error, \"by\": input.node}"}}],
		"edges":[{"id":"e-next","source":"w","target":"next"},
			{"id":"e-fail","source":"w","target":"handler","data":{"on":"failure"}}]}`
	ctx := context.Background()
	t.Run("failure taken after the retries", func(t *testing.T) {
		t.Parallel()
		r := newRig(t)
		run := r.start(graph, `{"order":1}`)
		require.NoError(t, r.callback(run.ID, "w", 1, engine.StatusFailed, ""))
		_, ns := r.wantStatuses(run.ID, engine.RunRunning,
			map[string]engine.Status{"w": engine.StatusRunning, "next": engine.StatusPending, "handler": engine.StatusPending})
		require.Equal(t, 2, ns["w"].Attempt, "an automatic retry first: the failure edge waits for the failure for good")
		require.Equal(t, []string{"w#1", "w#2"}, r.outbox(run.ID))

		require.NoError(t, r.callback(run.ID, "w", 2, engine.StatusFailed, ""))
		got, ns := r.wantStatuses(run.ID, engine.RunCompleted,
			map[string]engine.Status{"w": engine.StatusFailed, "next": engine.StatusSkipped, "handler": engine.StatusCompleted})
		require.Equal(t, []string{"handler"}, ns["w"].Taken)
		require.JSONEq(t, `{"error":"boom","node":"w","input":{"order":1}}`, string(ns["w"].Output))
		require.JSONEq(t, `{"error":"boom","node":"w","input":{"order":1}}`, string(ns["handler"].Input))
		require.JSONEq(t, `{"handled":"boom","by":"w"}`, string(ns["handler"].Output))
		require.Zero(t, got.FailedNodes, "a handled failure is not counted")
		require.Len(t, r.eventsOf(run.ID, engine.EventFailureHandled), 1)

		err := r.eng.RetryNode(ctx, run.ID, "w")
		require.ErrorIs(t, err, engine.ErrConflict, "a handled failure is final")
		require.Equal(t, []string{"w#1", "w#2"}, r.outbox(run.ID))
	})
	t.Run("a completion does not take it", func(t *testing.T) {
		t.Parallel()
		r := newRig(t)
		run := r.start(graph, `{}`)
		require.NoError(t, r.callback(run.ID, "w", 1, engine.StatusCompleted, `{"ok":true}`))
		_, ns := r.wantStatuses(run.ID, engine.RunCompleted,
			map[string]engine.Status{"w": engine.StatusCompleted, "next": engine.StatusCompleted, "handler": engine.StatusSkipped})
		require.Equal(t, []string{"next"}, ns["w"].Taken)
	})
	t.Run("a worker's no-retry failure goes to the edge at once", func(t *testing.T) {
		t.Parallel()
		r := newRig(t)
		run := r.start(graph, `{}`)
		require.NoError(t, r.eng.HandleCallback(ctx, engine.CallbackParams{RunID: run.ID, Key: "w", Attempt: 1,
			Status: engine.StatusFailed, Error: "bad input", NoRetry: true}))
		_, ns := r.wantStatuses(run.ID, engine.RunCompleted,
			map[string]engine.Status{"w": engine.StatusFailed, "next": engine.StatusSkipped, "handler": engine.StatusCompleted})
		require.Equal(t, 1, ns["w"].Attempt)
		require.JSONEq(t, `{"handled":"bad input","by":"w"}`, string(ns["handler"].Output))
		require.Equal(t, []string{"w#1"}, r.outbox(run.ID))
	})
}

// rowReads counts the engine's reads of node rows (Tx.Node, Tx.NodeStates)
// through its Store.
type rowReads struct {
	engine.Store
	n *atomic.Int64
}

func (s rowReads) InTx(ctx context.Context, fn func(context.Context, engine.Tx) error) error {
	return s.Store.InTx(ctx, func(ctx context.Context, tx engine.Tx) error { return fn(ctx, rowReadsTx{tx, s.n}) })
}

type rowReadsTx struct {
	engine.Tx
	n *atomic.Int64
}

func (t rowReadsTx) Node(ctx context.Context, runID, key string) (*engine.NodeState, error) {
	t.n.Add(1)
	return t.Tx.Node(ctx, runID, key)
}

func (t rowReadsTx) NodeStates(ctx context.Context, runID string, keys []string) (map[string]*engine.NodeState, error) {
	t.n.Add(1)
	return t.Tx.NodeStates(ctx, runID, keys)
}

// TestRuleSwitchJoin: docs/state_machine.md, Branches — a switch's
// branches not taken are skipped together and counted at their join as
// edges not taken, so that the join fires with the one taken branch's
// output (or is skipped when none was taken) without reading its
// upstream rows; a join with more than one branch taken reads them and
// merges their outputs. A switch whose conditions don't read its node's
// input decides before its row is read, and a stale callback's decision
// is thrown away.
func TestRuleSwitchJoin(t *testing.T) {
	t.Parallel()
	graph := func(conds [3]string) string {
		return fmt.Sprintf(`{"nodes":[
		{"id":"w","type":"Worker","data":{"webhookUrl":"http://worker.invalid/x"}},
		{"id":"b0","type":"Worker","data":{"webhookUrl":"http://worker.invalid/x"}},
		{"id":"b1","type":"Worker","data":{"webhookUrl":"http://worker.invalid/x"}},
		{"id":"b2","type":"Worker","data":{"webhookUrl":"http://worker.invalid/x"}},
		{"id":"j","type":"Worker","data":{"webhookUrl":"http://worker.invalid/x"}}],
		"edges":[{"id":"e0","source":"w","target":"b0","data":{"condition":%q}},
			{"id":"e1","source":"w","target":"b1","data":{"condition":%q}},
			{"id":"e2","source":"w","target":"b2","data":{"condition":%q}},
			{"id":"j0","source":"b0","target":"j"},{"id":"j1","source":"b1","target":"j"},
			{"id":"j2","source":"b2","target":"j"}]}`, conds[0], conds[1], conds[2])
	}
	byRun := [3]string{"run.input.v % 3 == 0", "run.input.v % 3 == 1", "run.input.v % 3 == 2"}
	byOutput := [3]string{"output.a", "output.b", "output.c"}
	byInput := [3]string{"input.v == 0", "input.v == 1", "input.v == 2"}
	cases := []struct {
		name  string
		conds [3]string
		// input is the run's, output w's.
		input, output string
		// ran are the branches taken, completed in order with {"<b>": true}.
		ran []string
		// reads is how many node rows the engine read, at most.
		reads   int64
		join    engine.Status
		joinIn  string
		runWant engine.RunStatus
	}{
		{"one taken by run.input", byRun, `{"v":4}`, `{}`, []string{"b1"}, 0, engine.StatusRunning, `{"b1":true}`, engine.RunRunning},
		{"one taken by output", byOutput, `{}`, `{"c":true}`, []string{"b2"}, 0, engine.StatusRunning, `{"b2":true}`, engine.RunRunning},
		{"two taken: the join reads its upstream rows", byOutput, `{}`, `{"a":true,"c":true}`, []string{"b0", "b2"}, 1,
			engine.StatusRunning, `{"b0":true,"b2":true}`, engine.RunRunning},
		{"none taken: the join is skipped", byOutput, `{}`, `{}`, nil, 0, engine.StatusSkipped, "", engine.RunCompleted},
		{"a condition reads the node's input: the row is read", byInput, `{"v":0}`, `{}`, []string{"b0"}, 1,
			engine.StatusRunning, `{"b0":true}`, engine.RunRunning},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var reads atomic.Int64
			r := newRig(t, func(c *engine.Config) { c.Store = rowReads{c.Store, &reads} })
			run := r.start(graph(tc.conds), tc.input)
			reads.Store(0)
			require.NoError(t, r.callback(run.ID, "w", 1, engine.StatusCompleted, tc.output))
			for _, b := range tc.ran {
				require.NoError(t, r.callback(run.ID, b, 1, engine.StatusCompleted, fmt.Sprintf(`{%q:true}`, b)))
			}
			want := map[string]engine.Status{"w": engine.StatusCompleted, "j": tc.join}
			for _, b := range []string{"b0", "b1", "b2"} {
				want[b] = engine.StatusSkipped
				if slices.Contains(tc.ran, b) {
					want[b] = engine.StatusCompleted
				}
			}
			_, ns := r.wantStatuses(run.ID, tc.runWant, want)
			if tc.joinIn != "" {
				require.JSONEq(t, tc.joinIn, string(ns["j"].Input))
			}
			require.LessOrEqual(t, reads.Load(), tc.reads, "node rows read")
			// Every node skipped has its event, skipped together or not.
			var skipped, events []string
			for k, st := range want {
				if st == engine.StatusSkipped {
					skipped = append(skipped, k)
				}
			}
			for _, ev := range r.eventsOf(run.ID, engine.EventNodeStatus) {
				if gjson.GetBytes(ev.Payload, "status").String() == string(engine.StatusSkipped) {
					events = append(events, ev.Key)
				}
			}
			require.ElementsMatch(t, skipped, events)
			// A stale callback: its decision, made before the row is read,
			// is thrown away.
			require.ErrorIs(t, r.callback(run.ID, "w", 2, engine.StatusCompleted, `{"a":true,"b":true,"c":true}`),
				engine.ErrConflict)
			r.wantStatuses(run.ID, tc.runWant, want)
		})
	}
}

// TestRuleSwitchJoinCountedWithoutAsking: docs/state_machine.md,
// Branches — when a switch takes a branch that waits for its worker, its
// join's count-down for the branches not taken needs no answer: it is
// queued, and the database checks what it assumed (the join pending, with
// parents left); the switch's step is speculated (the run's row is not
// read), and so is the taken branch's, whose join it makes ready (the
// database checks the join's last parent and edges not taken). A
// transaction whose assumption fails is applied again asking, with the
// same outcome.
func TestRuleSwitchJoinCountedWithoutAsking(t *testing.T) {
	t.Parallel()
	const worker = `"type":"Worker","data":{"webhookUrl":"http://worker.invalid/x"}`
	graphs := map[string]struct {
		graph   string
		skipped []string
	}{
		"three branches": {`{"nodes":[{"id":"w",` + worker + `},{"id":"b0",` + worker + `},{"id":"b1",` + worker + `},
			{"id":"b2",` + worker + `},{"id":"j",` + worker + `}],
			"edges":[{"id":"e0","source":"w","target":"b0","data":{"condition":"output.k == 0"}},
				{"id":"e1","source":"w","target":"b1","data":{"condition":"output.k == 1"}},
				{"id":"e2","source":"w","target":"b2","data":{"default":true}},
				{"id":"j0","source":"b0","target":"j"},{"id":"j1","source":"b1","target":"j"},
				{"id":"j2","source":"b2","target":"j"}]}`, []string{"b0", "b2"}},
		"two branches": {`{"nodes":[{"id":"w",` + worker + `},{"id":"b0",` + worker + `},{"id":"b1",` + worker + `},
			{"id":"j",` + worker + `}],
			"edges":[{"id":"e0","source":"w","target":"b0","data":{"condition":"output.k == 0"}},
				{"id":"e1","source":"w","target":"b1","data":{"default":true}},
				{"id":"j0","source":"b0","target":"j"},{"id":"j1","source":"b1","target":"j"}]}`, []string{"b0"}},
	}
	for name, g := range graphs {
		for _, tc := range []struct {
			name string
			// off is added to the queued count-down: not 0, the database's
			// check fails.
			off int
		}{{"assumed", 0}, {"the assumption fails", 5}} {
			t.Run(name+"/"+tc.name, func(t *testing.T) {
				t.Parallel()
				var queued, alone, asked, locks, readies, carried atomic.Int64
				r := newRig(t, func(c *engine.Config) {
					c.Store = countDowns{c.Store, tc.off, &queued, &asked, &locks, &readies, &carried, &alone}
				})
				run := r.start(g.graph, `{}`)
				locks.Store(0)
				require.NoError(t, r.callback(run.ID, "w", 1, engine.StatusCompleted, `{"k":1}`))
				require.Equal(t, int64(1), queued.Load(), "the join's count-down queued once (not again when asked)")
				require.Zero(t, alone.Load(), "carried by the skip's statement")
				want := int64(0)
				if tc.off != 0 {
					want = 1
				}
				require.Equal(t, want, asked.Load(), "asked only once the assumption failed")
				require.Equal(t, want, locks.Load(), "the run's row read only when applied again")
				statuses := map[string]engine.Status{"w": engine.StatusCompleted, "b1": engine.StatusRunning, "j": engine.StatusPending}
				for _, k := range g.skipped {
					statuses[k] = engine.StatusSkipped
				}
				_, ns := r.wantStatuses(run.ID, engine.RunRunning, statuses)
				require.Equal(t, 1, ns["j"].PendingParents)
				locks.Store(0)
				require.NoError(t, r.callback(run.ID, "b1", 1, engine.StatusCompleted, `{"b1":true}`))
				require.Equal(t, int64(1), readies.Load(), "the join's readiness assumed")
				require.Equal(t, int64(1), carried.Load(), "its check carried by the join's move")
				require.Equal(t, want, locks.Load(), "the run's row read only when applied again")
				_, ns = r.wantStatuses(run.ID, engine.RunRunning, map[string]engine.Status{"b1": engine.StatusCompleted,
					"j": engine.StatusRunning})
				require.JSONEq(t, `{"b1":true}`, string(ns["j"].Input))
				require.Zero(t, ns["j"].PendingParents, "as the ordinary path leaves it")
			})
		}
	}
}

// countDowns counts the engine's count-downs of edges not taken, queued
// (carried by SkipLater or alone, CountDownUntakenLater; off added to
// each) and asked (AddPendingUntaken),
// its assumed readiness of joins (carried by the join's move,
// NodeTransition.Ready, or CountDownToReadyLater; off added too) and its
// reads of run rows with their lock.
type countDowns struct {
	engine.Store
	off                           int
	queued, asked, locks, readies *atomic.Int64
	// carried counts the readiness checks carried by the join's move,
	// alone the count-downs queued on their own (not carried by a skip).
	carried, alone *atomic.Int64
}

func (s countDowns) InTx(ctx context.Context, fn func(context.Context, engine.Tx) error) error {
	return s.Store.InTx(ctx, func(ctx context.Context, tx engine.Tx) error { return fn(ctx, countDownsTx{tx, s}) })
}

type countDownsTx struct {
	engine.Tx
	s countDowns
}

func (t countDownsTx) CountDownUntakenLater(ctx context.Context, runID string, keys []string, n int) error {
	t.s.queued.Add(1)
	t.s.alone.Add(1)
	return t.Tx.CountDownUntakenLater(ctx, runID, keys, n+t.s.off)
}

func (t countDownsTx) SkipLater(ctx context.Context, runID string, keys []string, then []engine.UntakenCountDown) error {
	off := make([]engine.UntakenCountDown, len(then))
	for i, c := range then {
		t.s.queued.Add(1)
		off[i] = engine.UntakenCountDown{Keys: c.Keys, N: c.N + t.s.off}
	}
	return t.Tx.SkipLater(ctx, runID, keys, off)
}

func (t countDownsTx) CountDownToReadyLater(ctx context.Context, runID, key string, untaken int) error {
	t.s.readies.Add(1)
	return t.Tx.CountDownToReadyLater(ctx, runID, key, untaken+t.s.off)
}

func (t countDownsTx) TransitionLater(ctx context.Context, tr *engine.NodeTransition) error {
	if tr.Ready != nil {
		t.s.readies.Add(1)
		t.s.carried.Add(1)
		c := *tr
		c.Ready = &engine.ReadyCheck{Untaken: tr.Ready.Untaken + t.s.off}
		tr = &c
	}
	return t.Tx.TransitionLater(ctx, tr)
}

func (t countDownsTx) LockRun(ctx context.Context, runID string) (*engine.Run, error) {
	t.s.locks.Add(1)
	return t.Tx.LockRun(ctx, runID)
}

func (t countDownsTx) LockRunLater(ctx context.Context, runID string) func() (*engine.Run, error) {
	t.s.locks.Add(1)
	return t.Tx.LockRunLater(ctx, runID)
}

func (t countDownsTx) AddPendingUntaken(ctx context.Context, runID string, keys, untaken []string, delta int) (map[string]engine.Pending, error) {
	t.s.asked.Add(1)
	return t.Tx.AddPendingUntaken(ctx, runID, keys, untaken, delta)
}

// TestSpeculatedStepsNameTheirFlow: a speculated step reads no run row,
// yet what it writes names the run's flow as the ordinary path does: the
// approval.requested notification of a person's step it starts — after a
// switch's step and after a chain step.
func TestSpeculatedStepsNameTheirFlow(t *testing.T) {
	t.Parallel()
	const graph = `{"nodes":[
		{"id":"w","type":"Worker","data":{"webhookUrl":"http://worker.invalid/x"}},
		{"id":"ask","type":"UX","data":{"prompt":"ok?"}},
		{"id":"b","type":"Worker","data":{"webhookUrl":"http://worker.invalid/x"}},
		{"id":"j","type":"Worker","data":{"webhookUrl":"http://worker.invalid/x"}},
		{"id":"c","type":"Worker","data":{"webhookUrl":"http://worker.invalid/x"}},
		{"id":"ask2","type":"UX","data":{"prompt":"ok again?"}}],
		"edges":[{"id":"e0","source":"w","target":"ask","data":{"condition":"output.ask"}},
			{"id":"e1","source":"w","target":"b","data":{"default":true}},
			{"id":"j0","source":"ask","target":"j"},{"id":"j1","source":"b","target":"j"},
			{"id":"jc","source":"j","target":"c"},{"id":"c2","source":"c","target":"ask2"}]}`
	var locks atomic.Int64
	var none atomic.Int64
	r := newRig(t, func(c *engine.Config) {
		c.Notify = true
		c.Store = countDowns{c.Store, 0, &none, &none, &locks, &none, &none, &none}
	})
	run := r.start(graph, `{}`)
	flows := func(key string) []string {
		var got []string
		require.NoError(t, r.st.Gorm().Raw(`SELECT payload->>'flow_id' FROM notifications
			WHERE run_id = ? AND payload->>'type' = 'approval.requested' AND payload->>'node_key' = ?`, run.ID, key).Scan(&got).Error)
		return got
	}
	locks.Store(0)
	require.NoError(t, r.callback(run.ID, "w", 1, engine.StatusCompleted, `{"ask":true}`))
	require.Zero(t, locks.Load(), "the switch's step speculated")
	require.Equal(t, []string{run.FlowID}, flows("ask"))
	require.NoError(t, r.eng.CompleteUX(context.Background(), engine.CompleteUXParams{RunID: run.ID, Key: "ask", Outcome: "approve", By: "ada@example.com"}))
	r.wantStatuses(run.ID, engine.RunRunning, map[string]engine.Status{"j": engine.StatusRunning})
	require.NoError(t, r.callback(run.ID, "j", 1, engine.StatusCompleted, `{}`))
	locks.Store(0)
	require.NoError(t, r.callback(run.ID, "c", 1, engine.StatusCompleted, `{}`))
	require.Zero(t, locks.Load(), "the chain step speculated")
	require.Equal(t, []string{run.FlowID}, flows("ask2"))
}

// TestRerunRunsAreNotSpeculated: once this process saw a run rerun, its
// steps are not speculated — the speculation's compare-and-set requires a
// run never rerun, so it could only fail and be applied again — whether
// the rerun was made here or only seen when the run was next locked.
func TestRerunRunsAreNotSpeculated(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	const chain = `{"nodes":[{"id":"a","type":"Worker","data":{"webhookUrl":"http://worker.invalid/x"}},
		{"id":"b","type":"Worker","data":{"webhookUrl":"http://worker.invalid/x"}},
		{"id":"c","type":"Worker","data":{"webhookUrl":"http://worker.invalid/x"}}],
		"edges":[{"id":"e1","source":"a","target":"b"},{"id":"e2","source":"b","target":"c"}]}`
	var tried, failed atomic.Int64
	st := func(c *engine.Config) { c.Store = speculations{c.Store, &tried, &failed} }
	here := newRig(t, st)
	run := here.start(chain, `{}`)
	require.NoError(t, here.callback(run.ID, "a", 1, engine.StatusCompleted, `{}`))
	require.Equal(t, int64(1), tried.Load(), "a chain step is speculated")
	require.NoError(t, here.callback(run.ID, "b", 1, engine.StatusCompleted, `{}`))
	require.NoError(t, here.callback(run.ID, "c", 1, engine.StatusCompleted, `{}`))
	here.wantStatuses(run.ID, engine.RunCompleted, map[string]engine.Status{"c": engine.StatusCompleted})

	require.NoError(t, here.eng.RerunNode(ctx, engine.RerunParams{RunID: run.ID, Key: "a"}))
	tried.Store(0)
	require.NoError(t, here.callback(run.ID, "a", 2, engine.StatusCompleted, `{}`))
	require.NoError(t, here.callback(run.ID, "b", 2, engine.StatusCompleted, `{}`))
	require.Zero(t, tried.Load(), "rerun here: not speculated")
	require.Zero(t, failed.Load())
	_, ns := here.wantStatuses(run.ID, engine.RunRunning, map[string]engine.Status{"c": engine.StatusRunning})
	require.Equal(t, 2, ns["c"].Attempt)

	// Another process (the same database) knew the run before the rerun:
	// its next callback speculates once, fails, and is applied again;
	// after that it knows.
	there := &rig{t: t, st: here.st, eng: testkit.Engine(t, engine.Config{Store: speculations{here.st, &tried, &failed},
		Clock: &testkit.Clock{}, Committer: engine.CommitInline})}
	run2 := here.start(chain, `{}`)
	for _, k := range []string{"a", "b", "c"} {
		require.NoError(t, there.callback(run2.ID, k, 1, engine.StatusCompleted, `{}`))
	}
	there.wantStatuses(run2.ID, engine.RunCompleted, map[string]engine.Status{"c": engine.StatusCompleted})
	require.NoError(t, here.eng.RerunNode(ctx, engine.RerunParams{RunID: run2.ID, Key: "a"}))
	tried.Store(0)
	require.NoError(t, there.callback(run2.ID, "a", 2, engine.StatusCompleted, `{}`))
	require.Equal(t, int64(1), failed.Load(), "seen only when the run is locked again")
	require.NoError(t, there.callback(run2.ID, "b", 2, engine.StatusCompleted, `{}`))
	require.Equal(t, int64(1), tried.Load(), "then not speculated")
	there.wantStatuses(run2.ID, engine.RunRunning, map[string]engine.Status{"c": engine.StatusRunning})
}

// speculations counts the speculated compare-and-sets a store is asked
// for (TransitionLater assuming the run's version) and those that failed.
type speculations struct {
	engine.Store
	tried, failed *atomic.Int64
}

func (s speculations) InTx(ctx context.Context, fn func(context.Context, engine.Tx) error) error {
	var spec bool
	err := s.Store.InTx(ctx, func(ctx context.Context, tx engine.Tx) error {
		spec = false
		return fn(ctx, speculationsTx{tx, s, &spec})
	})
	if err != nil && spec {
		s.failed.Add(1)
	}
	return err
}

type speculationsTx struct {
	engine.Tx
	s    speculations
	spec *bool
}

func (t speculationsTx) TransitionLater(ctx context.Context, tr *engine.NodeTransition) error {
	if tr.RunVersion != "" {
		t.s.tried.Add(1)
		*t.spec = true
	}
	return t.Tx.TransitionLater(ctx, tr)
}
