package commit

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestTakeTogether: a full group of members that may complete together
// takes the waiting ones after it that may too, up to maxTogether, and
// stops at the first that may not; a group with one that may not stays as
// it is.
func TestTakeTogether(t *testing.T) {
	t.Parallel()
	members := func(n int, version string) []*Member[int] {
		ms := make([]*Member[int], n)
		for i := range ms {
			ms[i] = &Member[int]{Version: version}
		}
		return ms
	}
	ms, pending := members(maxGroup, "v"), append(members(40, "v"), members(3, "")...)
	got := takeTogether(ms, &pending)
	require.Len(t, got, maxGroup+40)
	require.Len(t, pending, 3, "the first that may not, and those after it, wait")

	ms, pending = members(maxGroup, "v"), members(1000, "v")
	got = takeTogether(ms, &pending)
	require.Len(t, got, maxTogether)
	require.Len(t, pending, 1000-(maxTogether-maxGroup))

	ms, pending = append(members(maxGroup-1, "v"), members(1, "")...), members(10, "v")
	got = takeTogether(ms, &pending)
	require.Len(t, got, maxGroup, "a group that cannot complete together does not grow")
	require.Len(t, pending, 10)
}
