package app_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/stitchd/stitchd/engine"
	"github.com/stitchd/stitchd/store"
	"github.com/stitchd/stitchd/store/storetest"
)

// smGraph is the state-machine fuzz flow: a splitter over "items" with a
// worker per item and a collector, a side branch of a worker and a person
// (UX), and a join worker waiting for both. Workers allow two attempts.
const smGraph = `{"nodes":[
 {"id":"split","type":"Splitter","data":{"arrayPath":"items"}},
 {"id":"w","type":"Worker","data":{"webhookUrl":"http://worker.invalid/w","retry":{"maxAttempts":2}}},
 {"id":"merge","type":"Collector","data":{}},
 {"id":"side","type":"Worker","data":{"webhookUrl":"http://worker.invalid/side","retry":{"maxAttempts":2}}},
 {"id":"ux","type":"UX","data":{"prompt":"ok?"}},
 {"id":"join","type":"Worker","data":{"webhookUrl":"http://worker.invalid/join","retry":{"maxAttempts":2}}}],
"edges":[
 {"id":"e1","source":"split","target":"w"},{"id":"e2","source":"w","target":"merge"},
 {"id":"e3","source":"merge","target":"join","data":{"mapping":{"items":"@this"}}},
 {"id":"e4","source":"side","target":"ux"},{"id":"e5","source":"ux","target":"join"}]}`

// smUpstream lists each static node's upstream nodes (instances of w
// depend on split).
var smUpstream = map[string][]string{"w": {"split"}, "ux": {"side"}, "join": {"merge", "ux"}}

// Operations of the state-machine fuzz, one per pair of input bytes (op,
// target node).
const (
	opComplete = iota
	opFail
	opHeartbeat
	opRepeat
	opStale
	opConflicting
	opExpire
	opRetry
	opCancel
	opApprove
	opReject
	opClaim
	opDeliveryFailed
	opDelivered
	opCount
)

var opNames = [...]string{"complete", "fail", "heartbeat", "repeat", "stale", "conflicting", "expire", "retry", "cancel",
	"approve", "reject", "claim", "delivery-failed", "delivered"}

// FuzzStateMachine decodes its input into a random sequence of operations
// (worker callbacks completed, failed, running, repeated, stale and
// conflicting; deadlines expiring through the sweeper's query; retries;
// cancellation; a person approving or rejecting; the dispatcher claiming an
// outbox row and, later, reporting the delivery failed or done) on a run
// of smGraph in a real database, and checks the invariants after every
// step (see checkMachine). The first byte is the number of items (0–4).
// Each input runs in a transaction that is rolled back.
func FuzzStateMachine(f *testing.F) {
	for _, seed := range [][]byte{
		{3, opComplete, 0, opComplete, 1, opComplete, 2, opComplete, 3, opApprove, 4, opComplete, 5},
		{2, opFail, 1, opFail, 1, opRetry, 1, opComplete, 1, opRepeat, 0, opStale, 1, opComplete, 2, opApprove, 3},
		{0, opComplete, 0, opApprove, 0, opConflicting, 0, opExpire, 0, opExpire, 0, opRetry, 0},
		{4, opClaim, 2, opDeliveryFailed, 0, opClaim, 2, opDeliveryFailed, 0, opRetry, 2, opHeartbeat, 3, opExpire, 3,
			opCancel, 0, opRetry, 3, opApprove, 1},
		{1, opClaim, 1, opDelivered, 1, opComplete, 1, opReject, 2, opRetry, 2, opComplete, 0, opRepeat, 0},
		// A delivery reported failed after the worker's callback arrived.
		// (keys in order: join, merge, side, split, ux, w_0)
		{1, opClaim, 5, opComplete, 5, opDeliveryFailed, 0, opClaim, 2, opHeartbeat, 2, opDeliveryFailed, 0, opClaim, 2,
			opDeliveryFailed, 0, opComplete, 2},
	} {
		f.Add(seed)
	}
	version := compiledVersion(f, smGraph)

	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) == 0 {
			return
		}
		ctx := context.Background()
		st := storetest.TestTx(t)
		version.ID = uuid.NewString()
		flow, err := st.CreateFlow(ctx, "", uuid.NewString(), "fuzz", nil, version)
		require.NoError(t, err)
		eng := engineOn(t, st)
		items := make([]int, int(data[0])%5)
		for i := range items {
			items[i] = i
		}
		input, _ := json.Marshal(map[string]any{"items": items})
		run, _, err := eng.StartRun(ctx, engine.StartRunParams{FlowID: flow.ID, VersionID: flow.VersionID, Input: input})
		require.NoError(t, err)
		m := &machine{t: t, ctx: ctx, st: st, eng: eng, runID: run.ID, items: len(items), delivered: map[string]bool{}}
		m.check("start")
		ops := data[1:]
		if len(ops) > 80 {
			ops = ops[:80]
		}
		for i := 0; i+1 < len(ops); i += 2 {
			step := m.apply(int(ops[i])%opCount, ops[i+1])
			m.check(step)
		}
	})
}

// machine is one fuzzed run.
type machine struct {
	t     *testing.T
	ctx   context.Context
	st    *store.Store
	eng   *engine.Engine
	runID string
	items int
	last  *engine.CallbackParams // the last callback sent, for opRepeat
	// inflight are claimed outbox rows whose delivery outcome is not
	// reported yet.
	inflight  []engine.ClaimedDispatch
	delivered map[string]bool // outbox rows (key:attempt) seen delivered
	steps     []string
}

type smNode struct {
	key, nodeID string
	typ         engine.NodeType
	status      engine.Status
	attempt     int
	idx         []int
	output      json.RawMessage
}

func (m *machine) nodes() []smNode {
	m.t.Helper()
	rows, err := m.st.Gorm().WithContext(m.ctx).Raw(`SELECT key, node_id, type, status, attempt,
		array_to_string(idx, ','), coalesce(output::text, '') FROM node_states WHERE run_id = ? ORDER BY key`, m.runID).Rows()
	require.NoError(m.t, err)
	defer rows.Close()
	var out []smNode
	for rows.Next() {
		var n smNode
		var idx, output string
		require.NoError(m.t, rows.Scan(&n.key, &n.nodeID, &n.typ, &n.status, &n.attempt, &idx, &output))
		for _, p := range strings.Split(idx, ",") {
			if p != "" {
				var i int
				_, _ = fmt.Sscan(p, &i)
				n.idx = append(n.idx, i)
			}
		}
		n.output = json.RawMessage(output)
		out = append(out, n)
	}
	require.NoError(m.t, rows.Err())
	return out
}

// apply performs one operation on the node chosen by target and returns a
// description of the step. Every engine error must be one of the
// sentinels an operation may legitimately meet (a conflict, an invalid
// transition, a missing node, a bad request); anything else fails.
func (m *machine) apply(op int, target byte) string {
	m.t.Helper()
	ns := m.nodes()
	n := ns[int(target)%len(ns)]
	step := fmt.Sprintf("%s %s (%s attempt %d)", opNames[op], n.key, n.status, n.attempt)
	m.steps = append(m.steps, step)
	var err error
	callback := func(p engine.CallbackParams) {
		m.last = &p
		err = m.eng.HandleCallback(m.ctx, p)
	}
	attempt := max(n.attempt, 1)
	out := json.RawMessage(fmt.Sprintf(`{"key":%q,"attempt":%d}`, n.key, attempt))
	switch op {
	case opComplete:
		callback(engine.CallbackParams{RunID: m.runID, Key: n.key, Attempt: attempt, Status: engine.StatusCompleted, Output: out})
	case opFail:
		callback(engine.CallbackParams{RunID: m.runID, Key: n.key, Attempt: attempt, Status: engine.StatusFailed, Error: "boom"})
	case opHeartbeat:
		callback(engine.CallbackParams{RunID: m.runID, Key: n.key, Attempt: attempt, Status: engine.StatusRunning})
	case opRepeat:
		if m.last != nil {
			callback(*m.last)
		}
	case opStale:
		stale := attempt - 1
		if stale < 1 {
			stale = attempt + 1
		}
		callback(engine.CallbackParams{RunID: m.runID, Key: n.key, Attempt: stale, Status: engine.StatusCompleted, Output: out})
	case opConflicting:
		callback(engine.CallbackParams{RunID: m.runID, Key: n.key, Attempt: attempt, Status: engine.StatusCompleted,
			Output: json.RawMessage(`{"other":true}`)})
	case opExpire:
		// Time passes for this node: its deadline is in the past, and the
		// sweeper's own query finds it.
		require.NoError(m.t, m.st.Gorm().WithContext(m.ctx).Exec(`UPDATE node_states SET deadline = now() - interval '1 second'
			WHERE run_id = ? AND key = ? AND status = 'running' AND deadline IS NOT NULL`, m.runID, n.key).Error)
		overdue, oerr := m.st.OverdueNodes(m.ctx, 1000)
		require.NoError(m.t, oerr)
		for _, o := range overdue {
			if o.RunID == m.runID {
				if _, e := m.eng.Expire(m.ctx, engine.ExpireParams{RunID: o.RunID, Key: o.Key, Attempt: o.Attempt, Deadline: o.Deadline}); e != nil {
					err = e
				}
			}
		}
	case opRetry:
		err = m.eng.RetryNode(m.ctx, m.runID, n.key)
	case opCancel:
		_, err = m.eng.CancelRun(m.ctx, m.runID)
	case opApprove:
		err = m.eng.CompleteUX(m.ctx, engine.CompleteUXParams{RunID: m.runID, Key: n.key, Status: engine.StatusCompleted,
			Output: json.RawMessage(`{"approved":true}`)})
	case opReject:
		err = m.eng.CompleteUX(m.ctx, engine.CompleteUXParams{RunID: m.runID, Key: n.key, Status: engine.StatusFailed, Error: "no"})
	case opClaim:
		// Time passes for the node's outbox row: it is due, and a lease on
		// it has expired (its claimer died); the dispatcher's poll claims it.
		require.NoError(m.t, m.st.Gorm().WithContext(m.ctx).Exec(`UPDATE dispatches SET next_attempt_at = now() - interval '1 second',
			locked_until = CASE WHEN locked_until IS NULL THEN NULL ELSE now() - interval '1 second' END
			WHERE run_id = ? AND key = ? AND status IN ('pending', 'sending')`, m.runID, n.key).Error)
		claimed, cerr := m.st.ClaimDue(m.ctx, 1000, time.Minute)
		require.NoError(m.t, cerr)
		for _, c := range claimed {
			if c.RunID == m.runID {
				m.inflight = append(m.inflight, c)
				step += fmt.Sprintf(": claimed %s attempt %d try %d", c.Key, c.Attempt, c.Tries)
			}
		}
	case opDeliveryFailed, opDelivered:
		// The outcome of an earlier claim, as the dispatcher reports it:
		// another try while the policy allows, else it gives up.
		if len(m.inflight) == 0 {
			return step + ": nothing in flight"
		}
		i := int(target) % len(m.inflight)
		c := m.inflight[i]
		m.inflight = append(m.inflight[:i], m.inflight[i+1:]...)
		step = fmt.Sprintf("%s of %s attempt %d try %d", opNames[op], c.Key, c.Attempt, c.Tries)
		m.steps[len(m.steps)-1] = step
		o := engine.DeliveryOutcome{DispatchID: c.ID, RunID: m.runID, Key: c.Key, Attempt: c.Attempt, Try: c.Tries}
		if op == opDelivered {
			o.Delivered, o.StatusCode = true, 202
		} else {
			o.StatusCode, o.Error = 500, "worker answered 500"
			if c.Tries < c.MaxTries {
				o.RetryInMs = 1000
			}
		}
		err = m.eng.RecordDelivery(m.ctx, o)
	}
	if err != nil && !errors.Is(err, engine.ErrConflict) && !errors.Is(err, engine.ErrInvalidTransition) &&
		!errors.Is(err, engine.ErrNotFound) && !errors.Is(err, engine.ErrInvalidRequest) {
		m.t.Fatalf("%s: unexpected error %v\nsteps: %s", step, err, strings.Join(m.steps, "; "))
	}
	if err != nil {
		step += ": " + err.Error()
	}
	return step
}

// check verifies the invariants of the run after a step:
//   - replaying the run's node.status events follows engine.AllowedFrom
//     from pending, with a new attempt exactly on pending|failed → running,
//     and ends in every node row's status and attempt; the events are
//     numbered 1..event_seq;
//   - the run's counters match its node rows (active, failed, static
//     terminals left) and its status matches them: a running run has a
//     node running or waiting for a person, a completed one has only
//     completed nodes, a failed one a failed node and nothing running or
//     waiting, a cancelled one no node left pending, running, waiting or
//     failed;
//   - a node started only after its upstream nodes completed; the collector
//     completed at most once, after every item, with the items' outputs in
//     index order;
//   - every worker attempt has exactly one outbox row.
func (m *machine) check(step string) {
	m.t.Helper()
	fail := func(format string, args ...any) {
		m.t.Fatalf("after %q: %s\nsteps: %s", step, fmt.Sprintf(format, args...), strings.Join(m.steps, "; "))
	}
	g := m.st.Gorm().WithContext(m.ctx)
	var run struct {
		Status                                  string
		ActiveNodes, FailedNodes, TerminalsLeft int
		EventSeq                                int64
		Output                                  string
	}
	require.NoError(m.t, g.Raw(`SELECT status, active_nodes, failed_nodes, terminals_left, event_seq, coalesce(output::text, '') AS output
		FROM runs WHERE id = ?`, m.runID).Scan(&run).Error)
	ns := m.nodes()
	byKey := map[string]smNode{}
	count := map[engine.Status]int{}
	for _, n := range ns {
		byKey[n.key] = n
		count[n.status]++
	}

	// Replay.
	type ev struct {
		Seq     int64
		Type    string
		Key     string
		Payload string
	}
	var evs []ev
	require.NoError(m.t, g.Raw(`SELECT seq, type, coalesce(key, '') AS key, payload::text AS payload FROM run_events
		WHERE run_id = ? ORDER BY seq`, m.runID).Scan(&evs).Error)
	type replay struct {
		status  engine.Status
		attempt int
	}
	rep := map[string]*replay{}
	workerAttempts := map[string]bool{}
	completedAttempts, failedAttempts := map[string]bool{}, map[string]bool{}
	mergeDone := 0
	for i, e := range evs {
		if e.Seq != int64(i+1) {
			fail("event %d has seq %d", i+1, e.Seq)
		}
		if e.Type != engine.EventNodeStatus {
			continue
		}
		var p struct {
			Status  engine.Status `json:"status"`
			Attempt *int          `json:"attempt"`
		}
		require.NoError(m.t, json.Unmarshal([]byte(e.Payload), &p))
		r := rep[e.Key]
		if r == nil {
			r = &replay{status: engine.StatusPending}
			rep[e.Key] = r
		}
		if !engine.CanTransition(r.status, p.Status) {
			fail("node %s moved %s → %s (event %d)", e.Key, r.status, p.Status, e.Seq)
		}
		want := r.attempt
		if p.Status == engine.StatusRunning && (r.status == engine.StatusPending || r.status == engine.StatusFailed) {
			want++
			if byKey[e.Key].typ == engine.NodeTypeWorker {
				workerAttempts[fmt.Sprintf("%s:%d", e.Key, want)] = true
			}
		}
		if p.Attempt != nil && *p.Attempt != want {
			fail("node %s: event %d says attempt %d, the replay %d", e.Key, e.Seq, *p.Attempt, want)
		}
		if e.Key == "merge" && p.Status == engine.StatusCompleted {
			mergeDone++
		}
		if ak := fmt.Sprintf("%s:%d", e.Key, want); workerAttempts[ak] {
			switch p.Status {
			case engine.StatusCompleted:
				completedAttempts[ak] = true
			case engine.StatusFailed:
				failedAttempts[ak] = true
			default: // not an attempt's end
			}
		}
		r.status, r.attempt = p.Status, want
	}
	if int64(len(evs)) != run.EventSeq {
		fail("event_seq %d but %d events", run.EventSeq, len(evs))
	}
	for _, n := range ns {
		r := rep[n.key]
		if r == nil {
			r = &replay{status: engine.StatusPending}
		}
		if r.status != n.status || r.attempt != n.attempt {
			fail("node %s is %s attempt %d, its events say %s attempt %d", n.key, n.status, n.attempt, r.status, r.attempt)
		}
	}

	// Counters and run status.
	active := count[engine.StatusRunning] + count[engine.StatusWaitingForUser]
	if run.ActiveNodes != active {
		fail("active_nodes %d, nodes running or waiting %d", run.ActiveNodes, active)
	}
	if run.FailedNodes != count[engine.StatusFailed] {
		fail("failed_nodes %d, failed nodes %d", run.FailedNodes, count[engine.StatusFailed])
	}
	terminals := 0
	if byKey["join"].status != engine.StatusCompleted {
		terminals = 1
	}
	if run.TerminalsLeft != terminals {
		fail("terminals_left %d, want %d", run.TerminalsLeft, terminals)
	}
	switch engine.RunStatus(run.Status) {
	case engine.RunRunning:
		if active == 0 {
			fail("the run is running but no node is running or waiting: it can never finish")
		}
	case engine.RunCompleted:
		if count[engine.StatusCompleted] != len(ns) {
			fail("the run completed with nodes %v", count)
		}
		require.JSONEq(m.t, string(byKey["join"].output), run.Output, "the run's output is the join's")
	case engine.RunFailed:
		if count[engine.StatusFailed] == 0 || active != 0 {
			fail("the run failed with nodes %v", count)
		}
	case engine.RunCancelled:
		if n := count[engine.StatusPending] + active + count[engine.StatusFailed]; n != 0 {
			fail("the run was cancelled but %d nodes are not: %v", n, count)
		}
	default:
		fail("run status %q", run.Status)
	}

	// Firing order and the collector.
	for _, n := range ns {
		if n.status == engine.StatusPending || n.status == engine.StatusCancelled {
			continue
		}
		for _, u := range smUpstream[n.nodeID] {
			if byKey[u].status != engine.StatusCompleted {
				fail("node %s is %s but its upstream %s is %s", n.key, n.status, u, byKey[u].status)
			}
		}
	}
	if mergeDone > 1 {
		fail("the collector completed %d times", mergeDone)
	}
	if merge := byKey["merge"]; merge.status == engine.StatusCompleted {
		items := make([]json.RawMessage, m.items)
		for _, n := range ns {
			if n.nodeID == "w" {
				if n.status != engine.StatusCompleted {
					fail("the collector completed while item %s is %s", n.key, n.status)
				}
				items[n.idx[0]] = n.output
			}
		}
		want, err := json.Marshal(items)
		require.NoError(m.t, err)
		require.JSONEq(m.t, string(want), string(merge.output), "the collector's output is its items in order")
	}

	// Outbox rows: one per worker attempt; a row once delivered stays
	// delivered; a completed attempt's row is delivered (its callback is
	// the proof); a row that gave up failed its attempt.
	var rows []struct {
		Attempt string
		Status  string
	}
	require.NoError(m.t, g.Raw(`SELECT key || ':' || attempt AS attempt, status FROM dispatches WHERE run_id = ?`, m.runID).
		Scan(&rows).Error)
	seen := map[string]bool{}
	for _, r := range rows {
		if seen[r.Attempt] {
			fail("two outbox rows for attempt %s", r.Attempt)
		}
		seen[r.Attempt] = true
		if !workerAttempts[r.Attempt] {
			fail("outbox row %s without a worker attempt", r.Attempt)
		}
		if m.delivered[r.Attempt] && r.Status != "delivered" {
			fail("outbox row %s was delivered and is now %s", r.Attempt, r.Status)
		}
		m.delivered[r.Attempt] = r.Status == "delivered"
		if completedAttempts[r.Attempt] && r.Status != "delivered" {
			fail("attempt %s completed but its outbox row is %s", r.Attempt, r.Status)
		}
		if r.Status == "failed" && !failedAttempts[r.Attempt] {
			fail("outbox row %s gave up but its attempt did not fail", r.Attempt)
		}
		if run.Status == string(engine.RunCancelled) && (r.Status == "pending" || r.Status == "sending") {
			fail("outbox row %s of the cancelled run is still %s", r.Attempt, r.Status)
		}
	}
	if len(seen) != len(workerAttempts) {
		fail("%d worker attempts, %d outbox rows", len(workerAttempts), len(seen))
	}
}
