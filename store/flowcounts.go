package store

import (
	"context"
	"fmt"
)

// RunCountCap bounds each count of a flow's runs in one status: counting
// stops there, so a page of flows costs at most flows × statuses × cap
// index entries however many runs a flow has had.
const RunCountCap = 10000

// RunCounts are a flow's runs counted by status; Capped lists the statuses
// whose count reached RunCountCap (there may be more).
type RunCounts struct {
	ByStatus map[string]int
	Capped   []string
}

// CountedRunStatuses are the run statuses FlowRunCounts counts, in the
// order a page shows them.
func CountedRunStatuses() []string {
	return []string{"running", "queued", "paused", "failed", "completed", "cancelled"}
}

// FlowRunCounts counts the runs of each of flowIDs by status, in one
// query; a flow with no runs has every count 0.
func (s *Store) FlowRunCounts(ctx context.Context, flowIDs []string) (map[string]RunCounts, error) {
	out := make(map[string]RunCounts, len(flowIDs))
	for _, id := range flowIDs {
		by := map[string]int{}
		for _, st := range CountedRunStatuses() {
			by[st] = 0
		}
		out[id] = RunCounts{ByStatus: by, Capped: []string{}}
	}
	if len(flowIDs) == 0 {
		return out, nil
	}
	// One capped count per (flow, status), each from runs_flow_status_idx.
	rows, err := s.db.WithContext(ctx).Raw(`SELECT f.id::text, st.status, c.n FROM flows f
		CROSS JOIN (VALUES ('running'), ('queued'), ('paused'), ('failed'), ('completed'), ('cancelled')) AS st(status)
		CROSS JOIN LATERAL (SELECT count(*) AS n FROM
			(SELECT 1 FROM runs r WHERE r.flow_id = f.id AND r.status = st.status LIMIT ?) AS capped) AS c
		WHERE f.id IN ? AND c.n > 0`, RunCountCap, flowIDs).Rows()
	if err != nil {
		return nil, fmt.Errorf("error counting the runs of %d flows: %w", len(flowIDs), interpretError(err))
	}
	defer rows.Close()
	for rows.Next() {
		var id, status string
		var n int
		if err := rows.Scan(&id, &status, &n); err != nil {
			return nil, fmt.Errorf("error counting the runs of %d flows: %w", len(flowIDs), interpretError(err))
		}
		rc, ok := out[id]
		if !ok {
			continue
		}
		rc.ByStatus[status] = n
		if n >= RunCountCap {
			rc.Capped = append(rc.Capped, status)
			out[id] = rc
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("error counting the runs of %d flows: %w", len(flowIDs), interpretError(err))
	}
	return out, nil
}

// TriggerKinds are the kinds of trigger FlowTriggerCounts counts.
func TriggerKinds() []string { return []string{"webhook", "schedule", "event", "nats", "amqp"} }

// FlowTriggerCounts counts the triggers of each of flowIDs by kind
// (enabled or not), in one query.
func (s *Store) FlowTriggerCounts(ctx context.Context, flowIDs []string) (map[string]map[string]int, error) {
	out := make(map[string]map[string]int, len(flowIDs))
	for _, id := range flowIDs {
		by := map[string]int{}
		for _, k := range TriggerKinds() {
			by[k] = 0
		}
		out[id] = by
	}
	if len(flowIDs) == 0 {
		return out, nil
	}
	rows, err := s.db.WithContext(ctx).Raw(`SELECT flow_id::text, 'webhook', count(*) FROM triggers WHERE flow_id IN ? GROUP BY flow_id
		UNION ALL SELECT flow_id::text, 'schedule', count(*) FROM schedules WHERE flow_id IN ? GROUP BY flow_id
		UNION ALL SELECT flow_id::text, 'event', count(*) FROM event_triggers WHERE flow_id IN ? GROUP BY flow_id
		UNION ALL SELECT flow_id::text, kind, count(*) FROM broker_triggers WHERE flow_id IN ? GROUP BY flow_id, kind`,
		flowIDs, flowIDs, flowIDs, flowIDs).Rows()
	if err != nil {
		return nil, fmt.Errorf("error counting the triggers of %d flows: %w", len(flowIDs), interpretError(err))
	}
	defer rows.Close()
	for rows.Next() {
		var id, kind string
		var n int
		if err := rows.Scan(&id, &kind, &n); err != nil {
			return nil, fmt.Errorf("error counting the triggers of %d flows: %w", len(flowIDs), interpretError(err))
		}
		if by, ok := out[id]; ok {
			by[kind] = n
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("error counting the triggers of %d flows: %w", len(flowIDs), interpretError(err))
	}
	return out, nil
}
