package store

import (
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/stitchd/stitchd/engine"
)

// Saves held back. A run's save that marks deliveries (the end of every
// callback's transaction) is held until the transaction's next statement
// or its commit; consecutive ones — a group of callbacks, each ending
// another run (engine's completeTogether) — then go as one statement
// marking, appending and saving for every run. A save alone keeps its
// one-run statement (markAndSave): the chain's steps are unchanged.

type heldSave struct {
	// save is a copy, taken when it was held (its Run too); dst is the
	// engine's Run, given the row's times once answered.
	save                  engine.RunSave
	dst                   *engine.Run
	types, keys, payloads []string
}

// rows bounds the event rows the save inserts: its events and a delivery
// event for each pair.
func (h *heldSave) rows() int { return len(h.types) + len(h.save.DeliveredKeys) }

// hold holds run save s back (see above).
func (t *pgTx) hold(s engine.RunSave, types, keys, payloads []string) {
	if t.fresh.has(s.Run.ID) {
		// Its row first: a later save of the run may be folded into the
		// row (saveNew), which must not then come before this one.
		t.queueNewRuns()
	}
	dst := s.Run
	run := *s.Run
	s.Run = &run
	s.DeliveredKeys, s.DeliveredAttempts = slices.Clone(s.DeliveredKeys), slices.Clone(s.DeliveredAttempts)
	s.Events = nil // encoded: types, keys, payloads
	t.saves = append(t.saves, heldSave{save: s, dst: dst, types: types, keys: keys, payloads: payloads})
}

// writeHeld queues what the transaction holds back — the rows of new
// runs, then saves (one may be a new run's) — ahead of the statement about
// to be sent.
func (t *pgTx) writeHeld() {
	t.queueNewRuns()
	t.queueSaves()
}

// queueSaves queues the held saves: one alone as its own statement, more
// together, a chunk of events at a time.
func (t *pgTx) queueSaves() {
	held := t.saves
	t.saves = nil
	if len(held) == 1 {
		q, scan, args := markAndSave(held[0].save, held[0].dst, held[0].types, held[0].keys, held[0].payloads)
		t.queue(q, scan, args...)
		return
	}
	for len(held) > 0 {
		// A part saves each run once (a second save of a run follows the
		// first), with at most a chunk of events.
		n, rows := 1, held[0].rows()
		in := map[string]bool{held[0].save.Run.ID: true}
		for n < len(held) && rows+held[n].rows() <= bulkChunk && !in[held[n].save.Run.ID] {
			rows += held[n].rows()
			in[held[n].save.Run.ID] = true
			n++
		}
		part := held[:n]
		held = held[n:]
		if len(part) == 1 {
			q, scan, args := markAndSave(part[0].save, part[0].dst, part[0].types, part[0].keys, part[0].payloads)
			t.queue(q, scan, args...)
			continue
		}
		t.queueSavesTogether(part)
	}
}

// queueSavesTogether is markAndSave for many runs in one statement: each
// run's deliveries marked, its events numbered from its FirstSeq with the
// deliveries' dispatch.attempt events after its DeliveredAt, and its row
// saved; the answer (one row: the runs' times and sequences as JSON) is
// given to the engine's Runs.
func (t *pgTx) queueSavesTogether(part []heldSave) {
	var c struct {
		ids, statuses, outputs, errs           []string
		hasErr                                 []bool
		firsts, seqs                           []int64
		deliveredAt, active, failed, terminals []int64
		deliveredRuns, deliveredKeys           []string
		deliveredAttempts                      []int64
		evRuns, evTypes, evKeys, evPayloads    []string
		evOrds                                 []int64
	}
	runs := make(map[string]*engine.Run, len(part))
	rows := 0
	for _, h := range part {
		s, r := h.save, h.save.Run
		runs[r.ID] = h.dst
		c.ids = append(c.ids, r.ID)
		c.statuses = append(c.statuses, string(r.Status))
		c.outputs = append(c.outputs, string(r.Output))
		c.errs = append(c.errs, deref(r.Error))
		c.hasErr = append(c.hasErr, r.Error != nil)
		c.firsts = append(c.firsts, s.FirstSeq)
		c.seqs = append(c.seqs, r.EventSeq)
		c.deliveredAt = append(c.deliveredAt, int64(s.DeliveredAt))
		c.active = append(c.active, int64(r.ActiveNodes))
		c.failed = append(c.failed, int64(r.FailedNodes))
		c.terminals = append(c.terminals, int64(r.TerminalsLeft))
		for i, k := range s.DeliveredKeys {
			c.deliveredRuns = append(c.deliveredRuns, r.ID)
			c.deliveredKeys = append(c.deliveredKeys, k)
			c.deliveredAttempts = append(c.deliveredAttempts, int64(s.DeliveredAttempts[i]))
		}
		for i := range h.types {
			c.evRuns = append(c.evRuns, r.ID)
			c.evOrds = append(c.evOrds, int64(i+1))
		}
		c.evTypes = append(c.evTypes, h.types...)
		c.evKeys = append(c.evKeys, h.keys...)
		c.evPayloads = append(c.evPayloads, h.payloads...)
		rows += max(len(h.types), len(s.DeliveredKeys))
	}
	t.queue(`WITH md AS (UPDATE dispatches d SET status = 'delivered', locked_until = NULL, delivery_logged = true, updated_at = now()
			FROM unnest(?::uuid[], ?::text[], ?::int[]) AS h(r, k, a)
			WHERE d.run_id = h.r AND d.key = h.k AND d.attempt = h.a AND d.status IN ('pending', 'sending', 'delivered')
				AND NOT d.delivery_logged
			RETURNING d.id::text AS id, d.run_id, d.key, d.attempt, d.tries),
		s AS (SELECT u.*, (SELECT count(*) FROM md WHERE md.run_id = u.id) AS n
			FROM unnest(?::uuid[], ?::text[], ?::text[], ?::text[], ?::bool[], ?::bigint[], ?::bigint[], ?::int[], ?::int[], ?::int[], ?::int[])
			AS u(id, st, o, e, he, first, seq, heard_at, an, fn, tl)),
		ev AS (INSERT INTO run_events (run_id, seq, type, key, payload)
			SELECT * FROM (SELECT s.id, s.first + x.ord - 1 + CASE WHEN x.ord > s.heard_at THEN s.n ELSE 0 END,
					x.ty, nullif(x.k, ''), x.p::jsonb
				FROM unnest(?::uuid[], ?::int[], ?::text[], ?::text[], ?::text[]) AS x(r, ord, ty, k, p) JOIN s ON s.id = x.r
				UNION ALL
				SELECT s.id, s.first + s.heard_at + row_number() OVER (PARTITION BY md.run_id ORDER BY md.key, md.attempt) - 1,
					'dispatch.attempt', md.key,
					jsonb_build_object('dispatch_id', md.id, 'attempt', md.attempt, 'try', md.tries, 'delivered', true)
				FROM md JOIN s ON s.id = md.run_id) AS numbered
			WHERE `+xidFirst+` ORDER BY 1, 2),
		up AS (UPDATE runs SET status = s.st, output = nullif(s.o, '')::jsonb, error = CASE WHEN s.he THEN s.e END,
				active_nodes = s.an, failed_nodes = s.fn, terminals_left = s.tl, event_seq = s.seq + s.n, updated_at = now(),
				finished_at = CASE WHEN s.st IN ('running', 'paused', 'queued') THEN NULL ELSE coalesce(runs.finished_at, now()) END
			FROM s WHERE runs.id = s.id
			RETURNING runs.id::text AS id, runs.updated_at, runs.finished_at, runs.event_seq)
		SELECT json_agg(json_build_object('id', id, 'u', updated_at, 'f', finished_at, 's', event_seq)) FROM up`,
		func(row scanner) error {
			var b []byte
			if err := row.Scan(&b); err != nil {
				return interpretError(err)
			}
			if b == nil { // no row saved: json_agg of nothing
				return fmt.Errorf("%w: saved 0 runs of %d", engine.ErrNotFound, len(part))
			}
			var saved []struct {
				ID  string     `json:"id"`
				U   time.Time  `json:"u"`
				F   *time.Time `json:"f"`
				Seq int64      `json:"s"`
			}
			if err := json.Unmarshal(b, &saved); err != nil {
				return fmt.Errorf("error reading the saves of %d runs: %w", len(part), err)
			}
			if len(saved) != len(part) {
				return fmt.Errorf("%w: saved %d runs of %d", engine.ErrNotFound, len(saved), len(part))
			}
			for _, sv := range saved {
				r := runs[sv.ID]
				r.UpdatedAt, r.EventSeq = sv.U.UTC(), sv.Seq
				r.FinishedAt = nil
				if sv.F != nil {
					f := sv.F.UTC()
					r.FinishedAt = &f
				}
			}
			return nil
		},
		planFor(rows, c.deliveredRuns, c.deliveredKeys, c.deliveredAttempts,
			c.ids, c.statuses, c.outputs, c.errs, c.hasErr, c.firsts, c.seqs, c.deliveredAt, c.active, c.failed, c.terminals,
			c.evRuns, c.evOrds, c.evTypes, c.evKeys, c.evPayloads)...)
}
