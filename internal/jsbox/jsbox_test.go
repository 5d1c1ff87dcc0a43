package jsbox_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stitchd/stitchd/internal/testkit"

	"github.com/stitchd/stitchd/internal/jsbox"
)

func run(t *testing.T, src, env string, lim jsbox.Limits) (*jsbox.Result, error) {
	t.Helper()
	return jsbox.Run(context.Background(), src, json.RawMessage(env), lim)
}

// TestRunGivesTheValue: a script sees its names and gives back JSON; what
// it logs is kept.
func TestRunGivesTheValue(t *testing.T) {
	t.Parallel()
	res, err := run(t, `
		console.log("items:", input.items.length, {first: input.items[0]});
		const total = input.items.reduce((sum, it) => sum + it.price * it.qty, 0);
		return {total, who: run.input.name, prev: steps.fetch.output.n, limit: vars.limit, item: item, entity: entity};`,
		`{"input": {"items": [{"price": 2, "qty": 3}, {"price": 5, "qty": 1}]}, "run": {"id": "r", "input": {"name": "ada"}},
		  "steps": {"fetch": {"output": {"n": 7}}}, "vars": {"limit": 10}, "item": null, "entity": null}`, jsbox.Limits{})
	require.NoError(t, err)
	require.JSONEq(t, `{"total": 11, "who": "ada", "prev": 7, "limit": 10, "item": null, "entity": null}`, string(res.Output))
	require.Equal(t, []string{`items: 2 {"first":{"price":2,"qty":3}}`}, res.Logs)

	res, err = run(t, `input.x = 1;`, `{"input": {}}`, jsbox.Limits{})
	require.NoError(t, err)
	require.JSONEq(t, `null`, string(res.Output), "no return: null")
}

// TestRunHasNoIO: no require, fetch, timers, std/os modules or eval of
// modules; globalThis holds nothing of the host.
func TestRunHasNoIO(t *testing.T) {
	t.Parallel()
	res, err := run(t, `return [typeof require, typeof fetch, typeof setTimeout, typeof setInterval, typeof std, typeof os,
		typeof XMLHttpRequest, typeof __log, typeof print, typeof globalThis.__log, typeof scriptArgs, typeof __e, typeof __c]`, `{}`, jsbox.Limits{})
	require.NoError(t, err)
	require.JSONEq(t, `["undefined","undefined","undefined","undefined","undefined","undefined","undefined","undefined","undefined","undefined","undefined","undefined","undefined"]`,
		string(res.Output))
	_, err = run(t, `return import("std")`, `{}`, jsbox.Limits{})
	require.NoError(t, err, "a dynamic import only gives a promise; nothing runs it")
}

// TestRunStopsAtItsTime: an endless loop is stopped at its timeout, and
// the caller gets a *LimitError.
func TestRunStopsAtItsTime(t *testing.T) {
	t.Parallel()
	began := time.Now()
	_, err := run(t, `while (true) {}`, `{}`, jsbox.Limits{Timeout: 200 * time.Millisecond})
	var le *jsbox.LimitError
	require.ErrorAs(t, err, &le)
	require.Equal(t, "time", le.Limit)
	require.Contains(t, err.Error(), "code_limit: the script ran longer than its 200ms")
	// Run to the end, the loop never ends: any bound tells them apart, and
	// one far above the limit stays clear of a loaded machine.
	require.Less(t, time.Since(began), 30*time.Second, "stopped, not run to the end")

	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(100*time.Millisecond, cancel)
	_, err = jsbox.Run(ctx, `for (;;) {}`, nil, jsbox.Limits{Timeout: time.Minute})
	require.ErrorIs(t, err, context.Canceled, "a cancelled context stops it too")
}

// TestRunStopsAtItsMemory: allocations past the limit fail the script —
// a 1 GB buffer, an array grown without end, a string doubled — while
// the process's memory stays far below them.
func TestRunStopsAtItsMemory(t *testing.T) {
	// Not parallel: the process's memory is measured, and the package's
	// other tests would grow it too.
	before := testkit.RSSMiB(t)
	for _, src := range []string{
		`const b = new ArrayBuffer(1 << 30); return b.byteLength`,
		`const a = []; for (;;) a.push("x".repeat(1 << 20) + a.length)`,
		`let s = "x"; for (;;) s = s + s`,
	} {
		// 8 MiB: the race detector makes every byte the interpreter writes
		// cost (32 MiB of pushes took 5 s with it, 60 ms without).
		_, err := run(t, src, `{}`, jsbox.Limits{MemoryBytes: 8 << 20, Timeout: 20 * time.Second})
		var le *jsbox.LimitError
		var se *jsbox.ScriptError
		switch {
		case errors.As(err, &le):
			require.Equal(t, "memory", le.Limit, src)
		case errors.As(err, &se):
			// QuickJS refuses some sizes itself before asking (a string
			// past its maximum length): a failure all the same.
			require.Regexp(t, `invalid (string|array) length|too long`, se.Message, src)
		default:
			t.Fatalf("%s: %v", src, err)
		}
	}
	// Far less than the gigabyte asked for; the race detector's shadow
	// memory of what the interpreter did allocate is most of the growth
	// (alone: 4 MiB, 8 with the race detector; 423 MiB was seen when the
	// package's other tests ran beside it).
	grew := testkit.RSSMiB(t) - before
	t.Logf("the process grew by %d MiB", grew)
	require.Less(t, grew, 512, "the process did not take the gigabyte")
}

// TestScriptErrors: a syntax error names its line and column in the
// source (Check and Run alike); an exception its line.
func TestScriptErrors(t *testing.T) {
	t.Parallel()
	err := jsbox.Check("const a = 1;\nconst b = ;\nreturn a")
	var se *jsbox.ScriptError
	require.ErrorAs(t, err, &se)
	require.Equal(t, 2, se.Line)
	require.Positive(t, se.Column)
	require.Contains(t, err.Error(), "line 2, column")
	require.Contains(t, err.Error(), "SyntaxError")
	require.NoError(t, jsbox.Check("return input.items.map((x) => x * 2)"))

	_, err = run(t, "const a = 1;\n\nreturn null.x", `{}`, jsbox.Limits{})
	require.ErrorAs(t, err, &se)
	require.Equal(t, 3, se.Line)
	require.Contains(t, se.Message, "TypeError")

	_, err = run(t, `throw new Error("nope")`, `{}`, jsbox.Limits{})
	require.ErrorAs(t, err, &se)
	require.Contains(t, se.Message, "nope")

	// A thrown value that is no Error fails the script too, saying what
	// was thrown (it had no message, and an empty one read as success).
	for src, want := range map[string]string{`throw "nope"`: "uncaught nope", `throw 5`: "uncaught 5", `throw {a: 1}`: "uncaught"} {
		_, err = run(t, src, `{}`, jsbox.Limits{})
		require.ErrorAs(t, err, &se, src)
		require.Contains(t, se.Message, want, src)
		require.NotEmpty(t, err.Error(), src)
	}

	// A value JSON cannot hold fails at the script's end, not at a line
	// after its last; a toJSON that throws names its own line.
	for src, want := range map[string]string{"return 10n": "BigInt", "const a = {b: 1n}\nreturn a": "BigInt",
		"const a = {}; a.a = a; return a": "circular"} {
		_, err = run(t, src, `{}`, jsbox.Limits{})
		require.ErrorAs(t, err, &se, src)
		require.Zero(t, se.Line, src)
		require.Contains(t, se.Message, "the script's value cannot be made JSON: TypeError", src)
		require.Contains(t, se.Message, want, src)
		require.NotContains(t, err.Error(), "line", src)
	}
	_, err = run(t, "return {toJSON() { throw new Error('x') }}", `{}`, jsbox.Limits{})
	require.ErrorAs(t, err, &se)
	require.Equal(t, 1, se.Line)

	_, err = run(t, `function f() { return f() } return f()`, `{}`, jsbox.Limits{})
	require.Error(t, err, "unbounded recursion is a failure, not a crash")
}

// TestLogsBounded: console.log keeps at most MaxLogLines lines of at most
// MaxLogLine bytes.
func TestLogsBounded(t *testing.T) {
	t.Parallel()
	// A generous timeout: the race detector slows the interpreter tenfold.
	res, err := run(t, `for (let i = 0; i < 300; i++) console.log("x".repeat(5000)); return 1`, `{}`, jsbox.Limits{Timeout: 30 * time.Second})
	require.NoError(t, err)
	require.Len(t, res.Logs, jsbox.MaxLogLines+1)
	require.LessOrEqual(t, len(res.Logs[0]), jsbox.MaxLogLine+len("…"))
	require.Equal(t, "… more lines not kept", res.Logs[jsbox.MaxLogLines])
}

// BenchmarkRun: a VM made, a small script run (a reduce over 100 items),
// the VM closed — a Code step's run less its database work.
func BenchmarkRun(b *testing.B) {
	items := make([]int, 100)
	env, err := json.Marshal(map[string]any{"input": map[string]any{"items": items}})
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if _, err := jsbox.Run(context.Background(), `return input.items.reduce((s, x) => s + x + 1, 0)`, env, jsbox.Limits{}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRunToMemoryLimit: a script that allocates until a 32 MiB
// bound stops it.
func BenchmarkRunToMemoryLimit(b *testing.B) {
	for b.Loop() {
		_, err := jsbox.Run(context.Background(), `const a = []; for (;;) a.push("x".repeat(1 << 20) + a.length)`, nil,
			jsbox.Limits{MemoryBytes: 32 << 20, Timeout: time.Minute})
		var le *jsbox.LimitError
		if !errors.As(err, &le) {
			b.Fatal(err)
		}
	}
}
