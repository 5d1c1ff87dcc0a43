package store_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/lib/pq"
	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/stitchd/stitchd/store"
	"github.com/stitchd/stitchd/store/storetest"
)

// retentionRun inserts a run of flow f: finished ago (running when
// finished is false), with parent as its parent run ("" for none), and
// one row in each table retention deletes a run's rows from. It returns
// the run's id.
func retentionRun(t *testing.T, st *store.Store, f *store.Flow, entity string, ago time.Duration, finished bool, parent string) string {
	t.Helper()
	id := uuid.NewString()
	status, finishedAt := "running", "NULL"
	if finished {
		status, finishedAt = "completed", fmt.Sprintf("now() - make_interval(secs => %f)", ago.Seconds())
	}
	var parentID any
	if parent != "" {
		parentID = parent
	}
	db := st.Gorm()
	for _, q := range []struct {
		sql  string
		args []any
	}{
		{`INSERT INTO runs (id, flow_id, flow_version_id, entity_id, status, created_at, finished_at, parent_run_id)
			VALUES (?, ?, ?, ?, ?, now() - make_interval(secs => ?), ` + finishedAt + `, ?)`,
			[]any{id, f.ID, f.VersionID, entity, status, ago.Seconds() + 60, parentID}},
		{`INSERT INTO node_states (run_id, key, node_id, type, status) VALUES (?, 'fetch', 'fetch', 'Worker', 'completed')`, []any{id}},
		{`INSERT INTO dispatches (id, run_id, key, attempt, url, payload, status) VALUES (?, ?, 'fetch', 1, 'http://w', '{}', 'delivered')`,
			[]any{uuid.NewString(), id}},
		{`INSERT INTO run_events (run_id, seq, type) VALUES (?, 1, 'run.started'), (?, 2, 'run.completed')`, []any{id, id}},
		{`INSERT INTO journey_events (id, entity_id, kind, to_section_id, run_id) VALUES (?, ?, 'moved', 'done', ?)`,
			[]any{uuid.NewString(), entity, id}},
		{`INSERT INTO notifications (id, type, run_id, payload) VALUES (?, 'run.failed', ?, '{}')`, []any{uuid.NewString(), id}},
		{`INSERT INTO events (id, name, key, payload, expires_at) VALUES (?, 'paid', ?, '{}', now() + interval '1 day')`, []any{"ev-" + id, id}},
		{`INSERT INTO event_deliveries (event_id, run_id, key, attempt) VALUES (?, ?, 'fetch', 1)`, []any{"ev-" + id, id}},
		{`INSERT INTO ux_decisions (run_id, key, attempt, by_email, outcome, at) VALUES (?, 'approve', 1, 'a@b.c', 'approved', now())`,
			[]any{id}},
	} {
		require.NoError(t, db.Exec(q.sql, q.args...).Error, q.sql)
	}
	return id
}

// runRows counts a run's rows in each table retention deletes from.
func runRows(t *testing.T, st *store.Store, id string) map[string]int {
	t.Helper()
	out := map[string]int{}
	for _, table := range []string{"runs", "node_states", "dispatches", "run_events", "journey_events", "notifications",
		"event_deliveries", "ux_decisions"} {
		col := "run_id"
		if table == "runs" {
			col = "id"
		}
		var n int
		require.NoError(t, st.Gorm().Raw(`SELECT count(*) FROM `+table+` WHERE `+col+` = ?`, id).Row().Scan(&n))
		out[table] = n
	}
	return out
}

// TestDeleteExpiredRuns: a batch deletes the finished runs past their
// retention with every row that names them, and keeps the runs not yet
// due, the unfinished, the finished children of unfinished parents, and
// the entities with their current section.
func TestDeleteExpiredRuns(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st, _ := storetest.IsolatedDB(t)
	f := createFlow(t, st)
	board, entity := uuid.NewString(), uuid.NewString()
	require.NoError(t, st.Gorm().Exec(`INSERT INTO boards (id, name) VALUES (?, 'b')`, board).Error)
	require.NoError(t, st.Gorm().Exec(`INSERT INTO entities (id, board_id, type, name, section_id) VALUES (?, ?, 'lead', 'l', 'done')`,
		entity, board).Error)

	const day = 24 * time.Hour
	old := retentionRun(t, st, f, entity, 3*day, true, "")
	young := retentionRun(t, st, f, entity, day/2, true, "")
	open := retentionRun(t, st, f, entity, 90*day, false, "")
	childOfOpen := retentionRun(t, st, f, entity, 3*day, true, open)
	parent := retentionRun(t, st, f, entity, 2*day, true, "")
	childOfFinished := retentionRun(t, st, f, entity, 3*day, true, parent)
	childOfGone := retentionRun(t, st, f, entity, 3*day, true, uuid.NewString())

	// A batch of 2 takes the oldest due (by finish); the next the rest.
	n, err := st.DeleteExpiredRuns(ctx, day, 2)
	require.NoError(t, err)
	require.Equal(t, 2, n)
	n, err = st.DeleteExpiredRuns(ctx, day, 10)
	require.NoError(t, err)
	require.Equal(t, 2, n, "the other two due")
	n, err = st.DeleteExpiredRuns(ctx, day, 10)
	require.NoError(t, err)
	require.Zero(t, n)

	gone := map[string]int{"runs": 0, "node_states": 0, "dispatches": 0, "run_events": 0, "journey_events": 0, "notifications": 0,
		"event_deliveries": 0, "ux_decisions": 0}
	kept := map[string]int{"runs": 1, "node_states": 1, "dispatches": 1, "run_events": 2, "journey_events": 1, "notifications": 1,
		"event_deliveries": 1, "ux_decisions": 1}
	for name, id := range map[string]string{"old": old, "parent": parent, "child of a finished parent": childOfFinished,
		"child of a deleted parent": childOfGone} {
		require.Equal(t, gone, runRows(t, st, id), "%s: deleted with its rows", name)
	}
	for name, id := range map[string]string{"young": young, "open": open, "child of an open parent": childOfOpen} {
		require.Equal(t, kept, runRows(t, st, id), "%s: kept with its rows", name)
	}
	var section string
	require.NoError(t, st.Gorm().Raw(`SELECT section_id FROM entities WHERE id = ?`, entity).Row().Scan(&section))
	require.Equal(t, "done", section, "the entity stays where it is")

	// Without a retention, neither the server's nor a flow's: nothing.
	old2 := retentionRun(t, st, f, entity, 400*day, true, "")
	n, err = st.DeleteExpiredRuns(ctx, 0, 10)
	require.NoError(t, err)
	require.Zero(t, n)
	require.Equal(t, kept, runRows(t, st, old2))
}

// TestDeleteExpiredRunsReadsNoWholeTable: with many finished runs and
// statistics that say so, a batch — its statement and the delete
// trigger's — reaches runs and the event deliveries by index: no
// sequential scan of either (the parent check, a NOT EXISTS, read the
// whole of runs at every batch: 1.5 s a batch on a million runs; the
// trigger read the whole of event_deliveries).
func TestDeleteExpiredRunsReadsNoWholeTable(t *testing.T) {
	t.Parallel()
	st, _ := storetest.IsolatedDB(t)
	f := createFlow(t, st)
	db := st.Gorm()
	require.NoError(t, db.Exec(`INSERT INTO runs (id, flow_id, flow_version_id, status, created_at, finished_at, parent_run_id)
		SELECT gen_random_uuid(), ?, ?, 'completed', now() - interval '30 days', now() - interval '30 days' + i * interval '1 s',
			CASE WHEN i % 10 = 0 THEN gen_random_uuid() END
		FROM generate_series(1, 50000) i`, f.ID, f.VersionID).Error)
	require.NoError(t, db.Exec(`INSERT INTO runs (id, flow_id, flow_version_id, status)
		SELECT gen_random_uuid(), ?, ?, 'running' FROM generate_series(1, 20)`, f.ID, f.VersionID).Error)
	require.NoError(t, db.Exec(`INSERT INTO events (id, name, key, payload, expires_at)
		VALUES ('ev', 'paid', 'k', '{}', now() + interval '1 day')`).Error)
	require.NoError(t, db.Exec(`INSERT INTO event_deliveries (event_id, run_id, key, attempt)
		SELECT 'ev', id, k, 1 FROM runs, unnest(ARRAY['a', 'b', 'c', 'd']) k`).Error)
	require.NoError(t, db.Exec(`ANALYZE runs, event_deliveries`).Error)

	// seqScans counts the sequential scans of runs and event_deliveries
	// this session has not yet reported (this transaction's, and maybe
	// earlier ones'): a difference is what happened in between.
	seqScans := func(tx *gorm.DB) map[string]int {
		t.Helper()
		rows, err := tx.Raw(`SELECT relname, seq_scan FROM pg_stat_xact_user_tables WHERE relname IN ('runs', 'event_deliveries')
			ORDER BY relname`).Rows()
		require.NoError(t, err)
		defer rows.Close()
		scans := map[string]int{}
		for rows.Next() {
			var table string
			var n int
			require.NoError(t, rows.Scan(&table, &n))
			scans[table] = n
		}
		require.NoError(t, rows.Err())
		return scans
	}
	keep := (7 * 24 * time.Hour).Seconds()

	tx := db.Begin()
	defer tx.Rollback()
	before := seqScans(tx)
	res := tx.Exec(store.DeleteExpiredRunsSQL, keep, 500, 500)
	require.NoError(t, res.Error)
	require.EqualValues(t, 500, res.RowsAffected)
	require.Equal(t, before, seqScans(tx), "no whole table read by the batch")
	var left int
	require.NoError(t, tx.Raw(`SELECT count(*) FROM event_deliveries`).Row().Scan(&left))
	require.Equal(t, 4*(50000+20-500), left, "the deleted runs' deliveries go with them")
	tx.Rollback()

	// The archive's read and delete.
	tx = db.Begin()
	defer tx.Rollback()
	var body string
	var ids, xmins pq.StringArray
	before = seqScans(tx)
	require.NoError(t, tx.Raw(store.ArchiveExpiredRunsSQL, keep, 50, 50).Row().Scan(&body, &ids, &xmins))
	require.Len(t, ids, 50)
	res = tx.Exec(store.DeleteArchivedRunsSQL, ids, ids, xmins, keep)
	require.NoError(t, res.Error)
	require.EqualValues(t, 50, res.RowsAffected)
	require.Equal(t, before, seqScans(tx), "no whole table read by the archive's batch")
}
