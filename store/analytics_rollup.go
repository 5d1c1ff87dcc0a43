package store

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strings"
	"time"

	"gorm.io/gorm"
)

// Analytics over a long range read whole UTC days from daily rollups
// (migration 00046) and only the rest — the range's ragged ends, days not
// rolled yet or stale, runs still going — from runs and the journey
// ledger. RollAnalytics (the maintenance.Roller's pass) keeps the rollups;
// triggers mark a rolled day stale when its runs or ledger change.

// rollupMinRange: shorter ranges read raw rows only (few, and their
// timeline is in hours, which days can't give).
const rollupMinRange = 48 * time.Hour

// maxRawIntervals bounds the raw parts a range reads beside its rolled
// days; more (many stale days scattered) reads the range raw until the
// roller catches up.
const maxRawIntervals = 16

// rollupPlan is how a range reads: rolled days, and raw intervals (the
// rest of the range).
type rollupPlan struct {
	days []time.Time
	raw  [][2]time.Time
}

// daysArray is the plan's days as a Postgres date[] literal.
func (p *rollupPlan) daysArray() string {
	s := make([]string, len(p.days))
	for i, d := range p.days {
		s[i] = d.Format(time.DateOnly)
	}
	return "{" + strings.Join(s, ",") + "}"
}

// gapsArray is the days between the plan's first and last rolled days
// that it reads raw (stale), as a Postgres date[] literal: an entity's
// rolled days are probed as a range, less these.
func (p *rollupPlan) gapsArray() string {
	var gaps []string
	for i := 1; i < len(p.days); i++ {
		for d := p.days[i-1].AddDate(0, 0, 1); d.Before(p.days[i]); d = d.AddDate(0, 0, 1) {
			gaps = append(gaps, d.Format(time.DateOnly))
		}
	}
	return "{" + strings.Join(gaps, ",") + "}"
}

// rawWhere is the SQL condition (col in one of the raw intervals) and its
// arguments; "false" when there is none.
func (p *rollupPlan) rawWhere(col string) (string, []any) {
	if len(p.raw) == 0 {
		return "false", nil
	}
	parts := make([]string, len(p.raw))
	args := make([]any, 0, 2*len(p.raw))
	for i, iv := range p.raw {
		parts[i] = fmt.Sprintf("(%[1]s >= ? AND %[1]s < ?)", col)
		args = append(args, iv[0], iv[1])
	}
	return "(" + strings.Join(parts, " OR ") + ")", args
}

func utcDay(t time.Time) time.Time {
	t = t.UTC()
	return time.Date(t.Year(), t.Month(), t.Day(), 0, 0, 0, 0, time.UTC)
}

// planRollup plans [from, to) of a flow's or board's analytics: nil when
// it reads raw rows only (a short range, nothing rolled in it, or the
// whole key stale).
func (s *Store) planRollup(ctx context.Context, kind, key string, from, to time.Time) (*rollupPlan, error) {
	if to.Sub(from) <= rollupMinRange {
		return nil, nil
	}
	db := s.db.WithContext(ctx)
	var through []time.Time
	if err := db.Raw(`SELECT rolled_through FROM analytics_rolled WHERE kind = ? AND key = ?`, kind, key).
		Scan(&through).Error; err != nil {
		return nil, fmt.Errorf("error reading %s %s's rollups: %w", kind, key, interpretError(err))
	}
	if len(through) == 0 {
		return nil, nil
	}
	var stale []sql.NullTime
	if err := db.Raw(`SELECT DISTINCT day FROM analytics_stale WHERE kind = ? AND key = ?`, kind, key).
		Scan(&stale).Error; err != nil {
		return nil, fmt.Errorf("error reading %s %s's stale days: %w", kind, key, interpretError(err))
	}
	skip := map[time.Time]bool{}
	for _, d := range stale {
		if !d.Valid {
			return nil, nil
		}
		skip[utcDay(d.Time)] = true
	}
	first := utcDay(from)
	if first.Before(from) {
		first = first.AddDate(0, 0, 1)
	}
	last := utcDay(through[0])
	if end := utcDay(to).AddDate(0, 0, -1); end.Before(last) {
		last = end
	}
	p := &rollupPlan{}
	cursor := from
	for d := first; !d.After(last); d = d.AddDate(0, 0, 1) {
		if skip[d] {
			continue
		}
		if cursor.Before(d) {
			p.raw = append(p.raw, [2]time.Time{cursor, d})
		}
		p.days = append(p.days, d)
		cursor = d.AddDate(0, 0, 1)
	}
	if cursor.Before(to) {
		p.raw = append(p.raw, [2]time.Time{cursor, to})
	}
	if len(p.days) == 0 || len(p.raw) > maxRawIntervals {
		return nil, nil
	}
	return p, nil
}

// nodeAggSQL sums the node states of the runs rs(id, flow_version_id)
// per version and node: fires, ends, waits, outcomes and a duration
// histogram (ms) — a day's rollup rows, or a range's raw part.
func nodeAggSQL() string {
	return `ns AS (SELECT rs.flow_version_id AS v, n.node_id, n.status, n.started_at, n.finished_at, n.taken,
				n.output -> 'decision' ->> 'outcome' AS outcome
			FROM node_states n JOIN rs ON rs.id = n.run_id),
		cnt AS (SELECT v, node_id, count(*) FILTER (WHERE started_at IS NOT NULL) AS fired,
				count(*) FILTER (WHERE status = 'completed') AS completed, count(*) FILTER (WHERE status = 'failed') AS failed,
				count(*) FILTER (WHERE status = 'skipped') AS skipped,
				count(*) FILTER (WHERE status NOT IN ('pending', 'completed', 'failed', 'skipped', 'cancelled')) AS waiting
			FROM ns GROUP BY v, node_id),
		oc AS (SELECT v, node_id, jsonb_object_agg(o, c) AS outcomes FROM (
				SELECT v, node_id, outcome AS o, count(*) AS c FROM ns WHERE outcome IS NOT NULL GROUP BY v, node_id, outcome
				UNION ALL
				SELECT v, node_id, 'to:' || t AS o, count(*) AS c FROM ns, unnest(ns.taken) AS t
				WHERE ns.taken IS NOT NULL GROUP BY v, node_id, t) x GROUP BY v, node_id),
		du AS (SELECT v, node_id, jsonb_object_agg(b, c) AS durations FROM (
				SELECT v, node_id, ` + histBucketSQL(`EXTRACT(EPOCH FROM finished_at - started_at)::float8 * 1000`) + ` AS b, count(*) AS c
				FROM ns WHERE status = 'completed' AND started_at IS NOT NULL AND finished_at IS NOT NULL
				GROUP BY 1, 2, 3) x GROUP BY v, node_id),
		agg AS (SELECT cnt.v, cnt.node_id, cnt.fired, cnt.completed, cnt.failed, cnt.skipped, cnt.waiting,
				COALESCE(oc.outcomes, '{}') AS outcomes, COALESCE(du.durations, '{}') AS durations
			FROM cnt LEFT JOIN oc ON oc.v = cnt.v AND oc.node_id = cnt.node_id
				LEFT JOIN du ON du.v = cnt.v AND du.node_id = cnt.node_id)`
}

// isMove is the SQL condition that a journey entry j is a move: into a
// section other than the one it left.
const isMove = `j.to_section_id IS NOT NULL AND j.from_section_id IS DISTINCT FROM j.to_section_id`

// moveAggSQL sums the moves mv(entity_id, entity_seq, f, t, created_at):
// per (from, to) (mvs: f, t, n), and the stays they end, in seconds, by
// section (closed: section, secs) — a board day's rollup rows or a
// range's raw part.
func moveAggSQL() string {
	return `closed AS (
			SELECT m.f AS section, EXTRACT(EPOCH FROM m.created_at - p.created_at)::float8 AS secs
			FROM mv m CROSS JOIN LATERAL (
				SELECT j.created_at FROM journey_events j
				WHERE j.entity_id = m.entity_id AND j.entity_seq < m.entity_seq AND ` + isMove + `
				ORDER BY j.entity_seq DESC LIMIT 1) p
			WHERE m.f IS NOT NULL),
		mvs AS (SELECT COALESCE(f, '') AS f, t, count(*) AS n FROM mv GROUP BY 1, 2)`
}

// openStaysSQL is the CTE open (section, secs) of the stays of the
// entities ents still open at a range's end: each entity's last move
// before ? (the range's end), measured to ? (the end, or now when
// sooner) — arguments in that order: measured-to, then end.
const openStaysSQL = `open AS (
			SELECT l.t AS section, EXTRACT(EPOCH FROM ?::timestamptz - l.created_at)::float8 AS secs
			FROM ents e CROSS JOIN LATERAL (
				SELECT j.to_section_id AS t, j.created_at FROM journey_events j
				WHERE j.entity_id = e.id AND j.created_at < ? AND ` + isMove + `
				ORDER BY j.entity_seq DESC LIMIT 1) l)`

// entitiesNowSQL counts board ?'s entities in each section now, and those
// overdue at ? (arguments: now, board).
const entitiesNowSQL = `SELECT e.section_id AS section, count(*) AS n,
			count(*) FILTER (WHERE s.sla_seconds IS NOT NULL AND e.section_since + make_interval(secs => s.sla_seconds) <= ?) AS overdue
		FROM entities e LEFT JOIN sections s ON s.board_id = e.board_id AND s.id = e.section_id
		WHERE e.board_id = ? AND e.section_id IS NOT NULL GROUP BY e.section_id`

// boardMovesSQL is the CTEs ents (board ?'s entities) and mv (their
// moves in [?, ?)).
const boardMovesSQL = `ents AS (SELECT id FROM entities WHERE board_id = ?),
		mv AS (
			SELECT j.entity_id, j.entity_seq, j.from_section_id AS f, j.to_section_id AS t, j.created_at
			FROM journey_events j JOIN ents e ON e.id = j.entity_id
			WHERE j.created_at >= ? AND j.created_at < ? AND ` + isMove + `)`

// RollParams bounds a RollAnalytics pass.
type RollParams struct {
	// Through is the last day to roll (UTC; zero: two days before the
	// database's today, so that runs and moves of a rolled day are seldom
	// still changing). Rows are written with the time they are written
	// at: a day is rolled once its last row can be in it. (A loader that
	// writes rows into rolled days must delete the key's analytics_rolled
	// row.)
	Through time.Time
	// Days bounds the days rolled in the pass (default 50).
	Days int
}

// RollAnalytics rolls up to p.Days days of flows and boards: stale days
// first (rolled again, or their marks dropped when not rolled yet), then
// each flow's and board's next days with runs or moves up to p.Through
// (a key's watermark is its last day rolled).
// It returns how many days it rolled; fewer than p.Days means it caught
// up. Each day is its own repeatable-read transaction, under an advisory
// lock per flow or board (processes share the work, never a day).
func (s *Store) RollAnalytics(ctx context.Context, p RollParams) (int, error) {
	if p.Days <= 0 {
		p.Days = 50
	}
	db := s.db.WithContext(ctx)
	if p.Through.IsZero() {
		if err := db.Raw(`SELECT ((now() AT TIME ZONE 'UTC')::date - 2)::timestamp`).Row().Scan(&p.Through); err != nil {
			return 0, fmt.Errorf("error reading the database's day: %w", interpretError(err))
		}
	}
	p.Through = utcDay(p.Through)
	rolled, err := s.rollStale(ctx, p)
	if err != nil || rolled >= p.Days {
		return rolled, err
	}
	type key struct {
		Kind, Key string
		Through   sql.NullTime
	}
	var keys []key
	if err := db.Raw(`SELECT k.kind, k.key::text, r.rolled_through AS through
		FROM (SELECT 'flow' AS kind, id AS key FROM flows UNION ALL SELECT 'board', id FROM boards) k
		LEFT JOIN analytics_rolled r ON r.kind = k.kind AND r.key = k.key
		WHERE r.rolled_through IS NULL OR r.rolled_through < ?::date`, p.Through.Format(time.DateOnly)).
		Scan(&keys).Error; err != nil {
		return rolled, fmt.Errorf("error listing what analytics rolls: %w", interpretError(err))
	}
	for _, k := range keys {
		next := time.Time{}
		if k.Through.Valid {
			next = utcDay(k.Through.Time).AddDate(0, 0, 1)
		}
		for rolled < p.Days {
			day, err := s.nextActiveDay(ctx, k.Kind, k.Key, next)
			if err != nil {
				return rolled, err
			}
			// Days with nothing are not marked: a range past the last
			// rolled day reads raw, and finds nothing fast.
			if day.IsZero() || day.After(p.Through) {
				break
			}
			done, err := s.rollDay(ctx, k.Kind, k.Key, day, nil)
			if err != nil {
				return rolled, err
			}
			if !done {
				break // another process is rolling it: its turn
			}
			rolled++
			next = day.AddDate(0, 0, 1)
		}
	}
	return rolled, nil
}

// rollStale rolls the stale days again (or drops their marks when the
// day is not rolled yet; a whole board stale loses its rollups, to be
// rolled from its first day).
func (s *Store) rollStale(ctx context.Context, p RollParams) (int, error) {
	type mark struct {
		Kind, Key string
		Day       sql.NullTime
		IDs       string `gorm:"column:ids"`
	}
	var marks []mark
	if err := s.db.WithContext(ctx).Raw(`SELECT kind, key::text, day, array_agg(id)::text AS ids FROM analytics_stale
		GROUP BY kind, key, day ORDER BY min(id) LIMIT ?`, p.Days).Scan(&marks).Error; err != nil {
		return 0, fmt.Errorf("error reading stale analytics days: %w", interpretError(err))
	}
	rolled := 0
	for _, m := range marks {
		if !m.Day.Valid {
			if err := s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
				for _, st := range []string{`DELETE FROM analytics_move_days WHERE board_id = ?`,
					`DELETE FROM analytics_stay_days WHERE board_id = ?`, `DELETE FROM analytics_entity_days WHERE board_id = ?`,
					`DELETE FROM analytics_rolled WHERE kind = 'board' AND key = ?`} {
					if err := tx.Exec(st, m.Key).Error; err != nil {
						return err
					}
				}
				return tx.Exec(`DELETE FROM analytics_stale WHERE id = ANY(?::bigint[])`, m.IDs).Error
			}); err != nil {
				return rolled, fmt.Errorf("error dropping board %s's rollups: %w", m.Key, interpretError(err))
			}
			continue
		}
		done, err := s.rollDay(ctx, m.Kind, m.Key, utcDay(m.Day.Time), &m.IDs)
		if err != nil {
			return rolled, err
		}
		if done {
			rolled++
		}
	}
	return rolled, nil
}

// nextActiveDay is the first day on or after from (zero: the first) on
// which the flow has runs or the board's entities moved; zero when none.
func (s *Store) nextActiveDay(ctx context.Context, kind, key string, from time.Time) (time.Time, error) {
	var at sql.NullTime
	var err error
	db := s.db.WithContext(ctx)
	if kind == "flow" {
		err = db.Raw(`SELECT min(created_at) FROM runs WHERE flow_id = ? AND created_at >= ?`, key, from).Row().Scan(&at)
	} else {
		err = db.Raw(`SELECT min(f.at) FROM entities e CROSS JOIN LATERAL (
				SELECT j.created_at AS at FROM journey_events j WHERE j.entity_id = e.id AND j.created_at >= ?
				ORDER BY j.created_at LIMIT 1) f
			WHERE e.board_id = ?`, from, key).Row().Scan(&at)
	}
	if err != nil {
		return time.Time{}, fmt.Errorf("error finding %s %s's next day: %w", kind, key, interpretError(err))
	}
	if !at.Valid {
		return time.Time{}, nil
	}
	return utcDay(at.Time), nil
}

// rollDay writes a day's rollup rows and moves the key's watermark to it
// when later, in one repeatable-read transaction; marks
// (a Postgres bigint[] literal) are the stale marks it answers, deleted
// with it — a mark made after the transaction's snapshot stays. A day
// past the watermark that is only stale is not rolled: its mark goes.
// It reports false, doing nothing, while another process rolls the key.
//
// The key's lock is a session lock taken on the transaction's connection
// before the transaction begins: its snapshot then sees whatever the
// lock's last holder committed (a lock taken by the transaction's first
// statement would come after its snapshot, and a roll committed in
// between would be invisible to it).
func (s *Store) rollDay(ctx context.Context, kind, key string, day time.Time, marks *string) (bool, error) {
	var got bool
	lock := "analytics:" + kind + ":" + key
	err := s.db.WithContext(ctx).Connection(func(conn *gorm.DB) error {
		if err := conn.Raw(`SELECT pg_try_advisory_lock(hashtextextended(?, 0))`, lock).Row().Scan(&got); err != nil || !got {
			return err // not got: another process is rolling it
		}
		defer conn.Exec(`SELECT pg_advisory_unlock(hashtextextended(?, 0))`, lock)
		return conn.Transaction(func(tx *gorm.DB) error {
			var through []time.Time
			if err := tx.Raw(`SELECT rolled_through FROM analytics_rolled WHERE kind = ? AND key = ?`, kind, key).Scan(&through).Error; err != nil {
				return err
			}
			if marks != nil {
				if err := tx.Exec(`DELETE FROM analytics_stale WHERE id = ANY(?::bigint[])`, *marks).Error; err != nil {
					return err
				}
				if len(through) == 0 || utcDay(through[0]).Before(day) {
					return nil // not rolled yet: the roll to come reads it
				}
			}
			if err := rollSums(tx, kind, key, day); err != nil {
				return err
			}
			if len(through) == 0 || utcDay(through[0]).Before(day) {
				return tx.Exec(`INSERT INTO analytics_rolled (kind, key, rolled_through) VALUES (?, ?, ?::date)
					ON CONFLICT (kind, key) DO UPDATE SET rolled_through = excluded.rolled_through`, kind, key, day.Format(time.DateOnly)).Error
			}
			return nil
		}, &sql.TxOptions{Isolation: sql.LevelRepeatableRead})
	})
	if err != nil {
		return false, fmt.Errorf("error rolling %s %s's analytics of %s: %w", kind, key, day.Format(time.DateOnly), interpretError(err))
	}
	return got, nil
}

// rollSums replaces a day's rollup rows of a flow or board.
func rollSums(tx *gorm.DB, kind, key string, day time.Time) error {
	d, end := day.Format(time.DateOnly), day.AddDate(0, 0, 1)
	if kind == "flow" {
		for _, st := range []string{`DELETE FROM analytics_run_days WHERE flow_id = ? AND day = ?::date`,
			`DELETE FROM analytics_node_days WHERE flow_id = ? AND day = ?::date`} {
			if err := tx.Exec(st, key, d).Error; err != nil {
				return err
			}
		}
		rs := `rs AS (SELECT id, status, flow_version_id FROM runs WHERE flow_id = ? AND created_at >= ? AND created_at < ?
			AND status IN ('completed', 'failed', 'cancelled'))`
		if err := tx.Exec(`WITH `+rs+`
			INSERT INTO analytics_run_days (flow_id, day, flow_version_id, completed, failed, cancelled)
			SELECT ?, ?::date, flow_version_id, count(*) FILTER (WHERE status = 'completed'),
				count(*) FILTER (WHERE status = 'failed'), count(*) FILTER (WHERE status = 'cancelled')
			FROM rs GROUP BY flow_version_id`, key, day, end, key, d).Error; err != nil {
			return err
		}
		return tx.Exec(`WITH `+rs+`, `+nodeAggSQL()+`
			INSERT INTO analytics_node_days (flow_id, day, flow_version_id, node_id, fired, completed, failed, skipped, waiting,
				outcomes, durations)
			SELECT ?, ?::date, v, node_id, fired, completed, failed, skipped, waiting, outcomes, durations FROM agg`,
			key, day, end, key, d).Error
	}
	for _, st := range []string{`DELETE FROM analytics_move_days WHERE board_id = ? AND day = ?::date`,
		`DELETE FROM analytics_stay_days WHERE board_id = ? AND day = ?::date`,
		`DELETE FROM analytics_entity_days WHERE board_id = ? AND day = ?::date`} {
		if err := tx.Exec(st, key, d).Error; err != nil {
			return err
		}
	}
	with := `WITH ` + boardMovesSQL + `, ` + moveAggSQL()
	if err := tx.Exec(with+`
		INSERT INTO analytics_move_days (board_id, day, from_section, to_section, moves) SELECT ?, ?::date, f, t, n FROM mvs`,
		key, day, end, key, d).Error; err != nil {
		return err
	}
	if err := tx.Exec(with+`
		INSERT INTO analytics_stay_days (board_id, day, section, max_secs, durations)
		SELECT ?, ?::date, section, max(mx), jsonb_object_agg(b, c) FROM (
			SELECT section, `+histBucketSQL("secs")+` AS b, count(*) AS c, max(secs) AS mx FROM closed WHERE secs >= 0 GROUP BY 1, 2) x
		GROUP BY section`, key, day, end, key, d).Error; err != nil {
		return err
	}
	return tx.Exec(with+`
		INSERT INTO analytics_entity_days (board_id, day, entity_id) SELECT DISTINCT ?::uuid, ?::date, entity_id FROM mv`,
		key, day, end, key, d).Error
}

// boardAnalyticsRolled is BoardAnalytics over a plan: the rolled days'
// moves, stays and entities, the rest of the range raw, stays still open
// at its end raw, time in section from merged histograms.
func (s *Store) boardAnalyticsRolled(ctx context.Context, b *Board, p AnalyticsParams, end time.Time, plan *rollupPlan) (*BoardAnalytics, error) {
	db := s.db.WithContext(ctx)
	where, wargs := plan.rawWhere("j.created_at")
	days := plan.daysArray()
	first, last := plan.days[0], plan.days[len(plan.days)-1]
	args := append(append([]any{b.ID}, wargs...), end, p.To, b.ID, days, b.ID, days,
		b.ID, first.Format(time.DateOnly), last.Format(time.DateOnly), plan.gapsArray())
	rows, err := db.Raw(`WITH ents AS (SELECT id FROM entities WHERE board_id = ?),
		mv AS (
			SELECT j.entity_id, j.entity_seq, j.from_section_id AS f, j.to_section_id AS t, j.created_at
			FROM journey_events j JOIN ents e ON e.id = j.entity_id WHERE `+where+` AND `+isMove+`),
		`+moveAggSQL()+`,
		`+openStaysSQL+`,
		st AS (SELECT section, `+histBucketSQL("secs")+` AS b, count(*) AS c, max(secs) AS mx
			FROM (SELECT * FROM closed UNION ALL SELECT * FROM open) x WHERE secs >= 0 GROUP BY 1, 2)
		SELECT 'move' AS kind, f AS a, t AS b, n::float8 AS n, NULL::jsonb AS j FROM mvs
		UNION ALL
		SELECT 'move', from_section, to_section, sum(moves)::float8, NULL FROM analytics_move_days
		WHERE board_id = ? AND day = ANY(?::date[]) GROUP BY 2, 3
		UNION ALL
		SELECT 'stay', section, NULL, max(mx), jsonb_object_agg(b, c) FROM st GROUP BY section
		UNION ALL
		SELECT 'stay', section, NULL, max_secs, durations FROM analytics_stay_days WHERE board_id = ? AND day = ANY(?::date[])
		UNION ALL
		SELECT 'entities', NULL, NULL, count(*)::float8, NULL FROM (
			SELECT e.id FROM entities e WHERE e.board_id = ? AND EXISTS (
				SELECT 1 FROM analytics_entity_days d WHERE d.board_id = e.board_id AND d.entity_id = e.id
					AND d.day >= ?::date AND d.day <= ?::date AND d.day <> ALL(?::date[]))
			UNION
			SELECT entity_id FROM mv) x`, args...).Rows()
	if err != nil {
		return nil, fmt.Errorf("error reading board %s's analytics: %w", b.ID, interpretError(err))
	}
	defer rows.Close()
	type acc struct {
		entered, left int
		next          map[string]int
		hist          histogram
		max           *float64
	}
	by := map[string]*acc{}
	at := func(sec string) *acc {
		if by[sec] == nil {
			by[sec] = &acc{next: map[string]int{}, hist: histogram{}}
		}
		return by[sec]
	}
	out := &BoardAnalytics{From: p.From.UTC(), To: p.To.UTC(), Sections: make([]SectionAnalytics, 0, len(b.Sections))}
	for rows.Next() {
		var kind string
		var a, bb sql.NullString
		var n float64
		var j []byte
		if err := rows.Scan(&kind, &a, &bb, &n, &j); err != nil {
			return nil, fmt.Errorf("error reading board %s's analytics: %w", b.ID, err)
		}
		switch kind {
		case "move":
			at(bb.String).entered += int(n)
			if a.String != "" {
				from := at(a.String)
				from.left += int(n)
				from.next[bb.String] += int(n)
			}
		case "stay":
			sa := at(a.String)
			if sa.max == nil || n > *sa.max {
				sa.max = &n
			}
			if err := sa.hist.addJSON(j); err != nil {
				return nil, err
			}
		case "entities":
			out.Entities = int(n)
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("error reading board %s's analytics: %w", b.ID, interpretError(err))
	}
	type curRow struct {
		Section    string
		N, Overdue int
	}
	var cur []curRow
	if err := db.Raw(entitiesNowSQL, p.Now, b.ID).Scan(&cur).Error; err != nil {
		return nil, fmt.Errorf("error reading board %s's entities now: %w", b.ID, interpretError(err))
	}
	now := map[string]curRow{}
	for _, c := range cur {
		now[c.Section] = c
	}
	for _, sec := range b.Sections {
		a := at(sec.ID)
		q := a.hist.quantiles(0.5, 0.9)
		sa := SectionAnalytics{ID: sec.ID, Name: sec.Name, SLASeconds: sec.SLASeconds, Entered: a.entered, Left: a.left,
			Current: now[sec.ID].N, Overdue: now[sec.ID].Overdue, TimeInSection: Percentiles{P50: q[0], P90: q[1], Max: a.max},
			Next: make([]SectionFlow, 0, len(a.next))}
		for to, n := range a.next {
			sa.Next = append(sa.Next, SectionFlow{SectionID: to, Count: n})
		}
		// As the raw read orders them: most taken first, then by id.
		slices.SortFunc(sa.Next, func(x, y SectionFlow) int {
			if x.Count != y.Count {
				return y.Count - x.Count
			}
			return strings.Compare(x.SectionID, y.SectionID)
		})
		out.Sections = append(out.Sections, sa)
	}
	return out, nil
}
