package callbacks

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/stitchd/stitchd/engine"
)

func row(ws, id string) queued { return queued{c: engine.ClaimedDispatch{ID: id, Workspace: ws}} }

// TestLanesTakeWorkspacesInTurns: rows of two workspaces queued for one
// host are served one workspace after the other, each in its own order,
// whatever order they came in; a lane emptied leaves the turns.
func TestLanesTakeWorkspacesInTurns(t *testing.T) {
	var l lanes
	for i := range 5 {
		l.push(row("busy", "b"+string(rune('0'+i))))
	}
	l.push(row("quiet", "q0"))
	l.push(row("quiet", "q1"))
	require.Equal(t, 7, l.len())
	var got []string
	for l.len() > 0 {
		got = append(got, l.pop().c.ID)
	}
	require.Equal(t, []string{"b0", "q0", "b1", "q1", "b2", "b3", "b4"}, got)
	// One workspace: first in, first out.
	l.push(row("", "x"))
	l.push(row("", "y"))
	require.Equal(t, "x", l.pop().c.ID)
	require.Equal(t, "y", l.pop().c.ID)
	require.Zero(t, l.len())
}

// TestLanesKeep: dropping rows keeps the rest in order and their turns.
func TestLanesKeep(t *testing.T) {
	var l lanes
	for _, r := range []queued{row("a", "a0"), row("b", "b0"), row("a", "a1"), row("c", "c0"), row("b", "b1")} {
		l.push(r)
	}
	require.Equal(t, "a0", l.pop().c.ID) // b's turn next
	l.keep(func(q *queued) bool { return q.c.ID != "b0" && q.c.ID != "b1" && q.c.ID != "c9" })
	require.Equal(t, 2, l.len())
	var got []string
	for l.len() > 0 {
		got = append(got, l.pop().c.ID)
	}
	require.ElementsMatch(t, []string{"a1", "c0"}, got)
	n := 0
	l.push(row("a", "z"))
	l.each(func(q *queued) { n++; q.c.Key = "seen" })
	require.Equal(t, 1, n)
	require.Equal(t, "seen", l.pop().c.Key)
}
