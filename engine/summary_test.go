package engine

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestSummaryIn: a summary's paths read the node's input (bare or
// input.…), the run's input, its variables and upstream steps' outputs.
func TestSummaryIn(t *testing.T) {
	cfg := json.RawMessage(`{"summary": ["amount", {"label": "Amount again", "path": "input.amount"},
		{"label": "Requester", "path": "run.input.requester.email"}, {"label": "Tier", "path": "vars.tier"},
		{"label": "Score", "path": "steps.score.output.value"}, {"label": "Gone", "path": "steps.none.output.x"}]}`)
	require.Equal(t, []string{"score", "none"}, SummaryStepIDs(cfg))
	got := SummaryIn(cfg, SummaryScope{Input: json.RawMessage(`{"amount": 12}`),
		RunInput: json.RawMessage(`{"requester": {"email": "ada@example.com"}}`), Vars: json.RawMessage(`{"tier": "gold"}`),
		Steps: map[string]json.RawMessage{"score": json.RawMessage(`{"value": 87}`)}})
	vals := map[string]string{}
	for _, v := range got {
		vals[v.Label] = string(v.Value)
	}
	require.Equal(t, map[string]string{"amount": "12", "Amount again": "12", "Requester": `"ada@example.com"`, "Tier": `"gold"`,
		"Score": "87", "Gone": "null"}, vals)
}
