package compiler_test

import (
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/stitchd/stitchd/compiler"
	"github.com/stitchd/stitchd/engine"
)

// TestUnknownDataFieldsNamed: a typo in node data is a warning naming the
// field and the nearest known one; a missing webhookUrl whose data holds
// a look-alike says so in the error; known fields warn of nothing.
func TestUnknownDataFieldsNamed(t *testing.T) {
	g := compiler.VisualGraph{
		Nodes: []compiler.VisualNode{
			node("w", "Worker", `{"webhookUrl": "http://w.example/x", "retyr": {"maxAttempts": 2}, "label": "W", "description": "d", "colour": "red"}`),
			node("a", "UX", `{"prompt": "OK?", "timeoutSecond": 5}`),
		},
		Edges: []compiler.VisualEdge{edge("e", "w", "a")},
	}
	eg, err := compiler.Compile(g, builtins)
	require.NoError(t, err)
	byPath := map[string]engine.Problem{}
	for _, w := range eg.Warnings {
		require.Equal(t, compiler.CodeUnknownField, w.Code)
		byPath[w.Path] = w
	}
	require.Len(t, byPath, 3, "%v", eg.Warnings)
	require.Contains(t, byPath["nodes[0].data.retyr"].Message, `did you mean "retry"?`)
	require.Equal(t, "w", byPath["nodes[0].data.retyr"].NodeID)
	require.Contains(t, byPath["nodes[1].data.timeoutSecond"].Message, `did you mean "timeoutSeconds"?`)
	require.NotContains(t, byPath["nodes[0].data.colour"].Message, "did you mean", "nothing near")

	_, err = compiler.Compile(compiler.VisualGraph{Nodes: []compiler.VisualNode{node("w", "Worker", `{"webhookURL": "http://w.example/x"}`)}}, builtins)
	var ce *compiler.Error
	require.ErrorAs(t, err, &ce)
	require.Len(t, ce.Problems, 1)
	require.Equal(t, compiler.CodeInvalidWebhookURL, ce.Problems[0].Code)
	require.Contains(t, ce.Problems[0].Message, `the data has "webhookURL": did you mean "webhookUrl"?`)
}

// TestUnknownSettingsNamed: a typo in the flow's settings is a warning
// naming it and the setting meant (deadline_seconds was saved and ignored,
// without a word); the settings there are warn of nothing.
func TestUnknownSettingsNamed(t *testing.T) {
	g := compiler.VisualGraph{
		Nodes:    []compiler.VisualNode{node("t", "Transform", `{"expression": "input"}`)},
		Settings: []byte(`{"deadline_seconds": 60, "retentionDays": 30, "entityConcurrency": "skip", "deadlineSeconds": 60, "colour": "red"}`),
	}
	eg, err := compiler.Compile(g, builtins)
	require.NoError(t, err)
	byPath := map[string]engine.Problem{}
	for _, w := range eg.Warnings {
		require.Equal(t, compiler.CodeUnknownField, w.Code)
		byPath[w.Path] = w
	}
	require.Len(t, byPath, 2, "%v", eg.Warnings)
	require.Equal(t, `settings has a field "deadline_seconds" that no setting reads (ignored); did you mean "deadlineSeconds"?`,
		byPath["settings.deadline_seconds"].Message)
	require.NotContains(t, byPath["settings.colour"].Message, "did you mean")
}

func TestWorkerRateLimit(t *testing.T) {
	_, err := compiler.Compile(compiler.VisualGraph{Nodes: []compiler.VisualNode{node("w", "Worker", `{"webhookUrl": "http://w.example/x", "rateLimit": 20}`)}}, builtins)
	require.NoError(t, err)
	for _, bad := range []string{`0`, `-1`, `"fast"`, `1e9`} {
		_, err := compiler.Compile(compiler.VisualGraph{Nodes: []compiler.VisualNode{node("w", "Worker", `{"webhookUrl": "http://w.example/x", "rateLimit": `+bad+`}`)}}, builtins)
		var ce *compiler.Error
		require.ErrorAs(t, err, &ce, bad)
		require.Equal(t, "nodes[0].data.rateLimit", ce.Problems[0].Path)
	}
}

// TestDocumentedUXFieldsAreKnown: the UX fields docs/approvals.md and
// docs/forms.md describe warn of nothing (escalation and formOutcomes
// were said to be ignored, though the engine reads them).
func TestDocumentedUXFieldsAreKnown(t *testing.T) {
	eg, err := compiler.Compile(compiler.VisualGraph{Nodes: []compiler.VisualNode{node("a", "UX", `{"prompt": "OK?",
		"assignees": {"users": ["ann@example.com"]}, "outcomes": ["approve", "reject", "later"], "formOutcomes": ["approve"],
		"form": {"fields": [{"name": "note", "type": "text"}]}, "requiredApprovals": 1, "remindAfterSeconds": 60,
		"escalation": [{"afterSeconds": 5, "assignees": {"users": ["bob@example.com"]}}], "timeoutSeconds": 600, "summary": ["amount"]}`)}}, builtins)
	require.NoError(t, err)
	require.Empty(t, eg.Warnings)
}

// TestAddedTypeRetryIsItsOwn: an added type's "retry" is what its schema
// says, not the Worker's policy: an integer retry is fine, and its
// schema's own problem is said (the Worker's rules answered "retry must
// be an object" to a type that had never meant one).
func TestAddedTypeRetryIsItsOwn(t *testing.T) {
	types := append(slices.Clone(builtins), engine.NodeTypeSpec{Type: "Pinger", Label: "Pinger", IDPrefix: "ping",
		ConfigSchema: []byte(`{"type":"object","properties":{"retry":{"type":"integer","minimum":0,"maximum":5}}}`)})
	_, err := compiler.Compile(compiler.VisualGraph{Nodes: []compiler.VisualNode{node("p", "Pinger", `{"retry": 3}`)}}, types)
	require.NoError(t, err)
	_, err = compiler.Compile(compiler.VisualGraph{Nodes: []compiler.VisualNode{node("p", "Pinger", `{"retry": 9}`)}}, types)
	var ce *compiler.Error
	require.ErrorAs(t, err, &ce)
	require.Len(t, ce.Problems, 1, "%v", ce.Problems)
	require.Equal(t, "nodes[0].data.retry", ce.Problems[0].Path)
	require.NotContains(t, ce.Problems[0].Message, "must be an object")
}
