package store

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/stitchd/stitchd/engine"
)

// BulkFilter picks the runs a bulk action applies to; empty fields match
// everything.
type BulkFilter struct {
	// Workspace is the workspace whose runs are picked ("":
	// DefaultWorkspace).
	Workspace string
	FlowID    string
	Status    string
	// Node: the run has a failed (unhandled) node with this key or node id.
	Node string
	// ErrorContains: the run's error contains this text.
	ErrorContains string
	StartedAfter  *time.Time
	StartedBefore *time.Time
}

// BulkRuns returns the ids of up to limit runs matching f with an id
// greater than after, in id order (keyset pages for a bulk action).
func (s *Store) BulkRuns(ctx context.Context, f BulkFilter, after string, limit int) ([]string, error) {
	where, args := inWorkspace("r", f.Workspace)
	if f.FlowID != "" {
		if !isUUID(f.FlowID) {
			return nil, fmt.Errorf("%w: filter.flow_id must be a UUID", engine.ErrInvalidRequest)
		}
		where, args = append(where, "r.flow_id = ?"), append(args, f.FlowID)
	}
	if f.Status != "" {
		where, args = append(where, "r.status = ?"), append(args, f.Status)
	}
	where, args = matchFailure(where, args, "r", f.Node, f.ErrorContains)
	if f.StartedAfter != nil {
		where, args = append(where, "r.created_at >= ?"), append(args, *f.StartedAfter)
	}
	if f.StartedBefore != nil {
		where, args = append(where, "r.created_at < ?"), append(args, *f.StartedBefore)
	}
	if after != "" {
		where, args = append(where, "r.id > ?"), append(args, after)
	}
	args = append(args, limit)
	var ids []string
	err := s.db.WithContext(ctx).Raw(`SELECT r.id::text FROM runs r WHERE `+strings.Join(where, " AND ")+
		` ORDER BY r.id LIMIT ?`, args...).Scan(&ids).Error
	if err != nil {
		return nil, fmt.Errorf("error finding runs: %w", interpretError(err))
	}
	return ids, nil
}

// FailedKeys lists the keys of a run's failed nodes whose failure no
// failure edge handled: what a retry of the run retries.
func (s *Store) FailedKeys(ctx context.Context, runID string) ([]string, error) {
	var keys []string
	err := s.db.WithContext(ctx).Raw(`SELECT key FROM node_states WHERE run_id = ? AND status = 'failed' AND taken IS NULL
		AND strpos(key, '@') = 0 ORDER BY key`, runID).Scan(&keys).Error
	if err != nil {
		return nil, fmt.Errorf("error listing the failed nodes of run %s: %w", runID, interpretError(err))
	}
	return keys, nil
}

// matchFailure adds the conditions of a filter by failure to a query over
// runs (alias): a node (key or id) that failed and no failure edge took
// on, a text the run's error contains.
func matchFailure(where []string, args []any, alias, node, errorContains string) ([]string, []any) {
	if node != "" {
		where = append(where, `EXISTS (SELECT 1 FROM node_states n WHERE n.run_id = `+alias+`.id AND n.status = 'failed'
			AND n.taken IS NULL AND (n.key = ? OR n.node_id = ?))`)
		args = append(args, node, node)
	}
	if errorContains != "" {
		where, args = append(where, "strpos("+alias+".error, ?) > 0"), append(args, errorContains)
	}
	return where, args
}
