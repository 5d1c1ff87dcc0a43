package bench

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
)

// History is the history scenario's outcome: chain and chains on an empty
// database, then beside HistoryRuns finished runs loaded in bulk, then
// chains again while retention deletes them, in turns with and without
// it.
type History struct {
	Runs int `json:"runs"`
	// Rows loaded: runs, node states, events, outbox rows, journey entries.
	Rows        int64   `json:"rows"`
	Loader      string  `json:"loader"`
	LoadSeconds float64 `json:"load_seconds"`
	// VacuumSeconds is the VACUUM ANALYZE after the load.
	VacuumSeconds float64 `json:"vacuum_analyze_seconds"`
	// TablesMB is the size of the five tables with their indexes, loaded.
	TablesMB float64 `json:"tables_mb"`
	// FlowsPageMs is one GET /api/v1/flows (the flows page, with its run
	// counts), empty and loaded.
	FlowsPageMs [2]float64 `json:"flows_page_ms"`
	// Compared are the figures the targets are judged on.
	Compared []Comparison `json:"compared"`
	// DeleteSeconds is how long stitchd's retention took to delete the
	// loaded runs: the turns it was on, up to the last delete;
	// DeleteWallSeconds from the first turn's start, turns off included.
	DeleteSeconds     float64 `json:"delete_seconds"`
	DeleteWallSeconds float64 `json:"delete_wall_seconds"`
	DeletedRunsPerSec float64 `json:"deleted_runs_per_sec"`
	DeletedRowsPerSec float64 `json:"deleted_rows_per_sec"`
	// Turns are the last phase's turns, retention off and on; On and Off
	// their sums. OnAgainstNeighbours is the lowest, median and highest
	// change of a turn on's chains rate against the mean of the turns off
	// on either side of it, in percent.
	Turns               []RetentionTurn `json:"turns"`
	On                  TurnsTotal      `json:"retention_on"`
	Off                 TurnsTotal      `json:"retention_off"`
	OnAgainstNeighbours [3]float64      `json:"on_against_neighbours_percent"`
	// Vacuums is how many VACUUM ANALYZE passes the bench ran during the
	// deletion, as autovacuum would have, when the server's autovacuum is
	// off (0 when it is on: the server's own then).
	Vacuums int `json:"vacuums_during_deletion"`
}

// Comparison is one figure, as measured (Base) and against the base
// (Value); ChangePercent is (Value-Base)/Base; the target is met when it is
// no worse than TargetPercent.
type Comparison struct {
	Figure        string  `json:"figure"`
	BaseLabel     string  `json:"base_label"`
	Base          float64 `json:"base"`
	ValueLabel    string  `json:"value_label"`
	Value         float64 `json:"value"`
	ChangePercent float64 `json:"change_percent"`
	// HigherIsBetter: compl/s (a drop is worse); latencies lower.
	HigherIsBetter bool    `json:"higher_is_better"`
	TargetPercent  float64 `json:"target_percent"`
	Met            bool    `json:"met"`
}

func compare(figure, baseLabel string, base float64, valueLabel string, value float64, higherIsBetter bool, target float64) Comparison {
	c := Comparison{Figure: figure, BaseLabel: baseLabel, Base: base, ValueLabel: valueLabel, Value: value,
		HigherIsBetter: higherIsBetter, TargetPercent: target}
	if base > 0 {
		c.ChangePercent = 100 * (value - base) / base
	}
	worse := c.ChangePercent
	if higherIsBetter {
		worse = -worse
	}
	c.Met = worse <= target
	return c
}

// historyFlow is one of the flows the loaded runs belong to: a chain of
// nodes workers.
type historyFlow struct {
	id, version  string
	board        string
	nodes, edges []map[string]any
}

// history runs the history scenario; its results are appended to rep.
func (r *runner) history(ctx context.Context, rep *Report) error {
	h := &History{Runs: r.opts.HistoryRuns, Loader: r.opts.HistoryLoader}
	add := func(label string, res *Result) {
		res.Name = "history, " + label + ": " + res.Name
		rep.Results = append(rep.Results, *res)
		// Each phase's figures as soon as it has them: the deletion can take
		// a long time.
		if b, err := json.Marshal(res); err == nil {
			r.logf("result %s", b)
		}
	}
	var err error
	if h.FlowsPageMs[0], err = r.flowsPageMs(ctx); err != nil {
		return err
	}
	empty, err := r.chainAndChains(ctx)
	if err != nil {
		return fmt.Errorf("empty database: %w", err)
	}
	add("empty", empty[0])
	add("empty", empty[1])

	flows, err := r.historyFlows(ctx)
	if err != nil {
		return err
	}
	r.logf("history: loading %d finished runs (%s)…", h.Runs, h.Loader)
	start := time.Now()
	if h.Rows, err = r.loadHistory(ctx, flows, h.Runs); err != nil {
		return err
	}
	h.LoadSeconds = time.Since(start).Seconds()
	start = time.Now()
	if _, err := r.db.ExecContext(ctx, `VACUUM ANALYZE`); err != nil {
		return fmt.Errorf("error vacuuming the loaded history: %w", err)
	}
	h.VacuumSeconds = time.Since(start).Seconds()
	if err := r.db.QueryRowContext(ctx, `SELECT sum(pg_total_relation_size(t))::float8 / (1 << 20)
		FROM unnest(ARRAY['runs', 'node_states', 'run_events', 'dispatches', 'journey_events']::regclass[]) t`).Scan(&h.TablesMB); err != nil {
		return fmt.Errorf("error measuring the loaded tables: %w", err)
	}
	r.logf("history: %d rows in %.1f s, VACUUM ANALYZE %.1f s, %.0f MB", h.Rows, h.LoadSeconds, h.VacuumSeconds, h.TablesMB)
	if h.FlowsPageMs[1], err = r.flowsPageMs(ctx); err != nil {
		return err
	}

	loaded, err := r.chainAndChains(ctx)
	if err != nil {
		return fmt.Errorf("loaded database: %w", err)
	}
	add("loaded", loaded[0])
	add("loaded", loaded[1])

	during, err := r.chainsWhileDeleting(ctx, flows, h)
	if err != nil {
		return err
	}
	add("retention in turns", during)
	if h.DeleteSeconds > 0 {
		h.DeletedRunsPerSec = float64(h.Runs) / h.DeleteSeconds
		h.DeletedRowsPerSec = float64(h.Rows) / h.DeleteSeconds
	}

	ms := func(res *Result) float64 {
		if res.Latency == nil {
			return 0
		}
		return res.Latency.P50
	}
	n := fmt.Sprintf("%d runs", h.Runs)
	h.Compared = []Comparison{
		compare("chain p50 ms", "empty", ms(empty[0]), n, ms(loaded[0]), false, 10),
		compare("chain compl/s", "empty", empty[0].CompletionsPerSec, n, loaded[0].CompletionsPerSec, true, 10),
		compare("chains p50 ms", "empty", ms(empty[1]), n, ms(loaded[1]), false, 10),
		compare("chains compl/s", "empty", empty[1].CompletionsPerSec, n, loaded[1].CompletionsPerSec, true, 10),
		compare("chains compl/s", "retention off", h.Off.CompletionsPerSec, "retention on", h.On.CompletionsPerSec, true, 20),
		compare("chains compl/s", n, loaded[1].CompletionsPerSec, "retention on", h.On.CompletionsPerSec, true, 20),
		compare("chains compl/s", "empty", empty[1].CompletionsPerSec, "retention on", h.On.CompletionsPerSec, true, 20),
	}
	rep.History = h
	return nil
}

// chainAndChains measures the chain and chains scenarios, in this order.
func (r *runner) chainAndChains(ctx context.Context) ([2]*Result, error) {
	var out [2]*Result
	var err error
	if err := r.vacuum(ctx); err != nil {
		return out, err
	}
	r.worker.reset()
	if out[0], err = r.chain(ctx); err != nil {
		return out, err
	}
	if err := r.vacuum(ctx); err != nil {
		return out, err
	}
	r.worker.reset()
	out[1], err = r.chains(ctx)
	return out, err
}

func (r *runner) vacuum(ctx context.Context) error {
	if _, err := r.db.ExecContext(ctx, `VACUUM ANALYZE`); err != nil {
		return fmt.Errorf("error vacuuming the bench database: %w", err)
	}
	return nil
}

// flowsPageMs times one GET of the flows page's API (its run counts read
// the runs table).
func (r *runner) flowsPageMs(ctx context.Context) (float64, error) {
	start := time.Now()
	if err := r.api(ctx, "GET", "/flows", nil, nil); err != nil {
		return 0, err
	}
	return float64(time.Since(start).Microseconds()) / 1000, nil
}

// historyFlows creates the flows the loaded runs belong to: a one-worker
// flow and a two-worker chain on a board (half of its runs carry an
// entity).
func (r *runner) historyFlows(ctx context.Context) ([2]historyFlow, error) {
	var flows [2]historyFlow
	var board struct{ ID string }
	if err := r.api(ctx, "POST", "/boards", map[string]any{"name": "bench history", "sections": []map[string]string{
		{"id": "new", "name": "new"}, {"id": "done", "name": "done"}}}, &board); err != nil {
		return flows, err
	}
	for i := range flows {
		f := &flows[i]
		f.nodes, f.edges = chainGraph(r.worker.url, i+1)
		body := map[string]any{"name": fmt.Sprintf("bench history %d", i+1), "graph": map[string]any{"nodes": f.nodes, "edges": f.edges}}
		if i == 1 {
			body["board_id"] = board.ID
		}
		var out struct {
			ID      string
			Version struct{ ID string }
		}
		if err := r.api(ctx, "POST", "/flows", body, &out); err != nil {
			return flows, err
		}
		f.id, f.version = out.ID, out.Version.ID
		if i == 1 {
			f.board = board.ID
		}
	}
	// Entities the runs moved: one for every 100 runs.
	// historyUUID is SQL of constants, no input.
	//nolint:gosec // G202: see above
	if _, err := r.db.ExecContext(ctx, `INSERT INTO entities (id, board_id, type, name, section_id, section_since, created_at, updated_at)
		SELECT `+historyUUID("a000", "e")+`, $1, 'lead', 'lead ' || e, 'done', now() - interval '400 days', now() - interval '400 days',
			now() - interval '400 days'
		FROM generate_series(0, $2 - 1) e`, board.ID, historyEntities(r.opts.HistoryRuns)); err != nil {
		return flows, fmt.Errorf("error creating the history's entities: %w", err)
	}
	return flows, nil
}

func historyEntities(runs int) int { return max(1, runs/100) }

// historyUUID is the SQL of a made-up UUIDv7-shaped id (its time in 2022,
// older than any run the bench starts) for the number expr, kind telling
// ids of different tables apart.
func historyUUID(kind, expr string) string {
	return `('01800000-0000-7000-` + kind + `-' || lpad(to_hex(` + expr + `), 12, '0'))::uuid`
}

// historyBatch is how many runs one load transaction writes (about
// 500,000 rows).
const historyBatch = 50_000

// loadHistory loads runs finished runs as stitchd would have written them
// 400 days ago and returns how many rows it wrote. Run i belongs to
// flows[i%2], a chain of 1+i%2 workers, and went as a run of that flow
// goes: its run row, a completed node state and a delivered outbox row per
// worker, the events (run.started; per worker its running and completed
// statuses and its delivery; run.completed), and for one run in four an
// entity with its two journey entries (run_started, moved): 11 rows a run
// on average.
func (r *runner) loadHistory(ctx context.Context, flows [2]historyFlow, runs int) (int64, error) {
	return r.loadRuns(ctx, flows, runs, `now() - interval '400 days' + i * interval '10 ms'`)
}

// loadRuns is loadHistory with run i started at the SQL time t0 (of i);
// the copy loader's runs start as loadHistory's.
func (r *runner) loadRuns(ctx context.Context, flows [2]historyFlow, runs int, t0 string) (int64, error) {
	var total int64
	for lo := 0; lo < runs; lo += historyBatch {
		hi := min(lo+historyBatch, runs) - 1
		load := func(ctx context.Context, flows [2]historyFlow, lo, hi, entities int) (int64, error) {
			return r.loadHistoryBatch(ctx, flows, lo, hi, entities, t0)
		}
		if r.opts.HistoryLoader == "copy" {
			load = r.loadHistoryBatchCopy
		}
		n, err := load(ctx, flows, lo, hi, historyEntities(runs))
		if err != nil {
			return total, fmt.Errorf("error loading runs %d to %d: %w", lo, hi, err)
		}
		total += n
		if hi+1 < runs {
			r.logf("history: %d runs loaded", hi+1)
		}
	}
	return total, nil
}

func (r *runner) loadHistoryBatch(ctx context.Context, flows [2]historyFlow, lo, hi, entities int, t0 string) (int64, error) {
	tx, err := r.db.BeginTx(ctx, nil)
	if err != nil {
		return 0, err
	}
	defer func() { _ = tx.Rollback() }()
	// Per run i: its id, when it started (t0), its workers.
	gen := `SELECT i, ` + historyUUID("8000", "i") + ` AS id, ` + t0 + ` AS t0, 1 + i % 2 AS workers
		FROM generate_series($1::int, $2::int) i`
	callback := r.worker.url
	statements := []struct {
		sql  string
		args []any
	}{
		{`INSERT INTO runs (id, flow_id, flow_version_id, entity_id, status, trigger, input, output, event_seq, created_at, updated_at, finished_at)
			SELECT id, CASE WHEN i % 2 = 0 THEN $3::uuid ELSE $4::uuid END, CASE WHEN i % 2 = 0 THEN $5::uuid ELSE $6::uuid END,
				CASE WHEN i % 4 = 1 THEN ` + historyUUID("a000", "i / 4 % $7") + ` END,
				'completed', '{"type": "api"}', jsonb_build_object('i', i), jsonb_build_object('i', i), 3 * workers + 2,
				t0, t0 + workers * interval '2 ms', t0 + workers * interval '2 ms'
			FROM (` + gen + `) g`,
			[]any{lo, hi, flows[0].id, flows[1].id, flows[0].version, flows[1].version, entities}},
		{`INSERT INTO node_states (run_id, key, node_id, type, status, input, output, attempt, started_at, finished_at, updated_at)
			SELECT id, 'n' || k, 'n' || k, 'Worker', 'completed', jsonb_build_object('i', i), jsonb_build_object('i', i), 1,
				t0 + k * interval '2 ms', t0 + (k + 1) * interval '2 ms', t0 + (k + 1) * interval '2 ms'
			FROM (` + gen + `) g, generate_series(0, workers - 1) k`,
			[]any{lo, hi}},
		{`INSERT INTO dispatches (id, run_id, key, attempt, url, payload, status, tries, max_tries, next_attempt_at, delivery_logged,
				created_at, updated_at)
			SELECT ` + historyUUID("9000", "2 * i + k") + `, id, 'n' || k, 1, $3,
				jsonb_build_object('runId', id, 'nodeId', 'n' || k, 'attempt', 1, 'input', jsonb_build_object('i', i),
					'config', jsonb_build_object('webhookUrl', $3::text),
					'callbackUrl', 'http://127.0.0.1:8080/callbacks/v1.cb-1.' || md5(id::text || k) || '.' || md5(k || id::text)),
				'delivered', 1, 12, t0 + k * interval '2 ms', true, t0 + k * interval '2 ms', t0 + (k + 1) * interval '2 ms'
			FROM (` + gen + `) g, generate_series(0, workers - 1) k`,
			[]any{lo, hi, callback}},
		{`INSERT INTO run_events (run_id, seq, type, key, payload, created_at)
			SELECT id, s,
				CASE WHEN s = 1 THEN 'run.started' WHEN s = 3 * workers + 2 THEN 'run.completed'
					WHEN (s - 2) % 3 = 2 THEN 'dispatch.attempt' ELSE 'node.status' END,
				CASE WHEN s IN (1, 3 * workers + 2) THEN NULL ELSE 'n' || (s - 2) / 3 END,
				CASE WHEN s = 1 THEN jsonb_build_object('input', jsonb_build_object('i', i), 'flow_version_id',
						CASE WHEN i % 2 = 0 THEN $3::uuid ELSE $4::uuid END)
					WHEN s = 3 * workers + 2 THEN '{}'
					WHEN (s - 2) % 3 = 2 THEN jsonb_build_object('try', 1, 'attempt', 1, 'delivered', true,
						'dispatch_id', ` + historyUUID("9000", "2 * i + (s - 2) / 3") + `)
					ELSE jsonb_build_object('status', CASE WHEN (s - 2) % 3 = 0 THEN 'running' ELSE 'completed' END,
						'attempt', 1, 'node_id', 'n' || (s - 2) / 3) END,
				t0 + s * interval '1 ms'
			FROM (` + gen + `) g, generate_series(1, 3 * workers + 2) s`,
			[]any{lo, hi, flows[0].version, flows[1].version}},
		{`INSERT INTO journey_events (id, entity_id, kind, from_section_id, to_section_id, run_id, node_key, created_at)
			SELECT ` + historyUUID("b000", "2 * i + j") + `, ` + historyUUID("a000", "i / 4 % $3") + `,
				CASE j WHEN 0 THEN 'run_started' ELSE 'moved' END, CASE j WHEN 0 THEN NULL ELSE 'new' END,
				CASE j WHEN 0 THEN 'new' ELSE 'done' END, id, CASE j WHEN 0 THEN NULL ELSE 'n1' END, t0 + j * interval '2 ms'
			FROM (` + gen + `) g, generate_series(0, 1) j WHERE i % 4 = 1`,
			[]any{lo, hi, entities}},
	}
	var rows int64
	for _, st := range statements {
		res, err := tx.ExecContext(ctx, st.sql, st.args...)
		if err != nil {
			return 0, err
		}
		n, err := res.RowsAffected()
		if err != nil {
			return 0, err
		}
		rows += n
	}
	return rows, tx.Commit()
}

// chainsWhileDeleting runs chains while stitchd's own retention deletes
// the loaded runs, in turns: retention on for HistoryWindow (the history
// flows' retention set to 30 days through the API — a new version — so
// that every loaded run is past it, and stitchd's sweeper deletes them in
// its batches), then off for as long (the retention taken out again), and
// so on until every loaded run is gone, ending with an off turn. The
// chains never stop, so the turns with and without retention see the same
// machine minutes apart at most: the comparison the target is judged on
// (the machine's load, shared, moves more than 20 % between phases minutes
// apart). h gets each turn, the chains' rate with and without retention
// over all turns, and the deletion's time: the turns retention was on
// until the last loaded run went.
func (r *runner) chainsWhileDeleting(ctx context.Context, flows [2]historyFlow, h *History) (*Result, error) {
	before, err := r.deletedRuns(ctx)
	if err != nil {
		return nil, err
	}
	if err := r.vacuum(ctx); err != nil {
		return nil, err
	}
	r.worker.reset()
	n := r.opts.ChainsRunLength
	nodes, edges := chainGraph(r.worker.url, n)
	flow, err := r.createFlow(ctx, "bench chains during retention", nodes, edges)
	if err != nil {
		return nil, err
	}
	dctx, cancel := context.WithCancel(ctx)
	defer cancel()
	// finished is set once retention has deleted every loaded run (or
	// the turns failed: turnsErr) and the last turn, without retention,
	// has run.
	var finished atomic.Bool
	var turnsErr error
	vacuumed := make(chan int, 1)
	go func() { vacuumed <- r.vacuumLikeAutovacuum(dctx, &finished) }()
	go func() {
		turnsErr = r.retentionTurns(dctx, flows, before, h)
		finished.Store(true)
	}()
	res, runs, err := r.concurrentRunsUntil(ctx, flow, n, func(int64) any { return map[string]any{} }, finished.Load)
	if err != nil {
		return nil, err
	}
	if turnsErr != nil {
		return nil, turnsErr
	}
	cancel()
	h.Vacuums = <-vacuumed
	res.Name = fmt.Sprintf("%d concurrent chains, retention on and off in turns of %s (%d runs of %d workers)",
		r.opts.Chains, r.opts.HistoryWindow, len(runs), n)
	res.Latency = distribution(r.worker.chainLatencies(runs, n))
	var left int
	if err := r.db.QueryRowContext(ctx, `SELECT count(*) FROM runs WHERE flow_id IN ($1, $2)`, flows[0].id, flows[1].id).Scan(&left); err != nil {
		return nil, fmt.Errorf("error counting the runs left: %w", err)
	}
	if left > 0 {
		return nil, fmt.Errorf("%d loaded runs left after retention reported them deleted", left)
	}
	return res, nil
}

// RetentionTurn is one turn of the history's last phase: chains with
// stitchd's retention deleting the loaded runs (On) or not.
type RetentionTurn struct {
	On      bool    `json:"retention_on"`
	Seconds float64 `json:"seconds"`
	// Cut is a turn on that ended before its window, when retention had
	// deleted the last loaded run.
	Cut bool `json:"cut,omitempty"`
	// Completions are the chains' (the dispatches the worker received).
	Completions       int64   `json:"completions"`
	CompletionsPerSec float64 `json:"completions_per_sec"`
	RunsDeleted       int64   `json:"runs_deleted"`
	// PostgresCores is the server's CPU time over the turn's time (when
	// the bench can see the server's processes); MachineBusyPercent the
	// whole machine's.
	PostgresCores      float64 `json:"postgres_cores,omitempty"`
	MachineBusyPercent float64 `json:"machine_cpu_busy_percent"`
}

// historyDeleteLimit bounds the history's last phase (turns on and off):
// twice the time retention may take to delete the loaded runs.
const historyDeleteLimit = 2 * time.Hour

// retentionTurns turns the history flows' retention off and on, a
// HistoryWindow each, until stitchd has deleted h.Runs runs more than
// before (the turn on in which it does ends then), then runs a last turn
// without it; h gets the turns and their
// sums. It polls stitchd's own count of deleted runs (its metrics).
func (r *runner) retentionTurns(ctx context.Context, flows [2]historyFlow, before int64, h *History) error {
	setRetention := func(on bool) error {
		for _, f := range flows {
			graph := map[string]any{"nodes": f.nodes, "edges": f.edges}
			if on {
				graph["settings"] = map[string]any{"retentionDays": 30}
			}
			if err := r.api(ctx, "PUT", "/flows/"+f.id, map[string]any{"graph": graph}, nil); err != nil {
				return fmt.Errorf("error setting the history's retention (%v): %w", on, err)
			}
		}
		return nil
	}
	type mark struct {
		at       time.Time
		received int64
		deleted  int64
		cpu      cpuSample
	}
	now := func() (mark, error) {
		m := mark{at: time.Now()}
		m.received, _ = r.worker.stats()
		var err error
		if m.deleted, err = r.deletedRuns(ctx); err != nil {
			return m, err
		}
		m.cpu, err = r.cpuNow()
		return m, err
	}
	end := func(t *RetentionTurn, a, b mark) {
		t.Seconds = b.at.Sub(a.at).Seconds()
		t.Completions = b.received - a.received
		t.CompletionsPerSec = float64(t.Completions) / max(t.Seconds, 1e-9)
		t.RunsDeleted = b.deleted - a.deleted
		if a.cpu.pgOK && b.cpu.pgOK {
			t.PostgresCores = (b.cpu.pg - a.cpu.pg).Seconds() / max(t.Seconds, 1e-9)
		}
		if total := b.cpu.total - a.cpu.total; total > 0 {
			t.MachineBusyPercent = 100 * float64(b.cpu.busy-a.cpu.busy) / float64(total)
		}
		h.Turns = append(h.Turns, *t)
		label := "off"
		if t.On {
			label = "on"
		}
		r.logf("history: retention %s %.1f s: chains %.0f compl/s, %d runs deleted (%d of %d), machine %.0f %% busy",
			label, t.Seconds, t.CompletionsPerSec, t.RunsDeleted, b.deleted-before, h.Runs, t.MachineBusyPercent)
	}
	start := time.Now()
	deadline := start.Add(historyDeleteLimit)
	on := true // the first turn is off: every turn on has one off on each side
	a, err := now()
	if err != nil {
		return err
	}
	for {
		on = !on
		if err := setRetention(on); err != nil {
			return err
		}
		turn := RetentionTurn{On: on}
		turnEnd := time.Now().Add(r.opts.HistoryWindow)
		done := false
		for time.Now().Before(turnEnd) {
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(100 * time.Millisecond):
			}
			if !on {
				continue
			}
			n, err := r.deletedRuns(ctx)
			if err != nil {
				return err
			}
			if n-before >= int64(h.Runs) {
				done = true
				break
			}
		}
		b, err := now()
		if err != nil {
			return err
		}
		turn.Cut = done
		end(&turn, a, b)
		a = b
		if done {
			h.DeleteSeconds += turn.Seconds
			h.DeleteWallSeconds = time.Since(start).Seconds()
			break
		}
		if on {
			h.DeleteSeconds += turn.Seconds
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("retention deleted only %d of %d runs in %s", b.deleted-before, h.Runs, historyDeleteLimit)
		}
	}
	// The last turn, without retention: as many turns off as on.
	if err := setRetention(false); err != nil {
		return err
	}
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(r.opts.HistoryWindow):
	}
	b, err := now()
	if err != nil {
		return err
	}
	end(&RetentionTurn{}, a, b)
	var changes []float64
	for i, t := range h.Turns {
		x := &h.Off
		if t.On {
			x = &h.On
		}
		x.Turns++
		x.Seconds += t.Seconds
		x.Completions += t.Completions
		x.RunsDeleted += t.RunsDeleted
		if !t.On || i == 0 || i == len(h.Turns)-1 {
			continue
		}
		// Each turn on against the mean of the turns off around it (the
		// machine's drift between them taken out): the spread.
		if around := (h.Turns[i-1].CompletionsPerSec + h.Turns[i+1].CompletionsPerSec) / 2; around > 0 {
			changes = append(changes, 100*(t.CompletionsPerSec-around)/around)
		}
	}
	if len(changes) > 0 {
		slices.Sort(changes)
		median := (changes[(len(changes)-1)/2] + changes[len(changes)/2]) / 2
		h.OnAgainstNeighbours = [3]float64{changes[0], median, changes[len(changes)-1]}
	}
	for _, x := range []*TurnsTotal{&h.On, &h.Off} {
		x.CompletionsPerSec = float64(x.Completions) / max(x.Seconds, 1e-9)
	}
	return nil
}

// TurnsTotal sums the turns with retention on, or off.
type TurnsTotal struct {
	Turns             int     `json:"turns"`
	Seconds           float64 `json:"seconds"`
	Completions       int64   `json:"completions"`
	CompletionsPerSec float64 `json:"completions_per_sec"`
	RunsDeleted       int64   `json:"runs_deleted"`
}

// vacuumLikeAutovacuum stands in for autovacuum when the server has it
// off (a dev server): a long phase deleting a million runs beside the
// chains would otherwise measure dead rows piling up — in the outbox's
// and the sweeper's queue indexes as much as in the deleted tables —
// which no production server keeps. It vacuums the five tables one after
// the other, 10 s apart, throttled as autovacuum is (2 ms of sleep every
// 200 cost units), until done is set or ctx ends, and returns how many
// passes it made.
func (r *runner) vacuumLikeAutovacuum(ctx context.Context, done *atomic.Bool) int {
	var setting string
	if err := r.db.QueryRowContext(ctx, `SHOW autovacuum`).Scan(&setting); err != nil || setting == "on" {
		return 0
	}
	conn, err := r.db.Conn(ctx)
	if err != nil {
		return 0
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, `SET vacuum_cost_delay = '2ms'`); err != nil {
		return 0
	}
	passes := 0
	for !done.Load() {
		select {
		case <-ctx.Done():
			return passes
		case <-time.After(10 * time.Second):
		}
		for _, t := range []string{"dispatches", "node_states", "runs", "run_events", "journey_events"} {
			if _, err := conn.ExecContext(ctx, `VACUUM (ANALYZE) `+t); err != nil {
				if ctx.Err() == nil {
					r.logf("history: vacuuming %s: %v", t, err)
				}
				return passes
			}
		}
		passes++
	}
	return passes
}

// deletedRuns is how many runs stitchd's retention has deleted, from its
// metrics.
func (r *runner) deletedRuns(ctx context.Context) (int64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, r.proc.url+"/metrics", nil)
	if err != nil {
		return 0, err
	}
	resp, err := r.client.Do(req)
	if err != nil {
		return 0, fmt.Errorf("error reading stitchd's metrics: %w", err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	const series = `stitchd_sweeper_actions_total{action="run_deleted"} `
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), series); ok {
			f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			if err != nil {
				return 0, fmt.Errorf("error reading %s: %w", series, err)
			}
			return int64(f), nil
		}
	}
	return 0, sc.Err()
}
