package chaos

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stitchd/stitchd/engine"
)

// figures are what the invariant check counted in the database.
type figures struct {
	runs, nodes, events                          int
	workerAttempts, retriedAttempts              int
	dispatchRows, dispatchTries                  int
	dispatchFailed, dispatchCancelled            int
	failedAttempts, deadlineFailures             int
	collectorRefires                             int
	maxOverrun                                   time.Duration
	heartbeats, deliveredLogged, failedTriesLogd int
	retryAfter429                                int
}

type attemptKey struct {
	run, key string
	attempt  int
}

type attemptInfo struct {
	start, lastBeat, end time.Time
	final                engine.Status
	err                  string
}

// expectedOutput is the run output of run r with items items: the join
// echoes its input, the collector's items (in order) under "items" merged
// with the side branch's output.
func expectedOutput(r, items int) string {
	xs := make([]map[string]int64, items)
	for i := range xs {
		x := int64(r*1000 + i)
		xs[i] = map[string]int64{"item": x, "second": 2*x + 1}
	}
	b, _ := json.Marshal(map[string]any{"items": xs, "side": r})
	return string(b)
}

func expectedCollector(r, items int) string {
	var out struct {
		Items json.RawMessage `json:"items"`
	}
	_ = json.Unmarshal([]byte(expectedOutput(r, items)), &out)
	return string(out.Items)
}

// checkInvariants checks stitchd's promises from the database once every
// run finished:
//   - every run completed with the expected output; its counters are zero;
//     its events are numbered 1..event_seq without gaps;
//   - replaying every node's node.status events follows engine.AllowedFrom
//     from pending, with a new attempt exactly on pending|failed → running,
//     and ends in the node row's status and attempt;
//   - each attempt completed at most once; each collector completed exactly
//     once, with every item in order;
//   - each worker attempt has exactly one outbox row, none left pending or
//     sending: a completed attempt's row is delivered, a failed row used
//     every try and its attempt failed with the dispatch's reason, a
//     cancelled row's attempt ended failed before delivery;
//   - a try answered 429 with Retry-After: 1 is retried no sooner;
//   - no worker attempt ran longer past its deadline than bound.
func checkInvariants(t *testing.T, ctx context.Context, db *sql.DB, runIDs []string, items int, timeout, bound time.Duration) figures {
	t.Helper()
	var f figures
	index := make(map[string]int, len(runIDs))
	for i, id := range runIDs {
		index[id] = i
	}

	// Runs.
	rows, err := db.QueryContext(ctx, `SELECT id::text, status, coalesce(output::text, ''), active_nodes, failed_nodes,
		terminals_left, event_seq FROM runs`)
	require.NoError(t, err)
	eventSeq := map[string]int64{}
	for rows.Next() {
		var id, status, out string
		var active, failed, terms int
		var seq int64
		require.NoError(t, rows.Scan(&id, &status, &out, &active, &failed, &terms, &seq))
		r, ok := index[id]
		require.True(t, ok, "run %s was not started by the test", id)
		require.Equal(t, "completed", status, "run %d (%s)", r, id)
		require.Zero(t, active, "run %s active_nodes", id)
		require.Zero(t, failed, "run %s failed_nodes", id)
		require.Zero(t, terms, "run %s terminals_left", id)
		require.JSONEq(t, expectedOutput(r, items), out, "output of run %d", r)
		eventSeq[id] = seq
		f.runs++
	}
	require.NoError(t, rows.Err())
	require.Equal(t, len(runIDs), f.runs)

	// Node rows.
	type nodeRow struct {
		typ     engine.NodeType
		status  engine.Status
		attempt int
	}
	nodeRows := map[[2]string]nodeRow{}
	rows, err = db.QueryContext(ctx, `SELECT run_id::text, key, type, status, attempt, coalesce(output::text, '') FROM node_states`)
	require.NoError(t, err)
	for rows.Next() {
		var run, key, typ, status, out string
		var attempt int
		require.NoError(t, rows.Scan(&run, &key, &typ, &status, &attempt, &out))
		require.Equal(t, "completed", status, "node %s of run %s", key, run)
		if key == "merge" {
			require.JSONEq(t, expectedCollector(index[run], items), out, "collector of run %d: every item, in order", index[run])
		}
		nodeRows[[2]string{run, key}] = nodeRow{engine.NodeType(typ), engine.Status(status), attempt}
		f.nodes++
	}
	require.NoError(t, rows.Err())
	require.Equal(t, len(runIDs)*(4+2*items), f.nodes, "every node instance exists once")

	// Events: numbering, state machine replay, attempts.
	type replay struct {
		status  engine.Status
		attempt int
	}
	nodes := map[[2]string]*replay{}
	attempts := map[attemptKey]*attemptInfo{}
	completions := map[attemptKey]int{}
	collectorDone := map[string]int{}
	lastSeq := map[string]int64{}
	rows, err = db.QueryContext(ctx, `SELECT run_id::text, seq, type, coalesce(key, ''), payload, created_at
		FROM run_events ORDER BY run_id, seq`)
	require.NoError(t, err)
	for rows.Next() {
		var run, typ, key string
		var seq int64
		var payload []byte
		var at time.Time
		require.NoError(t, rows.Scan(&run, &seq, &typ, &key, &payload, &at))
		f.events++
		require.Equal(t, lastSeq[run]+1, seq, "events of run %s are numbered without gaps", run)
		lastSeq[run] = seq
		var p struct {
			Status     engine.Status `json:"status"`
			Attempt    *int          `json:"attempt"`
			Error      string        `json:"error"`
			Delivered  bool          `json:"delivered"`
			StatusCode int           `json:"status_code"`
			RetryInMs  int64         `json:"retry_in_ms"`
		}
		require.NoError(t, json.Unmarshal(payload, &p))
		switch typ {
		case engine.EventNodeHeartbeat:
			f.heartbeats++
			if a := attempts[attemptKey{run, key, *p.Attempt}]; a != nil {
				a.lastBeat = at
			}
			continue
		case engine.EventDispatchAttempt:
			if p.Delivered {
				f.deliveredLogged++
			} else {
				f.failedTriesLogd++
			}
			if p.StatusCode == 429 && p.RetryInMs > 0 {
				f.retryAfter429++
				require.GreaterOrEqual(t, p.RetryInMs, int64(1000), "a 429 with Retry-After: 1 is retried no sooner (run %s, event %d)", run, seq)
			}
			continue
		case engine.EventNodeStatus:
		default:
			continue
		}
		nk := [2]string{run, key}
		st := nodes[nk]
		if st == nil {
			st = &replay{status: engine.StatusPending}
			nodes[nk] = st
		}
		require.True(t, engine.CanTransition(st.status, p.Status), "run %s node %s: %s → %s is not allowed (event %d)",
			run, key, st.status, p.Status, seq)
		want := st.attempt
		if p.Status == engine.StatusRunning && (st.status == engine.StatusPending || st.status == engine.StatusFailed) {
			want++
		}
		if p.Attempt != nil {
			require.Equal(t, want, *p.Attempt, "run %s node %s: attempt of %s → %s (event %d)", run, key, st.status, p.Status, seq)
		}
		ak := attemptKey{run, key, want}
		if want != st.attempt {
			attempts[ak] = &attemptInfo{start: at}
		}
		switch p.Status {
		case engine.StatusCompleted:
			completions[ak]++
			if key == "merge" {
				collectorDone[run]++
			}
			fallthrough
		case engine.StatusFailed:
			if a := attempts[ak]; a != nil {
				a.end, a.final, a.err = at, p.Status, p.Error
			}
		}
		st.status, st.attempt = p.Status, want
	}
	require.NoError(t, rows.Err())
	for run, seq := range eventSeq {
		require.Equal(t, seq, lastSeq[run], "run %s: event_seq matches its last event", run)
	}
	for nk, row := range nodeRows {
		st := nodes[nk]
		require.NotNil(t, st, "node %s of run %s has events", nk[1], nk[0])
		require.Equal(t, row.status, st.status, "node %s of run %s: the replayed status is the row's", nk[1], nk[0])
		require.Equal(t, row.attempt, st.attempt, "node %s of run %s: the replayed attempt is the row's", nk[1], nk[0])
	}
	for ak, n := range completions {
		require.Equal(t, 1, n, "attempt %d of %s in run %s completed once", ak.attempt, ak.key, ak.run)
	}
	for _, id := range runIDs {
		require.Equal(t, 1, collectorDone[id], "the collector of run %s completed exactly once", id)
	}

	// Outbox rows against worker attempts.
	type dispatchRow struct {
		status         string
		tries, maxTrie int
		lastErr        string
	}
	dispatches := map[attemptKey]dispatchRow{}
	rows, err = db.QueryContext(ctx, `SELECT run_id::text, key, attempt, status, tries, max_tries, coalesce(last_error, '')
		FROM dispatches`)
	require.NoError(t, err)
	for rows.Next() {
		var ak attemptKey
		var d dispatchRow
		require.NoError(t, rows.Scan(&ak.run, &ak.key, &ak.attempt, &d.status, &d.tries, &d.maxTrie, &d.lastErr))
		_, dup := dispatches[ak]
		require.False(t, dup, "one outbox row per attempt: %+v", ak)
		dispatches[ak] = d
		f.dispatchRows++
		f.dispatchTries += d.tries
	}
	require.NoError(t, rows.Err())
	for ak, a := range attempts {
		row := nodeRows[[2]string{ak.run, ak.key}]
		if row.typ != engine.NodeTypeWorker {
			if row.typ == engine.NodeTypeCollector && ak.attempt > 1 && a.final == engine.StatusCompleted {
				f.collectorRefires++
			}
			continue
		}
		f.workerAttempts++
		if ak.attempt > 1 {
			f.retriedAttempts++
		}
		d, ok := dispatches[ak]
		require.True(t, ok, "worker attempt %+v has an outbox row", ak)
		require.False(t, a.end.IsZero(), "worker attempt %+v ended", ak)
		if a.final == engine.StatusFailed {
			f.failedAttempts++
		}
		switch d.status {
		case "delivered":
		case "failed":
			f.dispatchFailed++
			// A try claimed by a process that was killed may be made again,
			// so tries can exceed max_tries by the tries the kills lost.
			require.GreaterOrEqual(t, d.tries, d.maxTrie, "a failed dispatch used every try: %+v", ak)
			require.Equal(t, engine.StatusFailed, a.final, "attempt %+v of a failed dispatch failed", ak)
			require.Equal(t, "dispatch failed: "+d.lastErr, a.err, "attempt %+v failed with the dispatch's reason", ak)
		case "cancelled":
			f.dispatchCancelled++
			require.Equal(t, engine.StatusFailed, a.final, "attempt %+v of a retired dispatch failed", ak)
		default:
			t.Fatalf("dispatch of %+v is still %s: lost", ak, d.status)
		}
		if a.final == engine.StatusCompleted {
			require.Equal(t, "delivered", d.status, "the dispatch of completed attempt %+v is delivered", ak)
		}
		if a.final == engine.StatusFailed && a.err == fmt.Sprintf("deadline exceeded on attempt %d", ak.attempt) {
			f.deadlineFailures++
		}
		from := a.start
		if a.lastBeat.After(from) {
			from = a.lastBeat
		}
		if over := a.end.Sub(from.Add(timeout)); over > f.maxOverrun {
			f.maxOverrun = over
		}
	}
	require.Equal(t, f.workerAttempts, f.dispatchRows, "no outbox row without a worker attempt")
	require.LessOrEqual(t, f.maxOverrun, bound, "no worker attempt ran past its deadline by more than the sweeper's bound")
	return f
}
