package store

import (
	"context"
	"fmt"
	"time"

	"github.com/stitchd/stitchd/engine"
)

// newRuns holds the rows of runs started in this transaction that are not
// written yet: the run, its node states, its outbox rows and its events.
// A fan-out of sub-flows starts thousands of runs in one transaction; one
// statement per table for all of them instead of five statements for each
// (runs, node states, their start, the outbox row, the events and the
// run's save) keeps such a fan-out's transaction short
// (docs/performance.md#measurements-behind-the-code).
// The rows are written before any other statement of the transaction runs
// (pgTx.raw, exec and later write them first) and before it commits, so
// every statement sees what it would have seen; a run's save only changes
// the row about to be inserted.
type newRuns struct {
	runs  []newRun
	index map[string]int // run id → runs
	nodes []newNode
	// dispatches are plain worker deliveries (no HTTP request rows).
	dispatches []*engine.Dispatch
	events     newEvents
}

type newRun struct {
	row engine.Run // as it is to be inserted
	// told are the Runs whose times are set once the row is written: the
	// one inserted and the one saved (the same, usually).
	told []*engine.Run
}

type newNode struct {
	runID string
	node  engine.NodeState
	start engine.BulkStart
}

type newEvents struct {
	runIDs   []string
	seqs     []int64
	types    []string
	keys     []string
	payloads []string
}

func (b *newRuns) empty() bool { return b == nil || len(b.runs) == 0 }

func (b *newRuns) has(runID string) bool {
	if b.empty() {
		return false
	}
	_, ok := b.index[runID]
	return ok
}

// InsertRun implements engine.Tx: the run is written with the rows of the
// runs started with it (newRuns). A duplicate idempotency key fails that
// statement, or the commit, with the same conflict.
func (t *pgTx) InsertRun(_ context.Context, r *engine.Run) error {
	if t.fresh == nil {
		t.fresh = &newRuns{index: map[string]int{}}
	}
	if _, ok := t.fresh.index[r.ID]; ok {
		return fmt.Errorf("%w: run %s inserted twice", engine.ErrConflict, r.ID)
	}
	t.fresh.index[r.ID] = len(t.fresh.runs)
	t.fresh.runs = append(t.fresh.runs, newRun{row: *r, told: []*engine.Run{r}})
	return nil
}

// saveNew takes the save of a run not written yet into its row. It reports
// false when the save must be a statement of its own (the run is written,
// or the save marks deliveries, which a new run has none of).
func (t *pgTx) saveNew(s engine.RunSave) (bool, error) {
	if !t.fresh.has(s.Run.ID) || s.Relative || len(s.DeliveredKeys) > 0 || len(s.Events) > bulkChunk {
		return false, nil
	}
	types, keys, payloads, err := encodeEvents(s.Events)
	if err != nil {
		return true, err
	}
	nr := &t.fresh.runs[t.fresh.index[s.Run.ID]]
	nr.row = *s.Run
	if nr.told[len(nr.told)-1] != s.Run {
		nr.told = append(nr.told, s.Run)
	}
	ev := &t.fresh.events
	for i := range types {
		ev.runIDs = append(ev.runIDs, s.Run.ID)
		ev.seqs = append(ev.seqs, s.FirstSeq+int64(i))
	}
	ev.types = append(ev.types, types...)
	ev.keys = append(ev.keys, keys...)
	ev.payloads = append(ev.payloads, payloads...)
	return true, nil
}

// addNodes takes node states of a run not written yet; false when the run
// is written.
func (t *pgTx) addNodes(runID string, nodes []engine.NodeState, starts []engine.BulkStart) bool {
	if !t.fresh.has(runID) {
		return false
	}
	for i, n := range nodes {
		t.fresh.nodes = append(t.fresh.nodes, newNode{runID: runID, node: n, start: starts[i]})
	}
	return true
}

// addDispatches takes outbox rows of runs not written yet: plain worker
// deliveries only (a request/response row carries more columns); false
// otherwise.
func (t *pgTx) addDispatches(ds []*engine.Dispatch) bool {
	if len(ds) == 0 || t.fresh.empty() {
		return false
	}
	for _, d := range ds {
		if d.Request != nil || d.Queue != "" || !t.fresh.has(d.RunID) {
			return false
		}
	}
	t.fresh.dispatches = append(t.fresh.dispatches, ds...)
	return true
}

// queueNewRuns queues the rows of the runs not written yet, with their
// node states, outbox rows and events: one statement a table (a chunk at a
// time), ahead of the statement about to be sent. Queued only: nothing here
// fails before the queue is sent, where a failure is the transaction's.
func (t *pgTx) queueNewRuns() {
	if t.fresh.empty() {
		return
	}
	b := t.fresh
	t.fresh = nil
	_ = chunked(b.runs, func(part []newRun, _ int) error {
		t.queueRuns(part)
		return nil
	})
	_ = chunked(b.nodes, func(part []newNode, _ int) error {
		runs := make([]string, len(part))
		nodes := make([]engine.NodeState, len(part))
		starts := make([]engine.BulkStart, len(part))
		for i, n := range part {
			runs[i], nodes[i], starts[i] = n.runID, n.node, n.start
		}
		q, args := nodeRowsInsert("", runs, nodes, starts)
		t.queue(q, nil, planFor(len(part), args...)...)
		return nil
	})
	_ = chunked(b.dispatches, func(part []*engine.Dispatch, _ int) error {
		q, args := callbacksInsert(part)
		t.queue(q, nil, planFor(len(part), args...)...)
		return nil
	})
	ev := b.events
	_ = chunked(ev.runIDs, func(part []string, off int) error {
		end := off + len(part)
		t.queue(`INSERT INTO run_events (run_id, seq, type, key, payload)
			SELECT r::uuid, s, ty, nullif(k, ''), p::jsonb
			FROM unnest(?::text[], ?::bigint[], ?::text[], ?::text[], ?::text[]) WITH ORDINALITY AS u(r, s, ty, k, p, ord)
			WHERE `+xidFirst+` ORDER BY ord`, nil,
			planFor(len(part), part, ev.seqs[off:end], ev.types[off:end], ev.keys[off:end], ev.payloads[off:end])...)
		return nil
	})
}

// queueRuns writes runs rows as they are to be after this transaction's
// saves. Their times are the transaction's (now()), as an INSERT and an
// UPDATE of each would have set them, and are given to the engine's Runs
// when the statement is answered.
func (t *pgTx) queueRuns(part []newRun) {
	n := len(part)
	cols := struct {
		ids, flows, versions, entities, statuses, triggers, inputs, outputs, errs, keys []string
		parents, parentKeys, startedBy                                                  []string
		hasErr                                                                          []bool
		active, failed, terminals, secs, parentAttempts                                 []int64
		seqs                                                                            []int64
	}{}
	for i := range part {
		r := &part[i].row
		trigger := string(r.Trigger)
		if trigger == "" {
			trigger = "{}"
		}
		cols.ids = append(cols.ids, r.ID)
		cols.flows = append(cols.flows, r.FlowID)
		cols.versions = append(cols.versions, r.FlowVersionID)
		cols.entities = append(cols.entities, deref(r.EntityID))
		cols.statuses = append(cols.statuses, string(r.Status))
		cols.triggers = append(cols.triggers, trigger)
		cols.inputs = append(cols.inputs, string(r.Input))
		cols.outputs = append(cols.outputs, string(r.Output))
		cols.errs = append(cols.errs, deref(r.Error))
		cols.hasErr = append(cols.hasErr, r.Error != nil)
		cols.keys = append(cols.keys, deref(r.IdempotencyKey))
		cols.parents = append(cols.parents, deref(r.ParentRunID))
		cols.parentKeys = append(cols.parentKeys, deref(r.ParentKey))
		cols.parentAttempts = append(cols.parentAttempts, int64(r.ParentAttempt))
		cols.startedBy = append(cols.startedBy, r.StartedBy)
		cols.active = append(cols.active, int64(r.ActiveNodes))
		cols.failed = append(cols.failed, int64(r.FailedNodes))
		cols.terminals = append(cols.terminals, int64(r.TerminalsLeft))
		cols.seqs = append(cols.seqs, r.EventSeq)
		cols.secs = append(cols.secs, int64(r.DeadlineSeconds))
	}
	// A run is of its flow's workspace (read here, so no caller need know
	// it).
	t.queue(`WITH ins AS (INSERT INTO runs (id, flow_id, flow_version_id, entity_id, status, trigger, input, output, error,
			idempotency_key, active_nodes, failed_nodes, terminals_left, event_seq, deadline_at, finished_at,
			parent_run_id, parent_key, parent_attempt, started_by, workspace)
		SELECT u.id::uuid, u.f::uuid, u.v::uuid, nullif(u.ent, '')::uuid, u.st, u.tr::jsonb, u.inp::jsonb,
			nullif(u.o, '')::jsonb, CASE WHEN u.he THEN u.e END, nullif(u.ik, ''), u.an, u.fn, u.tl, u.es,
			CASE WHEN u.secs > 0 THEN now() + make_interval(secs => u.secs) END,
			CASE WHEN u.st IN ('running', 'paused', 'queued') THEN NULL ELSE now() END,
			nullif(u.pr, '')::uuid, CASE WHEN u.pr <> '' THEN u.pk END, CASE WHEN u.pr <> '' THEN u.pa END, nullif(u.sb, ''),
			coalesce((SELECT fl.workspace FROM flows fl WHERE fl.id = u.f::uuid), 'default')
		FROM unnest(?::text[], ?::text[], ?::text[], ?::text[], ?::text[], ?::text[], ?::text[], ?::text[], ?::text[],
			?::bool[], ?::text[], ?::int[], ?::int[], ?::int[], ?::bigint[], ?::int[], ?::text[], ?::text[], ?::int[], ?::text[])
			AS u(id, f, v, ent, st, tr, inp, o, e, he, ik, an, fn, tl, es, secs, pr, pk, pa, sb)
		RETURNING 1)
		SELECT now(), count(*) FROM ins`,
		func(row scanner) error {
			var now time.Time
			var wrote int
			if err := row.Scan(&now, &wrote); err != nil {
				return interpretError(err)
			}
			if wrote != n {
				return fmt.Errorf("error inserting runs: %d rows of %d", wrote, n)
			}
			now = now.UTC()
			for i := range part {
				for _, r := range part[i].told {
					r.CreatedAt, r.UpdatedAt = now, now
					if r.DeadlineSeconds > 0 {
						at := now.Add(time.Duration(r.DeadlineSeconds) * time.Second)
						r.DeadlineAt = &at
					}
					if s := part[i].row.Status; s != engine.RunRunning && s != engine.RunPaused && s != engine.RunQueued {
						at := now
						r.FinishedAt = &at
					}
				}
			}
			return nil
		},
		planFor(n, cols.ids, cols.flows, cols.versions, cols.entities, cols.statuses, cols.triggers, cols.inputs,
			cols.outputs, cols.errs, cols.hasErr, cols.keys, cols.active, cols.failed, cols.terminals, cols.seqs,
			cols.secs, cols.parents, cols.parentKeys, cols.parentAttempts, cols.startedBy)...)
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
