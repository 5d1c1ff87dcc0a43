package engine_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/stitchd/stitchd/engine"
)

// fanGraph is split (items) → score (a worker per item, no automatic
// retry: a failure is for good) → merge, with the
// Collector's data and the Splitter's extra data spliced in.
func fanGraph(splitData, collData string) string {
	return `{"nodes":[{"id":"split","type":"Splitter","data":{"arrayPath":"items"` + splitData + `}},
		{"id":"score","type":"Worker","data":{"webhookUrl":"http://worker.invalid/x","retry":{"maxAttempts":1}}},
		{"id":"merge","type":"Collector","data":{` + collData + `}}],
		"edges":[{"id":"e1","source":"split","target":"score"},{"id":"e2","source":"score","target":"merge"}]}`
}

// items returns {"items":[0,1,…,n-1]}.
func items(n int) string {
	s := `{"items":[`
	for i := range n {
		if i > 0 {
			s += ","
		}
		s += fmt.Sprint(i)
	}
	return s + `]}`
}

// TestRuleFanOut: docs/state_machine.md, Node states (fan-out, the
// Collector) — a Splitter over an empty array fires its Collector at once
// with []; an item's failure for good fails the Collector (pending →
// running → failed) and the run; retrying the item, once every item has
// arrived, moves the Collector failed → running → completed.
func TestRuleFanOut(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	t.Run("an empty array", func(t *testing.T) {
		t.Parallel()
		r := newRig(t)
		run := r.start(fanGraph("", ""), `{"items":[]}`)
		got, ns := r.wantStatuses(run.ID, engine.RunCompleted,
			map[string]engine.Status{"split": engine.StatusCompleted, "merge": engine.StatusCompleted})
		require.JSONEq(t, `[]`, string(ns["merge"].Output))
		require.JSONEq(t, `[]`, string(got.Output))
		require.Empty(t, r.outbox(run.ID), "no instance, no dispatch")
		require.Equal(t, []string{"merge", "split"}, r.keysOf(run.ID), "no instance rows")
	})
	t.Run("an item's failure fails the Collector; its retry completes it", func(t *testing.T) {
		t.Parallel()
		r := newRig(t)
		run := r.start(fanGraph("", ""), items(2))
		require.Equal(t, []string{"score_0#1", "score_1#1"}, r.outbox(run.ID))
		require.NoError(t, r.callback(run.ID, "score_1", 1, engine.StatusFailed, ""))
		r.wantStatuses(run.ID, engine.RunRunning, map[string]engine.Status{"score_1": engine.StatusFailed,
			"merge": engine.StatusFailed, "score_0": engine.StatusRunning})
		require.NoError(t, r.callback(run.ID, "score_0", 1, engine.StatusCompleted, `"a"`))
		got, _ := r.wantStatuses(run.ID, engine.RunFailed, map[string]engine.Status{"score_1": engine.StatusFailed,
			"merge": engine.StatusFailed, "score_0": engine.StatusCompleted})
		require.Equal(t, 2, got.FailedNodes, "the item and its Collector")

		require.NoError(t, r.eng.RetryNode(ctx, run.ID, "score_1"))
		_, ns := r.wantStatuses(run.ID, engine.RunRunning, map[string]engine.Status{"score_1": engine.StatusRunning,
			"merge": engine.StatusFailed})
		require.Equal(t, 2, ns["score_1"].Attempt)
		require.Equal(t, []string{"score_0#1", "score_1#1", "score_1#2"}, r.outbox(run.ID))
		require.NoError(t, r.callback(run.ID, "score_1", 2, engine.StatusCompleted, `"b"`))
		_, ns = r.wantStatuses(run.ID, engine.RunCompleted, map[string]engine.Status{"merge": engine.StatusCompleted})
		require.JSONEq(t, `["a","b"]`, string(ns["merge"].Output))
	})
}

// TestRuleToleratedFailures: docs/state_machine.md, Node states
// (toleratedFailures) — within the tolerance an item's failure for good
// counts as arrived (node.failure_tolerated) and the Collector stays
// pending, then fires once with {items, errors} (null at a failed index);
// the failure beyond it fails the Collector ("(2 of 4 items failed, more
// than the 1 tolerated)"); a percent is of the items, rounded down.
func TestRuleToleratedFailures(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name      string
		tolerated string
		items     int
		fail      []int // items that fail, in this order, the others complete after
		merge     engine.Status
		run       engine.RunStatus
		output    string
		err       string
		events    int
	}{
		{"one failure within a count of one", `1`, 3, []int{1}, engine.StatusCompleted, engine.RunCompleted,
			`{"items":[0,null,2],"errors":[{"index":1,"key":"score_1","error":"boom"}]}`, "", 1},
		{"no failure keeps the envelope", `1`, 2, nil, engine.StatusCompleted, engine.RunCompleted,
			`{"items":[0,1],"errors":[]}`, "", 0},
		{"two failures beyond a count of one", `1`, 4, []int{0, 2}, engine.StatusFailed, engine.RunFailed,
			"", "(2 of 4 items failed, more than the 1 tolerated)", 1},
		{"a percent rounds down: 50% of 3 is 1", `"50%"`, 3, []int{2}, engine.StatusCompleted, engine.RunCompleted,
			`{"items":[0,1,null],"errors":[{"index":2,"key":"score_2","error":"boom"}]}`, "", 1},
		{"a percent rounds down: 40% of 4 is 1, not 2", `"40%"`, 4, []int{0, 3}, engine.StatusFailed, engine.RunFailed,
			"", "(2 of 4 items failed, more than the 1 tolerated)", 1},
		{"zero tolerated", `0`, 2, []int{0}, engine.StatusFailed, engine.RunFailed, "", "", 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := newRig(t)
			run := r.start(fanGraph("", `"toleratedFailures":`+tc.tolerated), items(tc.items))
			failed := map[int]bool{}
			for _, i := range tc.fail {
				failed[i] = true
				require.NoError(t, r.callback(run.ID, fmt.Sprintf("score_%d", i), 1, engine.StatusFailed, ""))
			}
			for i := range tc.items {
				if !failed[i] {
					_, ns := r.nodes(run.ID)
					if tc.merge == engine.StatusCompleted {
						require.Equal(t, engine.StatusPending, ns["merge"].Status, "not before every item arrived")
					}
					require.NoError(t, r.callback(run.ID, fmt.Sprintf("score_%d", i), 1, engine.StatusCompleted, fmt.Sprint(i)))
				}
			}
			_, ns := r.wantStatuses(run.ID, tc.run, map[string]engine.Status{"merge": tc.merge})
			if tc.output != "" {
				require.JSONEq(t, tc.output, string(ns["merge"].Output))
			}
			if tc.err != "" {
				require.Contains(t, *ns["merge"].Error, tc.err)
			}
			require.Len(t, r.eventsOf(run.ID, "node.failure_tolerated"), tc.events)
		})
	}
}

// TestRuleToleratedRetry: docs/state_machine.md, Node states — a tolerated
// item retried before the Collector fires gives its count back, so that
// it arrives once: its new outcome is what the Collector collects.
func TestRuleToleratedRetry(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	run := r.start(fanGraph("", `"toleratedFailures":1`), items(2))
	require.NoError(t, r.callback(run.ID, "score_0", 1, engine.StatusFailed, ""))
	require.NoError(t, r.eng.RetryNode(context.Background(), run.ID, "score_0"))
	require.NoError(t, r.callback(run.ID, "score_1", 1, engine.StatusCompleted, `"b"`))
	r.wantStatuses(run.ID, engine.RunRunning, map[string]engine.Status{"merge": engine.StatusPending, "score_0": engine.StatusRunning})
	require.NoError(t, r.callback(run.ID, "score_0", 2, engine.StatusCompleted, `"a"`))
	_, ns := r.wantStatuses(run.ID, engine.RunCompleted, map[string]engine.Status{"merge": engine.StatusCompleted})
	require.JSONEq(t, `{"items":["a","b"],"errors":[]}`, string(ns["merge"].Output))
}

// TestRuleMaxConcurrency: docs/state_machine.md, Node states
// (maxConcurrency) — the items from N on are created queued and not
// dispatched; an item that finishes (arrives, or fails for good) frees the
// next one's slot in its transaction; in a paused run the freed item
// fires on resume.
func TestRuleMaxConcurrency(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	graph := fanGraph(`,"maxConcurrency":2`, `"toleratedFailures":1`)
	t.Run("slots freed by arrivals and failures", func(t *testing.T) {
		t.Parallel()
		r := newRig(t)
		run := r.start(graph, items(4))
		r.wantStatuses(run.ID, engine.RunRunning, map[string]engine.Status{"score_0": engine.StatusRunning,
			"score_1": engine.StatusRunning, "score_2": engine.StatusPending, "score_3": engine.StatusPending})
		require.Equal(t, []string{"score_0#1", "score_1#1"}, r.outbox(run.ID))

		require.NoError(t, r.callback(run.ID, "score_1", 1, engine.StatusCompleted, `1`))
		r.wantStatuses(run.ID, engine.RunRunning, map[string]engine.Status{"score_2": engine.StatusRunning, "score_3": engine.StatusPending})
		require.Equal(t, []string{"score_0#1", "score_1#1", "score_2#1"}, r.outbox(run.ID))

		require.NoError(t, r.callback(run.ID, "score_0", 1, engine.StatusFailed, ""))
		r.wantStatuses(run.ID, engine.RunRunning, map[string]engine.Status{"score_0": engine.StatusFailed, "score_3": engine.StatusRunning})
		require.Equal(t, []string{"score_0#1", "score_1#1", "score_2#1", "score_3#1"}, r.outbox(run.ID))

		require.NoError(t, r.callback(run.ID, "score_2", 1, engine.StatusCompleted, `2`))
		require.NoError(t, r.callback(run.ID, "score_3", 1, engine.StatusCompleted, `3`))
		_, ns := r.wantStatuses(run.ID, engine.RunCompleted, map[string]engine.Status{"merge": engine.StatusCompleted})
		require.JSONEq(t, `{"items":[null,1,2,3],"errors":[{"index":0,"key":"score_0","error":"boom"}]}`, string(ns["merge"].Output))
	})
	t.Run("a slot freed while paused fires on resume", func(t *testing.T) {
		t.Parallel()
		r := newRig(t)
		run := r.start(graph, items(3))
		_, err := r.eng.PauseRun(ctx, run.ID)
		require.NoError(t, err)
		require.NoError(t, r.callback(run.ID, "score_0", 1, engine.StatusCompleted, `0`))
		r.wantStatuses(run.ID, engine.RunPaused, map[string]engine.Status{"score_0": engine.StatusCompleted, "score_2": engine.StatusPending})
		require.Equal(t, []string{"score_0#1", "score_1#1"}, r.outbox(run.ID))
		_, err = r.eng.ResumeRun(ctx, run.ID)
		require.NoError(t, err)
		r.wantStatuses(run.ID, engine.RunRunning, map[string]engine.Status{"score_2": engine.StatusRunning})
		require.Equal(t, []string{"score_0#1", "score_1#1", "score_2#1"}, r.outbox(run.ID))
	})
}
