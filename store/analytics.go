package store

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"
)

// Percentiles of a duration, in the unit its field names.
type Percentiles struct {
	P50 *float64 `json:"p50"`
	P90 *float64 `json:"p90,omitempty"`
	P95 *float64 `json:"p95,omitempty"`
	Max *float64 `json:"max,omitempty"`
}

// SectionFlow is how many entities moved from a section to another.
type SectionFlow struct {
	SectionID string `json:"section_id"`
	Count     int    `json:"count"`
}

// SectionAnalytics is one board section's funnel over a range.
type SectionAnalytics struct {
	ID         string `json:"id"`
	Name       string `json:"name"`
	SLASeconds *int   `json:"sla_seconds"`
	// Entered and Left count the moves into and out of the section in
	// the range; Current the entities in it now.
	Entered int `json:"entered"`
	Left    int `json:"left"`
	Current int `json:"current"`
	// TimeInSection: the stays that ended in the range and those still
	// open at its end (measured to the end, or to now when sooner).
	TimeInSection Percentiles   `json:"time_in_section_seconds"`
	Next          []SectionFlow `json:"next"`
	// Overdue counts the entities in the section now for longer than its
	// SLA.
	Overdue int `json:"overdue"`
}

// BoardAnalytics is GET /api/v1/boards/{id}/analytics.
type BoardAnalytics struct {
	From     time.Time          `json:"from"`
	To       time.Time          `json:"to"`
	Entities int                `json:"entities"`
	Sections []SectionAnalytics `json:"sections"`
}

// AnalyticsParams is the range analytics read: [From, To), measured at Now
// (open stays, overdue entities, waiting nodes).
type AnalyticsParams struct {
	From, To, Now time.Time
}

// BoardAnalytics counts a board's journey ledger over a range: each
// section's moves in and out, where its entities went next, how long they
// stayed, and who is there now and overdue. A move is a journey entry
// into a section other than the one it left (a reassignment within a
// section is not one).
func (s *Store) BoardAnalytics(ctx context.Context, boardID string, p AnalyticsParams) (*BoardAnalytics, error) {
	b, err := s.GetBoard(ctx, boardID)
	if err != nil {
		return nil, err
	}
	end := p.To
	if p.Now.Before(end) {
		end = p.Now
	}
	plan, err := s.planRollup(ctx, "board", boardID, p.From, p.To)
	if err != nil {
		return nil, err
	}
	if plan != nil {
		return s.boardAnalyticsRolled(ctx, b, p, end, plan)
	}
	type secRow struct {
		Section             string
		Entered, Left       int
		P50, P90, Max       *float64
		Current, Overdue    int
		NextJSON            []byte
		DistinctEntityCount int
	}
	db := s.db.WithContext(ctx)
	// The moves in the range, each with the entity's move before it (the
	// stay it ends began there), and each entity's last move before the
	// range's end (the stay still open then): index probes by
	// (entity_id, entity_seq), not the board's whole ledger.
	rows, err := db.Raw(`WITH ents AS (SELECT id FROM entities WHERE board_id = ?),
		mv AS (
			SELECT j.entity_id, j.entity_seq, j.from_section_id AS f, j.to_section_id AS t, j.created_at
			FROM journey_events j JOIN ents e ON e.id = j.entity_id
			WHERE j.created_at >= ? AND j.created_at < ?
				AND j.to_section_id IS NOT NULL AND j.from_section_id IS DISTINCT FROM j.to_section_id),
		closed AS (
			SELECT m.f AS section, EXTRACT(EPOCH FROM m.created_at - p.created_at)::float8 AS secs
			FROM mv m CROSS JOIN LATERAL (
				SELECT p.created_at FROM journey_events p
				WHERE p.entity_id = m.entity_id AND p.entity_seq < m.entity_seq
					AND p.to_section_id IS NOT NULL AND p.from_section_id IS DISTINCT FROM p.to_section_id
				ORDER BY p.entity_seq DESC LIMIT 1) p
			WHERE m.f IS NOT NULL),
		`+openStaysSQL+`,
		st AS (
			SELECT section, percentile_cont(0.5) WITHIN GROUP (ORDER BY secs) AS p50,
				percentile_cont(0.9) WITHIN GROUP (ORDER BY secs) AS p90, max(secs) AS mx
			FROM (SELECT * FROM closed UNION ALL SELECT * FROM open) stays WHERE secs >= 0 GROUP BY section),
		ins AS (SELECT t AS section, count(*) AS n FROM mv GROUP BY t),
		outs AS (SELECT f AS section, count(*) AS n FROM mv WHERE f IS NOT NULL GROUP BY f),
		nxt AS (SELECT f AS section, jsonb_agg(jsonb_build_object('section_id', t, 'count', n) ORDER BY n DESC, t) AS next
			FROM (SELECT f, t, count(*) AS n FROM mv WHERE f IS NOT NULL GROUP BY f, t) x GROUP BY f),
		cur AS (`+entitiesNowSQL+`),
		ent AS (SELECT count(DISTINCT entity_id) AS n FROM mv)
		SELECT s.id AS section, COALESCE(ins.n, 0) AS entered, COALESCE(outs.n, 0) AS "left",
			st.p50, st.p90, st.mx AS max, COALESCE(cur.n, 0) AS current, COALESCE(cur.overdue, 0) AS overdue,
			COALESCE(nxt.next, '[]'::jsonb) AS next_json, (SELECT n FROM ent) AS distinct_entity_count
		FROM sections s LEFT JOIN ins ON ins.section = s.id LEFT JOIN outs ON outs.section = s.id
			LEFT JOIN st ON st.section = s.id LEFT JOIN nxt ON nxt.section = s.id LEFT JOIN cur ON cur.section = s.id
		WHERE s.board_id = ? ORDER BY s.position`,
		boardID, p.From, p.To, end, p.To, p.Now, boardID, boardID).Rows()
	if err != nil {
		return nil, fmt.Errorf("error reading board %s's analytics: %w", boardID, interpretError(err))
	}
	defer rows.Close()
	byID := map[string]secRow{}
	entities := 0
	for rows.Next() {
		var r secRow
		if err := rows.Scan(&r.Section, &r.Entered, &r.Left, &r.P50, &r.P90, &r.Max, &r.Current, &r.Overdue, &r.NextJSON,
			&r.DistinctEntityCount); err != nil {
			return nil, fmt.Errorf("error reading board %s's analytics: %w", boardID, err)
		}
		byID[r.Section] = r
		entities = r.DistinctEntityCount
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("error reading board %s's analytics: %w", boardID, interpretError(err))
	}
	out := &BoardAnalytics{From: p.From.UTC(), To: p.To.UTC(), Entities: entities, Sections: make([]SectionAnalytics, 0, len(b.Sections))}
	for _, sec := range b.Sections {
		r := byID[sec.ID]
		sa := SectionAnalytics{ID: sec.ID, Name: sec.Name, SLASeconds: sec.SLASeconds, Entered: r.Entered, Left: r.Left,
			Current: r.Current, Overdue: r.Overdue, TimeInSection: Percentiles{P50: r.P50, P90: r.P90, Max: r.Max}, Next: []SectionFlow{}}
		if len(r.NextJSON) > 0 {
			if err := json.Unmarshal(r.NextJSON, &sa.Next); err != nil {
				return nil, fmt.Errorf("error reading section %s's moves: %w", sec.ID, err)
			}
		}
		out.Sections = append(out.Sections, sa)
	}
	return out, nil
}

// FlowRunCounts are a flow's runs started in a range, by status now.
type FlowRunCounts struct {
	Started   int `json:"started"`
	Completed int `json:"completed"`
	Failed    int `json:"failed"`
	Cancelled int `json:"cancelled"`
	Running   int `json:"running"`
}

// NodeAnalytics is one node's figures over a flow's runs in a range.
type NodeAnalytics struct {
	Key        string         `json:"key"`
	Fired      int            `json:"fired"`
	Completed  int            `json:"completed"`
	Failed     int            `json:"failed"`
	Skipped    int            `json:"skipped"`
	WaitingNow int            `json:"waiting_now"`
	DurationMs Percentiles    `json:"duration_ms"`
	Outcomes   map[string]int `json:"outcomes"`
}

// TimelineBucket is the runs started in a bucket, and how they ended.
type TimelineBucket struct {
	Bucket    time.Time `json:"bucket"`
	Started   int       `json:"started"`
	Completed int       `json:"completed"`
	Failed    int       `json:"failed"`
}

// FlowAnalytics is GET /api/v1/flows/{id}/analytics.
type FlowAnalytics struct {
	From     time.Time        `json:"from"`
	To       time.Time        `json:"to"`
	Version  *int             `json:"version"`
	Bucket   string           `json:"bucket"`
	Runs     FlowRunCounts    `json:"runs"`
	Nodes    []NodeAnalytics  `json:"nodes"`
	Timeline []TimelineBucket `json:"timeline"`
}

// FlowAnalyticsParams is a flow's range, and a version (0: every version).
type FlowAnalyticsParams struct {
	AnalyticsParams
	FlowID  string
	Version int
}

// bucketFor sizes a timeline's buckets to its range: hours up to two
// days, days up to 90, weeks beyond.
func bucketFor(from, to time.Time) (string, string) {
	switch d := to.Sub(from); {
	case d <= 48*time.Hour:
		return "hour", "1 hour"
	case d <= 90*24*time.Hour:
		return "day", "1 day"
	default:
		return "week", "7 days"
	}
}

// FlowAnalytics counts a flow's runs started in a range (of one version,
// or all): their statuses, each node's fires, ends, waits, durations
// (started to finished, completed attempts) and outcomes (a decision's,
// or the edges a branching node took), and a timeline.
func (s *Store) FlowAnalytics(ctx context.Context, p FlowAnalyticsParams) (*FlowAnalytics, error) {
	db := s.db.WithContext(ctx)
	bucket, stride := bucketFor(p.From, p.To)
	// Day and week buckets begin at midnight UTC (whole rolled days fit
	// them); hours at from.
	origin := p.From
	if bucket != "hour" {
		origin = utcDay(p.From)
	}
	out := &FlowAnalytics{From: p.From.UTC(), To: p.To.UTC(), Bucket: bucket, Nodes: []NodeAnalytics{}, Timeline: []TimelineBucket{}}
	version := "" // every version
	var verArgs []any
	if p.Version > 0 {
		out.Version = &p.Version
		// bigint: a number past int4's range is a version that does not
		// exist, not a parameter the driver cannot encode (a 500).
		version = ` AND r.flow_version_id = (SELECT id FROM flow_versions WHERE flow_id = ? AND number = ?::bigint)`
		verArgs = []any{p.FlowID, p.Version}
	}
	plan, err := s.planRollup(ctx, "flow", p.FlowID, p.From, p.To)
	if err != nil {
		return nil, err
	}
	// rs: the runs read raw — every run of the range, or, beside rolled
	// days, the runs of the rest and the rolled days' runs still going.
	const runCols = `SELECT r.id, r.status, r.created_at, r.flow_version_id FROM runs r WHERE r.flow_id = ?`
	rs := runCols + ` AND r.created_at >= ? AND r.created_at < ?` + version
	args := append([]any{p.FlowID, p.From, p.To}, verArgs...)
	if plan != nil {
		where, wargs := plan.rawWhere("r.created_at")
		rs = runCols + version + ` AND ` + where + `
			UNION ALL ` + runCols + version + ` AND r.status IN ('running', 'paused', 'queued')
				AND r.created_at >= ? AND r.created_at < ? AND (r.created_at AT TIME ZONE 'UTC')::date = ANY(?::date[])`
		args = append(append(append([]any{p.FlowID}, verArgs...), wargs...), p.FlowID)
		args = append(append(args, verArgs...), plan.days[0], plan.days[len(plan.days)-1].AddDate(0, 0, 1), plan.daysArray())
	}
	if err := db.Raw(`WITH rs AS (`+rs+`)
		SELECT count(*), count(*) FILTER (WHERE status = 'completed'), count(*) FILTER (WHERE status = 'failed'),
			count(*) FILTER (WHERE status = 'cancelled'), count(*) FILTER (WHERE status IN ('running', 'paused', 'queued'))
		FROM rs`, args...).Row().Scan(&out.Runs.Started, &out.Runs.Completed, &out.Runs.Failed, &out.Runs.Cancelled,
		&out.Runs.Running); err != nil {
		return nil, fmt.Errorf("error counting flow %s's runs: %w", p.FlowID, interpretError(err))
	}
	if plan == nil {
		out.Nodes, err = s.flowNodesExact(ctx, p.FlowID, rs, args)
	} else {
		out.Nodes, err = s.flowNodesRolled(ctx, p.FlowID, rs, args, plan, version, verArgs, &out.Runs)
	}
	if err != nil {
		return nil, err
	}
	targs := append(append([]any{}, args...), stride, origin)
	timeline := `SELECT date_bin(?::interval, created_at, ?::timestamptz) AS b, count(*) AS started,
			count(*) FILTER (WHERE status = 'completed') AS completed, count(*) FILTER (WHERE status = 'failed') AS failed
		FROM rs GROUP BY b`
	if plan != nil {
		timeline = `SELECT b, sum(started)::bigint, sum(completed)::bigint, sum(failed)::bigint FROM (` + timeline + `
			UNION ALL
			SELECT date_bin(?::interval, r.day::timestamp AT TIME ZONE 'UTC', ?::timestamptz) AS b,
				sum(r.completed + r.failed + r.cancelled), sum(r.completed), sum(r.failed)
			FROM analytics_run_days r WHERE r.flow_id = ? AND r.day = ANY(?::date[])` + version + ` GROUP BY 1) t GROUP BY b`
		targs = append(append(targs, stride, origin, p.FlowID, plan.daysArray()), verArgs...)
	}
	trows, err := db.Raw(`WITH rs AS (`+rs+`) `+timeline+` ORDER BY b`, targs...).Rows()
	if err != nil {
		return nil, fmt.Errorf("error reading flow %s's timeline: %w", p.FlowID, interpretError(err))
	}
	defer trows.Close()
	for trows.Next() {
		var t TimelineBucket
		if err := trows.Scan(&t.Bucket, &t.Started, &t.Completed, &t.Failed); err != nil {
			return nil, fmt.Errorf("error reading flow %s's timeline: %w", p.FlowID, err)
		}
		t.Bucket = t.Bucket.UTC()
		out.Timeline = append(out.Timeline, t)
	}
	return out, trows.Err()
}

// flowNodesExact reads each node's figures over the runs rs, durations
// as exact percentiles.
func (s *Store) flowNodesExact(ctx context.Context, flowID, rs string, args []any) ([]NodeAnalytics, error) {
	rows, err := s.db.WithContext(ctx).Raw(`WITH rs AS (`+rs+`),
		ns AS (SELECT n.node_id, n.status, n.started_at, n.finished_at, n.taken,
				n.output -> 'decision' ->> 'outcome' AS outcome
			FROM node_states n JOIN rs ON rs.id = n.run_id),
		oc AS (SELECT node_id, jsonb_object_agg(o, c) AS outcomes FROM (
				SELECT node_id, outcome AS o, count(*) AS c FROM ns WHERE outcome IS NOT NULL GROUP BY node_id, outcome
				UNION ALL
				SELECT node_id, 'to:' || t AS o, count(*) AS c FROM ns, unnest(ns.taken) AS t
				WHERE ns.taken IS NOT NULL GROUP BY node_id, t) x GROUP BY node_id)
		SELECT ns.node_id, count(*) FILTER (WHERE started_at IS NOT NULL),
			count(*) FILTER (WHERE status = 'completed'), count(*) FILTER (WHERE status = 'failed'),
			count(*) FILTER (WHERE status = 'skipped'),
			count(*) FILTER (WHERE status NOT IN ('pending', 'completed', 'failed', 'skipped', 'cancelled')),
			percentile_cont(0.5) WITHIN GROUP (ORDER BY EXTRACT(EPOCH FROM finished_at - started_at) * 1000)
				FILTER (WHERE status = 'completed' AND started_at IS NOT NULL AND finished_at IS NOT NULL),
			percentile_cont(0.95) WITHIN GROUP (ORDER BY EXTRACT(EPOCH FROM finished_at - started_at) * 1000)
				FILTER (WHERE status = 'completed' AND started_at IS NOT NULL AND finished_at IS NOT NULL),
			COALESCE(max(oc.outcomes::text), '{}')
		FROM ns LEFT JOIN oc ON oc.node_id = ns.node_id GROUP BY ns.node_id ORDER BY ns.node_id`, args...).Rows()
	if err != nil {
		return nil, fmt.Errorf("error reading flow %s's node figures: %w", flowID, interpretError(err))
	}
	defer rows.Close()
	nodes := []NodeAnalytics{}
	for rows.Next() {
		var n NodeAnalytics
		var outcomes string
		if err := rows.Scan(&n.Key, &n.Fired, &n.Completed, &n.Failed, &n.Skipped, &n.WaitingNow, &n.DurationMs.P50, &n.DurationMs.P95,
			&outcomes); err != nil {
			return nil, fmt.Errorf("error reading flow %s's node figures: %w", flowID, err)
		}
		if err := json.Unmarshal([]byte(outcomes), &n.Outcomes); err != nil {
			return nil, fmt.Errorf("error reading node %s's outcomes: %w", n.Key, err)
		}
		nodes = append(nodes, n)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("error reading flow %s's node figures: %w", flowID, interpretError(err))
	}
	return nodes, nil
}

// flowNodesRolled reads each node's figures over the runs rs and the
// plan's rolled days (and adds the rolled days' runs to counts), the
// durations' percentiles from their merged histograms.
func (s *Store) flowNodesRolled(ctx context.Context, flowID, rs string, args []any, plan *rollupPlan, version string,
	verArgs []any, counts *FlowRunCounts,
) ([]NodeAnalytics, error) {
	db := s.db.WithContext(ctx)
	var done struct{ Completed, Failed, Cancelled int }
	if err := db.Raw(`SELECT COALESCE(sum(r.completed), 0) AS completed, COALESCE(sum(r.failed), 0) AS failed,
			COALESCE(sum(r.cancelled), 0) AS cancelled
		FROM analytics_run_days r WHERE r.flow_id = ? AND r.day = ANY(?::date[])`+version,
		append([]any{flowID, plan.daysArray()}, verArgs...)...).Scan(&done).Error; err != nil {
		return nil, fmt.Errorf("error reading flow %s's rolled-up runs: %w", flowID, interpretError(err))
	}
	counts.Completed += done.Completed
	counts.Failed += done.Failed
	counts.Cancelled += done.Cancelled
	counts.Started += done.Completed + done.Failed + done.Cancelled
	rows, err := db.Raw(`WITH rs AS (`+rs+`), `+nodeAggSQL()+`
		SELECT node_id, fired, completed, failed, skipped, waiting, outcomes, durations FROM agg
		UNION ALL
		SELECT r.node_id, r.fired, r.completed, r.failed, r.skipped, r.waiting, r.outcomes, r.durations
		FROM analytics_node_days r WHERE r.flow_id = ? AND r.day = ANY(?::date[])`+version,
		append(append(args, flowID, plan.daysArray()), verArgs...)...).Rows()
	if err != nil {
		return nil, fmt.Errorf("error reading flow %s's node figures: %w", flowID, interpretError(err))
	}
	defer rows.Close()
	type acc struct {
		n    NodeAnalytics
		hist histogram
	}
	by := map[string]*acc{}
	for rows.Next() {
		var key string
		var f, c, fl, sk, w int
		var outcomes, durations []byte
		if err := rows.Scan(&key, &f, &c, &fl, &sk, &w, &outcomes, &durations); err != nil {
			return nil, fmt.Errorf("error reading flow %s's node figures: %w", flowID, err)
		}
		a := by[key]
		if a == nil {
			a = &acc{n: NodeAnalytics{Key: key, Outcomes: map[string]int{}}, hist: histogram{}}
			by[key] = a
		}
		a.n.Fired += f
		a.n.Completed += c
		a.n.Failed += fl
		a.n.Skipped += sk
		a.n.WaitingNow += w
		var oc map[string]int
		if err := json.Unmarshal(outcomes, &oc); err != nil {
			return nil, fmt.Errorf("error reading node %s's outcomes: %w", key, err)
		}
		for k, v := range oc {
			a.n.Outcomes[k] += v
		}
		if err := a.hist.addJSON(durations); err != nil {
			return nil, err
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("error reading flow %s's node figures: %w", flowID, interpretError(err))
	}
	nodes := make([]NodeAnalytics, 0, len(by))
	for _, a := range by {
		q := a.hist.quantiles(0.5, 0.95)
		a.n.DurationMs.P50, a.n.DurationMs.P95 = q[0], q[1]
		nodes = append(nodes, a.n)
	}
	slices.SortFunc(nodes, func(a, b NodeAnalytics) int { return strings.Compare(a.Key, b.Key) })
	return nodes, nil
}

// NotifySLABreaches writes an entity.sla_breached notification for each
// entity longer in its section than the section's SLA at now, once per
// stay (sla_notified_since marks the stay told), up to limit a call; it
// returns how many it wrote. Concurrent sweepers take different entities
// (SKIP LOCKED).
func (s *Store) NotifySLABreaches(ctx context.Context, now time.Time, limit int) (int, error) {
	var n int
	err := s.db.WithContext(ctx).Raw(`WITH due AS (
			SELECT e.id, e.name, e.type, e.email, e.board_id, e.section_id, e.section_since, e.current_run_id,
				s.name AS section_name, s.sla_seconds, b.name AS board_name
			FROM sections s JOIN entities e ON e.board_id = s.board_id AND e.section_id = s.id JOIN boards b ON b.id = e.board_id
			WHERE s.sla_seconds IS NOT NULL AND e.section_since IS NOT NULL
				AND e.section_since + make_interval(secs => s.sla_seconds) <= ?
				AND e.sla_notified_since IS DISTINCT FROM e.section_since
			LIMIT ? FOR UPDATE OF e SKIP LOCKED),
		marked AS (UPDATE entities e SET sla_notified_since = d.section_since FROM due d WHERE e.id = d.id),
		ins AS (INSERT INTO notifications (id, type, run_id, payload)
			SELECT n.id, 'entity.sla_breached', d.current_run_id, jsonb_build_object('type', 'entity.sla_breached', 'id', n.id,
				'at', ?::timestamptz, 'entity', jsonb_build_object('id', d.id, 'name', d.name, 'type', d.type, 'email', d.email),
				'board', jsonb_build_object('id', d.board_id, 'name', d.board_name),
				'section', jsonb_build_object('id', d.section_id, 'name', d.section_name, 'sla_seconds', d.sla_seconds),
				'in_section_since', d.section_since,
				'overdue_seconds', floor(EXTRACT(EPOCH FROM ?::timestamptz - d.section_since) - d.sla_seconds),
				'run_id', d.current_run_id)
			FROM due d, LATERAL (SELECT gen_random_uuid() AS id) n
			RETURNING 1)
		SELECT count(*) FROM ins`, now, limit, now, now).Row().Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("error notifying SLA breaches: %w", interpretError(err))
	}
	return n, nil
}
