package app_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// anyOfBomb is the red team's schema: n levels of
// anyOf:[{$ref next},{$ref next}] over a string.
func anyOfBomb(n int) map[string]any {
	defs := map[string]any{}
	for k := 0; k < n; k++ {
		next := map[string]any{"$ref": fmt.Sprintf("#/$defs/s%d", k+1)}
		defs[fmt.Sprintf("s%d", k)] = map[string]any{"anyOf": []any{next, next}}
	}
	defs[fmt.Sprintf("s%d", n)] = map[string]any{"type": "string"}
	return map[string]any{"$defs": defs, "$ref": "#/$defs/s0"}
}

// TestSchemaExpansionRefusedAtSave: a trigger's input_schema or a UX form
// whose $refs multiply past engine.MaxFormExpansion subschemas is a 422
// when saved (22 levels of nested anyOf made one anonymous hook call take
// 74 s and 8.6 GB); one within the bound checks a hook body in well under
// a second with a bounded answer. The time bounds below guard against a
// runaway (74 s before the bound), not a speed: a loaded two-core suite
// took 2.8 s for a check that takes well under one alone.
func TestSchemaExpansionRefusedAtSave(t *testing.T) {
	t.Parallel()
	const runaway = 20 * time.Second
	h := newHarness(t)
	flow := h.createFlow([]map[string]any{node("u", "UX", nil)}, nil)
	start := time.Now()
	var e apiErrorJSON
	require.Equal(t, http.StatusUnprocessableEntity, h.do("POST", "/api/v1/flows/"+flow+"/triggers",
		map[string]any{"slug": "bomb", "input_schema": anyOfBomb(22)}, &e))
	require.Equal(t, "invalid_schema", e.Error.Code)
	require.Contains(t, e.Error.Message, "input_schema")
	var raw map[string]any
	require.Equal(t, http.StatusUnprocessableEntity, h.do("POST", "/api/v1/flows", map[string]any{"name": "bomb",
		"graph": map[string]any{"nodes": []any{node("u", "UX", map[string]any{"form": anyOfBomb(22)})}, "edges": []any{}}}, &raw))
	require.Contains(t, fmt.Sprint(raw), "subschemas")
	require.Less(t, time.Since(start), runaway)

	require.Equal(t, http.StatusCreated, h.do("POST", "/api/v1/flows/"+flow+"/triggers",
		map[string]any{"slug": "within", "input_schema": anyOfBomb(11)}, nil))
	start = time.Now()
	code, body := h.rawRequest("POST", h.app.URL+"/hooks/within", `1`, false)
	require.Less(t, time.Since(start), runaway)
	require.Equal(t, http.StatusBadRequest, code, "%.300s", body)
	require.Less(t, len(body), 128<<10)
	require.NoError(t, json.Unmarshal(body, &e))
	require.Equal(t, "invalid_request", e.Error.Code)
}
