package engine

import (
	"errors"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// steppingClock moves a millisecond each time it is read: an evaluation
// that looks at it often enough runs out of a time limit without any real
// time passing.
type steppingClock struct{ ms atomic.Int64 }

func (c *steppingClock) Now() time.Time {
	return time.Unix(0, 0).Add(time.Duration(c.ms.Add(1)) * time.Millisecond)
}

// TestExprLimitsStopHostileExpressions: each expression would build
// gigabytes or run for minutes; each stops with the limit it passed, and
// the process's heap stays far below what the expression asked for.
//
// Not parallel: each case is measured by what the process allocated.
func TestExprLimitsStopHostileExpressions(t *testing.T) {
	limits := ExprLimits{MemoryBytes: 16 << 20, Time: time.Hour}
	cases := []struct{ name, src string }{
		{"repeat of a repeat", `len(repeat(repeat("a", 999999), 999999))`},
		{"doubling by +", `reduce(1..64, #acc + #acc, "a")`},
		{"doubling by let", `let a = repeat("a", 1000); let b = a+a+a+a+a+a+a+a; let c = b+b+b+b+b+b+b+b; let d = c+c+c+c+c+c+c+c; let e = d+d+d+d+d+d+d+d; len(e+e+e+e)`},
		{"join of 200,000 references", `let k = repeat("a", 100000); len(join(map(1..200000, k), ","))`},
		{"toJSON of 200,000 references", `let k = repeat("a", 100000); len(toJSON(map(1..200000, k)))`},
		{"string of 200,000 references", `let k = repeat("a", 100000); len(string(map(1..200000, k)))`},
		{"replace growing quadratically", `let k = repeat("ab", 50000); len(replace(k, "a", k))`},
		{"upper kept in a loop", `let k = repeat("ab", 500000); len(map(1..900000, upper(k)))`},
		{"split into a million parts", `let k = repeat("ab", 1000000); len(split(k, ""))`},
		{"a value of 200,000 references", `let k = repeat("a", 100000); map(1..200000, k)`},
		{"nested ranges", `count(1..999999, count(1..999999, true) > 0)`},
		{"flatten of 60 million references", `let x = 1..3000; len(flatten(map(1..20000, x)))`},
		{"concat growing to 9 million", `let x = 1..3000; len(reduce(1..3000, concat(#acc, x), []))`},
		{"repeat counted by a float", `let k = repeat("a", 1000); len(repeat(k, input.n))`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			v, err := compileValue(c.src, newExprRun(limits, nil))
			require.NoError(t, err)
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			out, err := v.Eval(ValueEnv{Input: map[string]any{"n": 900000.0}})
			runtime.ReadMemStats(&after)
			require.ErrorIs(t, err, ErrExprLimit, "gave %.40v", out)
			require.Contains(t, err.Error(), "expression_limit: the expression built more than 16 MiB")
			require.Contains(t, err.Error(), "--expr-memory")
			// Stopped near the limit, not after building what it asked for
			// (a gigabyte to terabytes): all it allocated, garbage included
			// (a range of 900,000 ints, each item's call; more under the
			// race detector), under a gigabyte.
			require.Less(t, after.TotalAlloc-before.TotalAlloc, uint64(1<<30), "allocated")
		})
	}
}

// TestExprLimitsTime: loops that build nothing stop at the time limit,
// read from the engine's clock.
func TestExprLimitsTime(t *testing.T) {
	t.Parallel()
	for _, src := range []string{
		`count(1..999999, all(input.xs, # > 0))`,
		`let k = repeat("a", 100000); count(1..999999, k contains "b")`,
		`reduce(1..999999, #acc + len(filter(input.xs, # > 1)), 0)`,
	} {
		v, err := compileValue(src, newExprRun(ExprLimits{Time: 500 * time.Millisecond}, &steppingClock{}))
		require.NoError(t, err)
		_, err = v.Eval(ValueEnv{Input: map[string]any{"xs": []any{1, 2, 3}}})
		require.ErrorIs(t, err, ErrExprLimit, src)
		require.Contains(t, err.Error(), "expression_limit: the expression ran longer than 500ms (the time limit, --expr-timeout)")
	}
	c, err := compileCondition(`all(1..999999, {all(input.xs, # > 0)})`, newExprRun(ExprLimits{Time: time.Second}, &steppingClock{}))
	require.NoError(t, err)
	_, err = c.Eval(ConditionEnv{Input: map[string]any{"xs": []any{1}}})
	require.ErrorIs(t, err, ErrExprLimit)
}

// TestExprLimitsMatch: a match whose text times pattern is more than
// maxMatchWork steps is refused before it runs (Go's regexp cannot be
// stopped); ordinary matches, constant or not, work.
func TestExprLimitsMatch(t *testing.T) {
	t.Parallel()
	v, err := CompileValue(`let t = repeat("a", 200000); t matches "(a|b){500}c"`)
	require.NoError(t, err)
	_, err = v.Eval(ValueEnv{})
	require.ErrorIs(t, err, ErrExprLimit)
	require.Contains(t, err.Error(), "expression_limit: matching 200000 characters against a pattern of")
	c, err := CompileCondition(`input.email matches "^[a-z]+@example\\.com$" && !(input.name matches input.pattern)`)
	require.NoError(t, err)
	ok, err := c.Eval(ConditionEnv{Input: map[string]any{"email": "ada@example.com", "name": "Ada", "pattern": "^b"}})
	require.NoError(t, err)
	require.True(t, ok)
	_, err = CompileValue(`input.x matches "("`)
	require.Error(t, err, "a bad constant pattern is refused when compiled")
}

// TestExprLimitsKeepOrdinaryExpressions: what people write still works,
// with the same values, and simple conditions need no budget at all.
func TestExprLimitsKeepOrdinaryExpressions(t *testing.T) {
	t.Parallel()
	in := map[string]any{"xs": []any{3, 1, 2}, "a": 2, "name": "ada", "tags": []any{"x", "y"}}
	cases := []struct {
		src  string
		want any
	}{
		{`input.a + 1`, 3},
		{`1 + 2`, 3},
		{`input.name + "!"`, "ada!"},
		{`upper(input.name) + "-" + lower("B")`, "ADA-b"},
		{`map(input.xs, # * 2)`, []any{6, 2, 4}},
		{`sortBy(input.xs, #)`, []any{1, 2, 3}},
		{`filter(input.xs, # > 1)`, []any{3, 2}},
		{`join(input.tags, ",")`, "x,y"},
		{`len(repeat("ab", 3))`, 6},
		{`replace("a-b-c", "-", "+")`, "a+b+c"},
		{`split("a,b", ",")`, []string{"a", "b"}},
		{`flatten([[1, 2], [3]])`, []any{1, 2, 3}},
		{`concat([1], [2, 3])`, []any{1, 2, 3}},
		{`repeat("ab", input.a * 1.0)`, "abab"},
		{`toJSON({"n": 1})`, "{\n  \"n\": 1\n}"},
		{`reduce(input.xs, #acc + #, 0)`, 6},
		{`{"total": sum(input.xs), "first": first(input.xs)}`, map[string]any{"total": 6, "first": 3}},
		{`string(input.a) + "x"`, "2x"},
		{`(date("2024-01-01T00:00:00Z") + duration("1h")).Hour()`, 1},
	}
	for _, c := range cases {
		v, err := CompileValue(c.src)
		require.NoError(t, err, c.src)
		out, err := v.Eval(ValueEnv{Input: in})
		require.NoError(t, err, c.src)
		require.Equal(t, c.want, out, c.src)
	}
	for _, src := range []string{`output.amount > 1000`, `input.kind == "a" && output.ok`} {
		c, err := CompileCondition(src)
		require.NoError(t, err)
		require.False(t, c.budget, "%s needs no budget", src)
	}
	_, err := CompileCondition(`output.x + 1`)
	require.ErrorContains(t, err, `expected bool, but got the result of "+"`)
	_, err = CompileCondition(`len(filter(output.xs, # > 1)) > 0`)
	require.NoError(t, err)
}

// TestExprLimitsNamesAreReserved: the patch's own names can't be used.
func TestExprLimitsNamesAreReserved(t *testing.T) {
	t.Parallel()
	for _, src := range []string{`__budget`, `__tick(__budget, 1)`, `__add(nil, "a", "b")`, `input.x + __budget`} {
		_, err := CompileValue(src)
		require.Error(t, err, src)
		require.Contains(t, err.Error(), "__")
	}
	var le *ExprLimitError
	require.NotErrorAs(t, errors.New("x"), &le)
}

// TestExprMessageSpeaksExpressions: run-time errors that expr-lang words
// in Go's terms (reflect, the environment's Go type) are said in the
// expression's.
func TestExprMessageSpeaksExpressions(t *testing.T) {
	t.Parallel()
	for src, want := range map[string]string{
		"sum(map(input, #.v))": "this function takes an array, not an object (1:16)",
		"filter(input, # > 1)": "this function takes an array, not an object (1:15)",
		"input.a.b.c":          "cannot fetch c from <nil> (1:11)", // already the expression's words
	} {
		v, err := CompileValue(src)
		require.NoError(t, err, src)
		_, err = v.Eval(ValueEnv{Input: map[string]any{"a": map[string]any{"v": 1}}})
		require.Error(t, err, src)
		require.Equal(t, want, ExprMessage(err), src)
	}
	// A builtin's name alone compiled and failed every evaluation: it is
	// refused when the expression is saved.
	_, err := CompileValue("len")
	require.ErrorContains(t, err, "len is a function: call it, as len(…)")
	_, err = CompileValue("len(input) > 0 && upper('a') == 'A'")
	require.NoError(t, err)
}
