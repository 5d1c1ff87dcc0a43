package engine_test

import (
	"fmt"
	"sort"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stitchd/stitchd/engine"
)

// TestClaimsHandedOverOnce: the outbox rows a transaction writes claimed
// reach the dispatcher once each, also when runs nest in it — a child run
// started by its parent's SubFlow node (inline and in a fan-out's bulk
// start), and a parent walked on by its child's end — though a nested
// transaction shares its parent's writer.
func TestClaimsHandedOverOnce(t *testing.T) {
	t.Parallel()
	claimed := func(t *testing.T) (*rig, *engine.Claims) {
		claims := engine.NewClaims()
		claims.SetRoom(1000)
		r := newRig(t, func(c *engine.Config) {
			c.Claims = claims
			c.ClaimLease = time.Minute
		})
		return r, claims
	}
	// taken empties the handoff and returns its rows as run:key#attempt,
	// sorted: a row handed over twice shows twice.
	taken := func(claims *engine.Claims) []string {
		var out []string
		for _, d := range claims.Take() {
			out = append(out, d.RunID+":"+d.Key+"#"+strconv.Itoa(d.Attempt))
		}
		sort.Strings(out)
		return out
	}
	const parentGraph = `{"nodes":[
		{"id":"pw","type":"Worker","data":{"webhookUrl":"http://worker.invalid/p"}},
		{"id":"sub","type":"SubFlow","data":{"flow":"%s"}},
		{"id":"after","type":"Worker","data":{"webhookUrl":"http://worker.invalid/after"}}],
		"edges":[{"id":"e1","source":"sub","target":"after"}]}`

	t.Run("a child started by its parent's node, and the parent walked on by the child's end", func(t *testing.T) {
		t.Parallel()
		r, claims := claimed(t)
		childID, _ := r.flow("", workerChild)
		flowID, versionID := r.linkedFlow(fmt.Sprintf(parentGraph, childID))
		run := r.startIn(flowID, versionID, `{}`)
		child := r.childRun(run.ID, "sub")
		want := []string{child.ID + ":w#1", run.ID + ":pw#1"}
		sort.Strings(want)
		require.Equal(t, want, taken(claims),
			"the parent's worker and the child's, each once")

		require.NoError(t, r.callback(child.ID, "w", 1, engine.StatusCompleted, `{"ok":1}`))
		r.wantStatuses(run.ID, engine.RunRunning, map[string]engine.Status{"sub": engine.StatusCompleted, "after": engine.StatusRunning})
		require.Equal(t, []string{run.ID + ":after#1"}, taken(claims), "the parent's next worker, once")
	})

	t.Run("children started together in a fan-out", func(t *testing.T) {
		t.Parallel()
		r, claims := claimed(t)
		childID, _ := r.flow("", workerChild)
		run := r.subflowFanOut(childID, `{"xs":[1,2,3]}`)
		var want []string
		for i := range 3 {
			want = append(want, r.childRun(run.ID, "sub_"+strconv.Itoa(i)).ID+":w#1")
		}
		sort.Strings(want)
		require.Equal(t, want, taken(claims), "each child's worker, once")
	})
}
