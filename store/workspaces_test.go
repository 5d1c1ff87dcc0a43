package store_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/stitchd/stitchd/store"
	"github.com/stitchd/stitchd/store/storetest"
)

// TestClaimDueIsFairBetweenWorkspaces: 10,000 deliveries waiting in one
// workspace, all older than another workspace's one, do not hold it back:
// the first claim takes it; the busy workspace's rows go on in their
// order; with one workspace the claim takes the oldest rows, as before.
func TestClaimDueIsFairBetweenWorkspaces(t *testing.T) {
	t.Parallel()
	st, _ := storetest.IsolatedDB(t)
	ctx := context.Background()
	for _, ws := range []string{"busy", "quiet"} {
		_, err := st.CreateWorkspace(ctx, store.Workspace{Slug: ws, Name: ws, CreatedAt: time.Now(), UpdatedAt: time.Now()})
		require.NoError(t, err)
	}
	db := st.Gorm()
	// A run of each workspace; the busy one's node k<i> has a due delivery
	// i milliseconds old (10,000 of them), the quiet one's is the newest.
	runIn := func(ws string) string {
		f, err := st.CreateFlow(ctx, ws, uuid.NewString(), "f", nil, compileVersion(t, graphA, ""))
		require.NoError(t, err)
		id := uuid.NewString()
		require.NoError(t, db.Exec(`INSERT INTO runs (id, flow_id, flow_version_id, status, workspace) VALUES (?, ?, ?, 'running', ?)`,
			id, f.ID, f.VersionID, ws).Error)
		return id
	}
	busy, quiet := runIn("busy"), runIn("quiet")
	require.NoError(t, db.Exec(`INSERT INTO node_states (run_id, key, node_id, type, status, attempt)
		SELECT ?, 'k' || i, 'fetch', 'Worker', 'running', 1 FROM generate_series(1, 10000) i`, busy).Error)
	require.NoError(t, db.Exec(`INSERT INTO dispatches (id, run_id, key, attempt, url, payload, status, next_attempt_at, workspace)
		SELECT gen_random_uuid(), ?, 'k' || i, 1, 'http://w', '{}', 'pending', now() - make_interval(secs => 20 - i / 1000.0), 'busy'
		FROM generate_series(1, 10000) i`, busy).Error)
	require.NoError(t, db.Exec(`INSERT INTO node_states (run_id, key, node_id, type, status, attempt) VALUES (?, 'q', 'fetch', 'Worker', 'running', 1)`,
		quiet).Error)
	require.NoError(t, db.Exec(`INSERT INTO dispatches (id, run_id, key, attempt, url, payload, status, next_attempt_at, workspace)
		VALUES (gen_random_uuid(), ?, 'q', 1, 'http://w', '{}', 'pending', now() - interval '1 second', 'quiet')`, quiet).Error)

	got, err := st.ClaimDue(ctx, 50, time.Minute)
	require.NoError(t, err)
	require.Len(t, got, 50)
	keys := map[string]bool{}
	for _, d := range got {
		keys[d.RunID+"/"+d.Key] = true
	}
	require.True(t, keys[quiet+"/q"], "the quiet workspace's delivery is in the first claim")
	// The busy workspace's oldest 49 came with it, in order.
	for i := 1; i <= 49; i++ {
		require.True(t, keys[busy+"/k"+strconv.Itoa(i)], "busy k%d", i)
	}
	// Then only the busy workspace has rows: the next claim is its next 50.
	got, err = st.ClaimDue(ctx, 50, time.Minute)
	require.NoError(t, err)
	require.Len(t, got, 50)
	for _, d := range got {
		require.Equal(t, busy, d.RunID)
	}
}
