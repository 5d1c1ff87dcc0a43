package bench

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
)

// History is the history scenario's outcome: chain and chains on an empty
// database, then beside HistoryRuns finished runs loaded in bulk, then
// chains again while retention deletes them.
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
	// loaded runs (from their flows' retention set to their last delete).
	DeleteSeconds     float64 `json:"delete_seconds"`
	DeletedRunsPerSec float64 `json:"deleted_runs_per_sec"`
	DeletedRowsPerSec float64 `json:"deleted_rows_per_sec"`
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
	add("retention deleting", during)
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
		compare("chains compl/s", n, loaded[1].CompletionsPerSec, "retention deleting", during.CompletionsPerSec, true, 20),
		compare("chains compl/s", "empty", empty[1].CompletionsPerSec, "retention deleting", during.CompletionsPerSec, true, 20),
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
	}
	// Entities the runs moved: one for every 100 runs.
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
	var total int64
	for lo := 0; lo < runs; lo += historyBatch {
		hi := min(lo+historyBatch, runs) - 1
		load := r.loadHistoryBatch
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

func (r *runner) loadHistoryBatch(ctx context.Context, flows [2]historyFlow, lo, hi, entities int) (int64, error) {
	tx, err := r.db.BeginTx(ctx, nil)
	if err != nil {
		return 0, err
	}
	defer func() { _ = tx.Rollback() }()
	// Per run i: its id, when it started (400 days ago, 10 ms apart), its
	// workers.
	gen := `SELECT i, ` + historyUUID("8000", "i") + ` AS id, now() - interval '400 days' + i * interval '10 ms' AS t0, 1 + i % 2 AS workers
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

// chainsWhileDeleting sets the history flows' retention (30 days: every
// loaded run is past it), so that stitchd's sweeper deletes them — its own
// code path, in its batches — and runs chains until it has deleted them
// all. h gets the deletion's time.
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
	start := time.Now()
	for _, f := range flows {
		if err := r.api(ctx, "PUT", "/flows/"+f.id, map[string]any{"graph": map[string]any{"nodes": f.nodes, "edges": f.edges,
			"settings": map[string]any{"retentionDays": 30}}}, nil); err != nil {
			return nil, fmt.Errorf("error setting the history's retention: %w", err)
		}
	}
	dctx, cancel := context.WithCancel(ctx)
	defer cancel()
	// finished is set once retention has deleted every loaded run (or
	// failed: deleteErr) and the chains have run at least ChainsDuration,
	// so that a quick deletion still leaves a rate to compare.
	var finished atomic.Bool
	var deleteErr error
	vacuumed := make(chan int, 1)
	go func() { vacuumed <- r.vacuumLikeAutovacuum(dctx, &finished) }()
	go func() {
		deleteErr = r.awaitDeleted(dctx, before, h, start)
		if deleteErr == nil {
			select {
			case <-time.After(time.Until(start.Add(r.opts.ChainsDuration))):
			case <-dctx.Done():
			}
		}
		finished.Store(true)
	}()
	res, runs, err := r.concurrentRunsUntil(ctx, flow, n, func(int64) any { return map[string]any{} }, finished.Load)
	if err != nil {
		return nil, err
	}
	if deleteErr != nil {
		return nil, deleteErr
	}
	cancel()
	h.Vacuums = <-vacuumed
	res.Name = fmt.Sprintf("%d concurrent chains (%d runs of %d workers)", r.opts.Chains, len(runs), n)
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

// awaitDeleted waits until stitchd's retention has deleted h.Runs runs
// more than before, and sets h.DeleteSeconds from start. It polls
// stitchd's own count (its metrics), not the database the chains use.
func (r *runner) awaitDeleted(ctx context.Context, before int64, h *History, start time.Time) error {
	deadline := time.Now().Add(30 * time.Minute)
	last := time.Now()
	for {
		n, err := r.deletedRuns(ctx)
		if err != nil {
			return err
		}
		if n-before >= int64(h.Runs) {
			h.DeleteSeconds = time.Since(start).Seconds()
			return nil
		}
		if time.Since(last) > 10*time.Second {
			r.logf("history: retention deleted %d of %d runs", n-before, h.Runs)
			last = time.Now()
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("retention deleted only %d of %d runs in 30 minutes", n-before, h.Runs)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
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
