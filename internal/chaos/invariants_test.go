package chaos

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
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
	runFailures                                  int
}

type attemptKey struct {
	run, key string
	attempt  int
}

type attemptInfo struct {
	start, lastBeat, end time.Time
	final                string // completed or failed
	err                  string
}

// nodeMoves are the node status moves docs/state_machine.md allows (its
// "Node states" diagram), written out here from the document rather than
// read from engine.AllowedFrom: the engine must not be its own oracle.
// (A rerun, back to pending, is an operator's step outside the diagram;
// the soak never reruns.)
var nodeMoves = map[string][]string{
	"pending":           {"running", "cancelled", "skipped"},
	"running":           {"completed", "failed", "waiting_for_user", "cancelled", "sleeping", "waiting_for_event"},
	"waiting_for_user":  {"running", "cancelled"},
	"failed":            {"running", "cancelled"},
	"sleeping":          {"running", "cancelled"},
	"waiting_for_event": {"running", "cancelled"},
}

// soakStatuses are the node statuses the soak's flow can reach: nothing
// cancels, skips, sleeps or waits for a person or an event in it.
var soakStatuses = map[string]bool{"pending": true, "running": true, "completed": true, "failed": true}

func nodeMoveAllowed(from, to string) bool {
	for _, s := range nodeMoves[from] {
		if s == to {
			return true
		}
	}
	return false
}

// runMoves are the run status moves of docs/state_machine.md's "Run
// states" diagram, by the event that records each.
var runMoves = map[string]struct {
	from []string
	to   string
}{
	"run.completed": {[]string{"running"}, "completed"},
	"run.failed":    {[]string{"running"}, "failed"},
	"run.resumed":   {[]string{"failed", "paused"}, "running"},
	"run.cancelled": {[]string{"running", "paused", "failed"}, "cancelled"},
}

// history is what the invariant check replayed from the database, for
// the checks of the worker's callbacks and of the event streams.
type history struct {
	attempts map[attemptKey]*attemptInfo
	nodes    map[[2]string]nodeRow
}

type nodeRow struct {
	typ     string
	status  string
	attempt int
	output  string
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
	b, _ := json.Marshal(struct {
		Items []map[string]int64 `json:"items"`
		Side  int                `json:"side"`
	}{xs, r})
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
// run finished, against rules written out here (never the engine's own
// tables):
//   - every run completed with the expected output; its counters are zero;
//     its events are numbered 1..event_seq without gaps;
//   - replaying every node's node.status events follows nodeMoves (the
//     diagram of docs/state_machine.md) from pending, reaches only the
//     statuses this flow can, starts a new attempt exactly on
//     pending|failed → running, and ends in the node row's status and
//     attempt;
//   - replaying the run.* events follows runMoves from running and ends
//     completed; the run failed only with a node failed and none running,
//     completed only with every node it had started completed, and no node
//     moved after it completed;
//   - each attempt completed at most once; each collector completed exactly
//     once, with every item in order;
//   - each worker attempt has exactly one outbox row, none left pending or
//     sending: a completed attempt's row is delivered, a failed row used
//     every try and its attempt failed with the dispatch's reason, a
//     cancelled row's attempt ended failed before delivery;
//   - a try answered 429 with Retry-After: 1 is retried no sooner;
//   - no worker attempt ran longer past its deadline than bound.
func checkInvariants(ctx context.Context, t *testing.T, db *sql.DB, runIDs []string, items int, timeout, bound time.Duration) (figures, history) {
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
		nodeRows[[2]string{run, key}] = nodeRow{typ, status, attempt, out}
		f.nodes++
	}
	require.NoError(t, rows.Err())
	require.Equal(t, len(runIDs)*(4+2*items), f.nodes, "every node instance exists once")

	// Events: numbering, state machine replay, attempts.
	type replay struct {
		status  string
		attempt int
	}
	nodes := map[[2]string]*replay{}
	runNodes := map[string][]*replay{} // the run's nodes that moved, in replay order
	runStatus := map[string]string{}
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
		if _, ok := runStatus[run]; !ok {
			runStatus[run] = "running" // a run starts running (its entry nodes fire)
		}
		var p struct {
			Status     string `json:"status"`
			Attempt    *int   `json:"attempt"`
			Error      string `json:"error"`
			Delivered  bool   `json:"delivered"`
			StatusCode int    `json:"status_code"`
			RetryInMs  int64  `json:"retry_in_ms"`
		}
		require.NoError(t, json.Unmarshal(payload, &p))
		switch typ {
		case "node.heartbeat":
			f.heartbeats++
			if a := attempts[attemptKey{run, key, *p.Attempt}]; a != nil {
				a.lastBeat = at
			}
			continue
		case "dispatch.attempt":
			if p.Delivered {
				f.deliveredLogged++
			} else {
				f.failedTriesLogd++
			}
			if p.StatusCode == http.StatusTooManyRequests && p.RetryInMs > 0 {
				f.retryAfter429++
				require.GreaterOrEqual(t, p.RetryInMs, int64(1000), "a 429 with Retry-After: 1 is retried no sooner (run %s, event %d)", run, seq)
			}
			continue
		case "node.status":
		case "run.started":
			continue
		default:
			mv, ok := runMoves[typ]
			if !ok {
				if len(typ) > 4 && typ[:4] == "run." {
					t.Fatalf("run %s: event %d is %s, which the run state machine does not have", run, seq, typ)
				}
				continue
			}
			from := runStatus[run]
			require.Contains(t, mv.from, from, "run %s: %s from %s is not allowed (event %d)", run, typ, from, seq)
			switch mv.to {
			case "failed":
				failed, active := 0, 0
				for _, n := range runNodes[run] {
					switch n.status {
					case "failed":
						failed++
					case "running", "waiting_for_user", "waiting_for_event", "sleeping":
						active++
					}
				}
				require.True(t, failed > 0 && active == 0, "run %s failed (event %d) with %d nodes failed and %d active",
					run, seq, failed, active)
				f.runFailures++
			case "completed":
				for _, n := range runNodes[run] {
					require.Equal(t, "completed", n.status, "run %s completed (event %d) with a node %s", run, seq, n.status)
				}
			}
			runStatus[run] = mv.to
			continue
		}
		require.NotEqual(t, "completed", runStatus[run], "run %s: node %s moved after the run completed (event %d)", run, key, seq)
		nk := [2]string{run, key}
		st := nodes[nk]
		if st == nil {
			st = &replay{status: "pending"}
			nodes[nk] = st
			runNodes[run] = append(runNodes[run], st)
		}
		require.True(t, soakStatuses[p.Status], "run %s node %s: status %q is not one this flow reaches (event %d)",
			run, key, p.Status, seq)
		require.True(t, nodeMoveAllowed(st.status, p.Status), "run %s node %s: %s → %s is not allowed (event %d)",
			run, key, st.status, p.Status, seq)
		want := st.attempt
		if p.Status == "running" && (st.status == "pending" || st.status == "failed") {
			want++
		}
		require.NotNil(t, p.Attempt, "run %s node %s: event %d carries the attempt", run, key, seq)
		require.Equal(t, want, *p.Attempt, "run %s node %s: attempt of %s → %s (event %d)", run, key, st.status, p.Status, seq)
		ak := attemptKey{run, key, want}
		if want != st.attempt {
			attempts[ak] = &attemptInfo{start: at}
		}
		switch p.Status {
		case "completed":
			completions[ak]++
			if key == "merge" {
				collectorDone[run]++
			}
			fallthrough
		case "failed":
			if a := attempts[ak]; a != nil {
				a.end, a.final, a.err = at, p.Status, p.Error
			}
		}
		st.status, st.attempt = p.Status, want
	}
	require.NoError(t, rows.Err())
	for run, seq := range eventSeq {
		require.Equal(t, seq, lastSeq[run], "run %s: event_seq matches its last event", run)
		require.Equal(t, "completed", runStatus[run], "run %s: its events end with it completed", run)
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
		if row.typ != "Worker" {
			if row.typ == "Collector" && ak.attempt > 1 && a.final == "completed" {
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
		if a.final == "failed" {
			f.failedAttempts++
		}
		switch d.status {
		case "delivered":
		case "failed":
			f.dispatchFailed++
			// A try claimed by a process that was killed may be made again,
			// so tries can exceed max_tries by the tries the kills lost.
			require.GreaterOrEqual(t, d.tries, d.maxTrie, "a failed dispatch used every try: %+v", ak)
			require.Equal(t, "failed", a.final, "attempt %+v of a failed dispatch failed", ak)
			require.Equal(t, "dispatch failed: "+d.lastErr, a.err, "attempt %+v failed with the dispatch's reason", ak)
		case "cancelled":
			f.dispatchCancelled++
			require.Equal(t, "failed", a.final, "attempt %+v of a retired dispatch failed", ak)
		default:
			t.Fatalf("dispatch of %+v is still %s: lost", ak, d.status)
		}
		if a.final == "completed" {
			require.Equal(t, "delivered", d.status, "the dispatch of completed attempt %+v is delivered", ak)
		}
		if a.final == "failed" && a.err == deadlineError(ak.attempt) {
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
	return f, history{attempts: attempts, nodes: nodeRows}
}

// deadlineError is the error of a worker attempt the sweeper failed.
func deadlineError(attempt int) string {
	return fmt.Sprintf("deadline exceeded on attempt %d", attempt)
}

// callbackFigures count the callbacks checkCallbacks checked.
type callbackFigures struct {
	results, heartbeats                 int
	result200, result409, beat200, b409 int
	late200, late409, beatLate200       int
}

// checkCallbacks checks every callback the worker sent against the
// attempts replayed from the database: what its answer had to be, and
// that it changed only what that answer says.
//   - 200 is {"status":"accepted"}; 409 is a "conflict" error.
//   - A result answered 200 is what its attempt ended with: completed with
//     exactly its output (the node's output; the node completed on that
//     attempt) or failed with its error. A repeat answered 200 therefore
//     left the result as the first one made it, and the attempt completed
//     once (checkInvariants).
//   - A result answered 409 is not what its attempt ended with: a
//     completed one found the attempt failed (its deadline, or its
//     dispatch gave up), a failed one found it failed already; either way
//     the attempt had ended before the answer.
//   - A heartbeat answered 409 found its attempt ended.
//   - A late result (1–3 s after the deadline) answered 409 found its
//     attempt failed by the deadline (or the dispatch); one answered 200
//     came before the sweeper and completed (or failed) the attempt
//     itself, by the rules above.
//   - A late result after a heartbeat answered 200, answered within the
//     node timeout of that heartbeat, was in time (the heartbeat moved the
//     deadline on): its attempt ended as it said, and it must be 200 (a
//     repeated failure report may be 409: the retry it caused had begun).
func checkCallbacks(t *testing.T, recs []callbackRecord, h history, timeout time.Duration) callbackFigures {
	t.Helper()
	var f callbackFigures
	beats := map[attemptKey]callbackRecord{} // the heartbeats of the late-after-heartbeat callbacks
	for _, r := range recs {
		if r.status == "running" && r.beatLate {
			beats[attemptKey{r.run, r.key, r.attempt}] = r
		}
	}
	for _, r := range recs {
		ak := attemptKey{r.run, r.key, r.attempt}
		a := h.attempts[ak]
		require.NotNil(t, a, "callback for %+v: the attempt is in the events", ak)
		what := fmt.Sprintf("%s callback for %+v (late %v, after a heartbeat %v, repeated %v) answered %d %s",
			r.status, ak, r.late, r.beatLate, r.dup, r.code, r.body)
		switch r.code {
		case http.StatusOK:
			require.JSONEq(t, `{"status":"accepted"}`, string(r.body), what)
		case http.StatusConflict:
			var e struct {
				Error struct {
					Code string `json:"code"`
				} `json:"error"`
			}
			require.NoError(t, json.Unmarshal(r.body, &e), what)
			require.Equal(t, "conflict", e.Error.Code, what)
			require.True(t, a.end.Before(r.answered), "%s: the attempt had ended (at %s) before the answer", what,
				a.end.Format(time.RFC3339Nano))
		default:
			t.Fatalf("%s: only 200 and 409 are answers", what)
		}
		if r.status == "running" {
			f.heartbeats++
			if r.code == http.StatusOK {
				f.beat200++
			} else {
				f.b409++
			}
			continue
		}
		f.results++
		if r.code == http.StatusOK {
			f.result200++
			require.Equal(t, r.status, a.final, "%s: the attempt ended as it said", what)
			if r.status == "completed" {
				n := h.nodes[[2]string{r.run, r.key}]
				require.Equal(t, r.attempt, n.attempt, "%s: the node completed on this attempt", what)
				require.JSONEq(t, string(r.output), n.output, "%s: the node's output is the callback's", what)
			} else {
				require.Equal(t, r.errMsg, a.err, "%s: the attempt failed with the callback's error", what)
			}
		} else {
			f.result409++
			require.Equal(t, "failed", a.final, "%s: the attempt had ended otherwise", what)
		}
		if !r.late {
			continue
		}
		if r.beatLate {
			if b, ok := beats[ak]; ok && b.code == http.StatusOK && r.answered.Before(b.sent.Add(timeout)) {
				// In time: the attempt ended as it said, and it was answered
				// 200 — but for a repeated failure report, which may find
				// the automatic retry begun (a stale attempt: 409).
				hb := fmt.Sprintf("its heartbeat (sent %s, 200) moved the deadline past it", b.sent.Format(time.RFC3339Nano))
				require.Equal(t, r.status, a.final, "%s: %s", what, hb)
				if r.status == "failed" {
					require.Equal(t, r.errMsg, a.err, "%s: %s", what, hb)
				}
				if !r.dup || r.status != "failed" {
					require.Equal(t, http.StatusOK, r.code, "%s: %s", what, hb)
				}
				if r.code == http.StatusOK {
					f.beatLate200++
				}
			}
			continue
		}
		if r.dup {
			continue
		}
		if r.code == http.StatusOK {
			f.late200++
		} else {
			f.late409++
			require.True(t, a.err == deadlineError(r.attempt) || strings.HasPrefix(a.err, "dispatch failed: "),
				"%s: the attempt failed by its deadline or dispatch, not %q", what, a.err)
		}
	}
	return f
}
