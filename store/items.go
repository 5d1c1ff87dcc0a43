package store

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/stitchd/stitchd/engine"
)

func prefixArg(prefix []int) []int64 {
	p := make([]int64, len(prefix))
	for i, v := range prefix {
		p[i] = int64(v)
	}
	return p
}

func (t *pgTx) ItemTally(ctx context.Context, runID string, nodeIDs []string, prefix []int) (int, int, error) {
	var items, failed int
	d := len(prefix) + 1
	err := t.raw(ctx, `SELECT count(DISTINCT idx[?]),
			count(DISTINCT idx[?]) FILTER (WHERE status = 'failed' AND taken IS NULL)
		FROM node_states
		WHERE run_id = ? AND node_id = ANY(?::text[]) AND cardinality(idx) = ? AND idx[1:?] = ?::int[]
			AND strpos(key, '@') = 0`, d, d, runID, nodeIDs, d, len(prefix), prefixArg(prefix)).Row().Scan(&items, &failed)
	if err != nil {
		return 0, 0, fmt.Errorf("error counting items of run %s: %w", runID, interpretError(err))
	}
	return items, failed, nil
}

func (t *pgTx) ItemFailures(ctx context.Context, runID string, nodeIDs []string, prefix []int) ([]engine.ItemFailure, error) {
	d := len(prefix) + 1
	// DISTINCT ON needs the ORDER BY's expression itself: the index's
	// position is written into the statement (an integer).
	item := "idx[" + strconv.Itoa(d) + "]"
	rows, err := t.raw(ctx, `SELECT DISTINCT ON (`+item+`) `+item+`, key, coalesce(error, '')
		FROM node_states
		WHERE run_id = ? AND node_id = ANY(?::text[]) AND cardinality(idx) = ? AND idx[1:?] = ?::int[]
			AND strpos(key, '@') = 0 AND status = 'failed' AND taken IS NULL
		ORDER BY `+item+`, finished_at, key`, runID, nodeIDs, d, len(prefix), prefixArg(prefix)).Rows()
	if err != nil {
		return nil, fmt.Errorf("error listing failed items of run %s: %w", runID, interpretError(err))
	}
	defer rows.Close()
	out := []engine.ItemFailure{}
	for rows.Next() {
		var f engine.ItemFailure
		if err := rows.Scan(&f.Index, &f.Key, &f.Error); err != nil {
			return nil, interpretError(err)
		}
		out = append(out, f)
	}
	return out, interpretError(rows.Err())
}

func (t *pgTx) ItemAt(ctx context.Context, runID, key string, i int) (json.RawMessage, error) {
	var out []byte
	err := t.raw(ctx, `SELECT coalesce(output -> ?::int, 'null'::jsonb)::text FROM node_states WHERE run_id = ? AND key = ?`,
		i, runID, key).Row().Scan(&out)
	if err != nil {
		return nil, fmt.Errorf("error loading item %d of %s: %w", i, key, interpretError(err))
	}
	return out, nil
}
