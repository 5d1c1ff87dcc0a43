package engine

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestCompileCondition(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		src, err                    string
		usesRun, usesEnt, usesInput bool
	}{
		{src: "output.score > 50"},
		{src: "output.ok"},
		{src: `input.kind in ["a", "b"] and not output.done`, usesInput: true},
		{src: `input == nil`, usesInput: true},
		{src: "run.input.v % 4 == 0", usesRun: true},
		{src: `entity.email endsWith "@example.com"`, usesEnt: true},
		{src: "output.score + 1", err: "expected bool"},
		{src: "1 + 2", err: "expected bool"},
		{src: `"yes"`, err: "expected bool"},
		{src: "lead.score > 1", err: "unknown name lead"},
		{src: "output.score >", err: "unexpected token"},
		{src: "steps.w.output.input == 1"},
		{src: "all(output.xs, {# > 0})"},
		// What a condition reads is loaded because it is named.
		{src: "$env.run.input.v == 1", err: "$env is not available"},
		{src: `$env["input"] == nil`, err: "$env is not available"},
	} {
		c, err := CompileCondition(tc.src)
		if tc.err != "" {
			require.ErrorContains(t, err, tc.err, tc.src)
			continue
		}
		require.NoError(t, err, tc.src)
		require.Equal(t, tc.usesRun, c.UsesRun, tc.src)
		require.Equal(t, tc.usesEnt, c.UsesEntity, tc.src)
		require.Equal(t, tc.usesInput, c.UsesInput, tc.src)
	}
}

// TestConditionWithEnvSavedEarlier: $env is refused at save, but a version
// saved before that still evaluates, with input, run and entity loaded.
func TestConditionWithEnvSavedEarlier(t *testing.T) {
	t.Parallel()
	c, err := compileCondition("$env.input.v == 1 and $env.run.input.w == 2", newExprRun(ExprLimits{}, nil))
	require.NoError(t, err)
	require.True(t, c.UsesEnv && c.UsesInput && c.UsesRun && c.UsesEntity)
	ok, err := c.Eval(ConditionEnv{Input: map[string]any{"v": 1}, Run: RunEnv{Input: map[string]any{"w": 2}}})
	require.NoError(t, err)
	require.True(t, ok)
}

func TestConditionEvalNumbers(t *testing.T) {
	t.Parallel()
	// Whole JSON numbers are ints (expr's % takes integers), others floats.
	out, err := decodeJSON(json.RawMessage(`{"v": 7, "f": 2.5, "big": 1e300, "list": [1, 2.0]}`))
	require.NoError(t, err)
	require.Equal(t, map[string]any{"v": 7, "f": 2.5, "big": 1e300, "list": []any{1, 2.0}}, out, "2.0 stays a float")
	c, err := CompileCondition("output.v % 4 == 3 and output.f > 2")
	require.NoError(t, err)
	ok, err := c.Eval(ConditionEnv{Output: out})
	require.NoError(t, err)
	require.True(t, ok)
	// A runtime error is an error, not false.
	c, err = CompileCondition("output.v > 1")
	require.NoError(t, err)
	_, err = c.Eval(ConditionEnv{Output: map[string]any{"v": "high"}})
	require.Error(t, err)
}

func TestWithDecision(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 11, 25, 9, 0, 0, 0, time.UTC)
	d := Decision{Outcome: "reject", Answer: json.RawMessage(`null`), Comment: "too small", By: "ada@example.com", At: at}
	const dj = `{"outcome": "reject", "answer": null, "comment": "too small", "by": "ada@example.com", "at": "2026-11-25T09:00:00Z"}`
	for _, tc := range []struct{ input, want string }{
		{`{"lead": "ada", "score": 80}`, `{"lead": "ada", "score": 80, "decision": ` + dj + `}`},
		{`{"decision": "old"}`, `{"decision": ` + dj + `}`},
		{`[1, 2]`, `{"input": [1, 2], "decision": ` + dj + `}`},
		{`"text"`, `{"input": "text", "decision": ` + dj + `}`},
		{`null`, `{"decision": ` + dj + `}`},
		{``, `{"decision": ` + dj + `}`},
	} {
		got, err := withDecision(json.RawMessage(tc.input), d)
		require.NoError(t, err)
		require.JSONEq(t, tc.want, string(got), tc.input)
	}
}

func TestOutcomes(t *testing.T) {
	t.Parallel()
	require.Equal(t, []string{"approve", "reject"}, UXOutcomes(&Node{}))
	custom := &Node{ID: "r", Config: json.RawMessage(`{"outcomes": ["accept", "decline", "escalate"]}`)}
	require.Equal(t, []string{"accept", "decline", "escalate"}, UXOutcomes(custom))

	require.Equal(t, "approve", legacyOutcome(StatusCompleted, []string{"approve", "reject"}))
	require.Equal(t, "reject", legacyOutcome(StatusFailed, []string{"approve", "reject"}))
	require.Equal(t, "accept", legacyOutcome(StatusCompleted, UXOutcomes(custom)), "completed is the first outcome")
	require.Empty(t, legacyOutcome(StatusFailed, UXOutcomes(custom)), "no reject outcome: the node fails")

	g := &ExecutionGraph{Branches: map[string][]EdgeRule{"r": {{ID: "e1", Target: "x", Outcome: "escalate"}, {ID: "e2", Target: "y"}}}}
	outcomes := UXOutcomes(custom)
	require.True(t, outcomeCompletes(g, custom, "accept", outcomes), "the first outcome completes without an edge")
	require.True(t, outcomeCompletes(g, custom, "escalate", outcomes), "an outcome with an edge completes")
	require.False(t, outcomeCompletes(g, custom, "decline", outcomes), "any other outcome fails")
}

func TestEdgeTaken(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		st   NodeState
		want bool
	}{
		{NodeState{Status: StatusCompleted}, true},
		{NodeState{Status: StatusCompleted, Taken: []string{"x"}}, true},
		{NodeState{Status: StatusCompleted, Taken: []string{"y"}}, false},
		{NodeState{Status: StatusCompleted, Taken: []string{}}, false},
		{NodeState{Status: StatusFailed}, false},
		{NodeState{Status: StatusFailed, Taken: []string{"x"}}, true},
		{NodeState{Status: StatusSkipped}, false},
		{NodeState{Status: StatusPending}, false},
	} {
		require.Equal(t, tc.want, edgeTaken(&tc.st, "x"), "%+v", tc.st)
	}
}

func TestCompileValue(t *testing.T) {
	t.Parallel()
	v, err := CompileValue(`{"name": upper(input.name), "n": len(input.items)}`)
	require.NoError(t, err)
	got, err := v.Eval(ValueEnv{Input: map[string]any{"name": "ada", "items": []any{1, 2}}})
	require.NoError(t, err)
	require.Equal(t, map[string]any{"name": "ADA", "n": 2}, got)
	_, err = CompileValue("output.x")
	require.ErrorContains(t, err, "unknown name output")
}
